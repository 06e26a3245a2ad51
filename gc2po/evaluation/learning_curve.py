"""Accuracy along training: every kept checkpoint of a run (``checkpoint-<step>``), its final
model and the base model (step 0), evaluated through the workflow's evaluation code on the
first problems of each benchmark. One CSV row per (step, benchmark)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
COLUMNS = ["step", "benchmark", "accuracy", "problems", "samples", "model"]


def curve_points(run_dir: str | Path, base_model: str, max_steps: int) -> list[tuple[int, str]]:
    """(step, model folder) from the base model (0) through every kept checkpoint to the final
    model (``max_steps``), in step order; a checkpoint at ``max_steps`` stands for the final."""
    run_dir = Path(run_dir)
    if not (run_dir / "final").is_dir():
        raise ValueError(f"{run_dir}: no final model (train the run first)")
    points = {0: str(base_model)}
    for child in run_dir.iterdir():
        found = CHECKPOINT.match(child.name)
        if found and child.is_dir() and 0 < int(found[1]) < max_steps:
            points[int(found[1])] = str(child)
    points[max_steps] = str(run_dir / "final")
    return sorted(points.items())


def learning_curve(points: list[tuple[int, str]], benchmarks: dict[str, list[dict]], *, task: str,
                   sampling, backend: str = "transformers", batch_size: int = 32) -> pd.DataFrame:
    """Evaluate each (step, model) on ``benchmarks`` (name -> records): pass@1 per benchmark."""
    from gc2po.evaluation.backends import load_backend
    from gc2po.evaluation.run import generate_and_grade

    rows = []
    for step, model in points:
        engine = load_backend(backend, model, batch_size=batch_size)
        for name, records in benchmarks.items():
            _, samples = generate_and_grade(engine, records, task, sampling)
            rows.append({"step": step, "benchmark": name, "accuracy": sum(s["correct"] for s in samples) / len(samples),
                         "problems": len(records), "samples": len(samples), "model": model})
    return pd.DataFrame(rows, columns=COLUMNS)
