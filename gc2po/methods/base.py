"""What a training method is, the batch it sees, and the registry (``@register_method``).
No trl import here."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

import torch

from gc2po.core.registry import Registry, caller_site
from gc2po.errors import as_type

LOSS_TYPES = ("grpo", "dr_grpo")  # TRL's loss aggregations the methods use
# what a method is to the report, so the workflow picks its defaults by role, not by name: the
# baseline every comparison is against, the paper's GC2PO, its corrected form, one of their
# ablations (``register_variant``), a control (the oracle's), any other method
ROLES = ("reference", "paper", "corrected", "ablation", "control", "baseline")
# a method that owns its reward trains with [outcome, its reward] (gc2po.training.rewards
# .reward_functions): the outcome logged beside it, not trained on
OWN_REWARD_WEIGHTS = [0.0, 1.0]
# the trainer fields of the counterfactual signal: R_cf's terms and perturbations, its weight and
# its normalisation, the signal a form reads. Only a method that computes a per-episode signal
# (``needs_cf``) reads them; set for another one, they change nothing (the workflow warns)
COUNTERFACTUAL_FIELDS = (
    "lambda_cf",
    "lambda_exp",
    "lambda_sta",
    "cf_tau",
    "cf_eps_u",
    "num_perturbations",
    "perturbation",
    "perturbation_p",
    "perturbation_sigma",
    "perturbation_alpha",
    "answer_space",
    "answer_topk",
    "cf_state",
    "cf_std_floor",
    "cf_z_clip",
    "cf_signal",
    "cf_signal_rho",
)


@dataclass
class RolloutBatch:
    """One scored generation batch as a method sees it: this process's rows [B, ...].

    ``row_index`` places each row in the generation batch of all processes, where the K
    completions of a prompt are consecutive; rows may arrive shuffled (advantages computed in the
    loss forward). ``gather`` all-gathers a tensor along dim 0 across processes.
    """

    rewards: (
        torch.Tensor
    )  # [B] outcome reward R_out as TRL combined it (NaN = no function scored it)
    row_index: torch.Tensor  # [B] long
    group_size: int  # K
    completion_mask: torch.Tensor  # [B, T] bool
    gather: Callable[[torch.Tensor], torch.Tensor]
    old_logps: torch.Tensor | None = None  # [B, T] sampling-policy log-probs
    episode_ids: torch.Tensor | None = None  # [B, T], -1 = no episode
    # [B, Lmax] R_cf (or the cf_signal) per episode, 0 if none; [B, 1] for a trajectory_signal
    r_cf: torch.Tensor | None = None
    states: Any = None  # gc2po.training.episodes.EpisodeStates: final-norm states at episode ends
    # [B] long: each row's problem step count (testbed rows; the gated form's value gate)
    steps: torch.Tensor | None = None
    services: Any = None  # gc2po.training.services.RolloutServices (extra generation and scoring)

    @property
    def lengths(self) -> torch.Tensor:
        return self.completion_mask.sum(-1)


class MethodOutput(NamedTuple):
    """What an advantage function returns: advantages [B] or [B, T], metrics to log, and per-row
    tensors its own loss reads (GVPO's centred rewards, GCPO's reference log-probs). A plain
    ``(advantages, metrics)`` pair is the same with no loss inputs."""

    advantages: torch.Tensor
    metrics: dict[str, float]
    loss_inputs: Mapping[str, torch.Tensor] = MappingProxyType({})


AdvantageFn = Callable[[RolloutBatch, Any], tuple[torch.Tensor, dict[str, float]] | MethodOutput]
LossFn = Callable[
    [torch.Tensor, dict, Any], torch.Tensor
]  # (per-token log-probs [B,T], inputs, config) -> loss


@dataclass(frozen=True)
class Method:
    """A registered training method.

    ``advantages(batch, config)`` returns [B] or [B, T] advantages and metrics. ``fixed`` holds
    the config values that define the method (its loss aggregation included): a run config that
    sets one of them to another value is refused. ``display_name``, ``colour`` and ``order`` are
    what every table and figure shows (``gc2po.reporting.names``).
    """

    name: str
    summary: str
    advantages: AdvantageFn
    display_name: str  # its row in tables, its legend entry in figures
    colour: str  # "#rrggbb", the same in every figure
    order: int  # where it sorts in tables and legends (ascending): the paper's Table 1 order first
    loss_type: str = "grpo"
    needs_episodes: bool = False  # segments completions into episodes
    # a per-episode signal in batch.r_cf: R_cf from episode states (computable in the loss
    # forward), or the signal its cf_signal names (gc2po.training.signals), at generation
    needs_cf: bool = False
    # with cf_signal oracle, its signal is one value per completion (batch.r_cf [B, 1]), not one
    # per episode: the gated reward f x p_rho, p_rho computed as the oracle computes p (it divides
    # by the problem's number of steps, which only the oracle reads;
    # gc2po.training.signals.oracle_signal). Other signals stay per episode
    trajectory_signal: bool = False
    # the gated form (GRPO on f x g): the gate is the run's cf_gate (gc2po.core.gated)
    gated: bool = False
    # a form that takes its per-episode signal from the run's config (trainer.cf_signal, any of
    # gc2po.training.signals.SIGNALS; default r_cf) instead of fixing one: gc2po_add, grpo_gated
    signal_from_config: bool = False
    needs_rollout_states: bool = (
        False  # episode-end states before the loss (ReST's value head, GCPO)
    )
    needs_old_logps: bool = False  # sampling-policy log-probs before the loss (GCPO's reference)
    local_groups: bool = False  # generates per group: every group must sit on one process
    nonnegative_rewards: bool = False  # refuses reward functions that can go below 0 (GC2PO)
    fixed: dict[str, Any] = field(default_factory=dict)
    fidelity: str = "as in the paper"
    loss: LossFn | None = None  # replaces TRL's clipped loss when set (GVPO)
    cf_state: str = (
        "episode_end"  # the default token whose state R_cf reads (gc2po.training.episode_states)
    )
    # task -> a TRL reward function the method trains on instead of the outcome (its reward, e.g.
    # f x p); None: the outcome. The outcome is still logged, with weight 0 (OWN_REWARD_WEIGHTS)
    rewards: Mapping[str, Callable] | None = None
    # the method's own settings: a dataclass with a default for every field (and, optionally, a
    # ``check()`` raising ValueError naming the field); a run gives them as ``trainer.method_args``
    # and the method reads ``config.method_settings`` (``parse_settings``, below)
    settings: type | None = None
    role: str = "baseline"  # one of ROLES
    # the settings a workflow config's ``sweeps`` may vary for this method (one run per value)
    sweeps: tuple[str, ...] = ()
    # the form this method is a preset of (``register_preset``): that method with ``fixed``
    preset_of: str | None = None

    def check_fixed(self, settings: dict[str, Any]) -> None:
        """Refuse settings that give a field this method fixes another value (ValueError naming
        the first)."""
        for key, value in self.fixed.items():
            if key in settings and settings[key] != value:
                raise ValueError(
                    f"{key}={settings[key]!r} conflicts with method {self.name!r}, which "
                    f"fixes {key}={value!r} (part of its definition); remove {key}"
                )

    def unread(self, settings) -> list[str]:
        """The keys of ``settings`` (trainer fields) this method never reads: the counterfactual
        signal's, for a method that computes none."""
        return [] if self.needs_cf else [key for key in settings if key in COUNTERFACTUAL_FIELDS]

    def max_episodes(self, config) -> int:
        """Episodes per completion before later ones merge: the method's own ``max_episodes``
        setting where it has one (MRT), else the config's."""
        return getattr(config.method_settings, "max_episodes", config.max_episodes)

    def parse_settings(self, given: Mapping[str, Any] | None) -> Any:
        """The method's settings from a run's ``method_args`` (None: every default): unknown keys,
        values of another type and values its ``check()`` refuses fail naming the key."""
        given = dict(given or {})
        if self.settings is None:
            if given:
                raise ValueError(f"method_args: method {self.name!r} has no settings of its own")
            return None
        fields = {f.name: f for f in dataclasses.fields(self.settings)}
        unknown = sorted(set(given) - set(fields))
        if unknown:
            raise ValueError(
                f"method_args: unknown key(s) {unknown} for method {self.name!r}; "
                f"valid: {sorted(fields)}"
            )
        for key, value in given.items():
            kind = type(fields[key].default)
            try:
                given[key] = as_type(value, kind)
            except TypeError:
                raise ValueError(
                    f"method_args.{key} must be {kind.__name__}, got {value!r}"
                ) from None
        settings = self.settings(**given)
        if hasattr(settings, "check"):
            try:
                settings.check()
            except ValueError as err:
                raise ValueError(f"method_args.{err}") from err
        return settings

    def __post_init__(self):
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(
                f"method {self.name!r}: loss_type must be one of {LOSS_TYPES}, got "
                f"{self.loss_type!r}"
            )
        if self.role not in ROLES:
            raise ValueError(
                f"method {self.name!r}: role must be one of {ROLES}, got {self.role!r}"
            )
        own = {"reward_weights": list(OWN_REWARD_WEIGHTS)} if self.rewards is not None else {}
        object.__setattr__(self, "fixed", {"loss_type": self.loss_type, **own, **self.fixed})


METHODS: Registry[Method] = Registry("method")


def register_method(name: str, summary: str, **kwargs) -> Callable[[AdvantageFn], AdvantageFn]:
    """Decorator registering ``Method(name, summary, <the function>, **kwargs)``. One per
    function: variants of a method (its ablations) follow it as ``register_variant`` calls."""
    site = caller_site()

    def decorator(advantages: AdvantageFn) -> AdvantageFn:
        _add(Method(name, summary, advantages, **kwargs), site)
        return advantages

    return decorator


def register_variant(
    of: str,
    name: str,
    summary: str,
    *,
    fixed: dict[str, Any],
    display_name: str,
    colour: str,
    order: int,
) -> Method:
    """Register method ``of`` under another name, with more ``fixed`` settings (an ablation:
    ``{"lambda_exp": 0.0}``) and its own display name, colour and place in tables; its role is
    ``"ablation"`` and it has no sweeps of its own."""
    return _register_derived(
        of,
        caller_site(),
        name=name,
        summary=summary,
        fixed=fixed,
        display_name=display_name,
        colour=colour,
        order=order,
        role="ablation",
        sweeps=(),
    )


def register_preset(
    of: str,
    name: str,
    summary: str,
    *,
    fixed: dict[str, Any],
    display_name: str,
    colour: str,
    order: int,
    fidelity: str,
    role: str = "baseline",
    sweeps: tuple[str, ...] = (),
    **overrides: Any,
) -> Method:
    """Register form ``of`` (a method with ``signal_from_config``) under another name with its
    signal fixed (``fixed={"cf_signal": "sibling_agreement"}``): a name that earlier configs and
    results use, kept as that form with one setting. It keeps its own display name, colour,
    place in tables, role and sweeps; ``overrides`` replace other fields of the form (a control's
    ``local_groups``, the f x p control's own reward and advantages). A new pairing of a form and
    a signal needs no preset: a workflow config's ``variants`` gives ``trainer.cf_signal``."""
    return _register_derived(
        of,
        caller_site(),
        name=name,
        summary=summary,
        fixed=fixed,
        display_name=display_name,
        colour=colour,
        order=order,
        fidelity=fidelity,
        role=role,
        sweeps=sweeps,
        preset_of=of,
        **overrides,
    )


def _register_derived(of: str, site: str, *, fixed: dict[str, Any], **fields: Any) -> Method:
    """Register method ``of`` with ``fixed`` added to its own and ``fields`` replaced (an
    ablation, a preset). Never a form: an ablation of R_cf's parts or weight trains R_cf, and a
    preset has its signal fixed."""
    base = METHODS.get(of)
    derived = dataclasses.replace(
        base, fixed={**base.fixed, **fixed}, signal_from_config=False, **fields
    )
    return _add(derived, site)


def _add(method: Method, site: str) -> Method:
    """Refuse a colour or place in tables that another method has (a figure could not tell the
    two apart, a table could not order them); ``Registry.add`` refuses a name registered twice."""
    for other in METHODS.values():
        for key in ("colour", "order"):
            if other.name != method.name and getattr(other, key) == getattr(method, key):
                value = getattr(method, key)
                raise ValueError(
                    f"method {method.name!r} at {site}: {key} {value!r} is taken by "
                    f"method {other.name!r} (at {METHODS.site(other.name)})"
                )
    return METHODS.add(method.name, method, site)


def get_method(name: str) -> Method:
    return METHODS.get(name)


def advantage_metrics(adv: torch.Tensor, mask: torch.Tensor | None = None) -> dict[str, float]:
    """mean, std and |max| of the advantages ([B] or [B, T] over ``mask``)."""
    values = adv[mask.bool()] if mask is not None and adv.ndim == 2 else adv.reshape(-1)
    if values.numel() == 0:
        return {"advantages/mean": 0.0, "advantages/std": 0.0, "advantages/abs_max": 0.0}
    values = values.float()
    return {
        "advantages/mean": values.mean().item(),
        "advantages/std": values.std(unbiased=False).item(),
        "advantages/abs_max": values.abs().max().item(),
    }
