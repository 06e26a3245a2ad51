"""A pre-registered family (report.families): Holm over the family's runs, the margin's verdict,
against scipy's t-test and a hand-computed Holm step-down."""

import pytest
from scipy import stats

from gc2po.reporting.family import Family, compare_family, verdict, write_family
from gc2po.reporting.tables import EvalFile
from tests.reporting.conftest import write_eval

SPLIT = "test_wrongbet"
# per (run, seed): correctness of problems q0..q3 on the split
CORRECT = {
    ("ref", 0): [0, 0, 0, 0],  # per-seed means 0, 0.25, 0.25
    ("ref", 1): [1, 0, 0, 0],
    ("ref", 2): [1, 0, 0, 0],
    ("r1", 0): [1, 1, 0, 0],  # 0.5, 0.75, 1.0: r1 - ref 0.5, 0.5, 0.75
    ("r1", 1): [1, 1, 1, 0],
    ("r1", 2): [1, 1, 1, 1],
    ("r2", 0): [0, 0, 0, 0],  # 0, 0.5, 0: r2 - ref 0, 0.25, -0.25
    ("r2", 1): [1, 1, 0, 0],
    ("r2", 2): [0, 0, 0, 0],
}


def _files(tmp_path, correct=CORRECT):
    return [
        EvalFile.from_path(write_eval(tmp_path, "testbed", run, seed, SPLIT, values))
        for (run, seed), values in correct.items()
    ]


FAMILY = Family("why", SPLIT, "ref", ("r1", "r2"), margin=3.0, preregistered="prereg.md")


def test_holm_over_the_family_by_hand(tmp_path):
    rows = compare_family(_files(tmp_path), FAMILY).set_index("run")
    p1 = stats.ttest_1samp([0.5, 0.5, 0.75], 0).pvalue
    p2 = stats.ttest_1samp([0.0, 0.25, -0.25], 0).pvalue
    assert rows.loc["r1", "diff"] == pytest.approx(100 * (0.5 + 0.5 + 0.75) / 3)
    assert rows.loc["r2", "diff"] == pytest.approx(0.0, abs=1e-9)
    assert rows.loc["r1", "t_p"] == pytest.approx(p1)
    assert rows.loc["r2", "t_p"] == pytest.approx(p2)
    # Holm's step-down over m = 2: the smaller p times 2, the larger times 1, non-decreasing
    assert p1 < p2
    assert rows.loc["r1", "holm_p"] == pytest.approx(min(1.0, 2 * p1))
    assert rows.loc["r2", "holm_p"] == pytest.approx(max(min(1.0, 2 * p1), p2))
    # p1 = 0.0198: 2 p1 < 0.05 survives; r2's interval (+-62 points) is far wider than +-3
    assert rows.loc["r1", "verdict"] == "higher (Holm)"
    assert rows.loc["r2", "verdict"] == "not decided"
    assert rows.loc["r1", "seeds"] == "0,1,2" and rows.loc["r1", "problems"] == 4


def test_the_family_is_the_runs_not_the_splits(tmp_path):
    """Alone, r1's p is not corrected (m = 1); beside r2 it is doubled."""
    alone = compare_family(_files(tmp_path), Family("one", SPLIT, "ref", ("r1",)))
    assert alone.holm_p.iloc[0] == pytest.approx(alone.t_p.iloc[0])


@pytest.mark.parametrize(
    ("diff", "low", "high", "survives", "margin", "expected"),
    [
        (5.0, 1.0, 9.0, "yes", None, "higher (Holm)"),
        (-5.0, -9.0, -1.0, "yes", 3.0, "lower (Holm)"),
        (0.5, -2.0, 2.9, "no", 3.0, "within +-3"),
        (0.5, -2.0, 3.1, "no", 3.0, "not decided"),  # the interval leaves the margin
        (0.5, -3.0, 3.0, "no", 3.0, "within +-3"),  # the bounds are inside
        (0.5, -2.0, 2.0, "no", None, "not decided"),  # no margin: no equivalence claim
        (0.0, float("nan"), float("nan"), "", 3.0, "not decided"),  # one seed: no interval
    ],
)
def test_verdicts(diff, low, high, survives, margin, expected):
    assert verdict(diff, low, high, survives, margin) == expected


def test_markdown_says_where_it_was_preregistered(tmp_path):
    md, csv = tmp_path / "out" / "family_why.md", tmp_path / "out" / "family_why.csv"
    write_family(_files(tmp_path), FAMILY, md=md, csv=csv)
    text = md.read_text()
    assert "Pre-registered in `prereg.md`" in text and "Holm p (2 runs)" in text
    assert "| r1 |" in text and "higher (Holm)" in text
    exploratory = Family("x", SPLIT, "ref", ("r1",))
    write_family(_files(tmp_path), exploratory, md=md, csv=csv)
    assert "Exploratory" in md.read_text()
    assert csv.read_text().splitlines()[0].startswith("block,run,reference,benchmark")


def test_a_run_without_the_reference_seeds_fails_naming_both(tmp_path):
    correct = {k: v for k, v in CORRECT.items() if k[0] != "ref"}
    correct[("ref", 7)] = [0, 0, 0, 0]
    with pytest.raises(ValueError, match="r1 and ref share no seed"):
        compare_family(_files(tmp_path, correct), FAMILY)
