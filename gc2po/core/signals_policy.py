"""Per-episode signals from the policy alone for the corrected GC2PO (beyond the paper): the
math only; the parsing and the policy's passes are ``gc2po.training.signals_policy``.

- sibling agreement: the share of the other completions of the group whose episode at the same
  step index writes the same equation (``left op right = result``). A step derived the way most
  samples derive it agrees with its siblings; a one-off guess does not. It rewards what the
  policy does most often, so a policy that mostly copies a bet rewards the copy.
- operand sensitivity: how much the log-probability of an episode's written result falls when
  the operand it uses (``right``, in the episode and in the prompt) is changed. A derived result
  follows its operand and falls; a copied bet does not depend on it (the paper's causal question
  asked of the inputs).
- result log-probability: the log-probability of the episode's written result (minus its
  surprisal), a by-product of the operand pass, audited beside the others.
"""

from __future__ import annotations

import torch

from gc2po.core.groups import check_shape
from gc2po.core.signals import LOGP_FLOOR, gated_validity


def sibling_agreement(keys: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
    """keys [B, L] long (an id of episode l's parsed equation; -1: no episode or none parsed),
    group [B] long (the row's prompt group) -> [B, L] float64: the share of the row's siblings
    (the other rows of its group, with or without an episode l) whose episode l has the same
    key; 0 where the key is -1 or the row has no sibling."""
    check_shape("group", group, tuple(keys.shape[:1]))
    same_group = group.unsqueeze(0) == group.unsqueeze(1)  # [B, B]
    siblings = same_group & ~torch.eye(len(group), dtype=torch.bool, device=group.device)
    parsed = keys >= 0
    equal = (keys.unsqueeze(1) == keys.unsqueeze(0)) & parsed.unsqueeze(1)  # [B, B', L]
    agree = (equal & siblings.unsqueeze(-1)).sum(1).double()  # [B, L]
    count = siblings.sum(1, keepdim=True).double()
    share = agree / count.clamp(min=1)
    return torch.where(parsed & (count > 0), share, torch.zeros_like(share))


def _clean(logps: torch.Tensor) -> torch.Tensor:
    return torch.nan_to_num(logps.double(), nan=0.0).clamp(LOGP_FLOOR, 0.0)


def result_logprob(logps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """logps [B, L, A] (log-prob of each token of episode l's written result), mask [B, L, A]
    bool (the real ones) -> [B, L] float64: their sum (0 where there is none). Log-probs below
    LOGP_FLOOR count as LOGP_FLOOR; masked entries may hold anything."""
    check_shape("mask", mask, tuple(logps.shape))
    clean = _clean(logps)
    return torch.where(mask.bool(), clean, torch.zeros_like(clean)).sum(-1)


def operand_sensitivity(
    original: torch.Tensor, perturbed: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """original, perturbed [B, L, A]: log-probs of episode l's written result tokens with the
    operand as written and changed; mask [B, L, A] bool -> [B, L] float64: sum of original -
    perturbed (positive: the result follows its operand), 0 where an episode was not probed."""
    check_shape("perturbed", perturbed, tuple(original.shape))
    return result_logprob(original, mask) - result_logprob(perturbed, mask)


def episode_presence(episode_ids: torch.Tensor, width: int) -> torch.Tensor:
    """episode_ids [B, T] long (-1: no episode) -> [B, width] bool: row b has a token of episode
    l (l < width)."""
    slots = torch.arange(width, device=episode_ids.device)
    return (episode_ids.long().unsqueeze(-1) == slots).any(1)


def gated_signal(signal: torch.Tensor, episode_ids: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """The gated form of a per-episode signal in [0, 1]: f x the mean of the signal over the
    completion's episodes, the reward the gated control's f x p is with the oracle's validity.

    signal [B, L] (e.g. :func:`sibling_agreement`), episode_ids [B, T] (-1: no episode), f [B]
    (the outcome: 0/1, NaN where no reward function scored the row) -> [B] float64 in [0, 1],
    NaN where f is NaN (the row stays out of its group, as GRPO leaves it). A completion without
    episodes gets 0. It is the oracle's gate (``gc2po.core.signals.gated_validity``) with no step
    count: the oracle's p divides by max(the problem's steps, episodes), this mean by the
    episodes written, since a policy-only method does not read the problem's step count.
    """
    check_shape("episode_ids", episode_ids, tuple(signal.shape[:1]) + tuple(episode_ids.shape[1:]))
    check_shape("f", f, tuple(signal.shape[:1]))
    outcome = f.double()
    scored = ~torch.isnan(outcome)
    no_steps = torch.zeros(len(outcome), dtype=torch.long, device=outcome.device)
    present = episode_presence(episode_ids, signal.shape[1])
    gated = gated_validity(signal, present, torch.where(scored, outcome, 0.0), no_steps)
    return torch.where(scored, gated, outcome)
