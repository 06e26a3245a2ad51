"""A training job killed through Snakemake (SIGKILL after its first checkpoint) resumes when the
workflow is rerun, and ends with the parameters of an uninterrupted run; a changed run config
starts over instead of resuming."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.workflow.package_copy import snakemake_command
from tests.workflow.slurm_workflow import planned_jobs

ROOT = Path(__file__).resolve().parents[2]
RUN = "results/ci/runs/testbed/grpo/seed0"
OVERLAY = {"train": {"trainer": {"max_steps": 12, "save_steps": 1}}}


def workdir(path: Path) -> Path:
    path.mkdir(parents=True)
    shutil.copytree(ROOT / "config", path / "config")
    (path / "config" / "resume.yaml").write_text(yaml.safe_dump(OVERLAY))
    return path


def resume_command(path: Path, *extra: str) -> list[str]:
    return snakemake_command(
        ROOT,
        path,
        "--rerun-incomplete",
        *extra,
        f"{RUN}/final",
        configfiles=["config/config.yaml", "config/ci.yaml", "config/resume.yaml"],
    )


def run(path: Path, *extra: str) -> subprocess.CompletedProcess:
    out = subprocess.run(
        resume_command(path, *extra), cwd=path, capture_output=True, text=True, timeout=1200
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return out


def parameters(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / RUN / "final" / "model.safetensors"))


@pytest.mark.slow
def test_a_killed_training_job_resumes_and_matches_an_uninterrupted_run(ci_local_run, tmp_path):
    import torch

    done, ci = ci_local_run
    assert ci.returncode == 0, ci.stderr[-5000:]
    reference = workdir(tmp_path / "reference")
    # the session's ci run (conftest.py) made the data and warm start this config trains from
    # (resume.yaml changes training alone): copied with their times, they are not made again
    shutil.copytree(done / "resources", reference / "resources", copy_function=shutil.copy2)
    out = run(reference)
    planned = planned_jobs(out.stdout + out.stderr)
    assert planned == {"run_config": 1, "train": 1}, out.stderr[-3000:]
    killed = workdir(tmp_path / "killed")
    shutil.copytree(
        reference / "resources", killed / "resources", copy_function=shutil.copy2
    )  # same data and base
    job = subprocess.Popen(
        resume_command(killed),
        cwd=killed,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 900  # a bound on the test, not on what is computed
        # killed at any moment after the second checkpoint began (maybe while saving one); any
        # checkpoint-N with N >= 2 counts, since save_total_limit may already have removed
        # checkpoint-2
        while not any(int(p.name.split("-")[1]) >= 2 for p in (killed / RUN).glob("checkpoint-*")):
            assert job.poll() is None, "snakemake ended before the second checkpoint"
            assert time.monotonic() < deadline, "no checkpoint within 15 minutes"
            time.sleep(0.2)
    finally:
        os.killpg(job.pid, signal.SIGKILL)  # snakemake, the job's shell and the trainer
        job.wait()
    assert not (killed / RUN / "final").exists()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--unlock",
            "-s",
            str(ROOT / "Snakefile"),
            "-d",
            str(killed),
            "--configfile",
            "config/config.yaml",
            "config/ci.yaml",
            "config/resume.yaml",
        ],
        cwd=killed,
        capture_output=True,
        check=True,
    )
    run(killed)
    log = (killed / "logs" / "ci" / "train" / "testbed_grpo_seed0.log").read_text()
    assert "resume=True from checkpoint-" in log, log[-2000:]
    expected, got = parameters(reference), parameters(killed)
    for name, value in expected.items():
        torch.testing.assert_close(
            got[name], value, atol=1e-6, rtol=1e-5, msg=f"{name} differs after the resume"
        )
    metrics = [
        yaml.safe_load(line) for line in (killed / RUN / "metrics.jsonl").read_text().splitlines()
    ]
    assert [m["step"] for m in metrics if "loss" in m] == list(range(1, 13))  # every step once

    # a changed run config reruns the job from scratch, never from the old checkpoints
    (killed / "config" / "resume.yaml").write_text(
        yaml.safe_dump({"train": {"trainer": {"max_steps": 2, "save_steps": 1}}})
    )
    run(killed)
    log = (killed / "logs" / "ci" / "train" / "testbed_grpo_seed0.log").read_text()
    assert "starting over" in log and "(resume=False)" in log, log[-2000:]
