"""The perturbation operators g_m of the counterfactual reward (paper section 4.2): a registry of
operators (``@register_perturbation``: ``gaussian``, ``dropout``, ``group_mix``), each with one
scale parameter, composable by listing them; ``perturb`` draws M perturbed copies of states."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
