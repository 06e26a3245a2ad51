"""Episodic causal counterfactual reward (paper Theorem 3.2, SPEC 2.2-2.4).

    S_sta = mean_m exp(-||q(.|u) - q(.|g_m u)||_2^2 / tau)
    S_exp = mean_m ||g_m u||_2^2 / (||u||_2^2 + eps_u)
    R_cf  = lambda_sta * S_sta + lambda_exp * S_exp      (lambda_sta = 1 in the paper)

with q(.|u) = softmax(lm_head(u) / temperature), optionally restricted to the top-k tokens of
the unperturbed distribution and renormalised. Perturbation operators g_m come from the
``PERTURBATIONS`` registry (``@register_perturbation``) and can be composed by listing them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from gc2po.core.registry import Registry, caller_site

# An operator maps (samples [M,E,d], original u [E,d], group_index [E] | None, generator, scale)
# to perturbed samples [M,E,d]. Operators are applied in order to the samples of the previous one.
PerturbationOp = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class Perturbation:
    """One operator g_m: its function and its single scale parameter (name, closed range, default).
    The trainer's config field for the scale is ``perturbation_<param>``."""

    name: str
    op: PerturbationOp
    param: str
    bounds: tuple[float, float]
    default: float


PERTURBATIONS: Registry[Perturbation] = Registry("perturbation")


def register_perturbation(name: str, *, param: str, bounds: tuple[float, float], default: float):
    """Decorator adding an operator ``op(samples, u, group_index, generator, **{param: value})``."""
    site = caller_site()

    def decorator(op: PerturbationOp) -> PerturbationOp:
        PERTURBATIONS.add(name, Perturbation(name, op, param, bounds, default), site)
        return op

    return decorator


@register_perturbation("gaussian", param="sigma", bounds=(0.0, math.inf), default=0.1)
def gaussian(samples, u, group_index, generator, *, sigma: float):
    """u + sigma * (||u|| / sqrt(d)) * eps, eps ~ N(0, I): noise relative to the state's norm."""
    scale = samples.norm(dim=-1, keepdim=True) / math.sqrt(samples.shape[-1])
    noise = torch.randn(
        samples.shape, generator=generator, dtype=samples.dtype, device=samples.device
    )
    return samples + sigma * scale * noise


@register_perturbation("dropout", param="p", bounds=(0.0, 1.0), default=0.1)
def dropout(samples, u, group_index, generator, *, p: float):
    """u * b, b ~ Bernoulli(1 - p) per coordinate, not rescaled (so the norm decays)."""
    keep = torch.rand(samples.shape, generator=generator, device=samples.device) >= p
    return samples * keep.to(samples.dtype)


@register_perturbation("group_mix", param="alpha", bounds=(0.0, 1.0), default=0.3)
def group_mix(samples, u, group_index, generator, *, alpha: float):
    """(1 - alpha) * u + alpha * u_j, u_j a random other episode state of the same group.

    Episodes with no sibling in their group (or no ``group_index``) are left unchanged.
    """
    num_samples, num_episodes, _ = samples.shape
    if group_index is None:
        group_index = torch.zeros(num_episodes, dtype=torch.long, device=u.device)
    same_group = group_index[:, None] == group_index[None, :]
    same_group.fill_diagonal_(False)
    has_sibling = same_group.any(dim=1)
    # uniform draw among siblings: random scores, -1 where not a sibling, argmax
    scores = torch.rand(
        (num_samples, num_episodes, num_episodes), generator=generator, device=u.device
    )
    scores = scores.masked_fill(~same_group, -1.0)
    partner = scores.argmax(dim=-1)  # [M, E]
    mixed = (1 - alpha) * samples + alpha * u[partner]
    return torch.where(has_sibling[None, :, None], mixed, samples)


PerturbationSpec = str | Mapping[str, Any] | Sequence[str | Mapping[str, Any]]


def build_perturbation(spec: PerturbationSpec) -> list[tuple[PerturbationOp, dict[str, float]]]:
    """Parse a perturbation spec into ``[(operator, {param: value}), ...]``.

    Accepted forms: ``"dropout"``, ``{"name": "gaussian", "sigma": 0.1}`` or a list of either
    (a composite, applied in order). A missing scale takes the operator's default.
    """
    items = [spec] if isinstance(spec, str | Mapping) else list(spec)
    if not items:
        raise ValueError("perturbation must name at least one operator")
    ops = []
    for item in items:
        params = dict(item) if isinstance(item, Mapping) else {"name": item}
        entry = PERTURBATIONS.get(params.pop("name", None))
        for key in params:
            if key != entry.param:
                raise ValueError(
                    f"perturbation {entry.name!r}: unknown parameter {key!r}; valid: "
                    f"[{entry.param!r}]"
                )
        value = params.get(entry.param, entry.default)
        low, high = entry.bounds
        if isinstance(value, bool) or not (isinstance(value, int | float) and low <= value <= high):
            raise ValueError(
                f"perturbation {entry.name!r}: {entry.param} must be a number in [{low}, {high}], "
                f"got {value!r}"
            )
        ops.append((entry.op, {entry.param: float(value)}))
    return ops


def spec_from_fields(names: str, **scales: float) -> list[dict]:
    """``"dropout,gaussian"`` plus one scale per parameter name (``p=0.1, sigma=0.3``) -> a spec;
    operators whose parameter is not given keep their default."""
    spec = []
    for name in [n.strip() for n in names.split(",") if n.strip()]:
        entry = PERTURBATIONS.get(name)
        spec.append({"name": name, entry.param: scales.get(entry.param, entry.default)})
    return spec


def perturb(
    u: torch.Tensor,
    spec: PerturbationSpec,
    num_samples: int,
    *,
    generator: torch.Generator | None,
    group_index: torch.Tensor | None = None,
) -> torch.Tensor:
    """Draw ``num_samples`` perturbed copies of ``u`` [E, d] -> [M, E, d]."""
    samples = u.unsqueeze(0).expand(num_samples, *u.shape).clone()
    for op, params in build_perturbation(spec):
        samples = op(samples, u, group_index, generator, **params)
    return samples


class CounterfactualReward(NamedTuple):
    s_sta: torch.Tensor  # [E] stability term
    s_exp: torch.Tensor  # [E] expressiveness term
    r_cf: torch.Tensor  # [E] lambda_sta * s_sta + lambda_exp * s_exp


ANSWER_SPACES = ("topk", "vocab")


@dataclass(frozen=True)
class CounterfactualParams:
    """R_cf's hyper-parameters under the names of the ``GC2POConfig`` fields they come from
    (``GC2POConfig.counterfactual_params()``); checked once, here."""

    perturbation: PerturbationSpec  # operators g_m (:func:`build_perturbation`)
    num_perturbations: int  # M perturbed copies per state
    cf_tau: float  # tau of the stability term
    lambda_exp: float  # weight of S_exp
    lambda_sta: float  # weight of S_sta (1 in the paper; 0 for the w/o S_sta ablation)
    cf_eps_u: float  # eps_u of the expressiveness term
    answer_space: str  # "topk": q restricted to the unperturbed top-k, renormalised; "vocab"
    answer_topk: int  # k of the top-k answer space
    temperature: float = 1.0  # q(.|u) = softmax(lm_head(u) / temperature): the sampling one

    def __post_init__(self):
        n = self.num_perturbations
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"num_perturbations must be an int >= 1, got {n!r}")
        if not self.cf_tau > 0:
            raise ValueError(f"cf_tau must be > 0, got {self.cf_tau!r}")
        for name in ("lambda_exp", "lambda_sta"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not (self.cf_eps_u > 0 and math.isfinite(self.cf_eps_u)):  # 0 makes S_exp 0/0 at u = 0
            raise ValueError(f"cf_eps_u must be a finite number > 0, got {self.cf_eps_u!r}")
        if self.answer_space not in ANSWER_SPACES:
            raise ValueError(
                f"answer_space must be one of {list(ANSWER_SPACES)}, got {self.answer_space!r}"
            )
        k = self.answer_topk
        if self.answer_space == "topk" and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"answer_topk must be an int >= 1, got {k!r}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature!r}")
        build_perturbation(self.perturbation)  # a bad operator or scale fails here


def _check_shapes(u, lm_head_weight, group_index):
    if u.ndim != 2:
        raise ValueError(f"u must have shape [E, d], got {tuple(u.shape)}")
    if lm_head_weight.ndim != 2 or lm_head_weight.shape[1] != u.shape[1]:
        raise ValueError(
            f"lm_head_weight must have shape [V, d] with d={u.shape[1]} (from u), "
            f"got {tuple(lm_head_weight.shape)}"
        )
    if group_index is not None and tuple(group_index.shape) != (u.shape[0],):
        raise ValueError(
            f"group_index must have shape [E]=({u.shape[0]},), got {tuple(group_index.shape)}"
        )


def counterfactual_reward(
    u: torch.Tensor,
    lm_head_weight: torch.Tensor,
    params: CounterfactualParams,
    *,
    generator: torch.Generator | None,
    group_index: torch.Tensor | None = None,
    lm_head_bias: torch.Tensor | None = None,
    max_chunk_bytes: int = 256 * 2**20,
) -> CounterfactualReward:
    """S_sta, S_exp and R_cf for E episode states in one batched pass.

    Args:
        u: [E, d] episode states (final hidden state after the final norm at the token
            ``cf_state`` picks, ``gc2po.training.episode_states``).
        lm_head_weight: [V, d] output projection; q(.|u) = softmax((u W^T + b) / temperature).
        params: the hyper-parameters (:class:`CounterfactualParams`).
        generator: torch.Generator for the perturbations (seeded by the caller).
        group_index: [E] prompt-group id of each state (needed by ``group_mix``).
        lm_head_bias: [V] or None.
        max_chunk_bytes: bound on the fp32 logits held at once; states are processed in chunks
            so memory stays bounded (E*M*V is never allocated for a large vocabulary).
    Returns:
        CounterfactualReward(s_sta [E], s_exp [E], r_cf [E] = lambda_sta s_sta + lambda_exp s_exp)
        in fp32. A state with a non-finite entry scores 0 on both terms (never NaN).
    """
    _check_shapes(u, lm_head_weight, group_index)
    u = u.detach().float()
    finite = torch.isfinite(u).all(-1)  # [E]: a state with inf/NaN (a diverged model) scores 0
    u = torch.where(finite.unsqueeze(-1), u, torch.zeros_like(u))
    weight = lm_head_weight.detach()
    bias = None if lm_head_bias is None else lm_head_bias.detach().float()
    num_episodes, vocab = u.shape[0], weight.shape[0]
    vocab_space = params.answer_space == "vocab"
    k = vocab if vocab_space else min(params.answer_topk, vocab)
    samples = params.num_perturbations

    # perturb all states at once (group_mix needs the siblings), then score in chunks
    perturbed = perturb(
        u, params.perturbation, samples, generator=generator, group_index=group_index
    )
    norms = u.double().pow(2).sum(-1) + params.cf_eps_u
    s_exp = (perturbed.double().pow(2).sum(-1) / norms).mean(0).float()

    # fp32 bytes per state: the unperturbed logits [V] and the perturbed ones [M, k] with room
    # for softmax temporaries (x3), plus the gathered top-k rows of W [k, d]
    rows = 0 if vocab_space else k * u.shape[1]
    per_state = 4 * (3 * (vocab + samples * k) + rows)
    chunk = max(1, min(num_episodes, max_chunk_bytes // per_state))
    s_sta = torch.empty(num_episodes, dtype=torch.float32, device=u.device)
    for lo in range(0, num_episodes, chunk):
        hi = min(lo + chunk, num_episodes)
        s_sta[lo:hi] = _stability(u[lo:hi], perturbed[:, lo:hi], weight, bias, k, params)
    s_sta = torch.where(finite, torch.nan_to_num(s_sta, nan=0.0, posinf=0.0, neginf=0.0), 0.0)
    s_exp = torch.where(finite, torch.nan_to_num(s_exp, nan=0.0, posinf=0.0, neginf=0.0), 0.0)
    return CounterfactualReward(s_sta, s_exp, params.lambda_sta * s_sta + params.lambda_exp * s_exp)


def _project(states: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """states @ W^T (+ b) in W's dtype (no fp32 copy of a bf16 W), returned as fp32."""
    logits = (states.to(weight.dtype) @ weight.T).float()
    return logits if bias is None else logits + bias


def _stability(u, perturbed, weight, bias, k, params: CounterfactualParams) -> torch.Tensor:
    """mean_m exp(-||q(.|u) - q(.|u_m)||^2 / tau) for a chunk: u [e, d], perturbed [M, e, d]."""
    temperature = params.temperature
    logits = _project(u, weight, bias).float()  # [e, V]
    if params.answer_space == "vocab":
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
    return torch.exp(-dist2 / params.cf_tau).mean(0)
