"""Per-episode signals other than R_cf for the corrected GC2PO (``cf_signal``): the math only.

``mix_to_correlation`` turns the oracle's episode validity (1 valid, 0 not) into a signal whose
correlation with validity is a chosen rho (the dose-response control): at rho = 1 it is the
validity itself, the plain oracle; below 1 noise is added to it. The correlation rho pins is
taken within a group (one prompt's K completions), over its episodes (each counts once), given
f: signal and validity are compared after removing each (group, f) cell's mean, which is what
the signal audit measures (``gc2po.audit.signals``), what R_cf's measured rho on the dose-response
axis is, and what either control can add to an outcome that already carries f. Per group:

    v_r = validity - mean over the episode's (group, f) cell          (within-f validity)
    sd  = std over the group's episodes of v_r                         (population std)
    e   = noise, cell-demeaned, made orthogonal to v_r and scaled to unit std over the group
    s   = validity + sd * sqrt(1 / rho^2 - 1) * e

so the cell-demeaned signal is v_r + c e with c = sd sqrt(1/rho^2 - 1), and corr_group(s, v_r) =
sd^2 / (sd * sqrt(sd^2 + c^2)) = rho exactly wherever v_r varies (1 in a tiny group that has no
noise direction left once f and validity are taken out). The noise has mean 0 in every (group, f)
cell, so it moves no cell's mean validity. A group whose validity is constant within each f cell
(all episodes valid, or all invalid, ...) has sd = 0: its signal is its validity (no correlation
given f is defined there, and no noise scale either). At rho = 1 the signal is the validity in
every group, exactly.

(An earlier definition returned the standardised within-f validity v_r / sd at rho = 1: 0 in a
constant cell, and after the corrected form's group z-score a correct copy in a mostly-copying
group could get a larger advantage than under GRPO. The plain validity is the oracle.)

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
MIN_RHO = 1e-6  # below it the noise scale sqrt(1 - rho^2) / rho would reach float64's range


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
    *,
    every_group: bool = False,
) -> torch.Tensor:
    """The oracle's validity plus noise, to within-group correlation ``rho`` given f.

    validity [B, L] (1 valid, 0 not; clamped into [0, 1]), present [B, L] bool or 0/1 (the
    row has episode l), f [B] final correctness in {0, 1}, group [B] long (the row's prompt
    group), rho in [MIN_RHO, 1], noise [B, L] standard normal draws -> [B, L] float64 signal, 0
    where not present, the validity itself at rho = 1 (module docstring).

    ``every_group``: noise of one scale in every group instead, constant-validity groups
    included, and not made orthogonal to validity (:func:`noise_in_every_group`): no group is
    the exact oracle and the per-group correlation spreads around rho.
    """
    if not MIN_RHO <= rho <= 1:
        raise ValueError(f"rho must be in [{MIN_RHO}, 1], got {rho!r}")
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
    # validity is a 0/1 grade (or a share of one): anything else is clamped into [0, 1]
    v = torch.nan_to_num(validity[rows, slots].double(), nan=0.0).clamp(0, 1)
    out[rows, slots] = v
    if rho == 1:  # the plain oracle, exactly (no noise term, not even 0 * noise)
        return out
    _, episode_group = torch.unique(group[rows], return_inverse=True)  # groups 0..G-1
    groups = int(episode_group.max()) + 1
    cell, cells = episode_group * 2 + f[rows].long(), 2 * groups
    v_r = v - _cell_mean(v, cell, cells)
    sd = _cell_mean(v_r * v_r, episode_group, groups).sqrt()  # [E], the group's
    e = torch.nan_to_num(noise[rows, slots].double(), nan=0.0, posinf=0.0, neginf=0.0)
    e = e - _cell_mean(e, cell, cells)
    if every_group:
        out[rows, slots] = v + noise_in_every_group(sd, e, episode_group, groups, rho)
        return out
    along = _cell_mean(e * v_r, episode_group, groups) / _cell_mean(
        v_r * v_r, episode_group, groups
    ).clamp(min=CONSTANT**2)
    e = _unit(e - along * v_r, episode_group, groups)
    scale = torch.where(sd > CONSTANT, sd, torch.zeros_like(sd)) * (math.sqrt(1 - rho * rho) / rho)
    out[rows, slots] = v + scale * e
    return out


def noise_in_every_group(
    sd: torch.Tensor, e: torch.Tensor, group: torch.Tensor, groups: int, rho: float
) -> torch.Tensor:
    """The ``every_group`` noise term of :func:`mix_to_correlation` [E].

    sd [E]: the within-f validity std of each episode's group; e [E]: cell-demeaned noise; group
    [E] in 0..groups-1. Every group gets e scaled to unit std within it and times one scale for
    the whole batch, c = sd_ref sqrt(1 / rho^2 - 1), sd_ref the root mean square of sd over the
    groups where validity varies given f (0.5, the largest std of a 0/1 grade, where none does).
    A group of std sd_ref then has correlation about rho; one with less spread of validity has
    less, a constant group none: the correlation spreads over groups as a measured signal's
    does, and the noise never vanishes.
    """
    # sd is the same for every episode of a group: its mean over them is it
    sums = torch.zeros(groups, dtype=sd.dtype).index_add_(0, group, sd)
    group_sd = sums / torch.zeros(groups, dtype=sd.dtype).index_add_(0, group, torch.ones_like(sd))
    varying = group_sd > CONSTANT
    sd_ref = group_sd[varying].pow(2).mean().sqrt() if bool(varying.any()) else torch.tensor(0.5)
    scale = float(sd_ref) * math.sqrt(1 - rho * rho) / rho
    return scale * _unit(e, group, groups)


def mix_readout(
    readout: torch.Tensor,
    validity: torch.Tensor,
    present: torch.Tensor,
    group: torch.Tensor,
    weight: float,
) -> torch.Tensor:
    """The persistent-noise control: a fixed readout of the policy's states, z-scored within
    each group, plus ``weight`` x the oracle's validity.

    readout [B, L] (e.g. the cosine of episode l's state with one fixed random direction),
    validity [B, L] in [0, 1], present [B, L] bool or 0/1, group [B] long, weight >= 0 ->
    [B, L] float64, 0 where not present. Unlike the noised oracle's fresh draws, the readout's
    part is a fixed function of the policy's states (the policy can move it, as it can move
    R_cf), it is there in every group, and its correlation with validity is whatever the states
    give plus what ``weight`` adds (set so that the mean matches R_cf's measured rho); a
    non-finite readout counts as 0.
    """
    check_shape("validity", validity, tuple(readout.shape))
    check_shape("present", present, tuple(readout.shape))
    check_shape("group", group, tuple(readout.shape[:1]))
    if not (math.isfinite(weight) and weight >= 0):
        raise ValueError(f"weight must be a finite number >= 0, got {weight!r}")
    rows, slots = present.bool().nonzero(as_tuple=True)
    out = torch.zeros(readout.shape, dtype=torch.float64)
    if rows.numel() == 0:
        return out
    _, episode_group = torch.unique(group[rows], return_inverse=True)
    groups = int(episode_group.max()) + 1
    r = torch.nan_to_num(readout[rows, slots].double(), nan=0.0, posinf=0.0, neginf=0.0)
    r = r - _cell_mean(r, episode_group, groups)
    v = torch.nan_to_num(validity[rows, slots].double(), nan=0.0).clamp(0, 1)
    out[rows, slots] = _unit(r, episode_group, groups) + weight * v
    return out


def gated_validity(
    signal: torch.Tensor, present: torch.Tensor, f: torch.Tensor, steps: torch.Tensor
) -> torch.Tensor:
    """The gated control's reward f x p_rho of each completion: its outcome times its process
    validity computed from a per-episode signal as the oracle computes p from validity.

    signal [B, L] (the episode validity, or it mixed to rho by :func:`mix_to_correlation`),
    present [B, L] bool or 0/1, f [B] in {0, 1}, steps [B] (the problem's number of steps) ->
    [B] float64: f x clamp(sum_l signal / max(steps, episodes), 0, 1), episodes = present.sum(-1)
    (a completion with neither steps nor episodes has p = 0). With the plain validity (rho = 1)
    this is the oracle's f x p exactly: the sum of 0/1 values is an exact integer and the one
    division rounds as the oracle's does. The clamp keeps the gate's meaning (a wrong completion
    gets 0 and a right one never less) where noise pushes the sum out of [0, D].
    """
    check_shape("present", present, tuple(signal.shape))
    check_shape("f", f, tuple(signal.shape[:1]))
    check_shape("steps", steps, tuple(signal.shape[:1]))
    kept = present.bool()
    values = torch.nan_to_num(signal.double(), nan=0.0, posinf=0.0, neginf=0.0)
    total = torch.where(kept, values, torch.zeros_like(values)).sum(-1)
    denominator = torch.maximum(steps.double(), kept.sum(-1).double())
    # nan_to_num: huge finite signals of both signs can sum to inf - inf
    p = torch.nan_to_num(total / denominator.clamp(min=1), nan=0.0).clamp(0, 1)
    return torch.where(f.bool(), p, torch.zeros_like(p))


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
    [G] long), groups in ascending order of their ids. What ``mix_to_correlation`` sets to rho
    (given f).
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
