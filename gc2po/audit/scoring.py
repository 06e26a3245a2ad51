"""Scoring of sampled completions for the reward audit (paper section 3.2, Figure 1c): per
completion, the oracle's final correctness f, process validity p and group, the outcome reward
R_out, GC2PO's S_sta, S_exp, R_cf (means over the trajectory's episodes, read at the run's
``cf_state`` through the trainer's ``state_table``), the paper-form trajectory score r~ and its
group advantage A^; R_cf at every ``cf_state`` choice and for a grid of perturbations.

R_cf and the score are computed with one run's own settings (``AuditConfig.from_trainer`` with
its resolved ``GC2POConfig``): nothing here restates a default.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd
import torch

from gc2po.audit.stats import summarise
from gc2po.core.advantages import trajectory_token_rewards
from gc2po.core.counterfactual import CounterfactualParams
from gc2po.core.groups import grpo_advantage
from gc2po.testbed.oracle import grade
from gc2po.training.episode_states import STATE_CHOICES, flatten, state_table
from gc2po.training.episodes import EpisodeStates, segment_completions
from gc2po.training.scoring import episode_counterfactuals

DEFAULT_GRID = (
    [[{"name": "dropout", "p": p}] for p in (0.05, 0.1, 0.2, 0.4)]
    + [[{"name": "gaussian", "sigma": s}] for s in (0.05, 0.1, 0.3, 1.0)]
    + [[{"name": "group_mix", "alpha": a}] for a in (0.1, 0.3, 0.6)]
    + [[{"name": "dropout", "p": 0.1}, {"name": "gaussian", "sigma": 0.1}]]
)


@dataclass(frozen=True)
class AuditConfig:
    """What an audit samples (k completions per problem at the run's temperature) and the run
    settings it scores with: R_cf's (``counterfactual``), the paper form's ``lambda_cf`` and
    ``trunc_frac``, and the token each episode is read at (``cf_state``)."""

    counterfactual: CounterfactualParams
    lambda_cf: float
    trunc_frac: float
    cf_state: str
    k: int = 8  # completions per problem
    top_p: float = 1.0
    max_new_tokens: int = 96
    seed: int = 0
    p_threshold: float = 0.5
    study_draws: int = 5  # independent noise draws per perturbation setting of the study

    @classmethod
    def from_trainer(cls, args, **sampling) -> AuditConfig:
        """The audit of a run's settings (``args``: its resolved ``GC2POConfig``);
        ``sampling``: k, top_p, max_new_tokens, seed, p_threshold, study_draws."""
        return cls(
            args.counterfactual_params(), args.lambda_cf, args.trunc_frac, args.cf_state, **sampling
        )

    @property
    def temperature(self) -> float:
        """Completions are sampled at the temperature R_cf's q(.|u) uses: the run's."""
        return self.counterfactual.temperature

    def __post_init__(self):
        if not (isinstance(self.study_draws, int) and self.study_draws >= 1):
            raise ValueError(f"audit study_draws must be an integer >= 1, got {self.study_draws!r}")
        if self.cf_state not in STATE_CHOICES:
            raise ValueError(
                f"audit cf_state must be one of {list(STATE_CHOICES)}, got {self.cf_state!r}"
            )


def spec_name(spec: list[dict]) -> str:
    """``dropout(p=0.1)+gaussian(sigma=0.1)``: a perturbation spec as a column label."""

    def one(item: dict) -> str:
        return f"{item['name']}({','.join(f'{k}={v}' for k, v in item.items() if k != 'name')})"

    return "+".join(one(item) for item in spec)


@torch.no_grad()
def completion_states(
    model, tokenizer, prompt_texts: list[str], completion_ids: list[list[int]], batch_size: int = 32
):
    """Log-probs [N, T] and final-norm states [N, T, d] of each completion given its prompt."""
    backbone = getattr(model, model.base_model_prefix)
    lm_head = model.get_output_embeddings()
    width = max(1, max(len(c) for c in completion_ids))
    logps = torch.zeros(len(completion_ids), width)
    states = torch.zeros(len(completion_ids), width, model.config.hidden_size)
    for lo in range(0, len(completion_ids), batch_size):
        chunk = range(lo, min(lo + batch_size, len(completion_ids)))
        prompts = [tokenizer(prompt_texts[i], add_special_tokens=False)["input_ids"] for i in chunk]
        p_len = max(len(p) for p in prompts)
        rows = [
            [tokenizer.pad_token_id] * (p_len - len(p))
            + p
            + completion_ids[i]
            + [tokenizer.pad_token_id] * (width - len(completion_ids[i]))
            for p, i in zip(prompts, chunk)
        ]
        attention = [
            [0] * (p_len - len(p))
            + [1] * (len(p) + len(completion_ids[i]))
            + [0] * (width - len(completion_ids[i]))
            for p, i in zip(prompts, chunk)
        ]
        ids, att = torch.tensor(rows), torch.tensor(attention)
        hidden = backbone(input_ids=ids, attention_mask=att).last_hidden_state
        logits = lm_head(hidden[:, p_len - 1 : -1]).float()
        logps[lo : lo + len(chunk)] = (
            torch.log_softmax(logits, -1).gather(-1, ids[:, p_len:].unsqueeze(-1)).squeeze(-1)
        )
        states[lo : lo + len(chunk)] = hidden[:, p_len:].float()
    return logps, states


def score_rows(
    model,
    tokenizer,
    problems,
    prompt_texts,
    generations,
    config: AuditConfig,
    grid: list[list[dict]] | None = None,
) -> pd.DataFrame:
    """One row per completion with the oracle's f, p, group and every reward (and, for each
    perturbation of ``grid``, that variant's R_cf)."""
    # a finished completion ends with EOS in training (TRL keeps it in the completion mask), so
    # it does here: every cf_state choice then reads the state training reads
    eos = [tokenizer.eos_token_id]
    completion_ids = [g.token_ids + eos * bool(g.finished) for g in generations]
    logps, states = completion_states(
        model, tokenizer, [prompt_texts[g.prompt_index] for g in generations], completion_ids
    )
    width = logps.shape[1]
    ids = torch.tensor([c + [tokenizer.pad_token_id] * (width - len(c)) for c in completion_ids])
    mask = torch.tensor([[t < len(c) for t in range(width)] for c in completion_ids])
    episodes = segment_completions(tokenizer, ids, mask)
    weight = model.get_output_embeddings().weight.detach()
    special = set(tokenizer.all_special_ids)

    def per_completion(values: torch.Tensor, rows_idx, slots, num_slots) -> torch.Tensor:
        table = torch.zeros(len(generations), num_slots)
        table[rows_idx, slots] = values
        counts = torch.zeros(len(generations)).index_add_(0, rows_idx, torch.ones_like(values))
        means = torch.zeros(len(generations)).index_add_(0, rows_idx, values) / counts.clamp(min=1)
        return table, means

    rows_of = torch.arange(len(generations))
    if [g.prompt_index for g in generations] != (rows_of // config.k).tolist():
        raise ValueError("audit: completions must come prompt by prompt, k per prompt")
    lm_head = (weight, getattr(model.get_output_embeddings(), "bias", None))

    def cf_at(choice: str, spec, seed):
        """R_cf at the states ``choice`` picks, through the trainer's functions (``state_table``,
        ``episode_counterfactuals``): (per-episode result, [N, Lmax] table, per-completion mean,
        the states' (rows, slots, Lmax))."""
        rows_idx, slots, positions, num_slots = flatten(state_table(episodes, ids, choice, special))
        found = EpisodeStates(rows_idx, slots, positions, num_slots, states[rows_idx, positions])
        params = dataclasses.replace(config.counterfactual, perturbation=spec)
        result, _ = episode_counterfactuals(
            found, rows_of, config.k, params, lm_head, generator=torch.Generator().manual_seed(seed)
        )
        where = (rows_idx, slots, num_slots)
        return (result, *per_completion(result.r_cf, *where), where)

    perturbation = config.counterfactual.perturbation
    main, r_cf_table, r_cf_mean, where = cf_at(config.cf_state, perturbation, config.seed)
    oracle = [
        grade(problems[g.prompt_index], g.text, p_threshold=config.p_threshold) for g in generations
    ]
    r_out = torch.tensor([float(o.f) for o in oracle])
    _, traj = trajectory_token_rewards(
        r_out,
        episodes.episode_ids,
        r_cf_table,
        logps,
        mask,
        lambda_cf=config.lambda_cf,
        trunc_frac=config.trunc_frac,
    )
    order = torch.tensor([g.prompt_index for g in generations])
    frame = pd.DataFrame(
        {
            "problem_id": [problems[g.prompt_index].id for g in generations],
            "prompt_index": order.tolist(),
            "sample_index": [g.sample_index for g in generations],
            "f": [o.f for o in oracle],
            "p": [o.p for o in oracle],
            "group": [o.group for o in oracle],
            "episodes": episodes.num_episodes,
            "fallback": episodes.used_fallback,
            "r_out": r_out.tolist(),
            "s_sta": per_completion(main.s_sta, *where)[1].tolist(),
            "s_exp": per_completion(main.s_exp, *where)[1].tolist(),
            "r_cf": r_cf_mean.tolist(),
            "gc2po_score": traj.float().tolist(),
        }
    )
    frame["gc2po_advantage"] = _group_normalise(frame, "gc2po_score")
    frame["grpo_advantage"] = _group_normalise(frame, "r_out")
    for choice in STATE_CHOICES:  # one noise seed for every choice: they differ by the state only
        frame[f"r_cf@{choice}"] = cf_at(choice, perturbation, config.seed)[2].tolist()
    for index, spec in enumerate(grid or []):  # every (setting, draw) has its own noise seed
        for draw in range(config.study_draws):
            seed = config.seed + 1 + index * config.study_draws + draw
            column = f"r_cf[{spec_name(spec)}]#{draw}"
            frame[column] = cf_at(config.cf_state, spec, seed)[2].tolist()
    return frame


def _group_normalise(frame: pd.DataFrame, column: str) -> list[float]:
    """GRPO-style (x - mean) / (std + 1e-4) within each prompt's group of completions."""
    out = pd.Series(0.0, index=frame.index)
    for _, index in frame.groupby("prompt_index").groups.items():
        values = torch.tensor(frame.loc[index, column].to_numpy(), dtype=torch.float64)
        out.loc[index] = grpo_advantage(values.unsqueeze(0)).squeeze(0).numpy()
    return out.tolist()


def run_audit(
    model_path: str,
    records: list[dict],
    config: AuditConfig,
    *,
    grid: list[list[dict]] | None = None,
    max_problems: int | None = None,
    batch_size: int = 64,
) -> tuple[pd.DataFrame, dict]:
    """Sample ``config.k`` completions per testbed problem, score and summarise them."""
    from gc2po.evaluation.backends import SamplingConfig, TransformersBackend, render_prompts
    from gc2po.testbed.generator import Problem
    from gc2po.testbed.warmstart import prompt_messages

    problems = [Problem.from_record(r) for r in records[:max_problems]]
    backend = TransformersBackend.from_pretrained(model_path, batch_size=batch_size)
    messages = [prompt_messages(p) for p in problems]
    sampling = SamplingConfig(
        n=config.k,
        temperature=config.temperature,
        top_p=config.top_p,
        max_new_tokens=config.max_new_tokens,
        seed=config.seed,
    )
    generations = backend.generate(messages, sampling)
    prompt_texts = render_prompts(backend.tokenizer, messages)
    frame = score_rows(
        backend.model, backend.tokenizer, problems, prompt_texts, generations, config, grid
    )
    return frame, summarise(frame)
