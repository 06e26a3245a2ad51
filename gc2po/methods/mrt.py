"""MRT (Qu et al. 2025, arXiv 2503.07572), the online dense-reward form.

At each episode boundary of a completion (episodes from the same <episode_i> tags GC2PO uses, at
most ``max_episodes``), the meta-prover is the same policy forced to answer: the prefix plus
``force_answer_text`` is continued ``num_stops`` times (``answer_tokens`` tokens each) and J_j is
the mean outcome reward of those answers (J_0: before any episode; the last level is the real
outcome). Episode j earns alpha * (J_j - J_{j-1}) at its last token and the outcome reward is added
at the last token; token advantages are GRPO's process-supervision reward-to-go within the group.

Deviations, disclosed: this is "our construction" of its dense progress reward, close to the
authors' later MRT-online; the meta-prover is sampled at the training temperature; one forced-answer
prompt for every task (configurable).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gc2po.core.positions import episode_end_positions
from gc2po.core.step_baselines import mrt_token_advantages
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method


@dataclass(frozen=True)
class MRTSettings:
    """MRT's settings (``trainer.method_args`` of an ``mrt`` run)."""

    alpha: float = 1.0  # weight of the progress rewards
    num_stops: int = 4  # forced answers per episode boundary
    max_episodes: int = 6  # episodes per completion (later ones merge into the last)
    answer_tokens: int = 16  # tokens generated for a forced answer
    # appended to a cut trajectory to force a final answer (the meta-prover)
    force_answer_text: str = "\n\nTime is up. The final answer is \\boxed{"

    def check(self) -> None:
        for key in ("num_stops", "max_episodes", "answer_tokens"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key} must be >= 1, got {getattr(self, key)!r}")


def boundaries(
    episode_ids: torch.Tensor,
) -> tuple[list[int], list[int], list[int], torch.Tensor, torch.Tensor]:
    """Episode boundaries of each row: before episode 1 (empty prefix, -1) and after episodes
    1..L-1. episode_ids [B,T] -> (rows, slots, prefix ends, num_episodes [B], step ends [B,S])."""
    rows, slots, ends, num_slots = episode_end_positions(episode_ids)
    batch = episode_ids.shape[0]
    step_ends = torch.full((batch, num_slots), -1, dtype=torch.long)
    step_ends[rows.cpu(), slots.cpu()] = ends.cpu()
    num_episodes = (step_ends >= 0).sum(-1)
    boundary_rows, boundary_slots, prefix_ends = [], [], []
    for row in range(batch):
        for slot in range(int(num_episodes[row])):
            boundary_rows.append(row), boundary_slots.append(slot)
            prefix_ends.append(-1 if slot == 0 else int(step_ends[row, slot - 1]))
    return boundary_rows, boundary_slots, prefix_ends, num_episodes, step_ends


@register_method(
    "mrt",
    "MRT: dense progress rewards from forced answers at episode boundaries, "
    "reward-to-go advantages",
    display_name="MRT",
    colour="#17becf",
    order=70,
    needs_episodes=True,
    local_groups=True,
    settings=MRTSettings,
    fidelity="deviation: online dense-reward construction; groups must be local to a process",
)
def mrt_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    settings: MRTSettings = config.method_settings
    rows, slots, prefix_ends, num_episodes, step_ends = boundaries(batch.episode_ids)
    success_flat = forced_answer_success(batch.services, rows, prefix_ends, settings)
    success = torch.zeros(step_ends.shape)
    success[torch.tensor(rows, dtype=torch.long), torch.tensor(slots, dtype=torch.long)] = (
        success_flat.float().cpu()
    )
    r_out = batch.rewards.float().cpu()
    adv, steps = mrt_token_advantages(
        success,
        num_episodes,
        step_ends,
        r_out,
        batch.completion_mask.bool().cpu(),
        group_size=batch.group_size,
        alpha=settings.alpha,
    )
    metrics = advantage_metrics(adv, batch.completion_mask.cpu())
    scored = torch.isfinite(r_out)
    metrics.update(
        {
            "mrt/j0_mean": success[:, 0].mean().item(),
            "mrt/progress_mean": (steps.sum(-1) - torch.nan_to_num(r_out))[scored].mean().item()
            if scored.any()
            else 0.0,
            "mrt/forced_answers": len(rows) * settings.num_stops,
        }
    )
    return adv.to(batch.completion_mask.device), metrics


def forced_answer_success(
    services, rows: list[int], prefix_ends: list[int], settings: MRTSettings
) -> torch.Tensor:
    """The meta-prover: the mean outcome of ``num_stops`` forced answers after each completion
    prefix (``services``: ``gc2po.training.services.RolloutServices``) [len(rows)]."""
    force = services.tokenizer(settings.force_answer_text, add_special_tokens=False)["input_ids"]
    num = settings.num_stops
    _, outcome = services.continue_prefixes(rows, prefix_ends, force, num, settings.answer_tokens)
    return outcome.view(-1, num).mean(-1) if len(rows) else torch.zeros(0)
