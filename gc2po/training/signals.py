"""The per-episode signal (``cf_signal``) for a generation batch: the value that stands in
``batch.r_cf`` when the additive form (``gc2po.core.corrected.additive_token_advantages``)
z-scores it (lambda_cf, floor, clip unchanged) or the gated form (``gc2po.core.gated``) builds
its gate from it. ``gc2po_add`` and ``grpo_gated`` take it from the run's config; their presets
fix it.

- ``r_cf``: the paper's counterfactual reward from the episode states
  (``gc2po.training.scoring``; the default, unchanged);
- ``oracle``: the testbed oracle's validity of each episode (testbed task only), or, with
  ``cf_signal_rho``, that validity plus noise to a within-group correlation rho given f
  (``gc2po.core.signals.mix_to_correlation``; at rho 1 the validity itself): a control, not a
  method one could deploy. For the gated form (``grpo_gated``, ``grpo_fxp``: methods with
  ``trajectory_signal``) it is one value per completion, [B, 1]: f x p_rho, the process validity
  computed from that per-episode signal (``gc2po.core.signals.gated_validity``);
- ``answer_dependence`` (beyond the paper): the fall in the log-probability of the final answer
  when the episode is removed from the context (``gc2po.core.signals.answer_logprob_drop``),
  one no-grad forward pass per episode and one per completion;
- ``sibling_agreement``, ``operand_sensitivity`` (beyond the paper): from the policy alone
  (``gc2po.training.signals_policy``);
- ``format`` (a control): 1 where the episode's text parses as an equation ``a op b = c``, else
  0; no model pass. It asks only whether a step looks like a step;
- ``readout`` (a control, testbed only): the persistent-noise control, a fixed random readout of
  the state R_cf reads (the cosine of the episode's final-norm state at ``cf_state`` with one
  random direction drawn from the run's seed), z-scored in its group, plus ``cf_readout_weight``
  x the oracle's validity (``gc2po.core.signals.mix_readout``): R_cf's kind of noise, a fixed
  function of the policy's states, at a chosen correlation with validity.

The trainer (``gc2po.training.batch_scoring``) and the signal audit (``gc2po.audit.signals``)
call these same functions on the same segmentation, so the audit measures what training uses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from gc2po.core.signals import (
    answer_logprob_drop,
    gated_validity,
    mix_readout,
    mix_to_correlation,
    within_group_correlation,
)
from gc2po.training.episodes import EpisodeBatch

# the last two: from the policy alone, beyond the paper (gc2po.training.signals_policy)
SIGNALS = (
    "r_cf",
    "oracle",
    "answer_dependence",
    "sibling_agreement",
    "operand_sensitivity",
    "format",
    "readout",
)
# the signals that read the testbed oracle's grades (testbed runs only)
ORACLE_SIGNALS = ("oracle", "readout")
NOISE = ("exact", "every_group")  # cf_signal_noise: how the noised oracle spreads its noise
READOUT_SEED = 104729  # added to the run's seed: the readout's direction, fixed for the run
FINAL_BOX = re.compile(r"\\boxed\{([^{}]*)\}")  # the final answer is the last box's content


def needs_whole_groups(cf_signal: str, rho: float | None) -> bool:
    """The signal of a row depends on its group's other rows, so a group's completions must sit
    on one process: sibling agreement (each episode against its siblings), the noised oracle
    (the noise is mixed within each group) and the readout (z-scored within each group)."""
    return cf_signal in ("sibling_agreement", "readout") or (
        cf_signal == "oracle" and rho is not None
    )


def testbed_problem(question: str | None, meta_json: str):
    """The testbed problem of a dataset row (its ``question`` and ``meta_json`` columns)."""
    from gc2po.testbed.generator import Problem

    return Problem.from_record(
        {"id": "", "question": question or "", "meta": json.loads(meta_json)}
    )


def problem_steps(rows: Sequence[dict]) -> torch.Tensor:
    """[B] long: the step count of each row's testbed problem (its ``meta_json``), what the
    gated form's value gate divides by; a row that is not a testbed problem fails, naming it."""
    steps = []
    for number, row in enumerate(rows):
        try:
            steps.append(len(json.loads(row["meta_json"])["steps"]))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(
                f"row {number} ({row.get('id', '?')}): the value gate (cf_gate: value) reads the "
                f"problem's step count from a testbed row's meta_json; this row has none ({err!r})"
            ) from err
    return torch.tensor(steps, dtype=torch.long)


def present_episodes(episodes: EpisodeBatch, width: int) -> torch.Tensor:
    """[B, width] bool: row b has an episode l (l < its number of episodes)."""
    counts = torch.tensor(episodes.num_episodes).unsqueeze(-1)
    return torch.arange(width).unsqueeze(0) < counts


def table_width(episodes: EpisodeBatch) -> int:
    """Lmax of a batch's signal table: its most episodes in a row (at least 1)."""
    ids = episodes.episode_ids
    return max([1, *episodes.num_episodes, int(ids.max()) + 1 if ids.numel() else 0])


def oracle_validity(
    problems: Sequence, episodes: EpisodeBatch, max_episodes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(validity [B, Lmax] float64, f [B] long): the oracle's grade of each row's text as the
    trainer segmented it (the text of ``episodes``, the trainer's ``max_episodes``), so the
    oracle's episode l is the trainer's episode l; a disagreement in the number of episodes is
    a bug and raises."""
    from gc2po.testbed.oracle import grade

    validity = torch.zeros(len(problems), table_width(episodes), dtype=torch.float64)
    f = torch.zeros(len(problems), dtype=torch.long)
    for row, (problem, text) in enumerate(zip(problems, episodes.texts, strict=True)):
        result = grade(problem, text, max_episodes=max_episodes)
        if len(result.episode_valid) != episodes.num_episodes[row]:
            raise RuntimeError(
                f"row {row}: the oracle found {len(result.episode_valid)} episodes, the trainer "
                f"{episodes.num_episodes[row]}: their segmentations disagree"
            )
        validity[row, : len(result.episode_valid)] = torch.tensor(result.episode_valid).double()
        f[row] = result.f
    return validity, f


def noisy_oracle(
    validity: torch.Tensor,
    present: torch.Tensor,
    f: torch.Tensor,
    row_index: torch.Tensor,
    group_size: int,
    rho: float,
    seed: int,
    max_episodes: int,
    every_group: bool = False,
) -> torch.Tensor:
    """The oracle's validity [B, Lmax] plus noise to within-group correlation ``rho`` given f
    (``every_group``: noise of one scale in every group, ``mix_to_correlation``). The noise of
    (row, episode) is entry [row, episode] of one [rows, max_episodes] standard normal draw
    seeded by ``seed``: the same whichever process holds the row."""
    rows = int(row_index.max()) + 1 if row_index.numel() else 0
    noise = torch.randn(
        rows, max_episodes, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )[row_index.long().cpu(), : validity.shape[1]]
    group = row_index.long().cpu() // group_size
    return mix_to_correlation(validity, present, f, group, rho, noise, every_group=every_group)


# -- answer dependence ----------------------------------------------------------------------------
@dataclass(frozen=True)
class AnswerProbe:
    """One completion's answer-dependence plan: the completion positions of its final answer's
    tokens, and per episode the positions removed for that episode (its tokens before the final
    ``\\boxed{``; an episode with none is not probed)."""

    answer: list[int]
    removed: dict[int, list[int]]


def answer_probe(text: str, offsets, episode_ids: list[int]) -> AnswerProbe | None:
    """The probe of one segmented completion (None: no final ``\\boxed{...}`` answer)."""
    found = list(FINAL_BOX.finditer(text))
    if not found:
        return None
    start, end = found[-1].span(1)
    answer = [t for t, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    if not answer:
        return None
    removed: dict[int, list[int]] = {}
    for t in range(answer[0]):
        if episode_ids[t] >= 0 and offsets[t][1] <= found[-1].start():
            removed.setdefault(episode_ids[t], []).append(t)
    return AnswerProbe(answer, removed)


def _final_states(model, sequences, positions, *, pad_id: int, batch_size: int, shift: int):
    """Yield (ids [T], states [len(positions[i]), d], at [len(positions[i])]) per sequence: the
    backbone's final-norm states at ``positions[i] - shift``. Right-padded batches of
    ``batch_size``, so every real token keeps its position."""
    backbone = getattr(model, model.base_model_prefix)
    device = next(model.parameters()).device
    for lo in range(0, len(sequences), batch_size):
        chunk = sequences[lo : lo + batch_size]
        width = max(len(s) for s in chunk)
        ids = torch.tensor([s + [pad_id] * (width - len(s)) for s in chunk], device=device)
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in chunk], device=device)
        hidden = backbone(input_ids=ids, attention_mask=mask).last_hidden_state
        for i, where in enumerate(positions[lo : lo + batch_size]):
            at = torch.tensor(where, device=device, dtype=torch.long)
            yield ids[i], hidden[i, at - shift], at


@torch.no_grad()
def answer_token_logps(
    model,
    sequences: list[list[int]],
    positions: list[list[int]],
    *,
    pad_id: int,
    temperature: float,
    batch_size: int,
) -> list[torch.Tensor]:
    """Log-probs (at ``temperature``, as the policy samples) of the tokens at ``positions`` of
    each sequence given the tokens before them: [len(positions[i])] each. Right-padded batches of
    ``batch_size``, so every real token keeps its position."""
    head = model.get_output_embeddings()
    out: list[torch.Tensor] = []
    for ids, states, at in _final_states(
        model, sequences, positions, pad_id=pad_id, batch_size=batch_size, shift=1
    ):
        logits = head(states).float() / temperature
        out.append(torch.log_softmax(logits, -1).gather(-1, ids[at, None])[:, 0].cpu())
    return out


@torch.no_grad()
def state_readout(
    model,
    sequences: list[list[int]],
    positions: list[list[int]],
    direction: torch.Tensor,
    *,
    pad_id: int,
    batch_size: int,
) -> list[torch.Tensor]:
    """The cosine of the final-norm state at each of ``positions[i]`` (the state of that token
    itself, as R_cf reads it) with ``direction`` [d]: [len(positions[i])] float64 each."""
    out: list[torch.Tensor] = []
    for _, states, _ in _final_states(
        model, sequences, positions, pad_id=pad_id, batch_size=batch_size, shift=0
    ):
        w = direction.to(states)
        out.append(torch.nn.functional.cosine_similarity(states.float(), w.float()[None], -1)
                   .double().cpu())  # fmt: skip
    return out


def readout_direction(hidden_size: int, seed: int) -> torch.Tensor:
    """The readout control's fixed direction [hidden_size] float64: a unit standard normal draw
    seeded by ``seed + READOUT_SEED`` (one per training seed, the same at every step)."""
    w = torch.randn(
        hidden_size, generator=torch.Generator().manual_seed(seed + READOUT_SEED),
        dtype=torch.float64,
    )  # fmt: skip
    return w / w.norm()


def readout_signal(
    readout_of: Callable[[list[list[int]], list[list[int]]], list[torch.Tensor]],
    rows: Sequence[dict],
    prompt_ids: list[list[int]],
    completion_ids: list[list[int]],
    state_positions: torch.Tensor,
    episodes: EpisodeBatch,
    row_index: torch.Tensor,
    group_size: int,
    *,
    weight: float,
    max_episodes: int,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The ``readout`` signal of a generation batch [B, Lmax] and its metrics.

    ``readout_of(sequences, positions)``: :func:`state_readout` bound to the policy and the run's
    direction; ``state_positions`` [B, Lmax] the completion position of each episode's state
    (``gc2po.training.episode_states.state_table``; -1: none, read as 0); ``rows`` the batch's
    dataset rows (the oracle's grades)."""
    problems = [testbed_problem(row.get("question"), row["meta_json"]) for row in rows]
    validity, f = oracle_validity(problems, episodes, max_episodes)
    present = present_episodes(episodes, validity.shape[1])
    positions = state_positions[:, : validity.shape[1]].long().cpu()
    readout = torch.zeros(validity.shape, dtype=torch.float64)
    wanted = [(row, [int(p) for p in positions[row].tolist()]) for row in range(len(problems))]
    sequences, where, slots = [], [], []
    for row, pos in wanted:
        kept = [(slot, p) for slot, p in enumerate(pos) if p >= 0 and present[row, slot]]
        if kept:
            sequences.append(prompt_ids[row] + completion_ids[row])
            where.append([len(prompt_ids[row]) + p for _, p in kept])
            slots.append((row, [slot for slot, _ in kept]))
    for (row, row_slots), values in zip(slots, readout_of(sequences, where)):
        readout[row, row_slots] = values.double()
    group = row_index.long().cpu() // group_size
    signal = mix_readout(readout, validity, present, group, weight)
    realised, groups = realised_rho(signal, validity, present, f, group)
    return signal, {
        "signal/readout": readout[present].mean().item() if present.any() else 0.0,
        "signal/rho_within": realised if groups else 0.0,
        "signal/rho_groups": groups,
    }


def answer_dependence(
    logps_of: Callable[[list[list[int]], list[list[int]]], list[torch.Tensor]],
    prompt_ids: list[list[int]],
    completion_ids: list[list[int]],
    episodes: EpisodeBatch,
) -> torch.Tensor:
    """[B, Lmax] float64 answer-dependence signal of a segmented batch (0 where a row has no
    final answer or an episode has no token before it). ``logps_of(sequences, positions)``:
    :func:`answer_token_logps` bound to a model."""
    width = table_width(episodes)
    ids = episodes.episode_ids.tolist()
    probes = [
        answer_probe(text, offsets, row_ids)
        for text, offsets, row_ids in zip(episodes.texts, episodes.offsets, ids)
    ]
    longest = max([1] + [len(p.answer) for p in probes if p is not None])
    full = torch.zeros(len(probes), longest, dtype=torch.float64)
    ablated = torch.zeros(len(probes), width, longest, dtype=torch.float64)
    answer_mask = torch.zeros(len(probes), longest, dtype=torch.bool)
    episode_mask = torch.zeros(len(probes), width, dtype=torch.bool)
    sequences, positions, slots = [], [], []
    for row, probe in enumerate(probes):
        if probe is None:
            continue
        answer_mask[row, : len(probe.answer)] = True
        for slot, gone in [(None, set()), *((s, set(g)) for s, g in probe.removed.items())]:
            kept = [t for t in range(probe.answer[-1] + 1) if t not in gone]
            prompt = prompt_ids[row]
            sequences.append(prompt + [completion_ids[row][t] for t in kept])
            positions.append([len(prompt) + kept.index(t) for t in probe.answer])
            slots.append((row, slot))
    # called even with nothing to score: under ZeRO-3 every process must enter the policy's
    # generation context (it gathers the weights) together
    for (row, slot), values in zip(slots, logps_of(sequences, positions)):
        if slot is None:
            full[row, : len(values)] = values.double()
        else:
            ablated[row, slot, : len(values)] = values.double()
            episode_mask[row, slot] = True
    return answer_logprob_drop(full, ablated, answer_mask, episode_mask)


def oracle_signal(
    rows: Sequence[dict],
    episodes: EpisodeBatch,
    row_index: torch.Tensor,
    group_size: int,
    *,
    max_episodes: int,
    rho: float | None,
    seed: int,
    trajectory: bool = False,
    every_group: bool = False,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The ``oracle`` signal of a generation batch: the validity of each episode [B, Lmax] of
    ``rows`` (the batch's dataset rows: ``question``, ``meta_json``), mixed to ``rho`` when it
    is not None, and its metrics (the same names on every process). ``trajectory``: instead the
    gated reward f x p_rho of each row [B, 1] (``gc2po.core.signals.gated_validity``; at rho
    None or 1 the oracle's f x p, exactly)."""
    problems = [testbed_problem(row.get("question"), row["meta_json"]) for row in rows]
    validity, f = oracle_validity(problems, episodes, max_episodes)
    present = present_episodes(episodes, validity.shape[1])
    metrics = {"signal/oracle_validity": validity[present].mean().item()}
    signal = validity
    if rho is not None:
        signal = noisy_oracle(
            validity, present, f, row_index, group_size, rho, seed, max_episodes, every_group
        )
        realised, groups = realised_rho(
            signal, validity, present, f, row_index.long().cpu() // group_size
        )
        # over the groups whose validity varies given f (0 when there is none)
        metrics.update(
            {"signal/rho_within": realised if groups else 0.0, "signal/rho_groups": groups}
        )
    if not trajectory:
        return signal, metrics
    steps = torch.tensor([len(problem.steps) for problem in problems])
    reward = gated_validity(signal, present, f, steps)
    metrics["signal/gated_reward"] = reward.mean().item() if reward.numel() else 0.0
    return reward.unsqueeze(-1), metrics


def answer_signal(
    logps_of, prompt_ids: list[list[int]], completion_ids: list[list[int]], episodes: EpisodeBatch
) -> tuple[torch.Tensor, dict[str, float]]:
    """The ``answer_dependence`` signal of a generation batch (:func:`answer_dependence`) and its
    metrics: its mean over episodes and the share of completions with a final answer."""
    table = answer_dependence(logps_of, prompt_ids, completion_ids, episodes)
    present = present_episodes(episodes, table.shape[1])
    answered = [FINAL_BOX.search(text) is not None for text in episodes.texts]
    return table, {
        "signal/answer_dependence": table[present].mean().item() if present.any() else 0.0,
        "signal/answer_found": sum(answered) / max(1, len(answered)),
    }


def realised_rho(
    signal: torch.Tensor, validity: torch.Tensor, present, f, group
) -> tuple[float, int]:
    """The episode-weighted mean within-group correlation given f of a signal table [B, Lmax]
    with validity [B, Lmax] over the groups where it is defined, and their number (0: none)."""
    rows, slots = present.nonzero(as_tuple=True)
    corr, episodes = within_group_correlation(
        signal[rows, slots], validity[rows, slots], f[rows], group[rows]
    )
    defined = torch.isfinite(corr)
    if not bool(defined.any()):
        return float("nan"), 0
    weights = episodes[defined].double()
    return float((corr[defined] * weights).sum() / weights.sum()), int(defined.sum())
