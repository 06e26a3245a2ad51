"""The value checks of ``GC2POConfig`` (``gc2po.training.config``), run by its ``__post_init__``:
what a method fixes, the ranges of GC2PO's and the baselines' fields, what vLLM with
importance-sampling correction needs, and the batch layout a method's advantages need. Each
raises ValueError naming the field."""

from __future__ import annotations

import dataclasses

from gc2po.core.gated import GATES
from gc2po.core.params import RANGES, check_params
from gc2po.core.perturbations import build_perturbation
from gc2po.core.signals import MIN_RHO
from gc2po.training.episode_states import STATE_CHOICES
from gc2po.training.ratio_guard import RatioGuard, truncated_sampling_keys
from gc2po.training.signals import NOISE, SIGNALS, needs_whole_groups

PRECISIONS = ("bf16-mixed", "bf16", "fp32")


def apply_method(config, method) -> None:
    """Set what the method fixes, refusing a field given another value (``Method.check_fixed``,
    the one place it runs), and the method's ``cf_state`` where the config leaves it None. What
    was given: ``config.given_keys`` when a run config built it (exact: a value equal to TRL's
    default is refused too), else every field that differs from its default."""
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    given = config.given_keys
    if given is None:
        given = [key for key in method.fixed if getattr(config, key) != defaults[key]]
    prefix = "trainer." if config.given_keys is not None else ""  # a run config's trainer key
    try:
        method.check_fixed({key: getattr(config, key) for key in method.fixed if key in given})
    except ValueError as err:
        raise ValueError(f"{prefix}{err}") from err
    for key, value in method.fixed.items():
        setattr(config, key, value)
    if config.cf_state is None:
        config.cf_state = method.cf_state


def check_gc2po_fields(config, method) -> None:
    """The value checks of GC2PO's and the baselines' fields (and of the GRPOConfig fields whose
    value GC2PO relies on); raises ValueError naming the first field out of its range."""
    if config.cf_state != "episode_end" and not method.needs_cf:
        raise ValueError(
            f"cf_state applies to the GC2PO methods only; method {config.method!r} "
            "reads episode ends"
        )
    if config.precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}, got {config.precision!r}")
    check_params(**{key: getattr(config, key) for key in RANGES})  # the core's parameters
    checks = [
        ("cf_state", config.cf_state in STATE_CHOICES, f"one of {list(STATE_CHOICES)}"),
        ("max_consecutive_skipped_steps", config.max_consecutive_skipped_steps >= 1, ">= 1"),
        (
            "multi_objective_aggregation",
            config.multi_objective_aggregation == "sum_then_normalize",
            "'sum_then_normalize' (R_out is the weighted sum of the reward functions)",
        ),
    ]
    for key, ok, rule in checks:
        if not ok:
            raise ValueError(f"{key} must be {rule}, got {getattr(config, key)!r}")
    if config.num_generations is not None and config.num_generations < 2:
        raise ValueError(
            f"num_generations must be >= 2 (a group needs K >= 2), got {config.num_generations}"
        )
    check_signal(config, method)
    build_perturbation(config.perturbation_spec())
    RatioGuard(config.ratio_guard_low, config.ratio_guard_high, config.ratio_guard_patience)


def check_signal(config, method) -> None:
    """``cf_signal`` is one of SIGNALS and one the method takes: any, for a form that takes its
    signal from the config (``Method.signal_from_config``: ``gc2po_add``, ``grpo_gated``); else
    its own (a preset's fixed signal, R_cf for the rest). ``cf_signal_rho`` mixes the oracle
    only: its noise is built around the oracle's validity to a chosen correlation with it, which
    for any other signal is a measured property, not a setting."""
    if config.cf_signal not in SIGNALS:
        raise ValueError(f"cf_signal must be one of {list(SIGNALS)}, got {config.cf_signal!r}")
    own = method.fixed.get("cf_signal", "r_cf")
    if not method.signal_from_config and config.cf_signal != own:
        from gc2po.methods import METHODS

        forms = [name for name, m in METHODS.items() if m.signal_from_config]
        raise ValueError(
            f"cf_signal {config.cf_signal!r}: method {config.method!r} uses {own!r}; remove "
            f"cf_signal, or train a form that takes it from the config ({', '.join(forms)}), "
            f"e.g. method: {forms[0]} with trainer.cf_signal: {config.cf_signal}"
        )
    rho = config.cf_signal_rho
    if rho is not None and (config.cf_signal != "oracle" or not MIN_RHO <= rho <= 1):
        raise ValueError(
            f"cf_signal_rho must be in [{MIN_RHO}, 1] and only mixes cf_signal 'oracle' (method "
            f"{config.method!r} uses {config.cf_signal!r}), got {rho!r}"
        )
    if config.cf_signal_noise not in NOISE:
        raise ValueError(
            f"cf_signal_noise must be one of {list(NOISE)}, got {config.cf_signal_noise!r}"
        )
    if config.cf_signal_noise != "exact" and rho is None:
        raise ValueError(
            f"cf_signal_noise {config.cf_signal_noise!r} spreads the noised oracle's noise: set "
            "cf_signal: oracle with cf_signal_rho, or remove cf_signal_noise"
        )
    weight = config.cf_readout_weight
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight >= 0:
        raise ValueError(f"cf_readout_weight must be a number >= 0, got {weight!r}")
    if weight and config.cf_signal != "readout":
        raise ValueError(
            f"cf_readout_weight weighs the oracle beside cf_signal 'readout' (method "
            f"{config.method!r} uses {config.cf_signal!r}): remove it"
        )
    check_gate(config, method)


def check_gate(config, method) -> None:
    """``cf_gate`` is one of GATES and set only on a gated form (``Method.gated``); the value gate
    divides by the problem's step count, which only a testbed row carries (checked on the data
    by ``gc2po.training.signals.problem_steps``)."""
    if config.cf_gate not in GATES:
        raise ValueError(f"cf_gate must be one of {list(GATES)}, got {config.cf_gate!r}")
    if config.cf_gate != "auto" and not (method.gated and method.signal_from_config):
        raise ValueError(
            f"cf_gate {config.cf_gate!r}: method {config.method!r} has no gate; it applies to "
            "the gated form (method: grpo_gated)"
        )


def check_vllm_fields(config) -> None:
    """What vLLM with importance-sampling correction needs: full-distribution sampling, and the
    ratio guard under sleep mode."""
    if config.use_vllm and config.vllm_importance_sampling_correction:
        truncated = truncated_sampling_keys(config.top_p, config.top_k, config.min_p)
        if truncated:
            raise ValueError(
                f"{truncated[0]}: with use_vllm and vllm_importance_sampling_correction, "
                "training rollouts sample the full distribution (a truncated one biases "
                "the importance ratio, https://github.com/huggingface/trl/issues/6789)"
            )
    if (
        config.use_vllm
        and config.vllm_enable_sleep_mode
        and not (config.vllm_importance_sampling_correction and config.ratio_guard_patience > 0)
    ):
        raise ValueError(
            "vllm_enable_sleep_mode: true needs the ratio guard "
            "(ratio_guard_patience > 0 with vllm_importance_sampling_correction): "
            "engine weights lost at a wake-up would otherwise go unnoticed "
            '(docs/measurements.md, "Ratio guard")'
        )


def check_batch_layout(config, method) -> None:
    """Where the method's advantages are computed decides what the batch must hold (checked after
    GRPOConfig's own ``__post_init__`` has settled ``steps_per_generation``)."""
    on_policy = config.cf_from_states and config.advantages_in_loss_forward
    if method.needs_cf and on_policy and config.steps_per_generation != 1:
        raise ValueError(
            f"method {config.method!r} computes its advantages in the loss forward when training "
            "is on-policy, which needs a generation batch in one micro-batch: set "
            f"steps_per_generation to 1 (got {config.steps_per_generation}) or "
            "sampling_ratio_pass to true (one extra forward pass)"
        )
    rows = config.per_device_train_batch_size * config.steps_per_generation
    local = method.local_groups or needs_whole_groups(config.cf_signal, config.cf_signal_rho)
    if local and rows % config.num_generations:
        raise ValueError(
            f"method {config.method!r} (cf_signal {config.cf_signal!r}) needs every group on "
            "one process: "
            f"per_device_train_batch_size ({config.per_device_train_batch_size}) x "
            "steps_per_generation must be a multiple of "
            f"num_generations ({config.num_generations})"
        )
