"""The signal audit's statistics of the bonus training adds (``gc2po.audit.training_stats``),
against a hand computation on a small batch, and against the training function itself."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from gc2po.audit.training_stats import (
    BonusTransform,
    bonus_z,
    step_matched_correlation,
    training_quantity_correlation,
)
from gc2po.core.corrected import additive_token_advantages


def small_batch() -> pd.DataFrame:
    """Two problems, k = 2. Problem a: completion 0 is one 6-token episode (share 1), completion
    1 two 3-token episodes (share 0.5 each). Problem b: two one-episode completions whose signal
    barely varies (the floor binds), with different f."""
    return pd.DataFrame(
        {
            "problem_id": ["a", "a", "a", "b", "b"],
            "prompt_index": [0, 0, 0, 1, 1],
            "sample_index": [0, 1, 1, 0, 1],
            "episode": [0, 0, 1, 0, 0],
            "f": [1, 1, 1, 1, 0],
            "valid": [0.0, 1.0, 0.0, 1.0, 0.0],
            "tokens": [6, 3, 3, 4, 2],
            "signal": [0.0, 1.0, 1.0, 0.02, 0.0],
        }
    )


TRANSFORM = BonusTransform(group_size=2, cf_std_floor=0.1, cf_z_clip=3.0)


def test_the_bonus_z_is_the_hand_computed_one():
    # problem a: shares 1, .5, .5 (total 2); mean (0 + .5 + .5) / 2 = .5; variance
    # (1 * .25 + .5 * .25 + .5 * .25) / 2 = .25, sd .5 > floor: z = -1, +1, +1.
    # problem b: shares 1, 1; mean .01, sd .01 < floor .1: z = (.02 - .01) / .1 = .1 and -.1
    z = bonus_z(small_batch(), "signal", TRANSFORM)
    assert z.share.tolist() == [1.0, 0.5, 0.5, 1.0, 1.0]
    assert z.z.to_numpy() == pytest.approx([-1.0, 1.0, 1.0, 0.1, -0.1])
    assert z.group_sd.to_numpy() == pytest.approx([0.5, 0.5, 0.5, 0.01, 0.01])


def test_the_training_quantity_is_the_hand_computed_one():
    # validity demeaned within the problem, share-weighted:
    #   a: mean (0 + .5 * 1 + .5 * 0) / 2 = .25 -> v~ = -.25, .75, -.25
    #      sum w z v~ = .25 + .375 - .125 = .5; sum w z^2 = 2; sum w v~^2 = .0625 + .28125
    #      + .03125 = .375; sum w = 2
    #   b: v~ = .5, -.5; sum w z v~ = .05 + .05 = .1; sum w z^2 = .02; sum w v~^2 = .5; sum w 2
    # pooled: .6 / sqrt(2.02 * .875); rms z = sqrt(2.02 / 4)
    out = training_quantity_correlation(small_batch(), "signal", TRANSFORM, num_resamples=50)
    assert out["tq"] == pytest.approx(0.6 / math.sqrt(2.02 * 0.875))  # 0.4513
    assert out["rms_z"] == pytest.approx(math.sqrt(2.02 / 4))
    assert out["aligned"] == pytest.approx(out["tq"] * out["rms_z"])
    assert out["floor_binds"] == 0.5 and out["groups"] == 2
    assert out["tq_ci_low"] <= out["tq"] <= out["tq_ci_high"]
    # without the floor problem b's z is +-1: (.5 + 1) / sqrt((2 + 2) * .875)
    free = BonusTransform(2, cf_std_floor=1e-6, cf_z_clip=3.0)
    unfloored = training_quantity_correlation(small_batch(), "signal", free, num_resamples=10)
    assert unfloored["tq"] == pytest.approx(1.5 / math.sqrt(4 * 0.875))  # 0.8018


def test_the_step_matched_statistic_is_the_hand_computed_one():
    # cells (problem, step, f): a's step 0 holds completions 0 and 1 (weights 1, .5):
    #   z mean (-1 + .5) / 1.5 = -1/3 -> z~ = -2/3, 4/3; v mean .5 / 1.5 = 1/3 -> v~ = -1/3, 2/3
    #   sum w z~ v~ = 2/9 + 4/9 = 2/3; sum w z~^2 = 4/9 + 8/9 = 4/3; sum w v~^2 = 1/9 + 2/9
    # a's step 1 and b's two f cells hold one episode each: nothing left
    expected = (2 / 3) / math.sqrt((4 / 3) * (1 / 3))
    assert step_matched_correlation(small_batch(), "signal", TRANSFORM) == pytest.approx(expected)
    out = training_quantity_correlation(small_batch(), "signal", TRANSFORM, num_resamples=10)
    assert out["step_matched"] == pytest.approx(expected)


def test_a_signal_that_knows_only_the_step_reads_zero_step_matched():
    # the signal is the step index plus noise unrelated to validity within each step:
    # step 0 validity 1, 1, 0 and noise .1, -.1, 0; step 1 validity 0, 1, 0 and noise .1, 0, -.1
    frame = pd.DataFrame(
        {
            "problem_id": ["a"] * 6,
            "prompt_index": [0] * 6,
            "sample_index": [0, 0, 1, 1, 2, 2],
            "episode": [0, 1] * 3,
            "f": [1] * 6,
            "valid": [1.0, 0.0, 1.0, 1.0, 0.0, 0.0],
            "tokens": [3] * 6,
            "signal": [0.1, 1.1, -0.1, 1.0, 0.0, 0.9],
        }
    )
    transform = BonusTransform(3, 0.1, 3.0)
    assert step_matched_correlation(frame, "signal", transform) == pytest.approx(0.0, abs=1e-12)
    # ... while the training quantity sees the step's validity (step 0 is valid more often)
    assert training_quantity_correlation(frame, "signal", transform, num_resamples=10)["tq"] < 0


def test_the_bonus_z_is_the_one_the_corrected_advantage_adds():
    frame = small_batch()
    z = bonus_z(frame, "signal", TRANSFORM)
    # the same batch as token tensors: each episode's tokens in order, lambda_cf 1, r_out 0
    width = 6
    episode_ids = torch.full((4, width), -1)
    r_cf = torch.zeros(4, 2)
    for row in frame.itertuples():
        b = row.prompt_index * 2 + row.sample_index
        start = int((episode_ids[b] >= 0).sum())
        episode_ids[b, start : start + row.tokens] = row.episode
        r_cf[b, row.episode] = row.signal
    mask = episode_ids >= 0
    adv = additive_token_advantages(
        torch.zeros(4), episode_ids, r_cf, mask, group_size=2, lambda_cf=1.0,
        cf_std_floor=TRANSFORM.cf_std_floor, cf_z_clip=TRANSFORM.cf_z_clip,
    ).token_advantages  # fmt: skip
    for row, value in zip(frame.itertuples(), z.z):
        b = row.prompt_index * 2 + row.sample_index
        tokens = adv[b][episode_ids[b] == row.episode]
        assert tokens.numpy() == pytest.approx([value] * row.tokens, abs=1e-6)
