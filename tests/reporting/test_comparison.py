"""GC2PO - GRPO style comparison table: hand-computed paired differences and tests."""

import json

import pytest

from gc2po.reporting.comparison import compare, write_comparison
from gc2po.reporting.stats import paired_macro_bootstrap_diff
from gc2po.reporting.tables import EvalFile

# per (model, seed): correctness of problems q0, q1 on test_id
CORRECT = {("gc2po", 0): [1, 1], ("gc2po", 1): [1, 0], ("grpo", 0): [0, 1], ("grpo", 1): [1, 0]}


def _files(tmp_path, correct=CORRECT):
    files = []
    for (model, seed), values in correct.items():
        path = tmp_path / "testbed" / model / f"seed{seed}" / "test_id.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(
                json.dumps({"problem_id": f"q{i}", "correct": v}) + "\n"
                for i, v in enumerate(values)
            )
        )
        files.append(EvalFile.from_path(path))
    return files


def test_paired_difference_and_tests_by_hand(tmp_path):
    rows = compare(_files(tmp_path), "gc2po", "grpo", ["test_id"])
    row = rows.iloc[0]
    # gc2po 3/4 = 75%, grpo 2/4 = 50%; per-seed differences 0.5 and 0.0 -> mean 25 points
    assert (row.mean_a, row.mean_b, row["diff"]) == (
        pytest.approx(75.0),
        pytest.approx(50.0),
        pytest.approx(25.0),
    )
    # t = 0.25 / (0.353553 / sqrt 2) = 1.0 with 1 degree of freedom: two-sided p = 0.5
    assert row.t_p == pytest.approx(0.5)
    # all four sign flips of (0.5, 0.0) give |mean| 0.25 >= 0.25: p = 1
    assert row.sign_flip_p == pytest.approx(1.0)
    a = [[[1, 1], [1, 0]]]
    b = [[[0, 1], [1, 0]]]
    expected = [100 * v for v in paired_macro_bootstrap_diff(a, b)]
    assert [row["diff"], row.diff_ci_low, row.diff_ci_high] == pytest.approx(expected)
    assert (
        rows.benchmark.tolist() == ["test_id", "Average"]
        and row.seeds == "0,1"
        and row.problems == 2
    )


def test_markdown_names_the_methods_and_writes_the_csv(tmp_path):
    md, csv = tmp_path / "out" / "gc2po_vs_grpo.md", tmp_path / "out" / "gc2po_vs_grpo.csv"
    write_comparison(_files(tmp_path), "gc2po", "grpo", ["test_id"], md=md, csv=csv)
    text = md.read_text()
    assert (
        "| Base model | Benchmark | GC2PO (paper) | GRPO | GC2PO (paper) - GRPO [95% CI] |" in text
    )
    assert "| testbed | Test (ID) | 75.0 | 50.0 | +25.0 [" in text
    assert csv.read_text().startswith(
        "block,benchmark,mean_a,mean_b,diff,diff_ci_low,diff_ci_high,t_p,sign_flip_p"
    )


def test_methods_without_a_common_seed_are_refused(tmp_path):
    files = _files(tmp_path, {("gc2po", 0): [1, 1], ("grpo", 1): [0, 1]})
    with pytest.raises(ValueError, match="gc2po and grpo share no seed"):
        compare(files, "gc2po", "grpo", ["test_id"])
