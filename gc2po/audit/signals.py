"""The audit of the quantity the corrected GC2PO trains on: per episode, each candidate signal
(R_cf at every ``cf_state``, the answer dependence, the noisy oracle at each audited rho)
against the oracle's episode validity, within problems and given f.

The statistic, per signal: within each problem's group of completions (the k an audit samples,
as a training group), the correlation of the signal with episode validity after removing the
mean of each (problem, f) cell from both (``gc2po.core.signals.within_group_correlation``, each
episode counting once); the problems where it is defined (validity and signal both vary within
f) are averaged, weighted by their episodes. This is what the noise mixing of the oracle
control sets to rho in every group, so the noisy oracle must come out at its nominal rho: the
check that the audit measures what training uses. The problem-demeaned correlation compares
episodes of one problem as the group z-score of training does; pooling episodes over problems
would also compare problems.

The 95% CI resamples problems (1,000 bootstrap resamples of the problems where the statistic is
defined, percentile interval): a problem's episodes share a prompt and a policy sample, so
problems, not episodes, are the independent units; the statistic is a weighted mean of bounded,
skewed per-problem correlations, which a t-interval would treat as normal.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import torch

from gc2po.audit.cue_view import cue_view
from gc2po.audit.training_stats import BonusTransform, training_quantity_correlation
from gc2po.audit.within import weighted_mean, within_problem
from gc2po.core.signals import mix_readout
from gc2po.reporting.names import BASE_NAME, oracle_column, readout_column
from gc2po.testbed.mechanism import cue_fields
from gc2po.testbed.oracle import grade
from gc2po.training.episode_states import STATE_CHOICES, flatten, state_table
from gc2po.training.signals import (
    answer_dependence,
    answer_token_logps,
    noisy_oracle,
    oracle_validity,
    present_episodes,
    readout_direction,
)
from gc2po.training.signals_policy import agreement_signal, format_signal, operand_signal


def episode_tokens(episodes, mask: torch.Tensor, width: int) -> torch.Tensor:
    """[N, width] the number of completion tokens of each episode (as the corrected advantage
    counts them: real tokens with an episode id)."""
    ids = episodes.episode_ids
    inside = mask.bool() & (ids >= 0)
    counts = torch.zeros(ids.shape[0], max(width, int(ids.max()) + 1 if ids.numel() else 1))
    counts.scatter_add_(-1, ids.long().clamp(min=0), inside.float())
    return counts[:, :width]


def episode_frame(
    batch, problems, generations, args, sampling, model, tokenizer, cf_at
) -> pd.DataFrame:
    """One row per (completion, episode) of a prepared audit batch
    (``gc2po.audit.batch.AuditBatch``): its problem, f and validity by the oracle, and every
    signal, computed by the trainer's functions (``gc2po.training.signals``; ``cf_at`` is
    ``gc2po.audit.batch.cf_at``) with the run's settings ``args`` (its ``GC2POConfig``) and the
    audit's ``sampling`` (``gc2po.audit.scoring.AuditSampling``)."""
    episodes = batch.episodes
    row_problems = [problems[g.prompt_index] for g in generations]
    validity, f = oracle_validity(row_problems, episodes, args.max_episodes)
    present = present_episodes(episodes, validity.shape[1])
    rows, slots = present.nonzero(as_tuple=True)
    columns = {
        "problem_id": [row_problems[r].id for r in rows.tolist()],
        "prompt_index": [generations[r].prompt_index for r in rows.tolist()],
        "sample_index": [generations[r].sample_index for r in rows.tolist()],
        "episode": slots.tolist(),
        "f": f[rows].tolist(),
        "valid": validity[rows, slots].tolist(),
        # the episode's tokens, which weigh it in training's z-score (gc2po.audit.training_stats)
        "tokens": episode_tokens(episodes, batch.mask, present.shape[1])[rows, slots].tolist(),
    }
    perturbation = args.counterfactual_params().perturbation
    for choice in STATE_CHOICES:  # the noise seed of the completion audit's columns
        table = cf_at(batch, args, choice, perturbation, sampling.seed)[1]  # [N, its Lmax]
        # as in training, an episode without a state (no token of its own) holds R_cf 0
        wide = torch.zeros(present.shape, dtype=table.dtype)
        wide[:, : table.shape[1]] = table[:, : present.shape[1]]
        columns[f"r_cf@{choice}"] = wide[rows, slots].tolist()
    logps_of = functools.partial(
        answer_token_logps,
        model,
        pad_id=tokenizer.pad_token_id,
        temperature=args.temperature,
        batch_size=64,
    )
    table = answer_dependence(logps_of, batch.prompt_ids, batch.completion_ids, episodes)
    columns["answer_dependence"] = table[rows, slots].tolist()
    # the signals from the policy alone (beyond the paper), as training computes them
    agreement, _ = agreement_signal(episodes, batch.rows, sampling.k)
    columns["sibling_agreement"] = agreement[rows, slots].tolist()
    operand, written = operand_signal(
        logps_of,
        lambda text: tokenizer(text, add_special_tokens=False)["input_ids"],
        lambda token: tokenizer.decode([token]),
        batch.prompt_ids,
        episodes,
    )
    columns["operand_sensitivity"] = operand[rows, slots].tolist()
    columns["result_logprob"] = written[rows, slots].tolist()
    for index, rho in enumerate(sampling.signal_rhos):
        seed = sampling.seed + 7919 * (index + 1)  # one noise draw per level
        for every_group in (False, True):
            table = noisy_oracle(
                validity, present, f, batch.rows, sampling.k, rho, seed, args.max_episodes,
                every_group,
            )  # fmt: skip
            columns[oracle_column(rho, every_group)] = table[rows, slots].tolist()
    # the controls of the form-matched study: the format mark and the readout of R_cf's state
    columns["format"] = format_signal(episodes)[0][rows, slots].tolist()
    readout = state_readout_table(batch, args, sampling.seed, present.shape)
    columns["readout"] = readout[rows, slots].tolist()
    for weight in sampling.readout_weights:  # the control as a run of that weight trains on it
        mixed = mix_readout(readout, validity, present, batch.rows // sampling.k, weight)
        columns[readout_column(weight)] = mixed[rows, slots].tolist()
    # what the cue view reads (gc2po.audit.cue_view): the problem's bet, the completion's copy
    # of it, and whether the episode parses as an equation (operand sensitivity probes only those)
    copies = [
        bool(cue_fields(problem, text, grade(problem, text, max_episodes=args.max_episodes).p)
             ["copies_bet"])
        for problem, text in zip(row_problems, episodes.texts)
    ]  # fmt: skip
    columns["cued"] = [row_problems[r].cue is not None for r in rows.tolist()]
    columns["copy"] = [copies[r] for r in rows.tolist()]
    columns["equation"] = [bool(value) for value in columns["format"]]
    return pd.DataFrame(columns)


def state_readout_table(batch, args, seed: int, shape) -> torch.Tensor:
    """[N, Lmax] the readout control's raw part: the cosine of each episode's final-norm state at
    the run's ``cf_state`` (where R_cf reads it) with the direction of training seed ``seed``
    (``gc2po.training.signals.readout_direction``); 0 where an episode has no state."""
    table = state_table(batch.episodes, batch.ids, args.cf_state, batch.special)
    rows, slots, positions, _ = flatten(table)
    out = torch.zeros(shape, dtype=torch.float64)
    if rows.numel():
        states = batch.states[rows, positions].double()
        direction = readout_direction(states.shape[-1], seed)
        cosine = torch.nn.functional.cosine_similarity(states, direction[None], -1)
        keep = slots < shape[1]
        out[rows[keep], slots[keep]] = cosine[keep]
    return out


SIGNAL_COLUMNS = (
    "r_cf@",
    "answer_dependence",
    "sibling_agreement",
    "operand_sensitivity",
    "result_logprob",
    "oracle(",
    "oracle_every(",
    "format",
    "readout",
)
# signals whose rho and training quantity are also read over the equation steps alone (operand
# sensitivity probes an equation's operand; an episode without one scores 0): "<column>|equation"
EQUATION_ONLY = ("operand_sensitivity",)
EQUATION_SUFFIX = "|equation"


def signal_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.startswith(SIGNAL_COLUMNS)]


def signal_audit(
    frame: pd.DataFrame,
    num_resamples: int = 1000,
    seed: int = 0,
    transform: BonusTransform | None = None,
) -> list[dict]:
    """For every signal column of an episode frame: the within-problem correlation with validity
    given f (``rho``) with its 95% bootstrap CI over problems, the same without conditioning on
    f (``rho_unconditional``), the problems where ``rho`` is defined and the episodes; with
    ``transform`` (the run's group size, std floor and clip) also the statistics of the bonus
    training adds (``gc2po.audit.training_stats.training_quantity_correlation``: ``tq``,
    ``step_matched``, their CIs, ``rms_z``, ``aligned``, ``floor_binds``, ``groups``)."""
    out = []
    for column in signal_columns(frame):
        out.append(_signal_row(frame, column, column, num_resamples, seed, transform))
        if column in EQUATION_ONLY and "equation" in frame.columns:
            steps = frame[frame.equation.astype(bool)]
            out.append(
                _signal_row(steps, column, column + EQUATION_SUFFIX, num_resamples, seed, transform)
            )
    return out


def _signal_row(frame, column, name, num_resamples, seed, transform) -> dict:
    """One signal's row of :func:`signal_audit` (``name``: what the row calls it)."""
    rng = np.random.default_rng(seed)
    corr, episodes = within_problem(frame, column)
    defined = np.flatnonzero(np.isfinite(corr))
    boot = [
        weighted_mean(corr[chosen], episodes[chosen])
        for chosen in (
            defined[rng.integers(0, len(defined), len(defined))] for _ in range(num_resamples)
        )
    ] if len(defined) else []  # fmt: skip
    low, high = np.quantile(boot, [0.025, 0.975]).tolist() if boot else [float("nan")] * 2
    return {
        "signal": name,
        "rho": weighted_mean(corr, episodes),
        "ci_low": low,
        "ci_high": high,
        "rho_unconditional": weighted_mean(*within_problem(frame, column, given_f=False)),
        "problems": int(len(defined)),
        "episodes": int(len(frame)),
        **(
            training_quantity_correlation(
                frame, column, transform, num_resamples=num_resamples, seed=seed
            )
            if transform is not None
            else {}
        ),
        **(
            cue_view(frame, column, transform, num_resamples=num_resamples, seed=seed)
            if transform is not None
            else {}
        ),
    }


def signal_label(column: str) -> str:
    """A signal column's name in tables."""
    if column.endswith(EQUATION_SUFFIX):
        return signal_label(column.removesuffix(EQUATION_SUFFIX)) + ", equation steps only"
    if column.startswith("r_cf@"):
        return f"R_cf at {column.removeprefix('r_cf@')}"
    if column.startswith("oracle(rho="):
        return f"noisy oracle, rho = {column[len('oracle(rho=') : -1]} (check)"
    if column.startswith("readout(w="):
        return f"readout of R_cf's state + {column[len('readout(w=') : -1]} x validity (control)"
    if column.startswith("oracle_every(rho="):
        return f"noisy oracle in every group, rho = {column[len('oracle_every(rho=') : -1]}"
    return {
        "answer_dependence": "answer dependence (beyond the paper)",
        "sibling_agreement": "sibling agreement (beyond the paper)",
        "operand_sensitivity": "operand sensitivity (beyond the paper)",
        "result_logprob": "written result's log-prob (beyond the paper)",
        "format": "format mark (control)",
        "readout": "readout of R_cf's state, unmixed (control)",
    }.get(column, column)


def signal_table(audits: list[tuple[str, str, list[dict]]]) -> pd.DataFrame:
    """One row per (audited model, point of training, signal) from the ``"signals"`` of audit
    summaries: ``audits`` holds (model name, step: "end", "0" or a step, summary["signals"])."""
    return pd.DataFrame(
        [
            {
                **row,
                "model": model,
                "step": step,
                "signal": signal_label(row["signal"]),
                "column": row["signal"],
            }  # fmt: skip
            for model, step, rows in audits
            for row in rows
        ],
        columns=[
            "model",
            "step",
            "signal",
            "rho",
            "ci_low",
            "ci_high",
            "rho_unconditional",
            "problems",
            "episodes",
            *TRAINING_COLUMNS,
            *CUE_COLUMNS,
            "column",
        ],  # fmt: skip
    )


TRAINING_COLUMNS = (
    "tq",
    "tq_ci_low",
    "tq_ci_high",
    "rms_z",
    "aligned",
    "step_matched",
    "step_matched_ci_low",
    "step_matched_ci_high",
    "floor_binds",
    "groups",
)


# gc2po.audit.cue_view's statistics (absent from audits written before it: NaN)
CUE_COLUMNS = (
    "copy_gap",
    "copy_gap_ci_low",
    "copy_gap_ci_high",
    "copy_gap_problems",
    "rho_cued",
    "rho_uncued",
    "rho_sd",
)


def _interval(value, low, high) -> str:
    if not np.isfinite(value):
        return "n/a"
    return f"{value:+.3f} [{low:+.3f}, {high:+.3f}]"


def _number(value, form: str) -> str:
    return format(value, form) if np.isfinite(value) else "n/a"


def signal_markdown(table: pd.DataFrame, caption: str) -> str:
    """The signal audit table as markdown, under ``caption``."""
    lines = [
        caption,
        "",
        "| model | step | signal | rho given f [95% CI] | rho (not given f) | problems "
        "| episodes | training quantity [95% CI] | rms z | aligned | step-matched [95% CI] "
        "| floor binds | copy - derived z [95% CI] | rho given f: cued / uncued |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        rho = (
            f"{row.rho:+.3f} [{row.ci_low:+.3f}, {row.ci_high:+.3f}]"
            if np.isfinite(row.rho)
            else "n/a (validity constant given f in every problem)"
        )
        unconditional = (
            f"{row.rho_unconditional:+.3f}" if np.isfinite(row.rho_unconditional) else "n/a"
        )
        lines.append(
            f"| {row.model} | {row.step} | {row.signal} | {rho} | {unconditional} | "
            f"{row.problems} | {row.episodes} | {_interval(row.tq, row.tq_ci_low, row.tq_ci_high)} "
            f"| {_number(row.rms_z, '.3f')} | {_number(row.aligned, '+.3f')} "
            f"| {_interval(row.step_matched, row.step_matched_ci_low, row.step_matched_ci_high)} "
            f"| {_number(row.floor_binds, '.0%')} | {_cue_cells(row)} |"
        )
    return "\n".join(lines) + "\n"


def _cue_cells(row) -> str:
    """The cue view's two cells (``copy - derived z`` with its problems, ``cued / uncued``)."""
    gap = _interval(row.copy_gap, row.copy_gap_ci_low, row.copy_gap_ci_high)
    if np.isfinite(row.copy_gap):
        gap += f" ({int(row.copy_gap_problems)})"
    return f"{gap} | {_number(row.rho_cued, '+.3f')} / {_number(row.rho_uncued, '+.3f')}"


def trained_signal_table(table: pd.DataFrame, trained: dict[str, str]) -> pd.DataFrame:
    """Each audited run's own signal over its training: for every run in ``trained`` (its name in
    ``table`` -> the signal column it trains on, e.g. ``"operand_sensitivity"``), the base model's
    row of that column (step 0) and the run's rows of it (its checkpoints in step order, the end
    last), so a signal that decays under its own training shows as a falling column; a signal
    also read over equation steps alone (``EQUATION_ONLY``) adds those rows the same way.
    ``table`` is :func:`signal_table`'s; runs not in it are left out."""
    rows = []
    for run, signal in trained.items():
        extra = [signal + EQUATION_SUFFIX] if signal in EQUATION_ONLY else []
        for column in [signal, *extra]:
            own = table[table.column == column].assign(run=run)
            base = own[own.model == BASE_NAME]
            steps = own[own.model == run].sort_values("step", key=lambda s: s.map(_step_order))
            if len(steps):
                rows.append(pd.concat([base, steps]))
    if not rows:
        return table.iloc[:0].assign(run=[])
    return pd.concat(rows, ignore_index=True)


def _step_order(step: str) -> float:
    return float("inf") if step == "end" else float(step)


def trained_signal_markdown(table: pd.DataFrame, caption: str) -> str:
    """:func:`trained_signal_table` as markdown, under ``caption``."""
    lines = [
        caption,
        "",
        "| run | signal | checkpoint | rho given f [95% CI] | training quantity [95% CI] "
        "| step-matched [95% CI] | rms z | aligned | floor binds | copy - derived z [95% CI] "
        "| rho given f: cued / uncued |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        checkpoint = (
            "base"
            if row.model == BASE_NAME
            else ("end" if row.step == "end" else f"step {row.step}")
        )
        lines.append(
            f"| {row.run} | {row.signal} | {checkpoint} "
            f"| {_interval(row.rho, row.ci_low, row.ci_high)} "
            f"| {_interval(row.tq, row.tq_ci_low, row.tq_ci_high)} "
            f"| {_interval(row.step_matched, row.step_matched_ci_low, row.step_matched_ci_high)} "
            f"| {_number(row.rms_z, '.3f')} | {_number(row.aligned, '+.3f')} "
            f"| {_number(row.floor_binds, '.0%')} | {_cue_cells(row)} |"
        )
    return "\n".join(lines) + "\n"


TRAINED_SIGNAL_CAPTION = (
    "Each audited run's own signal (the per-episode signal it trains on) on the base model, "
    "at its kept checkpoint(s) and at the end of training, from tables/signal_audit.md (the "
    "same statistics: rho given f, the training quantity, the step-matched correlation, rms z, "
    "aligned = training quantity x rms z, and the share of groups where the std floor binds; "
    "every model scored with one run's settings, audit.reward_run; the copy - derived z among "
    "right answers of problems with a bet, and rho given f over problems with and without a "
    "bet). A signal that decays under its own training reads lower at the end than on the base "
    "model."
)


SIGNAL_CAPTION = (
    "Within-problem correlation of each per-episode signal with the oracle's episode validity "
    "given f (signal and validity demeaned within each problem's f = 0 and f = 1 completions; "
    "per-problem correlations averaged over the problems where both vary, weighted by their "
    "episodes), with a 95% bootstrap CI over problems; the noisy oracle rows must read their "
    "nominal rho (they check that the within-problem statistic measures what the noise mixing "
    "sets). Training quantity: the correlation of the bonus training adds (the signal z-scored "
    "over each group's episodes weighted by their share of their completion's tokens, with the "
    "run's std floor and clip) with validity demeaned within the group, share-weighted, pooled "
    "over every group; rms z: the bonus's weighted root mean square per unit lambda_cf (the "
    "outcome advantage's std is 1); aligned: training quantity x rms z, the part of the bonus "
    "along validity; step-matched: the same correlation with bonus and validity demeaned within "
    "each (problem, step index, f) cell (a signal that knows only which step it is reads about 0); "
    "floor binds: the share of groups whose signal std is below the floor. Copy - derived z: "
    "among the right answers of each problem with a bet, the mean bonus z of the completions "
    "that copy the bet minus that of those that derive their answer, averaged over the problems "
    "(count in parentheses) that have both (0: the signal rewards a right copy as much as GRPO "
    "does; below 0 it favours the derivation); rho given f over the problems with a bet and "
    "those without. An equation-steps-only row reads its signal over the episodes that parse "
    "as an equation. CIs resample problems."
)
