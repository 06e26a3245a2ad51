"""Guard against a silent mismatch between the sampling engine (vLLM) and the trainer.

With vLLM generating and TRL's importance-sampling correction on, every step logs the mean
per-token ratio pi_train / pi_vllm over the completions it trains on. When both engines hold the
same weights it stays near 1 (inside [0.95, 1.05] in tests/vllm_cpu on CPU); weights that
did not reach the engine (a skipped sync, the engine generating from stale weights after
sleep/wake) or truncated sampling (top_p / top_k / min_p: vLLM's log-probs are those of the
truncated distribution) move it away. One step outside the band warns; `patience` steps in a row
stop the run, naming the step and the likely causes.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

LIKELY_CAUSES = (
    "the engine is generating from stale weights (a weight sync skipped or lost, e.g. after "
    "sleep/wake: TRL issue 5312), or truncated sampling (top_p < 1, top_k, min_p: set them off "
    "with vllm_importance_sampling_correction)"
)


class RatioMismatchError(RuntimeError):
    """The mean importance ratio stayed outside the band for `patience` steps in a row."""


@dataclass
class RatioGuard:
    """Watches one mean importance ratio per optimizer step.

    low, high: the band the mean ratio must stay in; patience: steps in a row outside it that
    stop the run (0 turns the guard off). ``observe`` returns "ok", "warn" or raises.
    """

    low: float = 0.95
    high: float = 1.05
    patience: int = 3
    _outside: int = 0

    def __post_init__(self):
        if not 0 < self.low < 1 < self.high:
            raise ValueError(
                f"ratio_guard band must satisfy 0 < low < 1 < high, got [{self.low}, {self.high}]"
            )
        if self.patience < 0:
            raise ValueError(f"ratio_guard_patience must be >= 0, got {self.patience}")

    @property
    def enabled(self) -> bool:
        return self.patience > 0

    def observe(self, step: int, mean_ratio: float) -> str:
        """Record step `step`'s mean ratio. A non-finite mean counts as outside the band."""
        if not self.enabled:
            return "ok"
        if math.isfinite(mean_ratio) and self.low <= mean_ratio <= self.high:
            self._outside = 0
            return "ok"
        self._outside += 1
        where = (
            f"step {step}: mean importance ratio trainer/vLLM {mean_ratio:.4f} outside "
            f"[{self.low}, {self.high}]"
        )
        if self._outside >= self.patience:
            raise RatioMismatchError(
                f"{where} for {self._outside} steps in a row; stopping. "
                f"Likely cause: {LIKELY_CAUSES}"
            )
        warnings.warn(
            f"{where} ({self._outside}/{self.patience} before the run stops)", stacklevel=2
        )
        return "warn"


def truncated_sampling_keys(top_p: float, top_k: int | None, min_p: float | None) -> list[str]:
    """The sampling keys that truncate the distribution vLLM samples from (TRL issue 6789:
    vLLM's log-probs are then those of the truncated distribution, which biases the ratio)."""
    bad = []
    if top_p != 1.0:
        bad.append(f"top_p={top_p} (must be 1.0)")
    if top_k not in (None, 0, -1):
        bad.append(f"top_k={top_k} (must be 0: off)")
    if min_p not in (None, 0, 0.0):
        bad.append(f"min_p={min_p} (must be 0 or unset)")
    return bad
