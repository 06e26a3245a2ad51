"""GC2PO - GRPO style comparison table: hand-computed paired differences, tests and Holm."""

import json
import math

import pandas as pd
import pytest

from gc2po.reporting.comparison import compare, write_comparison
from gc2po.reporting.tables import EvalFile

# per (model, seed): correctness of problems q0, q1 on test_id
CORRECT = {("gc2po", 0): [1, 1], ("gc2po", 1): [1, 0], ("grpo", 0): [0, 1], ("grpo", 1): [1, 0]}


def _files(tmp_path, correct=CORRECT, benchmark="test_id"):
    files = []
    for (model, seed), values in correct.items():
        path = tmp_path / "testbed" / model / f"seed{seed}" / f"{benchmark}.jsonl"
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
    # t-interval of (50, 0) points: 25 +- t_{0.975, 1} 35.36 / sqrt 2 = 25 +- 25 tan(0.475 pi),
    # [-292.7, +342.7], clipped to what a difference of pass@1 can be
    assert [row.diff_ci_low, row.diff_ci_high] == pytest.approx([-100, 100])
    # one split: Holm's family is that split, so its adjusted p is its own p (0.5): no
    assert (row.holm_p, row.holm_survives) == (pytest.approx(0.5), "no")
    assert row.interval == "95% t-interval over 2 seeds, for these problems"
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
        "| Base model | Benchmark | GC2PO (paper) | GRPO | GC2PO (paper) - GRPO [95% CI] | "
        "paired t p | sign-flip p | Holm (1 split) | seeds |" in text
    )
    assert (
        "| testbed | Test (ID) | 75.0 | 50.0 | +25.0 [-100.0, +100.0] | 0.500 | 1.000 | no |"
        in text
    )
    assert "| testbed | Average | 75.0 | 50.0 | +25.0 [" in text and "| not in family |" in text
    assert "95% t-interval over 2 seeds, for these problems" in text
    assert "the 1 benchmark split of a base model (Test (ID); the Average excluded" in text
    assert csv.read_text().startswith(
        "block,benchmark,mean_a,mean_b,diff,diff_ci_low,diff_ci_high,t_p,sign_flip_p,holm_p,"
        "holm_survives"
    )


def test_methods_without_a_common_seed_are_refused(tmp_path):
    files = _files(tmp_path, {("gc2po", 0): [1, 1], ("grpo", 1): [0, 1]})
    with pytest.raises(ValueError, match="gc2po and grpo share no seed"):
        compare(files, "gc2po", "grpo", ["test_id"])


def _many_seeds(tmp_path, shifts: dict[str, list[int]]):
    """Per benchmark, gc2po answers ``shift`` more of 10 problems than grpo on each of 5 seeds."""
    files = []
    for benchmark, per_seed in shifts.items():
        correct = {}
        for seed, shift in enumerate(per_seed):
            correct["grpo", seed] = [1] * 3 + [0] * 7
            correct["gc2po", seed] = [1] * (3 + shift) + [0] * (7 - shift)
        files += _files(tmp_path, correct, benchmark)
    return files


def test_holm_marks_over_the_benchmark_rows_of_a_base_model(tmp_path):
    # test_id: differences 20, 30, 20, 30, 20 points (t p 0.0006: survives 3 x p);
    # test_wrongbet: 0, 10, 0, 10, 10 (p 0.07: no); bench_c (not a testbed split, so in the
    # family): 10, 20, 10, 0, 10 (p 0.034 alone, not after Holm)
    shifts = {
        "test_id": [2, 3, 2, 3, 2],
        "bench_c": [1, 2, 1, 0, 1],
        "test_wrongbet": [0, 1, 0, 1, 1],
    }
    files = _many_seeds(tmp_path, shifts)
    rows = compare(files, "gc2po", "grpo", list(shifts)).set_index("benchmark")
    assert rows.t_p["bench_c"] < 0.05 < rows.holm_p["bench_c"]
    ordered = rows.t_p[list(shifts)].sort_values()
    by_hand = [min(1, (3 - i) * p) for i, p in enumerate(ordered)]
    by_hand = pd.Series(pd.Series(by_hand).cummax().values, index=ordered.index)
    assert rows.holm_p[list(shifts)].tolist() == pytest.approx(by_hand[list(shifts)].tolist())
    assert rows.holm_survives[list(shifts)].tolist() == ["yes", "no", "no"]
    assert pd.isna(rows.holm_p["Average"])  # not in the family


def test_the_holm_family_holds_only_the_splits_the_train_split_can_teach(tmp_path):
    # the same differences on test_id and test_wrongbet (learnable) and on test_rephrase and
    # test_longer (labelled not learnable): the family is 2, the unlearnable rows are reported
    # with their tests and no Holm mark
    shifts = {
        "test_id": [2, 3, 2, 3, 2],
        "test_rephrase": [2, 3, 2, 3, 2],
        "test_longer": [1, 2, 1, 0, 1],
        "test_wrongbet": [0, 1, 0, 1, 1],
    }
    files = _many_seeds(tmp_path, shifts)
    md, csv = tmp_path / "out.md", tmp_path / "out.csv"
    rows = write_comparison(files, "gc2po", "grpo", list(shifts), md=md, csv=csv)
    rows = rows.set_index("benchmark")
    p = rows.t_p[["test_id", "test_wrongbet"]].sort_values()
    by_hand = [2 * p.iloc[0], max(2 * p.iloc[0], p.iloc[1])]  # m = 2, by hand
    assert rows.holm_p[p.index].tolist() == pytest.approx(by_hand)
    for unlearnable in ("test_rephrase", "test_longer"):
        assert pd.isna(rows.holm_p[unlearnable]) and rows.t_p[unlearnable] < 0.05
        assert rows.holm_survives[unlearnable] == "not in family"
    text = md.read_text()
    assert "| Holm (2 splits) |" in text
    assert "| testbed | Longer chains |" in text and text.count("| not in family |") == 3
    assert (
        "the 2 benchmark splits of a base model that the train split can teach (Test (ID), "
        "Wrong bet; not in the family, not learnable from the train split: Rephrased, Longer "
        "chains; the Average excluded: it is their mean)" in " ".join(text.split())
    )


def test_one_seed_prints_no_interval(tmp_path):
    files = _files(tmp_path, {("gc2po", 0): [1, 1], ("grpo", 0): [0, 1]})
    md, csv = tmp_path / "out.md", tmp_path / "out.csv"
    rows = write_comparison(files, "gc2po", "grpo", ["test_id"], md=md, csv=csv)
    assert math.isnan(rows.diff_ci_low[0]) and rows.interval[0] == "1 seed: no CI"
    text = md.read_text()
    assert "| testbed | Test (ID) | 100.0 | 50.0 | +50.0 | n/a | 1.000 | n/a | 0 |" in text
    assert "1 seed: no CI" in text


def test_the_caption_states_the_sign_flip_floor_of_its_seed_count(tmp_path):
    # five seeds of one sign reach the floor, 2 / 2^5; the caption names that floor, not 3 seeds'
    files = _many_seeds(tmp_path, {"test_id": [2, 3, 2, 3, 2]})
    md, csv = tmp_path / "cmp.md", tmp_path / "cmp.csv"
    rows = write_comparison(files, "gc2po", "grpo", ["test_id"], md=md, csv=csv)
    assert rows.set_index("benchmark").sign_flip_p["test_id"] == pytest.approx(2 / 2**5)
    caption = md.read_text()
    assert "the smallest sign-flip p with 5 seeds 0.0625" in caption
    assert "3 seeds" not in caption
