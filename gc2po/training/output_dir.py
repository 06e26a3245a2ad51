"""A run's output directory before training starts: refuse it, resume from its last complete
checkpoint, or start over. What makes two runs the same (``run_fingerprint``) is stored beside the
checkpoints (``RUN_STATE``), so a resumed job continues only the run config it was started with.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from gc2po.layout import RunDir
from gc2po.training.run_config import run_task

RUN_STATE = "run_config.json"  # beside the checkpoints: the resolved run config and its hash


def run_fingerprint(run: dict, args) -> dict:
    """What makes two runs the same: the resolved trainer config, model, data content, task."""
    data = Path(run["train_data"])
    resolved = {
        k: v
        for k, v in args.to_dict().items()
        if k not in ("output_dir", "logging_dir", "metrics_path")
    }
    return {
        "model": str(run["model"]),
        "task": run_task(run),
        "train_data": str(data),
        "train_data_sha256": hashlib.sha256(data.read_bytes()).hexdigest()
        if data.is_file()
        else None,
        "max_train_examples": run.get("max_train_examples"),
        "trainer": resolved,
    }


def complete_checkpoints(out: Path) -> list[Path]:
    """Checkpoints of ``out`` in step order whose trainer state was written (it is written last,
    so a job killed while saving leaves an incomplete folder that must not be resumed from)."""
    steps = {p: RunDir.checkpoint_step(p.name) for p in out.glob(RunDir.CHECKPOINTS)}
    complete = [
        p for p, step in steps.items() if step is not None and (p / "trainer_state.json").is_file()
    ]
    return sorted(complete, key=steps.get)


def prepare_output_dir(run: dict, args, log=print) -> Path | None:
    """Check ``output_dir`` before any model loads; returns the checkpoint to resume from.

    A used directory (checkpoints, metrics or a final model) is refused unless ``resume`` (same
    run config: continue from its last complete checkpoint) or ``overwrite`` (delete and start
    over); with both, a changed config starts over."""
    out = Path(args.output_dir)
    fingerprint = run_fingerprint(run, args)
    digest = hashlib.sha256(
        json.dumps(fingerprint, sort_keys=True, default=str).encode()
    ).hexdigest()
    checkpoints = sorted(out.glob(RunDir.CHECKPOINTS))
    complete = complete_checkpoints(out)
    used = checkpoints or (out / RunDir.METRICS).exists() or (out / RunDir.FINAL).exists()
    stored = (
        json.loads((out / RUN_STATE).read_text()).get("sha256")
        if (out / RUN_STATE).exists()
        else None
    )
    resume = bool(run.get("resume")) and bool(complete) and stored == digest
    main_process = (
        int(os.environ.get("RANK", "0")) == 0
    )  # under accelerate launch, rank 0 alone writes
    if used and not resume:
        if not run.get("overwrite"):
            reason = (
                "its checkpoints belong to a different run config"
                if run.get("resume") and checkpoints
                else "it holds an earlier run"
            )
            raise ValueError(
                f"output_dir {out}: {reason}; set overwrite: true (or --overwrite) to start over"
                + ("" if run.get("resume") else ", or resume: true to continue it")
            )
        if main_process:
            log(
                f"output_dir {out}: starting over (deleting {len(checkpoints)} checkpoint(s), "
                "metrics, final model)"
            )
            for path in checkpoints + [out / RunDir.FINAL]:
                shutil.rmtree(path, ignore_errors=True)
            (out / RunDir.METRICS).unlink(missing_ok=True)
    if resume and main_process:
        for partial in set(checkpoints) - set(complete):  # killed while saving
            log(f"output_dir {out}: removing the incomplete {partial.name}")
            shutil.rmtree(partial, ignore_errors=True)
    if main_process:
        out.mkdir(parents=True, exist_ok=True)
        # written whole and renamed into place: the other processes read it at the same time,
        # and a half-written file would fail them (seen under load: rank 1 read it empty)
        partial = out / (RUN_STATE + ".tmp")
        partial.write_text(
            json.dumps({"sha256": digest, "run": fingerprint}, indent=1, default=str)
        )
        partial.replace(out / RUN_STATE)
    return complete[-1] if resume else None


def remove_checkpoints(out: Path, log=print) -> list[Path]:
    """Delete the ``checkpoint-<step>`` folders of a run that has ended (``keep_checkpoints:
    false``): their weights and optimizer states are only needed to resume it, and its final
    model stays. Returns what was deleted."""
    checkpoints = sorted(out.glob(RunDir.CHECKPOINTS))
    for path in checkpoints:
        shutil.rmtree(path, ignore_errors=True)
    if checkpoints:
        log(
            f"output_dir {out}: the run ended, deleted {len(checkpoints)} checkpoint(s) "
            "(keep_checkpoints: false)"
        )
    return checkpoints
