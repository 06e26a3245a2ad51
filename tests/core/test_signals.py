"""The per-episode signals' math (``gc2po.core.signals``): the noisy oracle has the stated
within-group correlation with validity given f, and the answer-dependence drop on hand-computed
log-probs, never NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gc2po.core.signals import (
    LOGP_FLOOR,
    answer_logprob_drop,
    mix_to_correlation,
    within_group_correlation,
)

RHOS = [0.07, 0.15, 0.3, 0.6, 1.0]


def within_given_f(signal: np.ndarray, validity: np.ndarray, f: np.ndarray) -> float:
    """Pearson correlation of signal and validity after removing each f cell's mean (numpy, the
    textbook formula: an independent check of the torch code)."""

    def residual(x):
        x = x.astype(float).copy()
        for value in (0, 1):
            x[f == value] -= x[f == value].mean() if (f == value).any() else 0.0
        return x

    return float(np.corrcoef(residual(signal), residual(validity))[0, 1])


def one_group(episodes: int, seed: int):
    """A single group of ``episodes`` rows with one episode each (validity and f random, f
    correlated with validity as on the testbed)."""
    rng = np.random.default_rng(seed)
    validity = (rng.random(episodes) < 0.4).astype(float)
    f = np.where(rng.random(episodes) < 0.7, validity, 1 - validity).astype(int)
    return validity, f


@pytest.mark.parametrize("rho", RHOS)
def test_mixing_gives_the_stated_rho_on_a_large_group(rho):
    validity, f = one_group(4000, seed=1)
    noise = torch.randn(4000, 1, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    signal = mix_to_correlation(
        torch.tensor(validity).unsqueeze(-1),
        torch.ones(4000, 1, dtype=torch.bool),
        torch.tensor(f),
        torch.zeros(4000, dtype=torch.long),
        rho,
        noise,
    )
    measured = within_given_f(signal[:, 0].numpy(), validity, f)
    assert abs(measured - rho) <= 0.02, (rho, measured)
    # the signal says nothing about f itself: GRPO's outcome advantage already does
    assert abs(signal[f == 1, 0].mean().item()) < 1e-9 and abs(signal[f == 0, 0].mean()) < 1e-9


@st.composite
def batches(draw):
    """Rows of a few groups, 1-4 episodes each, random validity, f, presence and noise."""
    groups, size = draw(st.integers(1, 3)), draw(st.integers(2, 6))
    rows, width = groups * size, draw(st.integers(1, 4))
    bits = st.lists(st.booleans(), min_size=rows * width, max_size=rows * width)
    validity = torch.tensor(draw(bits), dtype=torch.float64).view(rows, width)
    present = torch.tensor(draw(bits)).view(rows, width)
    present[:, 0] = True  # every row has a first episode
    f = torch.tensor(draw(st.lists(st.integers(0, 1), min_size=rows, max_size=rows)))
    seed = draw(st.integers(0, 2**16))
    noise = torch.randn(rows, width, generator=torch.Generator().manual_seed(seed))
    return validity, present, f, torch.arange(rows) // size, noise.double()


@settings(max_examples=200, deadline=None)
@given(batches(), st.sampled_from(RHOS))
def test_every_group_has_the_stated_rho_where_validity_varies_given_f(batch, rho):
    validity, present, f, group, noise = batch
    signal = mix_to_correlation(validity, present, f, group, rho, noise)
    assert torch.isfinite(signal).all() and (signal[~present] == 0).all()
    for g in group.unique():
        rows, slots = (present & (group == g).unsqueeze(-1)).nonzero(as_tuple=True)
        s, v, fe = signal[rows, slots].numpy(), validity[rows, slots].numpy(), f[rows].numpy()
        v_r = v - np.array([v[fe == x].mean() for x in fe])
        if np.std(v_r) <= 1e-9:  # validity constant in each f cell: noise only (0 at rho = 1)
            assert rho < 1 or np.allclose(s, 0)
            continue
        s_r = s - np.array([s[fe == x].mean() for x in fe])
        # a tiny group may have no noise direction left once f and validity are taken out: its
        # signal is then rho * z, perfectly correlated; otherwise exactly rho
        noiseless = np.std(s_r - rho * v_r / np.std(v_r)) <= 1e-9
        assert within_given_f(s, v, fe) == pytest.approx(1.0 if noiseless else rho, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(batches(), st.sampled_from(RHOS), st.booleans())
def test_within_group_correlation_is_the_textbook_one(batch, rho, given_f):
    validity, present, f, group, noise = batch
    signal = mix_to_correlation(validity, present, f, group, rho, noise) + noise  # any signal
    rows, slots = present.nonzero(as_tuple=True)
    args = (signal[rows, slots], validity[rows, slots], f[rows], group[rows])
    corr, episodes = within_group_correlation(*args, given_f=given_f)
    for index, g in enumerate(group.unique().tolist()):
        chosen = (args[3] == g).numpy()
        s, v, fe = (a[chosen].numpy() for a in args[:3])
        assert episodes[index] == chosen.sum()
        fe = fe if given_f else np.zeros_like(fe)
        s_r = s - np.array([s[fe == x].mean() for x in fe])
        v_r = v - np.array([v[fe == x].mean() for x in fe])
        if min(np.std(s_r), np.std(v_r)) <= 1e-9:
            assert math.isnan(corr[index])
        else:
            assert corr[index].item() == pytest.approx(within_given_f(s, v, fe), abs=1e-9)


def test_rho_one_is_the_within_f_validity_standardised():
    validity = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    present = torch.tensor([[True, True], [True, False], [True, True], [True, True]])
    f = torch.tensor([1, 1, 0, 0])
    signal = mix_to_correlation(
        validity,
        present,
        f,
        torch.zeros(4, dtype=torch.long),
        1.0,
        torch.randn(4, 2, dtype=torch.float64),
    )
    # f = 1 cell: validities 1, 0, 0 (mean 1/3); f = 0 cell: 1, 1, 0, 1 (mean 3/4)
    v_r = torch.tensor([2 / 3, -1 / 3, -1 / 3, 1 / 4, 1 / 4, -3 / 4, 1 / 4], dtype=torch.float64)
    expected = v_r / v_r.pow(2).mean().sqrt()
    torch.testing.assert_close(signal[present], expected)


def test_a_group_of_constant_validity_gets_the_noise_part_only():
    validity = torch.ones(6, 1, dtype=torch.float64)  # every episode valid
    args = (
        torch.ones(6, 1, dtype=torch.bool),
        torch.ones(6, dtype=torch.long),
        torch.zeros(6, dtype=torch.long),
    )
    noise = torch.randn(6, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    noisy = mix_to_correlation(validity, *args, 0.3, noise)
    assert noisy.std(unbiased=False).item() == pytest.approx(math.sqrt(1 - 0.3**2))
    assert noisy.mean().item() == pytest.approx(0.0, abs=1e-12)
    assert (mix_to_correlation(validity, *args, 1.0, noise) == 0).all()


@pytest.mark.parametrize("rho", [0.0, -0.3, 1.5, float("nan")])
def test_rho_out_of_range_is_refused(rho):
    with pytest.raises(ValueError, match="rho must be in"):
        mix_to_correlation(
            torch.zeros(2, 1),
            torch.ones(2, 1, dtype=torch.bool),
            torch.zeros(2, dtype=torch.long),
            torch.zeros(2, dtype=torch.long),
            rho,
            torch.zeros(2, 1),
        )


def test_answer_drop_by_hand():
    # row 0: answer of two tokens, log-probs -0.1, -0.2 in full context; removing episode 0 makes
    # them -2.0, -1.0 (drop 1.9 + 0.8 = 2.7), removing episode 1 makes them -0.1, -0.3 (0.1)
    # row 1: one answer token; its episode 1 does not exist (masked, NaN inside)
    # row 2: no answer at all (a completion without \boxed{})
    full = torch.tensor([[-0.1, -0.2], [-0.5, float("nan")], [float("nan")] * 2])
    ablated = torch.tensor(
        [
            [[-2.0, -1.0], [-0.1, -0.3]],
            [[-0.4, float("nan")], [float("nan")] * 2],
            [[-3.0, -3.0], [-3.0, -3.0]],
        ]
    )
    answer = torch.tensor([[True, True], [True, False], [False, False]])
    episodes = torch.tensor([[True, True], [True, False], [True, True]])
    drop = answer_logprob_drop(full, ablated, answer, episodes)
    torch.testing.assert_close(
        drop, torch.tensor([[2.7, 0.1], [-0.1, 0.0], [0.0, 0.0]], dtype=torch.float64)
    )


def test_answer_drop_of_an_impossible_answer_is_finite():
    full = torch.tensor([[-0.5]])
    ablated = torch.tensor([[[-math.inf]]])
    drop = answer_logprob_drop(
        full, ablated, torch.ones(1, 1, dtype=torch.bool), torch.ones(1, 1, dtype=torch.bool)
    )
    assert drop.item() == pytest.approx(-0.5 - LOGP_FLOOR)


def test_answer_drop_of_nothing_is_an_empty_table():
    drop = answer_logprob_drop(
        torch.zeros(0, 0),
        torch.zeros(0, 0, 0),
        torch.zeros(0, 0, dtype=torch.bool),
        torch.zeros(0, 0, dtype=torch.bool),
    )
    assert drop.shape == (0, 0)


def test_answer_drop_checks_shapes():
    with pytest.raises(ValueError, match="ablated must have shape"):
        answer_logprob_drop(
            torch.zeros(2, 3),
            torch.zeros(2, 1, 2),
            torch.ones(2, 3, dtype=torch.bool),
            torch.ones(2, 1, dtype=torch.bool),
        )
