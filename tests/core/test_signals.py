"""The per-episode signals' math (``gc2po.core.signals``): the noisy oracle is the plain validity
at rho 1 and has the stated within-group correlation with validity given f below it, the gated
reward f x p_rho is the oracle's f x p at rho 1, and the answer-dependence drop on hand-computed
log-probs, never NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gc2po.core.corrected import additive_token_advantages
from gc2po.core.signals import (
    LOGP_FLOOR,
    MIN_RHO,
    answer_logprob_drop,
    gated_validity,
    mix_readout,
    mix_to_correlation,
    within_group_correlation,
)

NAN = float("nan")
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
    # the noise says nothing about f itself (the outcome already does): each f cell keeps its
    # mean validity
    noise_part = signal[:, 0].numpy() - validity
    assert abs(noise_part[f == 1].mean()) < 1e-9 and abs(noise_part[f == 0].mean()) < 1e-9


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
        if np.std(v_r) <= 1e-9:  # validity constant in each f cell: no noise scale, validity
            np.testing.assert_array_equal(s, v)
            continue
        # the noise moves no (group, f) cell's mean validity
        for x in (0, 1):
            assert abs((s - v)[fe == x].sum()) <= 1e-9
        s_r = s - np.array([s[fe == x].mean() for x in fe])
        # a tiny group may have no noise direction left once f and validity are taken out: its
        # signal is then the validity, perfectly correlated; otherwise exactly rho
        noiseless = np.std(s_r - v_r) <= 1e-9
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


@settings(max_examples=100, deadline=None)
@given(batches())
def test_rho_one_is_the_plain_validity(batch):
    validity, present, f, group, noise = batch
    signal = mix_to_correlation(validity, present, f, group, 1.0, noise)
    torch.testing.assert_close(signal, torch.where(present, validity, 0.0), rtol=0, atol=0)


def test_rho_one_by_hand():
    validity = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    present = torch.tensor([[True, True], [True, False], [True, True], [True, True]])
    signal = mix_to_correlation(
        validity,
        present,
        torch.tensor([1, 1, 0, 0]),
        torch.zeros(4, dtype=torch.long),
        1.0,
        torch.randn(4, 2, dtype=torch.float64),
    )
    expected = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    assert torch.equal(signal, expected)


def test_noise_scale_by_hand():
    # one group of 4 one-episode rows, all f = 0: validity 1, 0, 0, 1 (cell mean 1/2, v_r = +-1/2,
    # sd 1/2). Noise (1, 1, -1, -1) is already demeaned and orthogonal to v_r = (1, -1, -1, 1)/2,
    # unit std; at rho 0.6 its scale is sd sqrt(1 - rho^2) / rho = 0.5 * 0.8 / 0.6 = 2/3
    validity = torch.tensor([[1.0], [0.0], [0.0], [1.0]], dtype=torch.float64)
    signal = mix_to_correlation(
        validity,
        torch.ones(4, 1, dtype=torch.bool),
        torch.zeros(4, dtype=torch.long),
        torch.zeros(4, dtype=torch.long),
        0.6,
        torch.tensor([[1.0], [1.0], [-1.0], [-1.0]], dtype=torch.float64),
    )
    expected = torch.tensor([[5 / 3], [2 / 3], [-2 / 3], [1 / 3]], dtype=torch.float64)
    torch.testing.assert_close(signal, expected)


def copy_group():
    """One group of 8: six correct one-episode copies of a bet (episode invalid), one wrong copy,
    one wrong solution of three equally long episodes, the first two valid (token ids per row)."""
    r_out = torch.tensor([1.0] * 6 + [0.0, 0.0], dtype=torch.float64)
    episode_ids = torch.tensor([[0, 0, 0, -1, -1, -1]] * 7 + [[0, 0, 1, 1, 2, 2]])
    mask = episode_ids >= 0
    validity = torch.zeros(8, 3, dtype=torch.float64)
    validity[7, :2] = 1.0
    present = torch.zeros(8, 3, dtype=torch.bool)
    present[:, 0] = True
    present[7] = True
    return r_out, episode_ids, mask, validity, present


@pytest.mark.parametrize(
    "lambda_cf, expected", [(0.0, 0.5772), (0.8, 0.3360), (1.5, 0.1250), (2.0, -0.0258)]
)
def test_the_plain_oracle_lowers_a_correct_copy_by_hand(lambda_cf, expected):
    # A_out of a correct row: (1 - 3/4) / (sqrt(3/16) + 1e-4) = 0.5772. Validity, share-weighted
    # (each row weighs 1; the solution's episodes 1/3 each): mean (2/3) / 8 = 1/12, variance
    # (7 (1/12)^2 + 2/3 (11/12)^2 + 1/3 (1/12)^2) / 8 = 11/144, sd 0.2764 (over the 0.1 floor);
    # a copy's z = -(1/12) / 0.2764 = -0.3015, so its sequence advantage is 0.5772 - 0.3015 lambda
    r_out, episode_ids, mask, validity, present = copy_group()
    signal = mix_to_correlation(
        validity,
        present,
        r_out.long(),
        torch.zeros(8, dtype=torch.long),
        1.0,
        torch.randn(8, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64),
    )
    result = additive_token_advantages(
        r_out, episode_ids, signal, mask, group_size=8, lambda_cf=lambda_cf,
        cf_std_floor=0.1, cf_z_clip=3.0,
    )  # fmt: skip
    plain = additive_token_advantages(
        r_out, episode_ids, validity, mask, group_size=8, lambda_cf=lambda_cf,
        cf_std_floor=0.1, cf_z_clip=3.0,
    )  # fmt: skip
    a_out = 0.25 / (math.sqrt(3 / 16) + 1e-4)
    hand = a_out - lambda_cf * (1 / 12) / (math.sqrt(11) / 12)
    assert hand == pytest.approx(expected, abs=1e-4)
    assert result.sequence_advantages[:6].tolist() == pytest.approx([hand] * 6, abs=1e-12)
    torch.testing.assert_close(result.sequence_advantages, plain.sequence_advantages)
    # below GRPO's for every lambda > 0 (the old rho = 1 signal gave +0.712 > +0.577 at 0.8)
    assert lambda_cf == 0 or result.sequence_advantages[0] < a_out


@pytest.mark.parametrize("rho", [0.0, MIN_RHO / 2, -0.3, 1.5, float("nan")])
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


@pytest.mark.parametrize("rho", RHOS)
def test_a_group_of_constant_validity_is_its_validity(rho):
    validity = torch.ones(6, 1, dtype=torch.float64)  # every episode valid
    noise = torch.randn(6, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    args = (torch.ones(6, 1), torch.ones(6, dtype=torch.long), torch.zeros(6, dtype=torch.long))
    assert torch.equal(mix_to_correlation(validity, *args, rho, noise), validity)


finite = st.floats(-1e300, 1e300, allow_nan=False)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(finite, finite, st.booleans(), st.integers(0, 1)), min_size=1, max_size=12),
    st.floats(MIN_RHO, 1.0),
)
def test_mixing_is_finite_for_any_input(entries, rho):
    validity, noise, present, f = (torch.tensor(c) for c in zip(*entries))
    signal = mix_to_correlation(
        validity.double().unsqueeze(-1),
        present.unsqueeze(-1).float(),  # a 0/1 float mask is a mask
        f,
        torch.zeros(len(entries), dtype=torch.long),
        rho,
        noise.double().unsqueeze(-1),
    )
    assert torch.isfinite(signal).all()


# -- the gated control's reward ------------------------------------------------------------------
def test_gated_validity_by_hand():
    # row 0: right, 2 of 3 episodes valid, 4 steps -> 2/4; row 1: wrong -> 0; row 2: right, 3
    # episodes, 2 steps -> 1/3 (noise 0.5 pushes the sum to 1.5 -> 1.5/3); row 3: right, the
    # noisy sum below 0 -> 0; row 4: right, above its denominator -> 1
    signal = torch.tensor(
        [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [1.5, 0.0, 0.0], [-2.0, 0.5, 0.0], [3.0, 0.0, 0.0]]
    )
    present = torch.tensor(
        [[1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 0], [1, 0, 0]], dtype=torch.bool
    )
    f = torch.tensor([1, 0, 1, 1, 1])
    steps = torch.tensor([4, 3, 2, 2, 2])
    reward = gated_validity(signal, present, f, steps)
    torch.testing.assert_close(reward, torch.tensor([0.5, 0.0, 0.5, 0.0, 1.0], dtype=torch.float64))


@settings(max_examples=200, deadline=None)
@given(batches(), st.lists(st.integers(0, 6), min_size=18, max_size=18))
def test_gated_validity_at_rho_one_is_the_oracles_f_x_p_exactly(batch, steps):
    validity, present, f, group, noise = batch
    steps = torch.tensor(steps[: len(f)])
    signal = mix_to_correlation(validity, present, f, group, 1.0, noise)
    reward = gated_validity(signal, present, f, steps)
    for row in range(len(f)):  # the oracle's own arithmetic: valid / max(steps, episodes)
        valid = int(validity[row][present[row]].sum())
        denominator = max(int(steps[row]), int(present[row].sum()))
        p = valid / denominator if denominator else 0.0
        assert reward[row].item() == float(int(f[row]) * p)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(finite, st.booleans(), st.integers(0, 1), st.integers(0, 9)), min_size=1,
             max_size=8),
    st.integers(1, 4),
)  # fmt: skip
def test_gated_validity_is_in_the_unit_interval_for_any_input(entries, width):
    values, present, f, steps = (torch.tensor(c) for c in zip(*entries))
    signal = values.double().unsqueeze(-1).expand(-1, width)
    reward = gated_validity(signal, present.unsqueeze(-1).expand(-1, width).float(), f, steps)
    assert torch.isfinite(reward).all() and (reward >= 0).all() and (reward <= 1).all()
    assert (reward[f == 0] == 0).all()


# -- the noised oracle with noise in every group, and the persistent readout ---------------------
def test_noise_in_every_group_by_hand():
    # group 0: validity 1, 0 (f 1, 1): within-f std 0.5; group 1: validity 1, 1: constant
    validity = torch.tensor([[1.0], [0.0], [1.0], [1.0]], dtype=torch.float64)
    present = torch.ones(4, 1, dtype=torch.bool)
    f = torch.ones(4, dtype=torch.long)
    group = torch.tensor([0, 0, 1, 1])
    noise = torch.tensor([[1.0], [-1.0], [3.0], [1.0]], dtype=torch.float64)
    rho = 0.6
    signal = mix_to_correlation(validity, present, f, group, rho, noise, every_group=True)
    # sd_ref = 0.5 (the one varying group); scale = 0.5 * sqrt(1 - 0.36) / 0.6 = 2/3; the noise,
    # demeaned in each (group, f) cell and scaled to unit std in its group: +-1 in both groups
    scale = 0.5 * 0.8 / 0.6
    expected = [[1 + scale], [0 - scale], [1 + scale], [1 - scale]]
    torch.testing.assert_close(signal, torch.tensor(expected, dtype=torch.float64))
    # the exact mixing leaves the constant group its validity: every_group does not
    exact = mix_to_correlation(validity, present, f, group, rho, noise)
    assert torch.equal(exact[2:], validity[2:]) and not torch.equal(signal[2:], validity[2:])


def test_noise_in_every_group_where_no_group_varies_uses_the_largest_spread_of_a_grade():
    validity = torch.ones(4, 1, dtype=torch.float64)
    noise = torch.tensor([[2.0], [0.0], [0.0], [0.0]], dtype=torch.float64)
    args = (torch.ones(4, 1), torch.ones(4, dtype=torch.long), torch.zeros(4, dtype=torch.long))
    signal = mix_to_correlation(validity, *args, 0.5, noise, every_group=True)
    centred = (signal - 1).squeeze(-1)
    # unit std within the group times 0.5 * sqrt(1 - 0.25) / 0.5
    assert centred.pow(2).mean().sqrt().item() == pytest.approx(0.75**0.5)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(finite, finite, st.booleans(), st.integers(0, 1), st.integers(0, 2)),
        min_size=1,
        max_size=12,
    ),
    st.floats(MIN_RHO, 1.0),
)
def test_noise_in_every_group_is_finite_and_the_oracle_at_rho_one(entries, rho):
    validity, noise, present, f, group = (torch.tensor(c) for c in zip(*entries))
    args = (validity.double().unsqueeze(-1), present.unsqueeze(-1).float(), f, group, rho)
    signal = mix_to_correlation(*args, noise.double().unsqueeze(-1), every_group=True)
    assert torch.isfinite(signal).all()
    plain = mix_to_correlation(*args[:-1], 1.0, noise.double().unsqueeze(-1), every_group=True)
    kept = present.unsqueeze(-1)
    assert torch.equal(plain[kept], validity.double().clamp(0, 1).unsqueeze(-1)[kept])


def test_mix_readout_by_hand():
    # one group of three episodes: readout 1, 2, 3 -> z -1.2247, 0, +1.2247 (population std)
    readout = torch.tensor([[1.0], [2.0], [3.0], [5.0]], dtype=torch.float64)
    validity = torch.tensor([[0.0], [1.0], [1.0], [1.0]], dtype=torch.float64)
    present = torch.tensor([[1], [1], [1], [0]]).bool()
    group = torch.tensor([0, 0, 0, 0])
    signal = mix_readout(readout, validity, present, group, 2.0)
    z = 1 / (2 / 3) ** 0.5
    expected = torch.tensor([[-z], [2.0], [z + 2.0], [0.0]], dtype=torch.float64)
    torch.testing.assert_close(signal, expected)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(finite, st.booleans(), st.booleans(), st.integers(0, 2)), min_size=1, max_size=12
    ),  # fmt: skip
    st.floats(0, 10),
    st.floats(1e-3, 1e3),
    st.floats(-1e3, 1e3),
)
def test_mix_readout_is_finite_and_blind_to_a_rescaled_readout(entries, weight, scale, shift):
    readout, valid, present, group = (torch.tensor(c) for c in zip(*entries))
    readout = readout.double().clamp(-1e6, 1e6).unsqueeze(-1)
    args = (valid.double().unsqueeze(-1), present.unsqueeze(-1), group, weight)
    signal = mix_readout(readout, *args)
    assert torch.isfinite(signal).all()
    torch.testing.assert_close(mix_readout(readout * scale + shift, *args), signal, atol=1e-6,
                               rtol=1e-6)  # fmt: skip


def test_mix_readout_counts_a_nan_readout_as_zero_and_refuses_a_negative_weight():
    readout = torch.tensor([[NAN], [1.0]], dtype=torch.float64)
    args = (torch.zeros(2, 1), torch.ones(2, 1).bool(), torch.zeros(2).long())
    torch.testing.assert_close(
        mix_readout(readout, *args, 0.0), torch.tensor([[-1.0], [1.0]], dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="weight must be a finite number >= 0"):
        mix_readout(readout, *args, -1.0)
