"""Per-episode signals other than R_cf for the corrected GC2PO (``cf_signal``): the math only.

``mix_to_correlation`` turns the oracle's episode validity into a signal whose correlation with
validity is a chosen rho (the testbed's dose-response control). The correlation is taken
within a group (one prompt's K completions) and given f: validity and signal are compared after
removing each (group, f) cell's mean, which is what the signal audit measures
(``gc2po.audit.signals``) and what the corrected form can add to GRPO's outcome advantage (the
outcome already carries f). Per group of episodes (each episode counts once):

    v_r = validity - mean over the episode's (group, f) cell           (within-f validity)
    z   = v_r / std_group(v_r)                                        (0 if v_r is constant)
    e   = noise, cell-demeaned, made orthogonal to z and scaled to unit std over the group
    s   = rho * z + sqrt(1 - rho^2) * e

so corr_group(s, v_r) = rho exactly wherever v_r varies. A group whose validity is constant
within each f cell (all episodes valid, or all invalid, ...) has z = 0: its signal is the noise
part sqrt(1 - rho^2) * e alone (a real signal is noisy there too; the corrected form's z-score
scales it up to unit std like any other group's), and 0 at rho = 1 (no bonus).

``answer_logprob_drop`` is the answer-dependence signal (beyond the paper; cf. Lanham et al.
2023, "Measuring Faithfulness in Chain-of-Thought Reasoning"): how much the log-probability of
the completion's final answer falls when one episode is removed from the context.
"""

from __future__ import annotations

import math

import torch

from gc2po.core.groups import check_shape

CONSTANT = 1e-9  # a std at or below this is a constant (no correlation is defined)
LOGP_FLOOR = -1e4  # log-probs are clamped here: an answer made impossible stays finite


def _cell_mean(values: torch.Tensor, cell: torch.Tensor, cells: int) -> torch.Tensor:
    """[E] values, [E] cell ids in 0..cells-1 -> [E]: the mean of each value's cell."""
    sums = torch.zeros(cells, dtype=values.dtype).index_add_(0, cell, values)
    counts = torch.zeros(cells, dtype=values.dtype).index_add_(0, cell, torch.ones_like(values))
    return (sums / counts.clamp(min=1))[cell]


def _unit(values: torch.Tensor, group: torch.Tensor, groups: int) -> torch.Tensor:
    """Zero-mean values [E] scaled to unit population std within each group (0 where the group's
    values are constant)."""
    std = _cell_mean(values.pow(2), group, groups).sqrt()
    return torch.where(std > CONSTANT, values / std.clamp(min=CONSTANT), torch.zeros_like(values))


def mix_to_correlation(
    validity: torch.Tensor,
    present: torch.Tensor,
    f: torch.Tensor,
    group: torch.Tensor,
    rho: float,
    noise: torch.Tensor,
) -> torch.Tensor:
    """The oracle's validity mixed with noise to within-group correlation ``rho`` given f.

    validity [B, L] (1 valid, 0 not), present [B, L] bool (the row has episode l), f [B] final
    correctness in {0, 1}, group [B] long (the row's prompt group), rho in (0, 1], noise [B, L]
    standard normal draws -> [B, L] float64 signal, 0 where not present (module docstring).
    """
    if not 0 < rho <= 1:
        raise ValueError(f"rho must be in (0, 1], got {rho!r}")
    check_shape("present", present, tuple(validity.shape))
    check_shape("noise", noise, tuple(validity.shape))
    check_shape("f", f, tuple(validity.shape[:1]))
    check_shape("group", group, tuple(validity.shape[:1]))
    if not bool(((f == 0) | (f == 1)).all()):
        raise ValueError("f must hold 0 or 1 (final correctness) for every row")
    rows, slots = present.bool().nonzero(as_tuple=True)
    out = torch.zeros(validity.shape, dtype=torch.float64)
    if rows.numel() == 0:
        return out
    _, episode_group = torch.unique(group[rows], return_inverse=True)  # groups 0..G-1
    groups = int(episode_group.max()) + 1
    cell, cells = episode_group * 2 + f[rows].long(), 2 * groups
    v = validity[rows, slots].double()
    z = _unit(v - _cell_mean(v, cell, cells), episode_group, groups)
    e = noise[rows, slots].double()
    e = e - _cell_mean(e, cell, cells)
    along = _cell_mean(e * z, episode_group, groups) / _cell_mean(z * z, episode_group, groups)
    e = _unit(e - torch.nan_to_num(along, nan=0.0) * z, episode_group, groups)
    out[rows, slots] = rho * z + math.sqrt(max(0.0, 1 - rho * rho)) * e
    return out


def within_group_correlation(
    signal: torch.Tensor,
    validity: torch.Tensor,
    f: torch.Tensor,
    group: torch.Tensor,
    *,
    given_f: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per group, the correlation of a per-episode signal with validity (given f: both
    demeaned within each (group, f) cell first), each episode counting once.

    signal, validity [E]; f [E] in {0, 1} (the episode's completion's); group [E] long ->
    (correlation [G] float64, NaN where signal or validity is constant in the group; episodes
    [G] long), groups in ascending order of their ids. What ``mix_to_correlation`` sets to rho.
    """
    for name, values in (("validity", validity), ("f", f), ("group", group)):
        check_shape(name, values, tuple(signal.shape))
    _, index = torch.unique(group, return_inverse=True)
    groups = int(index.max()) + 1 if index.numel() else 0
    cell, cells = (index * 2 + f.long(), 2 * groups) if given_f else (index, groups)
    x, v = signal.double(), validity.double()
    x, v = x - _cell_mean(x, cell, cells), v - _cell_mean(v, cell, cells)
    episodes = torch.zeros(groups, dtype=torch.long).index_add_(0, index, torch.ones_like(index))

    def per_group(values: torch.Tensor) -> torch.Tensor:  # [E] -> [G] group means
        sums = torch.zeros(groups, dtype=values.dtype).index_add_(0, index, values)
        return sums / episodes.clamp(min=1)

    sx, sv = per_group(x * x).sqrt(), per_group(v * v).sqrt()
    defined = (sx > CONSTANT) & (sv > CONSTANT)
    corr = per_group(x * v) / (sx * sv).clamp(min=CONSTANT**2)
    return torch.where(defined, corr, torch.full_like(corr, math.nan)), episodes


def answer_logprob_drop(
    full: torch.Tensor,
    ablated: torch.Tensor,
    answer_mask: torch.Tensor,
    episode_mask: torch.Tensor,
) -> torch.Tensor:
    """Per episode, the fall in the log-probability of the completion's final answer when the
    episode is removed from the context.

    full [B, A]: log-prob of each answer token given the prompt and the whole completion before
    it; ablated [B, L, A]: the same with episode l's tokens removed; answer_mask [B, A] bool
    (the row's answer tokens; none: the row has no final answer); episode_mask [B, L] bool
    (episode l was removed and scored). Returns [B, L] float64: sum over answer tokens of
    full - ablated (positive: the answer depends on the episode), 0 where an episode or the
    answer is missing. Log-probs below LOGP_FLOOR count as LOGP_FLOOR; masked entries may hold
    anything (NaN included).
    """
    batch, width = full.shape
    check_shape("answer_mask", answer_mask, (batch, width))
    episodes = episode_mask.shape[-1]
    check_shape("episode_mask", episode_mask, (batch, episodes))
    check_shape("ablated", ablated, (batch, episodes, width))
    counted = episode_mask.bool().unsqueeze(-1) & answer_mask.bool().unsqueeze(1)  # [B, L, A]

    def clean(logps: torch.Tensor) -> torch.Tensor:
        return torch.nan_to_num(logps.double(), nan=0.0).clamp(LOGP_FLOOR, 0.0)

    drop = clean(full).unsqueeze(1) - clean(ablated)
    return torch.where(counted, drop, torch.zeros_like(drop)).sum(-1)
