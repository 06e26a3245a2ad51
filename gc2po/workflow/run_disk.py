"""The disk a training run uses, estimated from its model's parameter count P
(``gc2po.workflow.model_shapes``) before it runs; ``gc2po plan`` prints it per base model
(:func:`disk_lines`).

The final model is its weights: 2 bytes x P in bf16 (DeepSpeed saves gathered 16-bit weights) or
4 bytes x P in fp32 (``bf16-mixed`` without DeepSpeed, ``fp32``). A checkpoint adds the optimizer
states: with DeepSpeed, fp32 master weights and Adam's two moments, 12 bytes x P over the ranks'
files (ZeRO-1 and -2 also keep the bf16 module states, 2 bytes x P); without, Adam's two moments
in the weights' dtype. The trainer writes one every ``save_steps`` steps and keeps
``save_total_limit``, writing the next before it deletes the oldest;
``train.keep_checkpoints: false`` deletes them when the run ends (the final model stays).
"""

from __future__ import annotations

from dataclasses import dataclass

from gc2po.workflow import resources as job_resources
from gc2po.workflow.accelerate_config import read_accelerate_config
from gc2po.workflow.base_models import base_models
from gc2po.workflow.model_shapes import lookup
from gc2po.workflow.run_length import optimizer_steps

GB = 1e9  # disk in decimal gigabytes, as file systems and quotas count them


@dataclass(frozen=True)
class RunDisk:
    """Disk of one run of a base model, GB: ``end`` when it ends, ``peak`` while it trains."""

    final: float
    checkpoint: float
    kept: int  # checkpoints left when the run ends
    end: float
    peak: float


def bytes_per_param(config: dict) -> tuple[int, int]:
    """(final model, one checkpoint) bytes per parameter for the config's launcher and
    precision (module docstring)."""
    launcher = config["train"].get("launcher")
    stage = None
    if launcher is not None:
        stage = read_accelerate_config(launcher["config_file"], check=False).zero_stage
    if stage is not None:  # DeepSpeed: bf16 weights, fp32 master weights and Adam moments
        return 2, 2 + 12 + (2 if stage < 3 else 0)
    on_gpu = job_resources.training(config).gpu > 0
    precision = config["train"].get("precision") or ("bf16-mixed" if on_gpu else "fp32")
    weights = 2 if precision == "bf16" else 4
    return weights, 3 * weights  # the weights and Adam's two moments in their dtype


def run_disk(config: dict, row: dict, params: int) -> RunDisk:
    """The disk one run of ``row`` (a ``run_summary`` row) uses, for a model of ``params``."""
    final_bytes, checkpoint_bytes = bytes_per_param(config)
    final, checkpoint = final_bytes * params / GB, checkpoint_bytes * params / GB
    args, steps = row["args"], optimizer_steps(config, row)
    limit = args.save_total_limit
    saves = 0 if args.save_strategy == "no" else None
    if saves is None and steps is not None:  # a save_steps below 1 is a share of the steps
        every = args.save_steps if args.save_steps >= 1 else max(1, round(args.save_steps * steps))
        saves = int(steps // every)
    if saves is None:  # steps unknown: as many saves as the trainer keeps, and one more
        saves = (limit or 0) + 1
    kept = saves if limit is None else min(saves, limit)
    writing = saves if limit is None else min(saves, limit + 1)
    keep = config["train"].get("keep_checkpoints", True)
    end = final + (kept * checkpoint if keep else 0.0)
    peak = max(writing * checkpoint, kept * checkpoint + final)
    return RunDisk(final, checkpoint, kept if keep else 0, end, peak)


def _number(value: float) -> str:
    """1,280 GB for large figures, 3.6 GB for small ones."""
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def disk_lines(config: dict, rows: list[dict]) -> list[str]:
    """Per base model: the disk each run leaves and the most it holds while it trains, and the
    runs' total; a model without a known shape says so."""
    keep = config["train"].get("keep_checkpoints", True)
    kept = "checkpoints kept" if keep else "final only when a run ends"
    out = [f"disk per training run (train.keep_checkpoints: {str(keep).lower()}: {kept}):"]
    total = 0.0
    for base, entry in base_models(config).items():
        base_rows = [row for row in rows if row["base"] == base]
        if not base_rows:
            continue
        found = lookup(base, entry)
        if found.shape is None:
            out.append(f"  {base}: not estimated (no shape known: {found.source})")
            continue
        disks = [(row, run_disk(config, row, found.shape.num_params())) for row in base_rows]
        n = sum(row["seeds"] for row in base_rows)
        end = max(d.end for _, d in disks)
        peak = max(d.peak for _, d in disks)
        subtotal = sum(row["seeds"] * d.end for row, d in disks)
        total += subtotal
        disk = disks[0][1]
        out.append(
            f"  {base}: {n} runs, each up to {_number(end)} GB when it ends and "
            f"{_number(peak)} GB while it trains (final {_number(disk.final)} GB, checkpoints of "
            f"{_number(disk.checkpoint)} GB, {disk.kept} left at the end); "
            f"{_number(subtotal)} GB in all"
        )
    out.append(f"  total: {_number(total)} GB left by the runs whose model has a known shape")
    return out
