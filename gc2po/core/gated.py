"""The gated form of a per-episode signal (``grpo_gated``; beyond the paper): GRPO on the reward
f x g, f the outcome and g a process validity in [0, 1] built from the signal of the completion's
episodes the way the oracle control builds p from the oracle's episode validity
(``gc2po.core.signals.gated_validity``): the mean over the episodes the completion wrote, 0 for a
completion with none.

A signal that is already a share in [0, 1] (the oracle's validity, sibling agreement) enters as
it is. Any other (R_cf, operand sensitivity, answer dependence: scores and log-prob differences
with no fixed scale, of either sign) is first mapped to [0, 1] by its rank in the group:

    q_{k,l} = #{episodes m of the group's other scored completions j != k: s_{j,m} <= s_{k,l}}
              / #{episodes of the group's other scored completions}

the share of its siblings' steps that this step's signal reaches (q = 1 where no other scored
completion of the group has an episode). Why this rule:

- it is scale-free and has no parameter: a strictly increasing transform of the signal (a
  rescaling, a shift, a log) leaves q unchanged, so R_cf's small spread and operand
  sensitivity's nats enter alike and nothing is tuned;
- the group (one prompt's K completions) is what GRPO compares, so the rank asks of the signal
  only what the advantage uses: whose steps look better among these completions;
- each step is compared with the other completions' steps only, never its own completion's: g
  is then non-decreasing in each of the completion's own signals (with its own steps in the
  comparison, raising one of two tied steps lowers the other's rank and can lower their mean; a
  min-max rescaling has the same flaw, and one outlying step sets every other step's value);
- ties count as reached (<=): a signal constant in a group gives every step q = 1, the gated
  reward is the outcome, and the form is GRPO exactly there;
- a NaN signal ranks below every number (it reaches nothing and is reached by everything).

Every scored completion's steps take part, right or wrong: the rule takes no view of what an
outcome value means. An unscored completion (outcome NaN, TRL's convention) takes no part and
keeps its NaN (GRPO gives it advantage 0).

Two gates (``cf_gate``), so that two signals can be compared in the same form:

- ``rank``: g is the mean of q over the episodes the completion wrote (no step count);
- ``value``: g = clamp(sum over its episodes of the episode's value / max(the problem's number of
  steps, episodes written), 0, 1), the oracle control's p: the value is the signal itself for a
  signal in [0, 1] and q for any other. The step count is the testbed oracle's knowledge; a
  signal put through this gate gets it too.

``auto`` keeps each signal's own form: the oracle's value gate (``grpo_fxp``), sibling
agreement's mean of its shares over the episodes written, the rank gate for the rest.
"""

from __future__ import annotations

import torch

from gc2po.core.groups import check_shape
from gc2po.core.signals import gated_validity

GATES = ("auto", "rank", "value")
# the signals already in [0, 1] (a share or a grade), which enter a value gate as they are
UNIT_SIGNALS = ("oracle", "sibling_agreement")


def gate_of(cf_signal: str, cf_gate: str) -> tuple[bool, bool]:
    """(rank, by_steps) of a signal under a gate (module docstring): whether the signal is
    replaced by its share reached q, and whether g divides by the problem's step count."""
    if cf_gate not in GATES:
        raise ValueError(f"cf_gate must be one of {list(GATES)}, got {cf_gate!r}")
    unit = cf_signal in UNIT_SIGNALS
    if cf_gate == "auto":
        return (not unit, cf_signal == "oracle")
    return (cf_gate == "rank" or not unit, cf_gate == "value")


def share_reached(
    signal: torch.Tensor, present: torch.Tensor, group: torch.Tensor, scored: torch.Tensor
) -> torch.Tensor:
    """q_{k,l} of the module docstring.

    signal [B, L] (any real values, NaN ranks lowest), present [B, L] bool or 0/1 (row k has
    episode l), group [B] long (the row's prompt group), scored [B] bool (the row takes part)
    -> [B, L] float64 in [0, 1]: 0 where an episode is absent or its row is not scored, 1 where
    the group has no other scored completion with an episode.
    """
    check_shape("present", present, tuple(signal.shape))
    check_shape("group", group, tuple(signal.shape[:1]))
    check_shape("scored", scored, tuple(signal.shape[:1]))
    values = signal.double()
    values = torch.where(torch.isnan(values), torch.full_like(values, -torch.inf), values)
    taking_part = present.bool() & scored.bool().unsqueeze(-1)  # [B, L]
    out = torch.zeros(values.shape, dtype=torch.float64, device=values.device)
    for g in torch.unique(group):
        rows = (group == g).nonzero(as_tuple=True)[0]
        v, part = values[rows], taking_part[rows]  # [k, L]
        # [k, L, k', L']: step (j, m) of another completion j != k takes part and is reached
        other = ~torch.eye(len(rows), dtype=torch.bool, device=v.device)[:, None, :, None]
        peers = other & part[None, None, :, :]
        reached = (peers & (v[None, None, :, :] <= v[:, :, None, None])).sum((2, 3)).double()
        total = peers.sum((2, 3)).double()
        share = torch.where(total > 0, reached / total.clamp(min=1), torch.ones_like(total))
        out[rows] = torch.where(part, share, torch.zeros_like(share))
    return out


def gated_reward(
    outcome: torch.Tensor,
    signal: torch.Tensor,
    present: torch.Tensor,
    group: torch.Tensor,
    *,
    rank: bool,
    steps: torch.Tensor | None = None,
) -> torch.Tensor:
    """The gated reward f x g of each completion (module docstring).

    outcome [B] (f; NaN or inf: unscored), signal [B, L], present [B, L] bool or 0/1, group [B]
    long; ``rank``: map the signal to [0, 1] by :func:`share_reached` first (a signal not
    already in [0, 1]); else it is used as it is (non-finite values count 0, the sum is clamped
    into [0, 1]); ``steps`` [B] (the value gate): divide by max(steps, episodes) instead of the
    episodes written -> [B] float64: f x g where f is finite, f itself elsewhere. g is computed
    as ``gated_validity`` computes the oracle's p (0 with no episode), so with a 0/1 outcome a
    wrong completion gets 0 and a right one g.
    """
    check_shape("outcome", outcome, tuple(signal.shape[:1]))
    f = outcome.double()
    scored = torch.isfinite(f)
    values = share_reached(signal, present, group, scored) if rank else signal
    rows = len(f)
    if steps is None:
        steps = torch.zeros(rows, dtype=torch.long, device=f.device)
    check_shape("steps", steps, (rows,))
    g = gated_validity(
        values, present, torch.ones(rows, dtype=torch.long, device=f.device), steps.long()
    )
    return torch.where(scored, f * g, f)
