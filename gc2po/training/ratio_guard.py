"""Guard against a silent mismatch between the sampling engine (vLLM) and the trainer.

With vLLM generating and TRL's importance-sampling correction on, every step logs
``sampling/importance_sampling_ratio/mean`` over the completions it trains on. With
delta_t = log pi_train(y_t) - log pi_vllm(y_t) per completion token (the trainer's log-prob at
generation time minus vLLM's processed log-prob of the sampled token; a NaN from vLLM counts as
0), TRL 1.16 logs, per process and then averaged over processes (``logged_ratio``):

- ``token_truncate`` (config/paper.yaml): the mean over all completion tokens of the batch
  (pooled, so long completions weigh more) of exp(delta_t) clipped to [clip_min, clip_max];
- ``token_mask``: the same mean, tokens whose exp(delta_t) is outside the bounds counted as 0;
- ``sequence_truncate``: the mean over sequences of exp(sum_t delta_t) (the ratio of the whole
  completion), clipped;
- ``sequence_mask`` (TRL's default): the same mean, sequences outside the bounds counted as 0.

The per-token ratio has expectation 1 under vLLM's sampling distribution q whatever the
trainer's p is (E_q[p/q] = sum_y p(y) = 1); clipped at 3 its expectation is
sum_y min(p(y), 3 q(y)). So in the token modes the logged mean moves only where the trainer puts
probability on tokens the engine gives a third of it or less (weights lost at a wake-up, an engine
grossly stale), or by sampling noise: an engine a few steps behind at a small learning rate
leaves it at 1 (measured with vLLM's CPU build: docs/measurements.md, "Ratio guard",
benchmarks/training/ratio_guard_power.py). The sequence modes multiply the per-token ratios of a
completion, so they move more, with staleness and with numeric noise alike. Truncated sampling
(top_p / top_k / min_p) biases the mean below 1: vLLM's log-probs are then those of the truncated
distribution, whose support holds less than all of p's mass. One step outside the band warns;
``patience`` steps in a row stop the run, naming the step and the likely causes.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

IMPORTANCE_SAMPLING_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")

LIKELY_CAUSES = (
    "the engine is generating from lost or stale weights (weights lost at a sleep/wake-up; weight "
    "syncs skipped or lost for long enough at the run's learning rate: "
    "https://github.com/huggingface/trl/issues/5312), or "
    "truncated sampling (top_p < 1, top_k, min_p: set them off with "
    "vllm_importance_sampling_correction)"
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


def replay(
    means: Sequence[float], low: float = 0.95, high: float = 1.05, patience: int = 3
) -> tuple[list[int], int | None]:
    """The guard's verdicts on a run's logged means (step i = ``means[i - 1]``): the steps that
    warned, and the step that stopped the run (None when none did)."""
    guard, warned = RatioGuard(low, high, patience), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step, mean in enumerate(means, start=1):
            try:
                if guard.observe(step, mean) == "warn":
                    warned.append(step)
            except RatioMismatchError:
                return warned, step
    return warned, None


def logged_ratio(
    log_ratio, mask, mode: str, clip_min: float | None = None, clip_max: float | None = 3.0
) -> float:
    """TRL 1.16's ``sampling/importance_sampling_ratio/mean`` of one process's generation batch.

    log_ratio: (B, T) trainer minus vLLM log-prob of each sampled token (NaN where vLLM gave
    none); mask: (B, T), 1 on completion tokens. The module docstring says what each mode logs.
    """
    import torch

    if mode not in IMPORTANCE_SAMPLING_MODES:
        raise ValueError(
            f"vllm_importance_sampling_mode must be one of {IMPORTANCE_SAMPLING_MODES}, "
            f"got {mode!r}"
        )
    delta = torch.nan_to_num(log_ratio * mask, nan=0.0)
    sequence_level = mode.startswith("sequence")
    ratio = torch.exp(delta.sum(dim=-1, keepdim=True) if sequence_level else delta)
    if mode.endswith("truncate"):
        ratio = torch.clamp(ratio, min=clip_min, max=clip_max)
    else:
        low = -math.inf if clip_min is None else clip_min
        high = math.inf if clip_max is None else clip_max
        ratio = ratio.masked_fill((ratio < low) | (ratio > high), 0.0)
    flat = ratio.flatten() if sequence_level else ratio[mask.bool()]
    return float(flat.mean()) if flat.numel() else 0.0


def truncated_sampling_keys(top_p: float, top_k: int | None, min_p: float | None) -> list[str]:
    """The sampling keys that truncate the distribution vLLM samples from (https://github.com/huggingface/trl/issues/6789:
    vLLM's log-probs are then those of the truncated distribution, which biases the ratio)."""
    bad = []
    if top_p != 1.0:
        bad.append(f"top_p={top_p} (must be 1.0)")
    if top_k not in (None, 0, -1):
        bad.append(f"top_k={top_k} (must be 0: off)")
    if min_p not in (None, 0, 0.0):
        bad.append(f"min_p={min_p} (must be 0 or unset)")
    return bad
