"""The form-matched controls' calibration (``gc2po.audit.calibration``): the readout weight that
reaches a target rho, the weight-matched lambda_cf, and lambda* by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from gc2po.audit.calibration import (
    lambda_star,
    readout_rho,
    readout_weight,
    weight_matched_lambda,
)


def frame(problems: int = 60, k: int = 6, seed: int = 0) -> pd.DataFrame:
    """Problems of k one-episode completions: validity and f random, the readout pure noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(problems):
        for sample in range(k):
            valid = int(rng.random() < 0.5)
            rows.append({"problem_id": f"p{p}", "prompt_index": p, "sample_index": sample,
                         "episode": 0, "f": int(rng.random() < 0.6), "valid": valid,
                         "readout": rng.normal()})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("target", [0.05, 0.2, 0.5])
def test_the_readout_weight_is_the_first_on_the_grid_to_reach_the_target(target):
    data = frame()
    weight, rho = readout_weight(data, target)
    assert rho >= target and rho == pytest.approx(readout_rho(data, weight))
    if weight > 0:  # the grid point before it falls short
        assert readout_rho(data, round(weight - 0.005, 3)) < target


def test_rho_grows_with_the_weight_and_an_unreachable_target_fails():
    data = frame()
    rhos = [readout_rho(data, w) for w in (0.0, 0.5, 1.0, 2.0, 4.0)]
    assert rhos == sorted(rhos) and rhos[-1] > 0.8
    with pytest.raises(ValueError, match="no weight up to 5.0 reaches rho"):
        readout_weight(data, 0.9999)


def test_weight_matched_lambda_by_hand():
    assert weight_matched_lambda(0.29, 0.07) == 4.14
    assert weight_matched_lambda(0.29, 0.001) == 14.5  # rho below 0.02 counts as 0.02
    assert weight_matched_lambda(0.29, -0.05) == 14.5
    with pytest.raises(ValueError, match="lambda\\* must be a positive number"):
        weight_matched_lambda(float("nan"), 0.1)


def test_lambda_star_by_hand():
    # one group of 4 one-episode completions of 2 tokens: a correct copy (invalid), a correct
    # derivation (valid), two wrong ones (invalid)
    f = torch.tensor([1, 1, 0, 0])
    episode_ids = torch.zeros(4, 2, dtype=torch.long)
    mask = torch.ones(4, 2, dtype=torch.bool)
    validity = torch.tensor([[0.0], [1.0], [0.0], [0.0]], dtype=torch.float64)
    copies = torch.tensor([True, False, False, False])
    star, groups = lambda_star(f, episode_ids, validity, mask, copies, group_size=4,
                               cf_std_floor=0.1, cf_z_clip=3.0)  # fmt: skip
    # outcome advantage of the copy: (1 - 0.5) / (std(1, 1, 0, 0) + 1e-4), GRPO's (population
    # std 0.5); validity z of the copy: (0 - 0.25) / sqrt(0.1875) = -0.57735 -> flips there
    advantage = 0.5 / (0.5 + 1e-4)
    assert groups == 1 and star == pytest.approx(advantage / (0.25 / 0.1875**0.5))


def test_lambda_star_leaves_out_copies_grpo_gives_nothing():
    # group 0 as in the hand-computed case (flip at about 1.73); group 1: every completion right,
    # so the copy's outcome advantage is 0 and its flip lambda 0: it takes no part
    f = torch.tensor([1, 1, 0, 0, 1, 1, 1, 1])
    episode_ids = torch.zeros(8, 2, dtype=torch.long)
    mask = torch.ones(8, 2, dtype=torch.bool)
    validity = torch.tensor([[0.0], [1.0], [0.0], [0.0], [0.0], [1.0], [1.0], [1.0]]).double()
    copies = torch.tensor([True, False, False, False, True, False, False, False])
    star, groups = lambda_star(f, episode_ids, validity, mask, copies, group_size=4,
                               cf_std_floor=0.1, cf_z_clip=3.0)  # fmt: skip
    assert groups == 1 and star == pytest.approx(0.5 / (0.5 + 1e-4) / (0.25 / 0.1875**0.5))
