"""A corrected GC2PO (a departure from the paper; docs/method.md, "Methods").

The paper's token advantage ranks completions by R_out plus lambda_cf * sum_l R_cf over the
number of tokens (``gc2po.core.advantages``): it rewards short completions with many episodes,
gives every token its trajectory's sign, and is not GRPO at lambda_cf = 0. The additive form
keeps the paper's intent (episodes judged by their counterfactual reward, inside a trajectory
judged by its outcome) without those incentives:

    A_out_k   = (R_out_k - mean_group) / (std_group + 1e-4)            (GRPO, unchanged)
    s_{k,l}   = T_{k,l} / T_k                     (episode l's share of completion k's tokens)
    m, sd     = mean and std of R_cf over the group's episodes, weighted by s (each completion
                weighs 1 in total, however many episodes or tokens it has)
    z_{k,l}   = clamp((R_cf_{k,l} - m) / max(sd, cf_std_floor), -cf_z_clip, cf_z_clip)
    A_{k,t}   = A_out_k + lambda_cf * z_{k,l(t)}

Properties (tests/core/test_corrected.py): lambda_cf = 0 gives GRPO's advantages exactly; the
sequence advantage (token mean of A) does not change when a completion's episodes are made
longer or split into episodes of equal R_cf; |A - A_out| <= lambda_cf * cf_z_clip; an episode's
sign may differ from its trajectory's. The std floor keeps Monte-Carlo noise of R_cf from being
blown up to unit advantages in groups whose R_cf barely varies (the default 0.1, and why:
``gc2po.methods.gc2po_corrected``).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from gc2po.core.groups import Gather, check_episode_inputs, check_shape, group_normalised


class CorrectedAdvantages(NamedTuple):
    token_advantages: torch.Tensor  # [B, T] float32, 0 where masked or unscored
    outcome_advantages: torch.Tensor  # [B] GRPO's A_out (float64)
    sequence_advantages: torch.Tensor  # [B] token mean of A over the completion (float64)
    signal_std: torch.Tensor  # [B] sd of the row's group (float64): the floor binds where below


def _weighted_stat(grouped: torch.Tensor, which: str) -> torch.Tensor:
    """[G, K, 2, Lmax] (token shares, R_cf) -> [G, K]: the group's share-weighted mean (or std)
    of R_cf, repeated for each of its K rows."""
    share, value = grouped[:, :, 0], grouped[:, :, 1]
    total = share.sum((1, 2)).clamp(min=1e-12)  # number of completions with at least one token
    mean = (share * value).sum((1, 2)) / total
    if which == "std":
        mean = (
            ((share * (value - mean[:, None, None]).pow(2)).sum((1, 2)) / total).clamp(min=0).sqrt()
        )
    return mean.unsqueeze(1).expand(-1, grouped.shape[1])


def episode_shares(tokens_per_episode: torch.Tensor) -> torch.Tensor:
    """[B, Lmax] tokens of each episode -> [B, Lmax] float64 s_{k,l} = T_{k,l} / T_k (0 in a row
    with no episode token)."""
    tokens = tokens_per_episode.double()
    return tokens / tokens.sum(-1, keepdim=True).clamp(min=1)


def signal_z_scores(
    signal: torch.Tensor,
    share: torch.Tensor,
    row_index: torch.Tensor,
    group_size: int,
    *,
    cf_std_floor: float,
    cf_z_clip: float,
    gather: Gather | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """z_{k,l} of the module docstring: signal [B, Lmax] (finite), share [B, Lmax] (from
    :func:`episode_shares`), row_index [B] -> (z [B, Lmax] float64, the group's sd [B]). The one
    transformation of a per-episode signal that training applies; the signal audit calls it too
    (``gc2po.audit.training_stats``), so the two cannot drift apart."""
    signal = signal.double()
    pairs = torch.stack([share.double(), signal], dim=1)  # [B, 2, Lmax]
    mean, std = (
        group_normalised(
            pairs,
            row_index,
            group_size,
            gather=gather,
            estimator=lambda grouped, w=which: _weighted_stat(grouped, w),
        )
        for which in ("mean", "std")
    )  # [B] each
    z = ((signal - mean.unsqueeze(-1)) / std.clamp(min=cf_std_floor).unsqueeze(-1)).clamp(
        -cf_z_clip, cf_z_clip
    )
    return z, std


def additive_token_advantages(
    r_out: torch.Tensor,
    episode_ids: torch.Tensor,
    r_cf: torch.Tensor,
    mask: torch.Tensor,
    *,
    group_size: int,
    lambda_cf: float,
    cf_std_floor: float,
    cf_z_clip: float,
    row_index: torch.Tensor | None = None,
    gather: Gather | None = None,
) -> CorrectedAdvantages:
    """The additive corrected GC2PO (module docstring).

    Shapes: r_out [B] (NaN = unscored: advantage 0, left out of its group's statistics),
    episode_ids [B,T] (-1 = no episode), r_cf [B,Lmax] (R_cf per episode; non-finite -> 0),
    mask [B,T] (bool or 0/1 numbers) -> CorrectedAdvantages. ``row_index`` [B] and ``gather`` as
    in :func:`gc2po.core.advantages.gc2po_token_advantages` (groups split over processes).
    """
    batch, _ = check_episode_inputs(r_out, episode_ids, r_cf, mask)
    if row_index is None:
        row_index = torch.arange(batch, device=r_out.device)

    scored = torch.isfinite(r_out)
    tokens = mask.bool() & scored.unsqueeze(-1)  # the tokens GRPO gives A_out
    in_episode = tokens & (episode_ids >= 0)
    ep = episode_ids.long().clamp(min=0)
    r_cf = torch.nan_to_num(r_cf.double(), nan=0.0, posinf=0.0, neginf=0.0)
    outcome = group_normalised(
        r_out.double(), row_index, group_size, gather=gather
    )  # [B], 0 if unscored

    tokens_per_ep = torch.zeros_like(r_cf).scatter_add_(-1, ep, in_episode.double())  # [B, Lmax]
    share = episode_shares(tokens_per_ep)
    z, std = signal_z_scores(
        r_cf,
        share,
        row_index,
        group_size,
        cf_std_floor=cf_std_floor,
        cf_z_clip=cf_z_clip,
        gather=gather,
    )

    bonus = torch.where(
        in_episode, lambda_cf * z.gather(-1, ep), torch.zeros_like(z.gather(-1, ep))
    )
    adv = torch.where(tokens, outcome.unsqueeze(-1) + bonus, torch.zeros_like(bonus))
    sequence = outcome + lambda_cf * (share * z).sum(-1)
    return CorrectedAdvantages(
        adv.float(), outcome, torch.where(scored, sequence, torch.zeros_like(sequence)), std
    )


def floor_binding_share(
    signal_std: torch.Tensor,
    in_group: torch.Tensor,
    row_index: torch.Tensor,
    group_size: int,
    cf_std_floor: float,
) -> torch.Tensor:
    """How often the std floor binds: the share of groups whose signal std is below
    ``cf_std_floor`` (there the floor, not the signal's spread, divides the z-score).

    signal_std [B] (``CorrectedAdvantages.signal_std``, the row's group's), in_group [B] bool (the
    row is scored and has an episode token: it enters its group's statistics), row_index [B] ->
    0-dim float64 over the groups with such a row (0 where there is none), each group counted
    once. The signal audit's ``floor_binds`` (``gc2po.audit.training_stats``) on a training batch.
    """
    check_shape("in_group", in_group, tuple(signal_std.shape))
    check_shape("row_index", row_index, tuple(signal_std.shape))
    counted = in_group.bool()
    if not bool(counted.any()):
        return torch.zeros((), dtype=torch.float64)
    group = row_index.long()[counted] // group_size
    groups, first = torch.unique(group, return_inverse=True)
    below = torch.zeros(len(groups), dtype=torch.bool, device=signal_std.device)
    below[first] = signal_std[counted] < cf_std_floor  # one std per group: any row's will do
    return below.double().mean()


class FlipLambda(NamedTuple):
    lambda_flip: torch.Tensor  # [B] float64: lambda_cf at which the sequence advantage reaches 0
    flips: torch.Tensor  # [B] bool: the row's bonus is negative (else lambda_flip is 0, unused)
    outcome_advantages: torch.Tensor  # [B] GRPO's A_out (float64)
    bonus: torch.Tensor  # [B] the sequence bonus per unit lambda_cf: sum_l s_l z_l (float64)


def flip_lambda(
    r_out: torch.Tensor,
    episode_ids: torch.Tensor,
    signal: torch.Tensor,
    mask: torch.Tensor,
    *,
    group_size: int,
    cf_std_floor: float,
    cf_z_clip: float,
) -> FlipLambda:
    """Per completion, the lambda_cf at which the additive form's bonus of ``signal`` brings its
    sequence advantage to 0 (the calibration of lambda_cf for a signal, e.g. the oracle's plain
    episode validity: the lambda at which it flips a correct copy of a bet).

    The sequence advantage is A_out + lambda_cf * b with b = sum_l s_l z_l, the token-share
    weighted bonus of :func:`additive_token_advantages` at lambda_cf = 1 (z, its floor and clip,
    do not depend on lambda_cf), so a row with A_out > 0 and b < 0 reaches 0 at A_out / -b; a row
    with A_out <= 0 and b < 0 is at or below 0 from lambda_cf = 0 (lambda_flip 0); a row with
    b >= 0 never flips (``flips`` False, lambda_flip 0). Shapes as in
    :func:`additive_token_advantages` (signal [B, Lmax] in place of r_cf); single process.
    """
    result = additive_token_advantages(
        r_out,
        episode_ids,
        signal,
        mask,
        group_size=group_size,
        lambda_cf=1.0,
        cf_std_floor=cf_std_floor,
        cf_z_clip=cf_z_clip,
    )
    outcome = result.outcome_advantages
    bonus = result.sequence_advantages - outcome  # 0 for an unscored row
    flips = bonus < 0
    ratio = outcome.clamp(min=0) / (-bonus).clamp(min=1e-300)
    return FlipLambda(torch.where(flips, ratio, torch.zeros_like(ratio)), flips, outcome, bonus)
