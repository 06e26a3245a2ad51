"""Math of the baselines only (BASELINES 1-7), kept apart from GC2PO's (pure torch).

Length penalty (Arora & Zanette 2025), GVPO (Zhang et al. 2025), GCPO (Gu et al. 2025), MRT's
progress rewards (Qu et al. 2025) and ReST-MCTS*'s value targets (Zhang et al. 2024). Each method
whose advantage is more than one line has one entry point here that ``gc2po.methods`` calls:
``length_penalty_advantages``, ``gcpo_advantages``, ``mrt_token_advantages``,
``rest_selection``; GVPO's is its loss, ``gvpo_on_policy_loss`` (``gvpo_loss`` is the group form
it is tested against).
"""

from __future__ import annotations

import torch

from gc2po.core.advantages import STD_EPS, grpo_advantage


# -- length penalty (BASELINES 6) ------------------------------------------------------------------
def length_penalty_rewards(
    correct: torch.Tensor, lengths: torch.Tensor, alpha: float
) -> torch.Tensor:
    """r = 1{correct} * (1 - alpha * sigmoid((len - MEAN) / (STD + 1e-7))), MEAN/STD over the
    correct samples of the same prompt (population std); incorrect -> 0, unscored (non-finite)
    -> NaN. correct [G,K] (outcome rewards, > 0.5 = correct), lengths [G,K] -> [G,K]."""
    if correct.shape != lengths.shape or correct.ndim != 2:
        raise ValueError(
            f"correct and lengths must both have shape [G, K], got {list(correct.shape)} and "
            f"{list(lengths.shape)}"
        )
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    scored = torch.isfinite(correct)
    is_correct = scored & (torch.nan_to_num(correct) > 0.5)
    lengths = lengths.float()
    count = is_correct.sum(-1, keepdim=True).clamp(min=1)
    mean = torch.where(is_correct, lengths, 0.0).sum(-1, keepdim=True) / count
    var = torch.where(is_correct, (lengths - mean) ** 2, 0.0).sum(-1, keepdim=True) / count
    penalty = alpha * torch.sigmoid((lengths - mean) / (var.sqrt() + 1e-7))
    shaped = torch.where(is_correct, 1.0 - penalty, torch.zeros_like(lengths))
    return torch.where(scored, shaped, torch.full_like(shaped, torch.nan))


def length_penalty_advantages(
    correct: torch.Tensor, lengths: torch.Tensor, alpha: float
) -> torch.Tensor:
    """The length-penalised rewards under GRPO's estimator: [G,K], [G,K] -> [G,K]."""
    return grpo_advantage(length_penalty_rewards(correct, lengths, alpha))


# -- GVPO (BASELINES 3) ----------------------------------------------------------------------------
def gvpo_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    mask: torch.Tensor,
    group_ids: torch.Tensor,
    centered_rewards: torch.Tensor,
    *,
    beta: float,
    scored: torch.Tensor | None = None,
) -> torch.Tensor:
    """GVPO (Zhang et al. 2025, BASELINES 3): per group,

        R_theta(y_i) = beta * sum_t [log pi_theta(y_i,t) - log pi_old(y_i,t)]   (sequence sum)
        L_g = 1/(K-1) * sum_i 1/2 [(R_i - mean_j R_j) - (r_i - mean_j r_j)]^2

    averaged over the groups of the call. No clip, no ratio, no KL. Every group must be complete
    in the call (``group_ids`` [B] says which rows belong together; rows may come in any order).
    Shapes: logps, old_logps, mask [B, T]; group_ids [B] (long); centered_rewards [B] = r - mean r
    over the scored rows; ``scored`` [B] (default all) leaves unscored rows out of the loss: a
    group is then its n scored rows (1/(n-1) in place of 1/(K-1)), and one with n < 2 gives 0.
    """
    if beta <= 0:
        raise ValueError(f"gvpo beta must be > 0, got {beta!r}")
    all_groups, all_counts = torch.unique(group_ids, return_counts=True)
    if (all_counts < 2).any():
        raise ValueError(
            "gvpo_loss: every group needs >= 2 completions in the same loss computation"
        )
    if scored is not None:
        keep = scored.bool()
        if not keep.any():
            return logps.sum() * 0.0  # nothing scored: a zero loss that still has a graph
        logps, old_logps, mask = logps[keep], old_logps[keep], mask[keep]
        group_ids, centered_rewards = group_ids[keep], centered_rewards[keep]
    maskf = mask.to(logps.dtype)
    reward_model = beta * ((logps - old_logps) * maskf).sum(-1)  # [B]
    groups, inverse, counts = torch.unique(group_ids, return_inverse=True, return_counts=True)
    group_sum = torch.zeros(len(groups), dtype=reward_model.dtype, device=logps.device).index_add(
        0, inverse, reward_model
    )
    centered_model = reward_model - (group_sum / counts)[inverse]
    per_sample = (
        0.5
        * (centered_model - centered_rewards.to(logps.dtype)) ** 2
        / (counts[inverse] - 1).clamp(min=1)
    )
    per_group = torch.zeros(len(groups), dtype=logps.dtype, device=logps.device).index_add(
        0, inverse, per_sample
    )
    return per_group.sum() / len(all_groups)  # groups with no scored row count, as zeros


def group_scored_counts(rewards: torch.Tensor) -> torch.Tensor:
    """n, the number of scored (finite) rewards of each row's group: [G, K] -> [G, K] float."""
    counts = torch.isfinite(rewards).sum(-1, keepdim=True).to(torch.float32)
    return counts.expand(rewards.shape)


def gvpo_on_policy_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    mask: torch.Tensor,
    centered_rewards: torch.Tensor,
    scored_counts: torch.Tensor,
    *,
    beta: float,
    group_size: int,
) -> torch.Tensor:
    """GVPO's loss on on-policy samples, one term per completion, so a group need not be whole in
    a micro-batch or on a process:

        l_i = -beta K/(n-1) * c_i * sum_t (log pi_theta - log pi_old)_{i,t},
        c_i = r_i - mean_group r

    averaged over the rows, n = the scored rows of the row's group (0 for a group with n < 2). At
    theta = theta_old every implicit reward R_i is 0, so the residual of :func:`gvpo_loss` is
    d_i = -c_i, and since sum_i d_i = 0 the group mean of grad R drops out: the gradient equals
    that of ``gvpo_loss(scored=...)`` (averaged over groups) and the value is 0.
    logps, old_logps, mask [B, T]; centered_rewards [B] (0 for an unscored row); scored_counts [B]
    (``group_scored_counts`` of the row's group) -> scalar.
    """
    if beta <= 0:
        raise ValueError(f"gvpo beta must be > 0, got {beta!r}")
    if group_size < 2:
        raise ValueError(f"gvpo needs groups of >= 2 completions, got {group_size}")
    implicit = ((logps - old_logps) * mask.to(logps.dtype)).sum(-1)  # R_i / beta
    counts = scored_counts.to(logps.dtype)
    weight = torch.where(
        counts >= 2, -beta * group_size / (counts - 1).clamp(min=1), torch.zeros_like(counts)
    )
    return (weight * centered_rewards.to(logps.dtype) * implicit).mean()


# -- MRT (BASELINES 5) ----------------------------------------------------------------------------
def progress_rewards(
    success: torch.Tensor, num_boundaries: torch.Tensor, r_out: torch.Tensor, alpha: float
) -> torch.Tensor:
    """MRT's dense rewards (BASELINES 5): for boundaries j = 0..L-1 with forced-answer success
    J_0..J_{L-1} (J_0 before any episode) and J_L := R_out,

        r_j = alpha * (J_j - J_{j-1})  for j = 1..L   (at the last token of episode j)

    success [B, S] (S >= max L; column j = J_j, j < L), num_boundaries [B] = L, r_out [B]
    -> rewards [B, S] (zero past L). They telescope: sum_j r_j = alpha * (R_out - J_0).
    """
    batch, slots = success.shape
    j = torch.arange(slots, device=success.device).expand(batch, slots)
    levels = torch.where(
        j < num_boundaries.unsqueeze(-1), success, r_out.unsqueeze(-1).to(success.dtype)
    )
    levels = torch.cat(
        [levels, r_out.unsqueeze(-1).to(success.dtype)], dim=-1
    )  # J_0..J_S with J_L.. = R_out
    steps = alpha * (levels[:, 1:] - levels[:, :-1])
    return torch.where(j < num_boundaries.unsqueeze(-1), steps, torch.zeros_like(steps))


def reward_to_go_advantages(
    step_rewards: torch.Tensor,
    step_ends: torch.Tensor,
    step_mask: torch.Tensor,
    token_mask: torch.Tensor,
    eps: float = STD_EPS,
) -> torch.Tensor:
    """GRPO process supervision (BASELINES 1) for one group of K completions: step rewards are
    normalised over all valid steps of the group, and A_{i,t} = sum of the normalised rewards
    of the steps of o_i that end at or after t.

    step_rewards, step_ends (token index of each step's last token), step_mask [K, S];
    token_mask [K, T] -> advantages [K, T] (0 where masked)."""
    valid = step_rewards[step_mask]
    if valid.numel() == 0:
        return torch.zeros_like(token_mask, dtype=torch.float32)
    normalised = (step_rewards - valid.mean()) / (valid.std(unbiased=False) + eps)
    normalised = torch.where(step_mask, normalised, torch.zeros_like(normalised))
    t = torch.arange(token_mask.shape[1], device=token_mask.device)
    counts = (step_ends.unsqueeze(1) >= t.view(1, -1, 1)) & step_mask.unsqueeze(1)  # [K, T, S]
    adv = (counts.to(normalised.dtype) * normalised.unsqueeze(1)).sum(-1)
    return torch.where(token_mask.bool(), adv, torch.zeros_like(adv)).float()


def mrt_token_advantages(
    success: torch.Tensor,
    num_episodes: torch.Tensor,
    step_ends: torch.Tensor,
    r_out: torch.Tensor,
    token_mask: torch.Tensor,
    *,
    group_size: int,
    alpha: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """MRT's token advantages for whole groups on one process: progress rewards at each
    episode's last token, the outcome reward added at the last episode, then GRPO's process-
    supervision reward-to-go per group.

    success [B,S] (forced-answer success J_j at boundary j), num_episodes [B], step_ends [B,S]
    (token index of episode j's last token, -1 = none), r_out [B] (non-finite = unscored: no
    steps), token_mask [B,T] -> (advantages [B,T], step rewards [B,S]).
    """
    batch = r_out.shape[0]
    if batch % group_size:
        raise ValueError(f"mrt needs whole groups on each process ({batch} rows, K={group_size})")
    scored = torch.isfinite(r_out)
    outcome = torch.where(scored, r_out, torch.zeros_like(r_out))
    steps = progress_rewards(success, num_episodes, outcome, alpha)
    last = (num_episodes - 1).clamp(min=0)
    steps[torch.arange(batch), last] += outcome * (num_episodes > 0)
    step_mask = (step_ends >= 0) & scored.unsqueeze(-1)
    adv = torch.zeros(token_mask.shape, dtype=torch.float32, device=token_mask.device)
    for start in range(0, batch, group_size):
        g = slice(start, start + group_size)
        adv[g] = reward_to_go_advantages(steps[g], step_ends[g], step_mask[g], token_mask[g])
    return adv, steps


# -- GCPO (BASELINES 4) ----------------------------------------------------------------------------
def gcpo_upsilon(
    z: torch.Tensor, z_context: torch.Tensor, z_context_alt: torch.Tensor, alpha: float
) -> torch.Tensor:
    """GCPO's causal weight (BASELINES 4) for one group: z, z_context, z_context_alt [K, d] ->
    Upsilon [K] = alpha * cos(z_i, Zbar_i - Zbar'_i + zbar), zbar = mean_i z_i."""
    direction = z_context - z_context_alt + z.mean(0, keepdim=True)
    return alpha * torch.nn.functional.cosine_similarity(
        z.float(), direction.float(), dim=-1, eps=1e-8
    )


def gcpo_reference_logps(
    context_logps: torch.Tensor,
    context_alt_logps: torch.Tensor,
    plain_logps: torch.Tensor,
    min_prob: float = 1e-6,
) -> torch.Tensor:
    """log pi'_ref = log clamp(pi(y|x_i) - Phi + pi(y|q), min_prob, 1) with Phi = pi(y|x_i with the
    alternative integrated output); the clamp keeps k3 defined (pi'_ref is not a probability)."""
    prob = context_logps.exp() - context_alt_logps.exp() + plain_logps.exp()
    return prob.clamp(min_prob, 1.0).log()


def gcpo_advantages(
    rewards: torch.Tensor,
    z: torch.Tensor,
    z_context: torch.Tensor,
    z_context_alt: torch.Tensor,
    alpha: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """B_i = A_i * Upsilon_i for one group:
    rewards [K], states [K, d] -> (advantages [K], Upsilon [K])."""
    upsilon = gcpo_upsilon(z, z_context, z_context_alt, alpha)
    return grpo_advantage(rewards.unsqueeze(0)).squeeze(0) * upsilon.to(rewards.dtype), upsilon


# -- ReST-MCTS* (BASELINES 7) ----------------------------------------------------------------------
def rest_value_targets(signs: list[int], min_steps: list[int]) -> list[float]:
    """ReST-MCTS* value targets of the steps of one path (BASELINES 7, paper eqs. 1-2):
    v_0 = 0; v_k = max(0, v_{k-1} + (1 - v_{k-1}) * s_k / (m_k + 1)), s_k = +1 on a path to a
    verified-correct leaf else -1, m_k = minimal remaining steps to a correct leaf.
    A correct chain of 3 steps gets 1/3, 2/3, 1."""
    if len(signs) != len(min_steps):
        raise ValueError(f"signs and min_steps differ in length: {len(signs)} vs {len(min_steps)}")
    values, v = [], 0.0
    for s, m in zip(signs, min_steps):
        v = max(0.0, v + (1.0 - v) * s / (m + 1))
        values.append(v)
    return values


def label_rollout_steps(
    num_steps: int, correct: bool, branch_step: int, branches: list[tuple[bool, int]]
) -> tuple[list[int], list[int]]:
    """(s_k, m_k) for the steps k = 1..num_steps of a rollout with branches after step
    ``branch_step`` (each branch: (verified correct, its number of steps)).

    A step is on a path to a correct leaf if the rollout is correct, or if it lies at or before
    the branch point and a branch is correct; m_k is the fewest remaining steps to such a leaf.
    Dead steps inherit m from their nearest live ancestor (or count their own remaining steps)."""
    best_branch = min((n for ok, n in branches if ok), default=None)
    signs, min_steps, inherited = [], [], None
    for k in range(1, num_steps + 1):
        candidates = []
        if correct:
            candidates.append(num_steps - k)
        if best_branch is not None and k <= branch_step:
            candidates.append(branch_step - k + best_branch)
        if candidates:
            inherited = min(candidates)
            signs.append(1)
            min_steps.append(inherited)
        else:
            signs.append(-1)
            min_steps.append(inherited if inherited is not None else num_steps - k)
    return signs, min_steps


def rest_selection(
    r_out: torch.Tensor, min_value: torch.Tensor, group_size: int, threshold: float
) -> torch.Tensor:
    """Rollouts cloned by ReST-MCTS*-lite: verified correct with minimum predicted step value
    >= ``threshold``, else the best correct rollout of the prompt. r_out [B] (> 0.5 = correct),
    min_value [B] -> 1{selected} [B] (whole groups on one process)."""
    if r_out.shape[0] % group_size:
        raise ValueError(
            f"rest_mcts needs whole groups on each process ({r_out.shape[0]} rows, K={group_size})"
        )
    correct = (torch.nan_to_num(r_out) > 0.5).view(-1, group_size)
    values = min_value.view(-1, group_size)
    chosen = correct & (values >= threshold)
    best = torch.where(correct, values, torch.full_like(values, -torch.inf)).argmax(-1)
    fallback = torch.zeros_like(chosen).scatter_(-1, best.unsqueeze(-1), True) & correct
    chosen = torch.where(chosen.any(-1, keepdim=True), chosen, fallback)
    return chosen.reshape(-1).float()
