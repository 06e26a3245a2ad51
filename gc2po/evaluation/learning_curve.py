"""Accuracy along training: the base model (step 0), every kept checkpoint of a run
(``checkpoint-<step>``) and its final model, on the first problems of each benchmark. One CSV row
per (step, benchmark).

The two ends are read from the evaluations the workflow has already written (the base model's
and the final model's per-sample files, restricted to the same problems); only the intermediate
checkpoints are evaluated here, through the workflow's evaluation code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from gc2po.layout import RunDir
from gc2po.reporting.stats import check_graded

COLUMNS = ["step", "benchmark", "accuracy", "problems", "samples", "model"]


def curve_points(run_dir: str | Path, max_steps: int) -> list[tuple[int, str]]:
    """(step, model folder) of every kept checkpoint strictly between step 0 and ``max_steps``,
    in step order (a checkpoint at ``max_steps`` is the final model, read from its evaluation)."""
    run_dir = Path(run_dir)
    if not (run_dir / RunDir.FINAL).is_dir():
        raise ValueError(f"{run_dir}: no final model (train the run first)")
    points = {}
    for child in run_dir.iterdir():
        step = RunDir.checkpoint_step(child.name)
        if step is not None and child.is_dir() and 0 < step < max_steps:
            points[step] = str(child)
    return sorted(points.items())


def accuracy_from_samples(path: str | Path, problem_ids: list[str]) -> tuple[float, int]:
    """(mean correctness, samples) of a per-sample evaluation file over ``problem_ids``."""
    wanted = set(problem_ids)
    samples = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    for row, sample in enumerate(samples, 1):
        check_graded(sample, f"{path}: row {row}")
    correct = [bool(s["correct"]) for s in samples if s["problem_id"] in wanted]
    seen = len({s["problem_id"] for s in samples} & wanted)
    if seen != len(wanted):
        raise ValueError(f"{path}: holds {seen} of the curve's {len(wanted)} problems")
    return sum(correct) / len(correct), len(correct)


def learning_curve(
    points: list[tuple[int, str]],
    benchmarks: dict[str, list[dict]],
    *,
    task: str,
    sampling,
    ends: dict[int, tuple[str, dict[str, str]]],
    backend: str = "transformers",
    batch_size: int = 32,
) -> pd.DataFrame:
    """pass@1 per (step, benchmark). ``points``: the (step, model) pairs to evaluate on
    ``benchmarks`` (name -> records); ``ends``: step -> (model, {benchmark: per-sample file}) of
    the steps already evaluated (the base model at 0, the final model at the last step)."""
    from gc2po.evaluation.backends import load_backend
    from gc2po.evaluation.run import generate_and_grade

    rows = []
    for step, (model, files) in ends.items():
        for name, records in benchmarks.items():
            accuracy, samples = accuracy_from_samples(files[name], [r["id"] for r in records])
            rows.append(
                {
                    "step": step,
                    "benchmark": name,
                    "accuracy": accuracy,
                    "problems": len(records),
                    "samples": samples,
                    "model": model,
                }
            )
    for step, model in points:
        engine = load_backend(backend, model, batch_size=batch_size)
        for name, records in benchmarks.items():
            _, samples = generate_and_grade(engine, records, task, sampling)
            for sample in samples:
                check_graded(sample, f"{model} on {name}")
            rows.append(
                {
                    "step": step,
                    "benchmark": name,
                    "accuracy": sum(s["correct"] for s in samples) / len(samples),
                    "problems": len(records),
                    "samples": len(samples),
                    "model": model,
                }
            )
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["step", "benchmark"], kind="stable").reset_index(drop=True)
