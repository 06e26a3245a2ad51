"""Learning curves: which models a run's curve evaluates, and the figure from per-seed CSVs."""

import pandas as pd
import pytest

from gc2po.evaluation.learning_curve import COLUMNS, curve_points
from gc2po.reporting.figures import learning_curves


def test_points_run_from_the_base_through_kept_checkpoints_to_the_final_model(tmp_path):
    run = tmp_path / "runs" / "testbed" / "gc2po" / "seed0"
    for name in ("final", "checkpoint-25", "checkpoint-50", "checkpoint-100", "checkpoint-x", "logs"):
        (run / name).mkdir(parents=True)
    (run / "checkpoint-75").write_text("not a folder")
    points = curve_points(run, "resources/testbed/models/testbed", max_steps=100)
    # checkpoint-100 is the final step: the final model stands for it
    assert points == [(0, "resources/testbed/models/testbed"), (25, str(run / "checkpoint-25")),
                      (50, str(run / "checkpoint-50")), (100, str(run / "final"))]


def test_a_run_without_its_final_model_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no final model"):
        curve_points(tmp_path, "base", max_steps=10)


def test_figure_has_one_panel_per_benchmark_and_every_step(tmp_path):
    curves = {}
    for run in ("grpo", "gc2po"):
        for seed in (0, 1):
            path = tmp_path / f"{run}_{seed}.csv"
            pd.DataFrame([{"step": step, "benchmark": b, "accuracy": 0.1 * step + 0.05 * seed, "problems": 4,
                           "samples": 4, "model": "m"} for step in (0, 1, 2) for b in ("test_id", "test_longer")],
                         columns=COLUMNS).to_csv(path, index=False)
            curves.setdefault(("testbed", run), []).append(path)
    out = tmp_path / "figures" / "learning_curves.png"
    assert learning_curves(curves, ["test_id", "test_longer"], out) == {"grpo": 3, "gc2po": 3}
    assert out.stat().st_size > 1000 and out.with_suffix(".pdf").exists()
