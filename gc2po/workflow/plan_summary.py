"""What ``gc2po plan`` prints for a workflow config: how the global batch is split, one row per
planned (base, run) with its resolved batch layout (``run_summary``) and, where the base model's
shape is known and a launcher trains it, its per-GPU memory estimate (``memory_plan``); a line
per base model left out of the memory plan; the budget (``gc2po.workflow.budget``) and the
disk of each run (``gc2po.workflow.run_disk``). The jobs themselves are ``gc2po.workflow.plan``.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from gc2po.workflow.budget import lines as budget_lines
from gc2po.workflow.global_batch import KEY, BatchSplit
from gc2po.workflow.memory_check import (
    GPU_KEY,
    OVERRIDE_KEY,
    gpu_memory_gib,
    ignores_plan,
    job_memory,
    not_planned_lines,
    shape_of,
    shapes,
)
from gc2po.workflow.plan import training_jobs
from gc2po.workflow.run_disk import disk_lines

# the columns of the printed table, those the table has
COLUMNS = (
    "base",
    "run",
    "method",
    "seeds",
    "processes",
    "per_device_batch",
    "gradient_accumulation",
    "sequences_per_step",
    "prompts_per_step",
    "zero_stage",
    "weights_gib",
    "gradients_gib",
    "optimizer_gib",
    "reference_gib",
    "activations_gib",
    "vllm_kv_cache_gib",
    "peak_gib",
    "fits",
)


def run_summary(config: dict) -> list[dict[str, Any]]:
    """One row per distinct (base, run): method, seeds, processes, batch layout, sequences per
    step, and ``args``, its resolved GC2POConfig."""
    from gc2po.training.run_config import build_args

    jobs = training_jobs(config)
    rows, seen = [], set()
    for job in jobs:
        if (job.base, job.run) in seen:
            continue
        seen.add((job.base, job.run))
        args = build_args(job.run_config(config))
        processes = int((job.launcher or {}).get("num_processes", 1))
        per_step = processes * args.per_device_train_batch_size * args.gradient_accumulation_steps
        seeds = sum(1 for j in jobs if (j.base, j.run) == (job.base, job.run))
        rows.append(
            {
                "base": job.base,
                "run": job.run,
                "method": job.method,
                "seeds": seeds,
                "processes": processes,
                "per_device_batch": args.per_device_train_batch_size,
                "gradient_accumulation": args.gradient_accumulation_steps,
                "steps_per_generation": args.steps_per_generation,
                "sequences_per_step": per_step,
                "prompts_per_step": per_step // args.num_generations,
                "num_generations": args.num_generations,
                "beta": args.beta,
                "loss_type": args.loss_type,
                "args": args,
            }
        )
    return rows


def memory_plan(config: dict, gpu_memory_gib: float | None = None, rows=None):
    """``run_summary`` (or its ``rows``) as a table, with each job's per-GPU memory estimate
    (``gc2po.workflow.memory``) where it has one (``memory_check.shape_of``), on a GPU of
    ``gpu_memory_gib`` GiB (default: the config's ``train.gpu_memory_gib``, else 80 GB's 79)."""
    import pandas as pd

    jobs = {(job.base, job.run): job for job in training_jobs(config)}
    known = shapes(config)
    table = []
    for summary in rows if rows is not None else run_summary(config):
        row = {key: value for key, value in summary.items() if key != "args"}
        job = jobs[(row["base"], row["run"])]
        shape = shape_of(config, job, known)
        if shape is not None:
            memory = job_memory(config, job, shape, gpu_memory_gib, args=summary["args"])
            estimate = dataclasses.asdict(memory.estimate)
            row.update(
                zero_stage=memory.stage,
                fits=estimate.pop("fits"),
                kv_cache_sequences=estimate.pop("kv_cache_sequences"),
                **{f"{k}_gib": round(v, 1) for k, v in estimate.items()},
            )
        table.append(row)
    return pd.DataFrame(table)


def batch_splits(config: dict, table) -> list[str]:
    """How the sequences of one optimizer step are split, from ``memory_plan``'s ``table``: one
    line per distinct split with how many (base model, run) rows use it, e.g. ``256 sequences (32
    prompts x 8 completions) = 8 processes on 1 machine x 1 per micro-batch x 32 accumulation
    steps (62 of 62 rows)``."""
    machines = int((config["train"].get("launcher") or {}).get("num_machines", 1))
    counts: dict[str, int] = {}
    for row in table.itertuples():
        split = BatchSplit(
            processes=int(row.processes),
            machines=machines,
            per_device=int(row.per_device_batch),
            accumulation=int(row.gradient_accumulation),
            num_generations=int(row.num_generations),
        ).describe()
        counts[split] = counts.get(split, 0) + 1
    total = len(table)
    return [
        f"{split} ({f'all {n}' if n == total else f'{n} of {total}'} rows)"
        for split, n in counts.items()
    ]


def print_plan(config: dict, gpu_override: float | None = None) -> None:
    """Print the plan of ``config`` (on a GPU of ``gpu_override`` GiB when given), then refuse
    it (ValueError) when a planned job does not fit and ``train.ignore_memory_plan`` is unset."""
    import pandas as pd

    gpu = gpu_override if gpu_override is not None else gpu_memory_gib(config)
    rows = run_summary(config)
    table = memory_plan(config, gpu_memory_gib=gpu, rows=rows)
    stated = config["train"].get("sequences_per_step")
    print(
        f"global batch: {stated} sequences per optimizer step ({KEY}), split as"
        if stated is not None
        else f"global batch: not stated ({KEY}); each run's trainer settings give it:"
    )
    for line in batch_splits(config, table):
        print(f"  {line}")
    if "fits" in table.columns:
        stated_gpu = config["train"].get("gpu_memory_gib") is not None
        source = (
            "--gpu-memory-gib"
            if gpu_override is not None
            else GPU_KEY + ("" if stated_gpu else ", the default: an 80 GB GPU")
        )
        print(f"GPU memory: {gpu:g} GiB ({source})")
    with pd.option_context(
        "display.width", 250, "display.max_columns", 40, "display.max_rows", 1000
    ):
        shown = table[[c for c in COLUMNS if c in table.columns]].copy()
        if "zero_stage" in shown.columns:  # a stage (3), not a float (3.0), beside rows without
            stages = ["-" if pd.isna(v) else int(v) for v in shown["zero_stage"]]
            shown["zero_stage"] = pd.Series(stages, index=shown.index, dtype=object)
        print(shown.to_string(index=False, na_rep="-"))  # "-": no memory plan for the row
    for line in not_planned_lines(config):
        print(line)
    for line in budget_lines(config, rows) + disk_lines(config, rows):
        print(line)
    if "fits" in table.columns and not table["fits"].fillna(True).all():
        if ignores_plan(config):
            print(
                f"some training jobs do not fit the GPU memory (fits = False above); {OVERRIDE_KEY}"
                " is set: the workflow trains them anyway and each one's log says so",
                file=sys.stderr,
            )
            return
        raise ValueError(
            "some training jobs do not fit the GPU memory (fits = False above); the workflow "
            f"refuses them unless {OVERRIDE_KEY}: true"
        )
