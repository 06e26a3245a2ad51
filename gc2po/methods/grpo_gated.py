"""The gated form on any per-episode signal (beyond the paper): GRPO on f x g, the outcome times a
process validity g of the completion built from its episodes' signal as the oracle control
builds p from the oracle's episode validity (``gc2po.core.gated``). The signal is the run's
``cf_signal`` (default R_cf, read where the corrected form reads it: ``cf_state`` result), so a
pairing of this form with a signal is one line of a workflow config's ``variants``:

    gated_rcf: {method: grpo_gated}
    gated_operand: {method: grpo_gated, trainer: {cf_signal: operand_sensitivity}}
    gated_oracle_rho0.07: {method: grpo_gated, trainer: {cf_signal: oracle, cf_signal_rho: 0.07}}

With ``cf_gate: auto`` (the default) each signal keeps its own gate:

- ``oracle`` (with or without ``cf_signal_rho``): g is the oracle's p_rho, computed by the
  trainer from the problem's step count (``gc2po.training.signals.oracle_signal``, one value per
  completion): the reward is ``grpo_fxp``'s, exactly;
- ``sibling_agreement`` (a share in [0, 1]): g is the mean agreement of the completion's
  episodes, ``grpo_gated_agree``'s reward;
- ``r_cf``, ``operand_sensitivity``, ``answer_dependence``, ``format``, ``readout`` (no fixed
  scale, or a 0/1 mark meant for ranking): each episode's signal is first replaced by the share
  of its siblings' steps it reaches in the group (``gc2po.core.gated.share_reached``:
  scale-free, no parameter, GRPO exactly where the signal is constant in a group).

``cf_gate: rank`` or ``value`` puts any signal through one gate, so two signals can be compared
in the same form: the noised oracle through R_cf's rank gate, R_cf through the oracle's value
gate (which divides by the problem's step count, ``RolloutBatch.steps``; testbed only).

``grpo_fxp`` and ``grpo_gated_agree`` are this form with the oracle and sibling agreement fixed.
"""

from __future__ import annotations

import dataclasses

import torch

from gc2po.core.gated import gate_of, gated_reward
from gc2po.core.signals_policy import episode_presence
from gc2po.methods.base import RolloutBatch, register_method
from gc2po.methods.grpo import grpo_advantages

FIDELITY = (
    "beyond the paper: GRPO on the outcome times the completion's process validity from its "
    "cf_signal (the gated control's form, f x p, with the oracle's validity replaced by the "
    "signal; a signal not in [0, 1] ranked within its group first)"
)


def trajectory_gate(method, config) -> bool:
    """The trainer computes the gated reward itself, one value per completion [B, 1]: the oracle
    through its value gate (it divides by the problem's step count, which the trainer reads)."""
    return (
        method.trajectory_signal
        and config.cf_signal == "oracle"
        and gate_of(config.cf_signal, getattr(config, "cf_gate", "auto")) == (False, True)
    )


def needs_steps(method, config) -> bool:
    """The value gate on a signal other than the oracle: the batch must carry each row's
    problem step count (``RolloutBatch.steps``)."""
    gate = getattr(config, "cf_gate", "auto")
    return method.gated and gate_of(config.cf_signal, gate)[1] and config.cf_signal != "oracle"


@register_method(
    "grpo_gated",
    "GRPO on f x g, g the completion's process validity from the run's cf_signal (R_cf by "
    "default; oracle, noised oracle, answer dependence, sibling agreement, operand sensitivity)",
    display_name="GRPO on f x g (gated)",
    colour="#8ca252",
    order=99,
    # ranks and agreement compare a group's completions, the noised oracle is mixed per group:
    # a group's completions must sit on one process
    needs_episodes=True,
    needs_cf=True,
    trajectory_signal=True,  # the oracle's value gate: its p_rho, one value per completion
    gated=True,
    local_groups=True,
    signal_from_config=True,
    nonnegative_rewards=True,  # f x g <= f: a gate, never a bonus on a negative outcome
    cf_state="result",
    fidelity=FIDELITY,
)
def grpo_gated_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    """GRPO's advantages [B] of the gated reward: the oracle through its value gate, from
    ``batch.r_cf`` [B, 1] (f x p_rho, as the trainer computed it); else f x g from
    ``batch.r_cf`` [B, L] per episode through the run's gate (``cf_gate``)."""
    rewards = batch.rewards
    rank, by_steps = gate_of(config.cf_signal, getattr(config, "cf_gate", "auto"))
    if config.cf_signal == "oracle" and by_steps:
        gated = batch.r_cf[:, 0].to(rewards)
        # a row no reward function scored stays unscored (NaN: advantage 0, out of its group)
        gated = torch.where(torch.isfinite(rewards), gated, rewards)
        return grpo_advantages(dataclasses.replace(batch, rewards=gated), config)
    group = batch.row_index.long() // batch.group_size
    _, sizes = torch.unique(group, return_counts=True)
    if bool((sizes != batch.group_size).any()):
        name = getattr(config, "method", "grpo_gated")
        raise RuntimeError(
            f"method {name!r}: this process holds part of a group (group sizes "
            f"{sizes.tolist()}, group_size {batch.group_size}): the gate compares a group's "
            "completions, so each process must hold whole groups"
        )
    if by_steps and batch.steps is None:
        raise RuntimeError(
            f"cf_gate value on cf_signal {config.cf_signal!r}: the batch carries no problem step "
            "counts (a testbed run's rows do)"
        )
    ids = torch.where(batch.completion_mask.bool(), batch.episode_ids, -1)
    present = episode_presence(ids, batch.r_cf.shape[1])
    gated = gated_reward(
        rewards,
        batch.r_cf,
        present,
        group,
        rank=rank,
        steps=batch.steps.to(group.device) if by_steps else None,
    ).to(rewards)
    advantages, metrics = grpo_advantages(dataclasses.replace(batch, rewards=gated), config)
    scored = torch.isfinite(gated)
    mean = gated[scored].mean().item() if bool(scored.any()) else 0.0
    return advantages, {**metrics, "signal/gated_reward": mean}
