"""The table ``gc2po plan`` prints for a workflow config: one row per planned (base, run) with
its resolved batch layout (``run_summary``) and, where the base model's shape is known and a
launcher trains it, its per-GPU memory estimate (``memory_plan``). The jobs themselves are
``gc2po.workflow.plan``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gc2po.workflow.plan import training_jobs


def run_summary(config: dict) -> list[dict[str, Any]]:
    """One row per distinct (base, run): method, processes, batch layout, sequences per step."""
    from gc2po.training.run_config import build_args

    rows, seen = [], set()
    for job in training_jobs(config):
        if (job.base, job.run) in seen:
            continue
        seen.add((job.base, job.run))
        args = build_args(job.run_config(config))
        processes = int((job.launcher or {}).get("num_processes", 1))
        per_step = processes * args.per_device_train_batch_size * args.gradient_accumulation_steps
        seeds = sum(1 for j in training_jobs(config) if (j.base, j.run) == (job.base, job.run))
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


def memory_plan(config: dict, gpu_memory_gib: float | None = None):
    """``run_summary`` with each job's per-GPU memory estimate (``gc2po.workflow.memory``) where the
    base model's shape is known (the paper's Hub models) and it trains under a launcher, on a GPU
    of ``gpu_memory_gib`` GiB (default: the config's ``train.gpu_memory_gib``, else 80 GB's 79)."""
    import pandas as pd

    from gc2po.workflow.memory_check import job_memory, planned

    jobs = {(job.base, job.run): job for job in training_jobs(config)}
    rows = []
    for row in run_summary(config):
        args = row.pop("args")
        job = jobs[(row["base"], row["run"])]
        if planned(job):
            memory = job_memory(config, job, gpu_memory_gib, args=args)
            estimate = dataclasses.asdict(memory.estimate)
            row.update(
                zero_stage=memory.stage,
                fits=estimate.pop("fits"),
                kv_cache_sequences=estimate.pop("kv_cache_sequences"),
                **{f"{k}_gib": round(v, 1) for k, v in estimate.items()},
            )
        rows.append(row)
    return pd.DataFrame(rows)


def batch_splits(config: dict, table) -> list[str]:
    """How the sequences of one optimizer step are split, from ``memory_plan``'s ``table``: one
    line per distinct split with how many (base model, run) rows use it, e.g. ``256 sequences (32
    prompts x 8 completions) = 8 processes on 1 machine x 1 per micro-batch x 32 accumulation
    steps (62 of 62 rows)``."""
    from gc2po.workflow.global_batch import BatchSplit

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
