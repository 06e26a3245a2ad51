"""The range of every method parameter the core takes, in one place.

A run's parameters are checked once, where its config is built (``gc2po.training.config_checks``
calls :func:`check_params` with the config's own names, so an error names the key); the core
functions take checked values and do not check them again. A caller of the core functions outside
a run checks its values here first.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gc2po.core.advantages import EPISODE_WEIGHT_NORMS
from gc2po.core.counterfactual import ANSWER_SPACES


def _int_at_least_1(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _positive(value) -> bool:
    return math.isfinite(value) and value > 0


# parameter (the config's name) -> (holds, the rule in words)
RANGES: dict[str, tuple[Callable[[object], bool], str]] = {
    # [0, 1] is the paper's range for its raw R_cf; the corrected form adds lambda_cf times a
    # within-group z-score (unit spread, clipped at cf_z_clip), not R_cf, and its weight is
    # calibrated against GRPO's outcome advantage (benchmarks/method/lambda_calibration.py: the
    # plain oracle's bonus flips a correct copy of the bet at a median 3.95 over the warm start's
    # train-split groups), so the range reaches past 1; a weak signal's weight matched to the
    # oracle's (lambda_cf x rho: R_cf's rho 0.07 needs 11.4 for the oracle's 0.8) reaches further
    "lambda_cf": (lambda v: 0.0 <= v <= 100.0, "in [0, 100]"),
    "lambda_exp": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    "lambda_sta": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    "cf_tau": (_positive, "> 0"),
    # eps_u = 0 would make S_exp 0/0 for a zero state
    "cf_eps_u": (_positive, "> 0"),
    "num_perturbations": (_int_at_least_1, ">= 1"),
    "answer_topk": (_int_at_least_1, ">= 1"),
    "answer_space": (lambda v: v in ANSWER_SPACES, f"one of {list(ANSWER_SPACES)}"),
    "trunc_frac": (lambda v: 0.0 <= v < 0.5, "in [0, 0.5)"),
    "adv_clip": (_positive, "> 0"),
    "episode_weight_norm": (
        lambda v: v in EPISODE_WEIGHT_NORMS,
        f"one of {list(EPISODE_WEIGHT_NORMS)}",
    ),
    "cf_std_floor": (_positive, "> 0"),
    "cf_z_clip": (_positive, "> 0"),
}


def check_params(**values) -> None:
    """ValueError naming the first parameter outside its range (``RANGES``)."""
    for key, value in values.items():
        holds, rule = RANGES[key]
        if not holds(value):
            raise ValueError(f"{key} must be {rule}, got {value!r}")
