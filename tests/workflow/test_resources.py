"""What a job asks SLURM for comes from what it runs (gc2po.workflow.resources): a training job's
GPUs from its launcher, vLLM use and precision, never from the evaluation backend; an
evaluation's from its backend; every size replaceable from the config; a GPU launcher left with
fewer GPUs than processes refused before any job, in one line."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gc2po.workflow import resources
from gc2po.workflow.config_check import check_plannable
from gc2po.workflow.config_files import load_config
from gc2po.workflow.resources import JobResources
from tests.workflow.slurm_workflow import dry_run, planned_job_blocks

ROOT = Path(__file__).resolve().parents[2]
PAPER = [str(ROOT / "config" / "paper.yaml")]
DEFAULT = [str(ROOT / "config" / "config.yaml")]
ZERO3 = "config/accelerate/deepspeed_zero3.yaml"
CPU = "config/accelerate/cpu_multiprocess.yaml"
PAPER_TRAIN = JobResources(gpu=8, threads=32, mem_mb=512_000, runtime=2880)
PAPER_EVAL = JobResources(gpu=1, threads=8, mem_mb=128_000, runtime=720)
CPU_JOB = JobResources(gpu=0, threads=1, mem_mb=4000, runtime=60)


def with_keys(files: list[str], **changes) -> dict:
    """The config of ``files`` with ``changes`` ("train.launcher": value, ...) set."""
    config = copy.deepcopy(load_config(files))
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = config
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return config


@pytest.mark.parametrize("backend", ["vllm", "auto", "transformers"])
def test_the_paper_trainings_keep_their_gpus_whatever_the_evaluation_backend(backend):
    config = with_keys(PAPER, **{"evaluate.backend": backend})
    assert resources.training(config) == PAPER_TRAIN
    # transformers and auto run where the trainings have GPUs: on a GPU
    assert resources.evaluation(config) == PAPER_EVAL


def test_the_cpu_default_asks_for_no_gpu():
    config = load_config(DEFAULT)
    assert resources.training(config) == CPU_JOB
    assert resources.evaluation(config) == CPU_JOB
    vllm = with_keys(DEFAULT, **{"evaluate.backend": "vllm"})  # vLLM generates on a GPU
    assert resources.evaluation(vllm) == PAPER_EVAL
    assert resources.training(vllm) == CPU_JOB  # the training itself does not change


@pytest.mark.parametrize(
    "changes, gpu",
    [
        ({"train.trainer.use_vllm": True}, 1),  # vLLM generates on a GPU
        ({"train.precision": "bf16-mixed"}, 1),  # a GPU precision
        ({"train.precision": "bf16"}, 1),
        ({"train.precision": "fp32"}, 0),
        ({"train.launcher": {"config_file": CPU, "num_processes": 2}}, 0),  # use_cpu
        ({"train.launcher": {"config_file": ZERO3, "num_processes": 2}}, 2),  # one per process
    ],
)
def test_a_training_job_gets_its_gpus_from_what_it_runs(changes, gpu):
    job = resources.training(with_keys(DEFAULT, **changes))
    assert job.gpu == gpu
    processes = (changes.get("train.launcher") or {}).get("num_processes", 1)
    if gpu:
        assert (job.threads, job.mem_mb, job.runtime) == (4 * gpu, 64_000 * gpu, 2880)
    else:
        assert (job.threads, job.mem_mb, job.runtime) == (processes, 4000, 60)


def test_a_two_node_job_asks_per_node():
    launcher = {"config_file": ZERO3, "num_processes": 16, "num_machines": 2}
    job = resources.training(with_keys(PAPER, **{"train.launcher": launcher}))
    assert job == JobResources(gpu=8, threads=32, mem_mb=512_000, runtime=2880, nodes=2)
    assert job.gpus == 16
    assert job.snakemake()["gres"] == "gpu:8" and job.snakemake()["gpu"] == 0


def test_every_size_is_replaced_by_the_config():
    config = with_keys(
        PAPER,
        **{
            "resources.train": {"threads": 16, "mem_mb": 256_000, "runtime": 1440},
            "resources.evaluate": {"gpu": 2, "runtime": 240},
        },
    )
    assert resources.training(config) == JobResources(8, 16, 256_000, 1440)
    assert resources.evaluation(config) == JobResources(2, 8, 128_000, 240)
    check_plannable(config, PAPER)  # sizes that leave each process a GPU pass


@pytest.mark.parametrize("gpu", [0, 4])
def test_a_gpu_launcher_with_fewer_gpus_than_processes_is_refused_naming_the_key(gpu, tmp_path):
    overlay = tmp_path / "my.yaml"
    overlay.write_text(yaml.safe_dump({"resources": {"train": {"gpu": gpu}}}))
    files = [*PAPER, str(overlay)]
    with pytest.raises(ValueError) as err:
        check_plannable(load_config(files), files)
    assert str(err.value) == (
        f"{overlay}: resources.train.gpu: {gpu}: the training jobs' launcher runs 8 processes per "
        f"node on GPUs (train.launcher: 8 processes, {ZERO3}), one GPU each; ask for 8 or leave "
        "it unset (derived: 8)"
    )


def test_a_cpu_launcher_needs_no_gpu():
    launcher = {"config_file": CPU, "num_processes": 2}
    config = with_keys(DEFAULT, **{"train.launcher": launcher, "resources.train": {"gpu": 0}})
    resources.check(config)
    resources.check_overrides(config, {"train": {"gpu": 0}})


@pytest.mark.parametrize(
    "machines, stated, refused",
    [
        (1, {"gpu": 0}, "set-resources: train: gpu = 0"),
        (1, {"gpu": "4"}, "set-resources: train: gpu = '4'"),
        (1, {"gpu": 8}, None),
        (1, {"slurm_partition": "gpu"}, None),
        (2, {"gres": "gpu:a100:4"}, "set-resources: train: gres = 'gpu:a100:4'"),
        (2, {"gres": "gpu:a100:8"}, None),
        (2, {"gres": "gpu:8"}, None),
    ],
)
def test_the_profiles_gpu_overrides_are_checked_too(machines, stated, refused):
    launcher = {"config_file": ZERO3, "num_processes": 8 * machines, "num_machines": machines}
    config = with_keys(PAPER, **{"train.launcher": launcher})
    if refused is None:
        resources.check_overrides(config, {"train": stated})
        return
    with pytest.raises(ValueError) as err:
        resources.check_overrides(config, {"train": stated})
    assert str(err.value).startswith(f"{refused}: the training jobs' launcher runs 8 processes")
    assert str(err.value).endswith("(the profile's set-resources, or --set-resources)")


TRAIN_TARGET = "results/paper/runs/DeepScaleR-1.5B/gc2po/seed0/final"
EVAL_TARGET = "results/paper/eval/DeepScaleR-1.5B/gc2po/seed0/aime2024.jsonl"


@pytest.mark.parametrize("backend", ["auto", "transformers"])
def test_the_dry_run_plans_the_paper_trainings_with_their_gpus(backend, tmp_path):
    """The resources Snakemake hands the SLURM plugin, with `evaluate.backend` other than vllm:
    8 GPUs, 32 CPUs, 512 GB and 48 h for a training job; one GPU for its evaluation."""
    overlay = tmp_path / "backend.yaml"
    overlay.write_text(yaml.safe_dump({"evaluate": {"backend": backend}}))
    out = dry_run("--cores", "64", TRAIN_TARGET, EVAL_TARGET, "--configfile", *PAPER, str(overlay))
    assert out.returncode == 0, out.stderr[-3000:]
    blocks = planned_job_blocks(out.stdout + out.stderr)
    planned = {}
    for rule, fields in blocks:
        if rule in ("train", "evaluate"):
            sizes = dict(item.split("=", 1) for item in fields["resources"].split(", "))
            planned[rule] = (
                int(sizes["gpu"]),
                int(fields["threads"]),
                int(sizes["mem_mb"]),
                int(sizes["runtime"]),
            )
    assert planned == {"train": (8, 32, 512_000, 2880), "evaluate": (1, 8, 128_000, 720)}


def test_snakemake_refuses_a_multi_process_launcher_without_gpus_in_one_line(tmp_path):
    overlay = tmp_path / "my.yaml"
    overlay.write_text(yaml.safe_dump({"resources": {"train": {"gpu": 0}}}))
    out = dry_run("--cores", "1", "--configfile", *PAPER, str(overlay))
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"config error: {overlay}: resources.train.gpu: 0: the training jobs' launcher runs 8 "
    ), out.stderr[-2000:]
    out = dry_run("--cores", "1", "--set-resources", "train:gpu=0", "--configfile", *PAPER)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert lines[-1].startswith("error: set-resources: train: gpu = "), out.stderr[-2000:]
    assert "Job stats" not in out.stdout  # refused before any job was planned
