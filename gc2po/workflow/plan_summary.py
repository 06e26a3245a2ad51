"""The table ``gc2po plan`` prints for a workflow config: one row per planned (base, run) with
its resolved batch layout (``run_summary``) and, where the base model's shape is known and a
launcher trains it, its per-GPU memory estimate (``memory_plan``). The jobs themselves are
``gc2po.workflow.plan``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gc2po.workflow.plan import base_model_path, training_jobs


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
                "beta": args.beta,
                "loss_type": args.loss_type,
                "args": args,
            }
        )
    return rows


def memory_plan(config: dict, gpu_memory_gib: float | None = None):
    """``run_summary`` with each job's per-GPU memory estimate (``gc2po.workflow.memory``) where the
    base model's shape is known (the paper's Hub models) and it trains under a launcher."""
    import pandas as pd

    from gc2po.workflow.job_shape import GPU_80GB_GIB, MODEL_SHAPES
    from gc2po.workflow.launch import read_accelerate_config
    from gc2po.workflow.memory import estimate_memory, job_from_trainer

    launcher = config["train"].get("launcher")
    stage = read_accelerate_config(launcher["config_file"]).zero_stage if launcher else None
    rows = []
    for row in run_summary(config):
        args = row.pop("args")
        model = base_model_path(config, row["base"])
        if model in MODEL_SHAPES and launcher:
            # episode states are kept at episode ends only (E x d), not for every token
            job = job_from_trainer(
                model,
                args.to_dict(),
                num_processes=row["processes"],
                zero_stage=stage or 0,
                prompt_length=int(config["train"].get("max_prompt_tokens", 1024)),
                keeps_episode_states=False,
                gpu_memory_gib=gpu_memory_gib or GPU_80GB_GIB,
            )
            estimate = dataclasses.asdict(estimate_memory(job))
            row.update(
                zero_stage=stage,
                fits=estimate.pop("fits"),
                kv_cache_sequences=estimate.pop("kv_cache_sequences"),
                **{f"{k}_gib": round(v, 1) for k, v in estimate.items()},
            )
        rows.append(row)
    return pd.DataFrame(rows)
