"""Episodic causal counterfactual reward (paper Theorem 3.2 and section 4.2).

    S_sta = mean_m exp(-||q(.|u) - q(.|g_m u)||_2^2 / tau)
    S_exp = mean_m ||g_m u||_2^2 / (||u||_2^2 + eps_u)
    R_cf  = lambda_sta * S_sta + lambda_exp * S_exp      (lambda_sta = 1 in the paper)

with q(.|u) = softmax(lm_head(u) / temperature), optionally restricted to the top-k tokens of
the unperturbed distribution and renormalised. The perturbation operators g_m are
``gc2po.core.perturbations`` (a registry; composed by listing them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from gc2po.core.perturbations import PerturbationSpec, build_perturbation, perturb


class CounterfactualReward(NamedTuple):
    s_sta: torch.Tensor  # [E] stability term
    s_exp: torch.Tensor  # [E] expressiveness term
    r_cf: torch.Tensor  # [E] lambda_sta * s_sta + lambda_exp * s_exp


ANSWER_SPACES = ("topk", "vocab")


@dataclass(frozen=True)
class CounterfactualParams:
    """R_cf's hyper-parameters under the names of the ``GC2POConfig`` fields they come from
    (``GC2POConfig.counterfactual_params()``, which checked them); :meth:`reward` computes R_cf
    with them."""

    perturbation: PerturbationSpec  # operators g_m (:func:`build_perturbation`)
    num_perturbations: int  # M perturbed copies per state
    cf_tau: float  # tau of the stability term
    lambda_exp: float  # weight of S_exp
    lambda_sta: float  # weight of S_sta (1 in the paper; 0 for the w/o S_sta ablation)
    cf_eps_u: float  # eps_u of the expressiveness term
    answer_space: str  # "topk": q restricted to the unperturbed top-k, renormalised; "vocab"
    answer_topk: int  # k of the top-k answer space
    temperature: float = 1.0  # q(.|u) = softmax(lm_head(u) / temperature): the sampling one

    def reward(self, u, lm_head_weight, *, generator, group_index=None, lm_head_bias=None):
        """:func:`counterfactual_reward` of states ``u`` [E, d] with these settings: the one
        place where the config's names meet the core's (num_perturbations -> num_samples,
        cf_tau -> tau, cf_eps_u -> eps_u, answer_topk -> topk)."""
        return counterfactual_reward(
            u,
            lm_head_weight,
            perturbation=self.perturbation,
            num_samples=self.num_perturbations,
            tau=self.cf_tau,
            lambda_exp=self.lambda_exp,
            lambda_sta=self.lambda_sta,
            eps_u=self.cf_eps_u,
            answer_space=self.answer_space,
            topk=self.answer_topk,
            temperature=self.temperature,
            generator=generator,
            group_index=group_index,
            lm_head_bias=lm_head_bias,
        )


def counterfactual_reward(
    u: torch.Tensor,
    lm_head_weight: torch.Tensor,
    *,
    perturbation: PerturbationSpec,
    num_samples: int,
    tau: float,
    lambda_exp: float,
    eps_u: float,
    answer_space: str,
    generator: torch.Generator | None,
    group_index: torch.Tensor | None = None,
    topk: int = 64,
    temperature: float = 1.0,
    lm_head_bias: torch.Tensor | None = None,
    lambda_sta: float = 1.0,
    max_chunk_bytes: int = 256 * 2**20,
) -> CounterfactualReward:
    """S_sta, S_exp and R_cf for E episode states in one batched pass.

    Args:
        u: [E, d] episode states (final hidden state after the final norm at each episode's
            last token).
        lm_head_weight: [V, d] output projection; q(.|u) = softmax((u W^T + b) / temperature).
        perturbation: operator spec for :func:`build_perturbation`.
        num_samples: M perturbed copies per state.
        tau, lambda_exp, eps_u: the paper's hyper-parameters (Theorem 3.2).
        lambda_sta: weight of S_sta in R_cf (1 in the paper; 0 for the w/o S_sta ablation).
        answer_space: ``"topk"`` (restrict q to the top-``topk`` tokens of the unperturbed q,
            renormalised) or ``"vocab"`` (full vocabulary).
        generator: torch.Generator for the perturbations (seeded by the caller).
        group_index: [E] prompt-group id of each state (needed by ``group_mix``).
        max_chunk_bytes: bound on the fp32 logits held at once; states are processed in chunks
            so memory stays bounded (E*M*V is never allocated for a large vocabulary).
    Returns:
        CounterfactualReward(s_sta [E], s_exp [E], r_cf [E] = lambda_sta s_sta + lambda_exp s_exp)
        in fp32. A state with a non-finite entry scores 0 on both terms (never NaN).
    """
    if u.ndim != 2:
        raise ValueError(f"u must have shape [E, d], got {tuple(u.shape)}")
    if lm_head_weight.ndim != 2 or lm_head_weight.shape[1] != u.shape[1]:
        raise ValueError(
            f"lm_head_weight must have shape [V, d] with d={u.shape[1]} (from u), "
            f"got {tuple(lm_head_weight.shape)}"
        )
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    if group_index is not None and tuple(group_index.shape) != (u.shape[0],):
        raise ValueError(
            f"group_index must have shape [E]=({u.shape[0]},), got {tuple(group_index.shape)}"
        )
    build_perturbation(perturbation)  # fail on a bad spec before any work
    u = u.detach().float()
    finite = torch.isfinite(u).all(-1)  # [E]: a state with inf/NaN (a diverged model) scores 0
    u = torch.where(finite.unsqueeze(-1), u, torch.zeros_like(u))
    weight = lm_head_weight.detach()
    bias = None if lm_head_bias is None else lm_head_bias.detach().float()
    num_episodes, vocab = u.shape[0], weight.shape[0]
    k = min(topk, vocab) if answer_space == "topk" else vocab

    # perturb all states at once (group_mix needs the siblings), then score in chunks
    perturbed = perturb(u, perturbation, num_samples, generator=generator, group_index=group_index)
    s_exp = (
        (perturbed.double().pow(2).sum(-1) / (u.double().pow(2).sum(-1) + eps_u)).mean(0).float()
    )

    # fp32 bytes per state: the unperturbed logits [V] and the perturbed ones [M, k] with room
    # for softmax temporaries (x3), plus the gathered top-k rows of W [k, d]
    rows = k * u.shape[1] if answer_space == "topk" else 0
    per_state = 4 * (3 * (vocab + num_samples * k) + rows)
    chunk = max(1, min(num_episodes, max_chunk_bytes // per_state))
    s_sta = torch.empty(num_episodes, dtype=torch.float32, device=u.device)
    for lo in range(0, num_episodes, chunk):
        hi = min(lo + chunk, num_episodes)
        s_sta[lo:hi] = _stability(
            u[lo:hi], perturbed[:, lo:hi], weight, bias, k, answer_space, tau, temperature
        )
    s_sta = torch.where(finite, torch.nan_to_num(s_sta, nan=0.0, posinf=0.0, neginf=0.0), 0.0)
    s_exp = torch.where(finite, torch.nan_to_num(s_exp, nan=0.0, posinf=0.0, neginf=0.0), 0.0)
    return CounterfactualReward(s_sta, s_exp, lambda_sta * s_sta + lambda_exp * s_exp)


def _project(states: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """states @ W^T (+ b) in W's dtype (no fp32 copy of a bf16 W), returned as fp32."""
    logits = (states.to(weight.dtype) @ weight.T).float()
    return logits if bias is None else logits + bias


def _stability(u, perturbed, weight, bias, k, answer_space, tau, temperature) -> torch.Tensor:
    """mean_m exp(-||q(.|u) - q(.|u_m)||^2 / tau) for a chunk: u [e, d], perturbed [M, e, d]."""
    logits = _project(u, weight, bias).float()  # [e, V]
    if answer_space == "vocab":
        q = torch.softmax(logits / temperature, dim=-1)
        q_m = torch.softmax(_project(perturbed, weight, bias).float() / temperature, dim=-1)
    else:
        top_ids = logits.topk(k, dim=-1).indices  # [e, k]
        # only the k rows of W that the answer space uses, in fp32: [e, k, d]
        rows = weight[top_ids].float()
        top = torch.einsum("ed,ekd->ek", u, rows)
        top_m = torch.einsum("med,ekd->mek", perturbed, rows)
        if bias is not None:
            top, top_m = top + bias[top_ids], top_m + bias[top_ids]
        q = torch.softmax(top / temperature, dim=-1)
        q_m = torch.softmax(top_m / temperature, dim=-1)
    dist2 = (q.unsqueeze(0) - q_m).pow(2).sum(-1)  # [M, e]
    return torch.exp(-dist2 / tau).mean(0)
