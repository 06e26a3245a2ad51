"""Nothing is queued that the memory plan knows will not fit: the config states its GPU
(``train.gpu_memory_gib``), the workflow's config check refuses a job over it before any job (one
line naming the base model, method, planned peak, GPU memory and the levers), and
``train.ignore_memory_plan`` lets such jobs through with a line in each one's log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gc2po import cli
from gc2po.workflow import config_check, memory_check
from gc2po.workflow.config_files import load_config
from gc2po.workflow.plan import training_jobs
from gc2po.workflow.plan_summary import memory_plan

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "config" / "paper.yaml"
SCHEMA = ROOT / "gc2po" / "workflow" / "config.schema.yaml"
FOUR_GPUS = "train:\n  launcher: {num_processes: 4}\n"
H200 = "  gpu_memory_gib: 139\n"  # a 141 GB H200 as CUDA sees it
OVERRIDE = "  ignore_memory_plan: true\n"


def paper_with(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "my.yaml"
    path.write_text(text)
    return [str(PAPER), str(path)]


def check(files: list[str], tmp_path: Path) -> dict:
    """The workflow's config check, as workflow/rules/common.smk runs it."""
    return config_check.checked(load_config(files), files, SCHEMA, tmp_path / "check.json")


def test_four_gpus_under_the_paper_config_are_refused_naming_the_7b_its_peak_and_80_gb(tmp_path):
    files = paper_with(tmp_path, FOUR_GPUS)
    config = load_config(files)
    plan = memory_plan(config)
    seven_b = plan[plan["base"] == "R1-Distill-Qwen-7B"]
    assert not seven_b["fits"].any() and plan[plan["base"] != "R1-Distill-Qwen-7B"]["fits"].all()
    worst = seven_b.loc[seven_b["peak_gib"].idxmax()]
    with pytest.raises(ValueError) as err:
        check(files, tmp_path)
    message = str(err.value)
    assert "\n" not in message
    given = " ".join(os.path.relpath(f) if not os.path.relpath(f).startswith("..") else f
                     for f in files)  # fmt: skip
    assert message.startswith(
        f"{given}: training job R1-Distill-Qwen-7B/{worst['run']} (base model "
        f"R1-Distill-Qwen-7B, method {worst['method']}) does not fit the GPU: planned peak "
        f"{worst['peak_gib']:.1f} GiB per GPU > the GPU's 79.0 GiB (train.gpu_memory_gib: 79, "
        f"the default: an 80 GB GPU) (and {len(seven_b) - 1} more runs of R1-Distill-Qwen-7B); "
    ), message
    for lever in (
        "more processes (4 now, train.launcher.num_processes)",
        "a higher ZeRO stage (3 now, the highest; train.launcher.config_file)",
        "a smaller vLLM share (0.6 now, trainer.vllm_gpu_memory_utilization)",
        "a smaller micro-batch (1 now, trainer.per_device_train_batch_size)",
        "set train.ignore_memory_plan: true to queue them anyway",
    ):
        assert lever in message, lever
    assert not (tmp_path / "check.json").exists()  # a refused config is not remembered


def test_the_same_overlay_on_a_141_gb_gpu_is_accepted(tmp_path):
    files = paper_with(tmp_path, FOUR_GPUS + H200)
    assert check(files, tmp_path)["display_names"]
    plan = memory_plan(load_config(files))  # gc2po plan reads the config's GPU
    assert plan["fits"].all() and plan["peak_gib"].max() > 79
    # the flag stays an override of the config's GPU
    assert not memory_plan(load_config(files), gpu_memory_gib=79.0)["fits"].all()


def test_the_override_queues_the_jobs_and_each_one_s_run_config_carries_the_note(tmp_path):
    files = paper_with(tmp_path, FOUR_GPUS + OVERRIDE)
    config = load_config(files)
    assert check(files, tmp_path)["display_names"]
    plan = memory_plan(config).set_index(["base", "run"])
    for job in training_jobs(config):
        note = memory_check.noted_run_config(config, job).get("memory_plan")
        row = plan.loc[(job.base, job.run)]
        if row["fits"]:
            assert note is None, (job.base, job.run)
        else:
            assert note == (
                "the memory plan says this job does not fit its GPU (planned peak "
                f"{row['peak_gib']:.1f} GiB per GPU > the GPU's 79.0 GiB); it runs because "
                "train.ignore_memory_plan is set"
            )


@pytest.mark.slow
def test_a_job_trained_with_the_override_logs_the_note(
    tiny_model_dir, testbed_train_file, tmp_path
):
    """`gc2po train`, as the train rule runs it (its output is the job's log), on a run config
    carrying the override's note: the log says so, and the job trains to its final model."""
    from tests.training.conftest import run_config

    files = paper_with(tmp_path, FOUR_GPUS + OVERRIDE)
    config = load_config(files)
    job = next(j for j in training_jobs(config) if j.base == "R1-Distill-Qwen-7B")
    note = memory_check.noted_run_config(config, job)["memory_plan"]
    run = {
        **run_config(tiny_model_dir, testbed_train_file, tmp_path / "run", "grpo", max_steps=1),
        "memory_plan": note,
    }
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(run))
    log = tmp_path / "train.log"
    with log.open("w") as out:
        status = subprocess.run(
            [sys.executable, "-m", "gc2po.cli", "train", "--config", str(tmp_path / "run.yaml")],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=600,
        ).returncode
    text = log.read_text()
    assert status == 0, text[-3000:]
    assert f"WARNING memory plan: {note}" in text.splitlines()
    assert (tmp_path / "run" / "final").is_dir()


def test_a_run_config_note_must_be_text(run_files):
    from gc2po.training.run_config import checked_trainer

    with pytest.raises(ValueError, match="run config: memory_plan must be a string, got 3"):
        checked_trainer({**run_files, "memory_plan": 3})


@pytest.mark.parametrize(
    "files",
    [
        pytest.param([], id="default"),
        pytest.param([ROOT / "config/config.yaml", ROOT / "config/ci.yaml"], id="ci"),
    ],
)
def test_the_default_and_ci_configs_are_not_planned(files, monkeypatch, tmp_path):
    """Their base models have no known shape and they train without a launcher: nothing is
    estimated, nothing refused, and no run config changes, even with the override set."""
    config = load_config(files)
    assert not any(memory_check.shape_of(config, job) for job in training_jobs(config))

    def never(*args, **kwargs):
        raise AssertionError("a job was estimated")

    monkeypatch.setattr(memory_check, "job_memory", never)
    memory_check.check(config)
    overridden = {**config, "train": {**config["train"], "ignore_memory_plan": True}}
    for job in training_jobs(config):
        noted = memory_check.noted_run_config(overridden, job)
        assert noted == memory_check.noted_run_config(config, job) == job.run_config(config)
        assert "memory_plan" not in noted


def test_gc2po_plan_names_the_gpu_it_planned_for(tmp_path, capsys):
    files = paper_with(tmp_path, FOUR_GPUS + H200)
    assert cli.main(["plan", "--configfile", *files]) == 0
    assert "GPU memory: 139 GiB (train.gpu_memory_gib)" in capsys.readouterr().out.splitlines()
    assert cli.main(["plan", "--configfile", *files, "--gpu-memory-gib", "79"]) == 2
    out, err = capsys.readouterr()
    assert "GPU memory: 79 GiB (--gpu-memory-gib)" in out.splitlines()
    assert "the workflow refuses them unless train.ignore_memory_plan: true" in err
    files = paper_with(tmp_path, FOUR_GPUS + OVERRIDE)
    assert cli.main(["plan", "--configfile", *files]) == 0  # told to: the table, and a warning
    assert "train.ignore_memory_plan is set: the workflow trains them anyway" in (
        capsys.readouterr().err
    )


def test_snakemake_refuses_the_four_gpu_paper_overlay_in_one_line_before_any_job(tmp_path):
    files = paper_with(tmp_path, FOUR_GPUS)
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    # the message names the files (no one key: the levers are several)
    assert len(lines) == 1 and lines[0].startswith(
        f"config error: config/paper.yaml {files[1]}: training job R1-Distill-Qwen-7B/"
    ), out.stderr[-2000:]
    assert "does not fit the GPU: planned peak" in lines[0] and "79.0 GiB" in lines[0]
    assert "Job stats" not in out.stdout  # no job was planned
