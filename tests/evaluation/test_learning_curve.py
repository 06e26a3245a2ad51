"""Learning curves: which models a run's curve evaluates, and the figure from per-seed CSVs."""

import json

import pandas as pd
import pytest

from gc2po.evaluation.learning_curve import (
    COLUMNS,
    accuracy_from_samples,
    curve_points,
    learning_curve,
)
from gc2po.reporting.training_figures import learning_curves


def test_points_are_the_kept_checkpoints_between_the_base_and_the_final_model(tmp_path):
    run = tmp_path / "runs" / "testbed" / "gc2po" / "seed0"
    for name in (
        "final",
        "checkpoint-25",
        "checkpoint-50",
        "checkpoint-100",
        "checkpoint-x",
        "logs",
    ):
        (run / name).mkdir(parents=True)
    (run / "checkpoint-75").write_text("not a folder")
    # checkpoint-100 is the final step: its evaluation stands for it; step 0 is the base model's
    assert curve_points(run, max_steps=100) == [
        (25, str(run / "checkpoint-25")),
        (50, str(run / "checkpoint-50")),
    ]


def test_a_run_without_its_final_model_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no final model"):
        curve_points(tmp_path, max_steps=10)


def _samples(path, rows):
    path.write_text(
        "".join(json.dumps({"problem_id": pid, "correct": ok}) + "\n" for pid, ok in rows)
    )
    return path


def test_the_ends_are_read_from_their_evaluations_on_the_curve_problems_only(tmp_path):
    base = _samples(
        tmp_path / "base.jsonl",
        [("a", True), ("a", False), ("b", False), ("b", False), ("c", True), ("c", True)],
    )
    final = _samples(
        tmp_path / "final.jsonl",
        [("a", True), ("a", True), ("b", True), ("b", False), ("c", False), ("c", False)],
    )
    assert accuracy_from_samples(base, ["a", "b"]) == (0.25, 4)  # c is not a curve problem
    curve = learning_curve(
        [],
        {"test_id": [{"id": "a"}, {"id": "b"}]},
        task="testbed",
        sampling=None,
        ends={0: ("base", {"test_id": str(base)}), 60: ("final", {"test_id": str(final)})},
    )
    assert curve[["step", "accuracy", "samples"]].values.tolist() == [[0, 0.25, 4], [60, 0.75, 4]]


def test_an_evaluation_missing_a_curve_problem_is_refused(tmp_path):
    base = _samples(tmp_path / "base.jsonl", [("a", True)])
    with pytest.raises(ValueError, match="holds 1 of the curve's 2 problems"):
        accuracy_from_samples(base, ["a", "b"])


def test_figure_has_one_panel_per_benchmark_and_every_step(tmp_path):
    curves = {}
    for run in ("grpo", "gc2po"):
        for seed in (0, 1):
            path = tmp_path / f"{run}_{seed}.csv"
            pd.DataFrame(
                [
                    {
                        "step": step,
                        "benchmark": b,
                        "accuracy": 0.1 * step + 0.05 * seed,
                        "problems": 4,
                        "samples": 4,
                        "model": "m",
                    }
                    for step in (0, 1, 2)
                    for b in ("test_id", "test_longer")
                ],
                columns=COLUMNS,
            ).to_csv(path, index=False)
            curves.setdefault(("testbed", run), []).append(path)
    out = tmp_path / "figures" / "learning_curves.png"
    assert learning_curves(curves, ["test_id", "test_longer"], out) == {"grpo": 3, "gc2po": 3}
    assert out.stat().st_size > 1000 and out.with_suffix(".pdf").exists()
