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
from gc2po.training.ratio_guard import (
    RatioGuard,
    RatioMismatchError,
    logged_ratio,
    replay,
    truncated_sampling_keys,
)

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


def test_replay_lists_the_warnings_and_the_step_that_stops():
    means = [1.0, 0.9, 0.9, 1.0, 0.9, float("nan"), 1.2, 0.9]
    assert replay(means, 0.95, 1.05, patience=3) == ([2, 3, 5, 6], 7)
    assert replay(means[:6], 0.95, 1.05, patience=3) == ([2, 3, 5, 6], None)
    assert replay(means, 0.95, 1.05, patience=1) == ([], 2)
    assert replay(means, 0.95, 1.05, patience=0) == ([], None)


@given(st.lists(st.floats(0.8, 1.2), max_size=30), st.integers(1, 4))
def test_replay_stops_at_the_first_run_of_patience_steps_outside(means, patience):
    outside = [not 0.95 <= m <= 1.05 for m in means]
    first = next(
        (
            i + 1
            for i in range(len(means))
            if i + 1 >= patience and all(outside[i - patience + 1 : i + 1])
        ),
        None,
    )
    warned, stop = replay(means, 0.95, 1.05, patience)
    assert stop == first
    assert warned == [i + 1 for i in range(stop or len(means)) if outside[i] and i + 1 != stop]


# two completions of 3 tokens; the second's last token is padding (its huge ratio must not count),
# the first's last token has no vLLM log-prob (NaN: ratio 1, as TRL counts it)
LOG_RATIO = [[math.log(2), math.log(0.5), float("nan")], [math.log(4), 0.0, math.log(100)]]
MASK = [[1, 1, 1], [1, 1, 0]]


@pytest.mark.parametrize(
    ("mode", "clip_min", "expected"),
    [
        ("token_truncate", None, (2 + 0.5 + 1 + 3 + 1) / 5),  # 4 clipped to 3
        ("token_mask", None, (2 + 0.5 + 1 + 0 + 1) / 5),  # 4 above 3 counts as 0
        ("sequence_truncate", None, (1 + 3) / 2),  # sequence ratios 2 * 0.5 * 1 and 4 * 1
        ("sequence_mask", None, (1 + 0) / 2),
        ("token_truncate", 0.6, (2 + 0.6 + 1 + 3 + 1) / 5),
        ("token_mask", 0.6, (2 + 0 + 1 + 0 + 1) / 5),
    ],
)
def test_logged_ratio_by_hand_in_every_mode(mode, clip_min, expected):
    import torch

    log_ratio, mask = torch.tensor(LOG_RATIO), torch.tensor(MASK)
    assert logged_ratio(log_ratio, mask, mode, clip_min, 3.0) == pytest.approx(expected)


def test_logged_ratio_of_an_empty_batch_is_zero_and_an_unknown_mode_is_refused():
    import torch

    assert logged_ratio(torch.zeros(2, 3), torch.zeros(2, 3), "token_truncate") == 0.0
    with pytest.raises(ValueError, match=r"^vllm_importance_sampling_mode .* got 'token'$"):
        logged_ratio(torch.zeros(2, 3), torch.ones(2, 3), "token")


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        # p far from q (mean |log p/q| about 0.6) but p/q <= 3 everywhere: the mean stays at 1
        ([0.15, 0.25, 0.3, 0.3], 1.0),
        # p/q = 6 on the last token: sum_y min(p, 3q) = 0.05 + 0.05 + 0.3 + 0.3 = 0.7
        ([0.05, 0.05, 0.3, 0.6], 0.7),
    ],
)
def test_the_token_mean_is_the_trainers_mass_within_three_times_the_engines(p, expected):
    """Why stale weights hardly move the guard: over tokens sampled from the engine's q, the
    expectation of min(p/q, 3) is sum_y min(p(y), 3 q(y)), 1 whenever p <= 3q, however far p
    is from q; it drops only where the trainer puts mass the engine underweights 3 times over."""
    import torch

    q, p = torch.tensor([0.4, 0.3, 0.2, 0.1]), torch.tensor(p)
    assert float(torch.minimum(p, 3 * q).sum()) == pytest.approx(expected)
    generator = torch.Generator().manual_seed(0)
    tokens = torch.multinomial(q, 200_000, replacement=True, generator=generator)
    log_ratio = (p.log() - q.log())[tokens].reshape(1000, 200)
    assert log_ratio.abs().mean() > 0.5
    mean = logged_ratio(log_ratio, torch.ones_like(log_ratio), "token_truncate", None, 3.0)
    assert mean == pytest.approx(expected, abs=0.01)


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
