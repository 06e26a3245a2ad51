"""A scored generation batch -> the method's advantages: the one path from TRL's rollout to the
loss, with explicit inputs and outputs.

The trainer builds a :class:`~gc2po.methods.base.RolloutBatch` (rewards, masks, episodes,
states) and calls :func:`score`; for methods that need R_cf it passes :func:`counterfactual_table`
bound to its model. The reward audit reads R_cf through :func:`counterfactual_table` too, so the
audit and training score the same states the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch

from gc2po.core.counterfactual import (
    CounterfactualParams,
    CounterfactualReward,
)
from gc2po.methods.base import Method, MethodOutput, RolloutBatch
from gc2po.training.episodes import EpisodeBatch, EpisodeStates

MAX_EPISODES_PER_ROW = 4096  # keys row * 4096 + slot order episodes across processes
GatherKeyed = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
CounterfactualFn = Callable[[RolloutBatch], tuple[torch.Tensor, dict[str, float]]]


@dataclass(frozen=True)
class Scored:
    """What a method made of a batch: advantages [B] or [B, T], metrics to log, and per-row
    tensors its own loss reads (GVPO, GCPO; empty for the others)."""

    advantages: torch.Tensor
    metrics: dict[str, float]
    loss_inputs: Mapping[str, torch.Tensor] = field(default_factory=dict)


def score(
    method: Method, batch: RolloutBatch, args, counterfactual: CounterfactualFn | None = None
) -> Scored:
    """The method's advantages of ``batch``; for a method that needs R_cf, ``counterfactual``
    (``batch -> (r_cf [B, Lmax], metrics)``) fills ``batch.r_cf`` first."""
    metrics: dict[str, float] = {}
    if method.needs_cf:
        if counterfactual is None:
            raise ValueError(f"method {method.name!r} needs R_cf: pass its counterfactual scorer")
        r_cf, metrics = counterfactual(batch)
        batch = dataclasses.replace(batch, r_cf=r_cf)
    output = MethodOutput(*method.advantages(batch, args))
    mask = batch.completion_mask
    return Scored(
        output.advantages.to(mask.device), {**metrics, **output.metrics}, dict(output.loss_inputs)
    )


def episode_counterfactuals(
    states: EpisodeStates,
    row_index: torch.Tensor,
    group_size: int,
    params: CounterfactualParams,
    lm_head,
    *,
    generator: torch.Generator,
    gather_keyed: GatherKeyed | None = None,
) -> tuple[CounterfactualReward, dict[str, float]]:
    """S_sta, S_exp and R_cf [E] of this process's episodes (in ``states`` order), and their
    means over the whole generation batch (the logged metrics).

    ``row_index`` [B] places each row in the generation batch of all processes (K completions of
    a prompt consecutive, so row // K is the prompt group); ``lm_head`` = (weight [V, d], bias
    [V] | None); ``gather_keyed`` (key [E], u [E, d]) -> the same from every process (None: one
    process). Every process scores the episodes of the whole generation batch in
    generation-batch order with the same noise: the result depends neither on how rows are
    shuffled into micro-batches nor on how many processes share the batch, and ``group_mix``
    sees siblings on other processes.
    """
    key = row_index[states.rows] * MAX_EPISODES_PER_ROW + states.slots
    all_key, all_u = (key, states.u) if gather_keyed is None else gather_keyed(key, states.u)
    order = all_key.argsort()
    all_key, all_u = all_key[order], all_u[order]
    weight, bias = lm_head
    group = torch.div(all_key, MAX_EPISODES_PER_ROW * group_size, rounding_mode="floor")
    cf = params.reward(all_u, weight, lm_head_bias=bias, generator=generator, group_index=group)
    metrics = {
        "gc2po/s_sta": cf.s_sta.mean().item(),
        "gc2po/s_exp": cf.s_exp.mean().item(),
        "gc2po/r_cf": cf.r_cf.mean().item(),
    }
    local = torch.searchsorted(all_key, key)  # this process's episodes in the sorted batch
    return CounterfactualReward(*(values[local] for values in cf)), metrics


def counterfactual_table(
    states: EpisodeStates,
    row_index: torch.Tensor,
    num_rows: int,
    group_size: int,
    params: CounterfactualParams,
    lm_head,
    *,
    generator: torch.Generator,
    gather_keyed: GatherKeyed | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """R_cf per (row, episode) [num_rows, Lmax] (0 where a row has no such episode) and the
    batch means of :func:`episode_counterfactuals`, whose arguments it takes."""
    cf, metrics = episode_counterfactuals(
        states,
        row_index,
        group_size,
        params,
        lm_head,
        generator=generator,
        gather_keyed=gather_keyed,
    )
    return states.table(cf.r_cf.to(row_index.device), num_rows), metrics


def perturbation_seed(seed: int, global_step: int, micro_step: int) -> int:
    """The noise seed of R_cf at one micro-step: the same on every process, and a resumed run
    draws the same noise."""
    return (seed * 1_000_003 + global_step) * 1009 + micro_step


def episode_metrics(episodes: EpisodeBatch, mask: torch.Tensor) -> dict[str, float]:
    """Formatting compliance (the paper's) and episode statistics of a segmented batch
    (``mask`` [B, T] bool)."""
    rows = max(1, len(episodes.num_episodes))
    return {
        "segmentation/fallback_rate": sum(episodes.used_fallback) / rows,
        "episodes/mean_count": sum(episodes.num_episodes) / rows,
        "episodes/mean_tokens": mask.sum().item() / max(1, sum(episodes.num_episodes)),
    }
