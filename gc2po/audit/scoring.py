"""Scoring of sampled completions for the reward audit (paper section 3.2, Figure 1c): per
completion, the oracle's final correctness f, process validity p and group, the outcome reward
R_out, GC2PO's S_sta, S_exp, R_cf (means over the trajectory's episodes, read at the run's
``cf_state`` through the trainer's ``state_table``), the paper-form trajectory score r~ and its
group advantage A^; R_cf at every ``cf_state`` choice and for a grid of perturbations.

R_cf and the score are computed with one run's own settings, read from its resolved
``GC2POConfig`` (``args``); only what the audit samples is its own (:class:`AuditSampling`):
nothing here restates a default or re-checks a run setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd
import torch

from gc2po.audit.batch import AuditBatch, cf_at, prepare
from gc2po.audit.signals import episode_frame, signal_audit
from gc2po.audit.stats import summarise
from gc2po.audit.training_stats import BonusTransform
from gc2po.core.advantages import trajectory_token_rewards
from gc2po.core.groups import grpo_advantage
from gc2po.testbed.oracle import grade
from gc2po.training.episode_states import STATE_CHOICES

if TYPE_CHECKING:
    from gc2po.training.config import GC2POConfig

DEFAULT_GRID = (
    [[{"name": "dropout", "p": p}] for p in (0.05, 0.1, 0.2, 0.4)]
    + [[{"name": "gaussian", "sigma": s}] for s in (0.05, 0.1, 0.3, 1.0)]
    + [[{"name": "group_mix", "alpha": a}] for a in (0.1, 0.3, 0.6)]
    + [[{"name": "dropout", "p": 0.1}, {"name": "gaussian", "sigma": 0.1}]]
)


@dataclass(frozen=True)
class AuditSampling:
    """What an audit samples and grades (k completions per problem at the run's temperature);
    the run's own settings (R_cf's, ``lambda_cf``, ``trunc_frac``, ``cf_state``,
    ``max_episodes``) are read from its resolved ``GC2POConfig``, never copied here."""

    k: int = 8  # completions per problem
    top_p: float = 1.0
    max_new_tokens: int = 96
    seed: int = 0
    p_threshold: float = 0.5
    study_draws: int = 5  # independent noise draws per perturbation setting of the study
    # the noisy oracle's levels the signal audit checks (it must measure each rho as set)
    signal_rhos: tuple[float, ...] = (0.07, 0.15, 0.3, 0.6, 1.0)
    # the readout control's validity weights the signal audit mixes (its trained signal)
    readout_weights: tuple[float, ...] = ()

    def __post_init__(self):
        if not (isinstance(self.study_draws, int) and self.study_draws >= 1):
            raise ValueError(f"audit study_draws must be an integer >= 1, got {self.study_draws!r}")


def spec_name(spec: list[dict]) -> str:
    """``dropout(p=0.1)+gaussian(sigma=0.1)``: a perturbation spec as a column label."""

    def one(item: dict) -> str:
        return f"{item['name']}({','.join(f'{k}={v}' for k, v in item.items() if k != 'name')})"

    return "+".join(one(item) for item in spec)


def score_rows(
    model,
    tokenizer,
    problems,
    prompt_texts,
    generations,
    args: GC2POConfig,
    sampling: AuditSampling,
    grid: list[list[dict]] | None = None,
) -> pd.DataFrame:
    """One row per completion with the oracle's f, p, group and every reward (and, for each
    perturbation of ``grid``, that variant's R_cf), scored with the run's settings ``args``."""
    batch = prepare(model, tokenizer, prompt_texts, generations, args, sampling)
    return completion_frame(batch, problems, generations, args, sampling, grid)


def completion_frame(
    batch: AuditBatch,
    problems,
    generations,
    args: GC2POConfig,
    sampling: AuditSampling,
    grid=None,
) -> pd.DataFrame:
    """:func:`score_rows` of a prepared batch."""
    perturbation = args.counterfactual_params().perturbation
    seed = sampling.seed
    _, r_cf_table, r_cf_mean, parts = cf_at(batch, args, args.cf_state, perturbation, seed)
    oracle = [
        grade(problems[g.prompt_index], g.text, p_threshold=sampling.p_threshold)
        for g in generations
    ]
    r_out = torch.tensor([float(o.f) for o in oracle])
    _, traj = trajectory_token_rewards(
        r_out,
        batch.episodes.episode_ids,
        r_cf_table,
        batch.logps,
        batch.mask,
        lambda_cf=args.lambda_cf,
        trunc_frac=args.trunc_frac,
    )
    frame = pd.DataFrame(
        {
            "problem_id": [problems[g.prompt_index].id for g in generations],
            "prompt_index": [g.prompt_index for g in generations],
            "sample_index": [g.sample_index for g in generations],
            "f": [o.f for o in oracle],
            "p": [o.p for o in oracle],
            "group": [o.group for o in oracle],
            "episodes": batch.episodes.num_episodes,
            "fallback": batch.episodes.used_fallback,
            "r_out": r_out.tolist(),
            "s_sta": parts["s_sta"].tolist(),
            "s_exp": parts["s_exp"].tolist(),
            "r_cf": r_cf_mean.tolist(),
            "gc2po_score": traj.float().tolist(),
        }
    )
    frame["gc2po_advantage"] = _group_normalise(frame, "gc2po_score")
    frame["grpo_advantage"] = _group_normalise(frame, "r_out")
    for choice in STATE_CHOICES:  # one noise seed for every choice: they differ by the state only
        frame[f"r_cf@{choice}"] = cf_at(batch, args, choice, perturbation, seed)[2].tolist()
    draws = sampling.study_draws
    for index, spec in enumerate(grid or []):  # every (setting, draw) has its own noise seed
        for draw in range(draws):
            column = f"r_cf[{spec_name(spec)}]#{draw}"
            draw_seed = seed + 1 + index * draws + draw
            frame[column] = cf_at(batch, args, args.cf_state, spec, draw_seed)[2].tolist()
    return frame


def _group_normalise(frame: pd.DataFrame, column: str) -> list[float]:
    """GRPO-style (x - mean) / (std + 1e-4) within each prompt's group of completions."""
    out = pd.Series(0.0, index=frame.index)
    for _, index in frame.groupby("prompt_index").groups.items():
        values = torch.tensor(frame.loc[index, column].to_numpy(), dtype=torch.float64)
        out.loc[index] = grpo_advantage(values.unsqueeze(0)).squeeze(0).numpy()
    return out.tolist()


class AuditResult(NamedTuple):
    """One row per completion (:func:`score_rows`), the summary (``gc2po.audit.stats.summarise``
    and the signal audit under ``"signals"``) and one row per episode (``episode_frame``)."""

    completions: pd.DataFrame
    summary: dict
    episodes: pd.DataFrame


def run_audit(
    model_path: str,
    records: list[dict],
    args: GC2POConfig,
    sampling: AuditSampling,
    *,
    grid: list[list[dict]] | None = None,
    max_problems: int | None = None,
    batch_size: int = 64,
) -> AuditResult:
    """Sample ``sampling.k`` completions per testbed problem at the run's temperature, score
    them with the run's settings ``args`` (its resolved ``GC2POConfig``) and summarise them."""
    from gc2po.evaluation.backends import SamplingConfig, TransformersBackend, render_prompts
    from gc2po.testbed.generator import Problem
    from gc2po.testbed.warmstart import prompt_messages

    problems = [Problem.from_record(r) for r in records[:max_problems]]
    backend = TransformersBackend.from_pretrained(model_path, batch_size=batch_size)
    messages = [prompt_messages(p) for p in problems]
    generations = backend.generate(
        messages,
        SamplingConfig(
            n=sampling.k,
            temperature=args.temperature,  # the one R_cf's q(.|u) uses
            top_p=sampling.top_p,
            max_new_tokens=sampling.max_new_tokens,
            seed=sampling.seed,
        ),
    )
    prompt_texts = render_prompts(backend.tokenizer, messages)
    model, tokenizer = backend.model, backend.tokenizer
    batch = prepare(model, tokenizer, prompt_texts, generations, args, sampling)
    frame = completion_frame(batch, problems, generations, args, sampling, grid)
    episodes = episode_frame(batch, problems, generations, args, sampling, model, tokenizer, cf_at)
    transform = BonusTransform(sampling.k, args.cf_std_floor, args.cf_z_clip)
    signals = signal_audit(episodes, transform=transform)
    return AuditResult(frame, {**summarise(frame), "signals": signals}, episodes)
