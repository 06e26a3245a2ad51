"""gc2po.workflow.node_launch: a node's machine rank and the main process address from SLURM's
environment, and the accelerate command it runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gc2po.workflow.node_launch import accelerate_command, expand_node_list, node_settings

NODE_LISTS = [
    ("gpu07", ["gpu07"]),
    ("gpu[01-03]", ["gpu01", "gpu02", "gpu03"]),
    ("gpu[08-10,15],login3", ["gpu08", "gpu09", "gpu10", "gpu15", "login3"]),
    ("a1,b[2-3]", ["a1", "b2", "b3"]),
    ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
    ("node[9-11]", ["node9", "node10", "node11"]),
]


@pytest.mark.parametrize("node_list, hosts", NODE_LISTS)
def test_node_list_expands(node_list, hosts):
    assert expand_node_list(node_list) == hosts


@pytest.mark.system("slurm-client")
def test_node_list_agrees_with_scontrol(tmp_path):
    """``scontrol show hostnames`` (it reads a slurm.conf, any will do) expands them alike."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=probe\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\n"
        "PartitionName=p Nodes=localhost\n"
    )
    for node_list, hosts in NODE_LISTS:
        out = subprocess.run(
            ["scontrol", "show", "hostnames", node_list],
            capture_output=True,
            text=True,
            env={**os.environ, "SLURM_CONF": str(conf)},
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == hosts == expand_node_list(node_list)


@pytest.mark.parametrize("bad", ["gpu[01-", "gpu[a-b]", "gpu01]", "a,,b"])
def test_bad_node_list_is_named(bad):
    with pytest.raises(ValueError, match="SLURM node list"):
        expand_node_list(bad)


def test_rank_from_node_id_and_main_process_on_the_first_node():
    env = {"SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_JOB_NUM_NODES": "2"}
    assert node_settings(env, 2) == (1, "gpu07")
    # the step's list wins over the job's (the step is where the launchers run)
    env = {**env, "SLURM_STEP_NODELIST": "gpu[11-12]", "SLURM_STEP_NUM_NODES": "2"}
    assert node_settings({**env, "SLURM_NODEID": "0"}, 2) == (0, "gpu11")


@pytest.mark.parametrize(
    "env, message",
    [
        ({"SLURM_JOB_NODELIST": "gpu[1-2]"}, r"^SLURM_NODEID is None: .*one launcher per node"),
        ({"SLURM_NODEID": "2", "SLURM_JOB_NODELIST": "gpu[1-2]"}, r"^SLURM_NODEID 2 is not below"),
        (
            {"SLURM_NODEID": "0", "SLURM_JOB_NODELIST": "gpu[1-4]", "SLURM_STEP_NUM_NODES": "4"},
            r"^SLURM_STEP_NUM_NODES is 4 but launcher\.num_machines is 2",
        ),
        ({"SLURM_NODEID": "0"}, r"not inside a SLURM job step"),
    ],
)
def test_environment_that_is_not_one_launcher_per_node_is_refused(env, message):
    with pytest.raises(ValueError, match=message):
        node_settings(env, 2)


def test_command_adds_rank_and_address_to_accelerates_arguments():
    args = ["--config_file", "c.yaml", "--num_processes", "8", "--num_machines", "2"]
    args += ["--main_process_port", "29500", "-m", "gc2po.cli", "train", "--config", "r.yaml"]
    env = {"SLURM_NODEID": "1", "SLURM_STEP_NODELIST": "gpu[3,5]"}
    assert accelerate_command(args, env) == [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--machine_rank",
        "1",
        "--main_process_ip",
        "gpu3",
        *args,
    ]
    with pytest.raises(ValueError, match="needs --num_machines"):
        accelerate_command(args[:4], env)


def test_refusal_exits_with_one_line_before_accelerate_starts():
    out = subprocess.run(
        [sys.executable, "-m", "gc2po.workflow.node_launch", "--num_machines", "2"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "gc2po.workflow.node_launch: SLURM_NODEID is None: launcher.num_machines 2 runs one "
        "launcher per node of a SLURM job step (srun --ntasks-per-node=1)"
    ]
