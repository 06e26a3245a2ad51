"""A training job on two nodes (launcher.num_machines 2), as SLURM would receive it: the train
rule's resources from a dry run of the repository's SLURM profile, turned into the sbatch
arguments by snakemake-executor-plugin-slurm's own argument builders (no cluster needed; the
one-node submission through a real SLURM is tests/workflow/test_slurm.py's)."""

from __future__ import annotations

import re
import shlex
import subprocess
from types import SimpleNamespace

import pytest
import yaml

from tests.workflow.slurm_workflow import ROOT, new_workdir, planned_job_blocks, snakemake_command

PROFILE = ROOT / "workflow" / "profiles" / "slurm"
TRAIN_TARGET = "results/paper/runs/DeepScaleR-1.5B/gc2po/seed0/final"
TWO_NODES = {
    "train": {
        "launcher": {
            "config_file": "config/accelerate/deepspeed_zero3.yaml",
            "num_processes": 8,
            "num_machines": 2,
            "main_process_port": 29500,
        }
    }
}


class Resources(dict):
    """A job's resources as the plugin reads them: ``.get(name)`` and ``.name``."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as err:
            raise AttributeError(name) from err


def _value(text: str):
    return int(text) if text.isdigit() else text


@pytest.fixture(scope="module")
def two_node_train_job(tmp_path_factory):
    """(threads, resources, shell command) of the paper's training job with 8 processes on 2
    nodes, from ``snakemake -n`` with the SLURM profile (--cores 64: the dry run does not cap
    the rule's threads)."""
    work = new_workdir(tmp_path_factory.mktemp("two_nodes") / "wf")
    (work / "config" / "two_nodes.yaml").write_text(yaml.safe_dump(TWO_NODES))
    out = subprocess.run(
        snakemake_command(
            "-n",
            "-p",
            "--profile",
            str(PROFILE),
            "--cores",
            "64",
            TRAIN_TARGET,
            "--configfile",
            "config/config.yaml",
            "config/paper.yaml",
            "config/two_nodes.yaml",
        ),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-6000:]
    text = out.stdout + out.stderr
    (block,) = [fields for rule, fields in planned_job_blocks(text) if rule == "train"]
    resources = Resources(
        (name, _value(value))
        for name, _, value in (item.partition("=") for item in block["resources"].split(", "))
    )
    (shell,) = re.findall(r"^Shell command: (.*node_launch.*)$", text, re.MULTILINE)
    return int(block["threads"]), resources, shell


# importing the plugin runs `scontrol show config` where scontrol is installed (its status checks'
# MinJobAge); nothing here needs a cluster
@pytest.mark.system("slurm-client")
def test_two_node_job_submits_one_task_per_node_with_its_gpus(two_node_train_job):
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    threads, resources, _ = two_node_train_job
    job = SimpleNamespace(name="train", threads=threads, resources=resources)
    params = {
        "run_uuid": "run",
        "slurm_logfile": "logs/slurm/%j.log",
        "comment_str": "rule_train",
        "account": "-A acct",
        "partition": "-p gpu",
        "workdir": "/work",
    }
    sbatch = shlex.split(get_submit_command(job, params) + set_gres_string(job))
    options = [o for o in sbatch if o.startswith(("--nodes", "--ntasks", "--gres", "--gpus"))]
    assert sorted(options) == [
        "--gres=gpu:4",  # per node: 8 processes / 2 nodes
        "--nodes=2",
        "--ntasks=2",  # on 2 nodes: one task, the node's launcher, per node
    ], sbatch
    # per task, that is per node: 4 CPUs and 64,000 MB for each of its 4 GPUs
    assert "--cpus-per-task=16" in sbatch
    assert sbatch[sbatch.index("--mem") + 1] == "256000"
    assert sbatch[sbatch.index("-t") + 1] == "2880"  # the job's wall time, every node's
    # with the mpi resource the job step runs the rule's command as it is (no `srun -n1` around
    # it; snakemake-executor-plugin-slurm-jobstep): the command starts its own srun step
    assert resources["mpi"] == "srun"


def test_two_node_job_starts_a_launcher_on_every_node(two_node_train_job):
    threads, _, shell = two_node_train_job
    command = shlex.split(shell)
    assert command[: command.index("python3")] == [
        f"OMP_NUM_THREADS={threads}",
        "srun",
        "--nodes=2",
        "--ntasks=2",
        "--ntasks-per-node=1",
        f"--cpus-per-task={threads}",
        "--kill-on-bad-exit=1",
    ]
    launcher = command[command.index("python3") :]
    assert launcher[:3] == ["python3", "-m", "gc2po.workflow.node_launch"]
    for option, value in (
        ("--num_processes", "8"),  # the total: accelerate starts 8 / 2 on each node
        ("--num_machines", "2"),
        ("--main_process_port", "29500"),
    ):
        assert launcher[launcher.index(option) + 1] == value
