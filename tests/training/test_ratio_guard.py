"""The trainer/vLLM mismatch guard and the sampling settings it relies on (no vLLM needed)."""

from __future__ import annotations

import math
from contextlib import nullcontext
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gc2po.training.config import GC2POConfig
from gc2po.training.ratio_guard import RatioGuard, RatioMismatchError, truncated_sampling_keys

ROOT = Path(__file__).resolve().parents[2]
VLLM_RUN = dict(
    output_dir="unused", use_vllm=True, num_generations=2, per_device_train_batch_size=2
)


def test_one_step_outside_warns_and_a_step_inside_resets_the_count():
    guard = RatioGuard(0.95, 1.05, patience=2)
    assert guard.observe(1, 1.01) == "ok"
    with pytest.warns(UserWarning, match=r"step 2: mean importance ratio .* 0\.8000 outside"):
        assert guard.observe(2, 0.8) == "warn"
    assert guard.observe(3, 0.99) == "ok"
    with pytest.warns(UserWarning):
        assert guard.observe(4, 1.2) == "warn"


def test_patience_steps_in_a_row_stop_the_run_naming_the_step_and_the_cause():
    guard = RatioGuard(0.95, 1.05, patience=3)
    with pytest.warns(UserWarning):
        guard.observe(7, 0.9)
        guard.observe(8, float("nan"))  # a non-finite mean counts as outside
    with pytest.raises(RatioMismatchError, match=r"step 9: .* for 3 steps in a row.*stale weights"):
        guard.observe(9, 1.3)


def test_patience_zero_turns_the_guard_off_and_a_bad_band_is_refused():
    assert RatioGuard(0.95, 1.05, patience=0).observe(1, 0.1) == "ok"
    with pytest.raises(ValueError, match="band"):
        RatioGuard(1.02, 1.05)
    with pytest.raises(ValueError, match="ratio_guard_patience"):
        RatioGuard(patience=-1)


@given(st.floats(allow_nan=True, allow_infinity=True), st.integers(1, 5))
def test_the_guard_never_passes_a_mean_outside_the_band(mean, patience):
    guard = RatioGuard(0.95, 1.05, patience=patience)
    inside = math.isfinite(mean) and 0.95 <= mean <= 1.05
    outcomes = []
    for step in range(patience):
        try:
            with pytest.warns(UserWarning) if not inside and step < patience - 1 else nullcontext():
                outcomes.append(guard.observe(step, mean))
        except RatioMismatchError:
            outcomes.append("stop")
    assert outcomes == (["ok"] * patience if inside else ["warn"] * (patience - 1) + ["stop"])


def test_truncated_sampling_keys():
    assert truncated_sampling_keys(1.0, 0, None) == []
    assert truncated_sampling_keys(1.0, -1, 0.0) == []
    keys = [k.split("=")[0] for k in truncated_sampling_keys(0.9, 50, 0.05)]
    assert keys == ["top_p", "top_k", "min_p"]


@pytest.mark.parametrize(("key", "value"), [("top_p", 0.95), ("top_k", 20), ("min_p", 0.1)])
def test_truncated_training_sampling_with_vllm_importance_correction_is_refused(key, value):
    with pytest.raises(ValueError, match=rf"^{key}={value} .*vllm_importance_sampling_correction"):
        GC2POConfig(**VLLM_RUN, **{key: value})
    # without the correction (or without vLLM) the same sampling is the user's choice
    GC2POConfig(**VLLM_RUN, vllm_importance_sampling_correction=False, **{key: value})


def test_sleep_mode_needs_the_ratio_guard():
    with pytest.raises(ValueError, match="vllm_enable_sleep_mode"):
        GC2POConfig(**VLLM_RUN, vllm_enable_sleep_mode=True, ratio_guard_patience=0)
    GC2POConfig(**VLLM_RUN, vllm_enable_sleep_mode=True, ratio_guard_patience=3)


def test_shipped_configs_train_with_vllm_only_with_full_sampling_and_sleep_only_with_the_guard():
    for path in sorted((ROOT / "config").glob("*.yaml")):
        trainer = (yaml.safe_load(path.read_text()).get("train") or {}).get("trainer") or {}
        if not trainer.get("use_vllm"):
            continue
        assert (
            truncated_sampling_keys(
                trainer.get("top_p", 1.0), trainer.get("top_k", 0), trainer.get("min_p")
            )
            == []
        ), path.name
        if trainer.get("vllm_enable_sleep_mode"):
            assert trainer.get("ratio_guard_patience", 3) > 0, path.name
