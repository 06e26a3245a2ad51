"""Two processes under `accelerate launch` (CPU, gloo) train like one: groups split across the
processes are normalised whole, and only rank 0 writes checkpoints and metrics. Two machines
(two launchers on localhost, as SLURM starts one per node) train like one machine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from gc2po.workflow.launch import launcher_command

ROOT = Path(__file__).resolve().parents[2]
CPU_CONFIG = ROOT / "config" / "accelerate" / "cpu_multiprocess.yaml"


def write_run(
    tmp_path: Path, name: str, model_dir, train_file, method: str, per_device: int, **trainer
) -> Path:
    run = {
        "model": str(model_dir),
        "train_data": str(train_file),
        "output_dir": str(tmp_path / name),
        "task": "testbed",
        "method": method,
        "seed": 0,
        "overwrite": True,
        "trainer": {
            "num_generations": 4,
            "per_device_train_batch_size": per_device,
            "max_steps": 2,
            "max_completion_length": 16,
            "learning_rate": 1e-2,
            "weight_decay": 0.0,
            "save_steps": 1,
            "num_perturbations": 2,
            "answer_topk": 8,
            **trainer,
        },
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(run))
    return path


def launch(processes: int, *command: str, timeout: int = 900) -> subprocess.CompletedProcess:
    launcher = launcher_command({"config_file": str(CPU_CONFIG), "num_processes": processes}, "RUN")
    prefix = launcher[: launcher.index("-m", launcher.index("accelerate.commands.launch") + 1)]
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "OMP_NUM_THREADS": "1",
    }
    out = subprocess.run(
        [*prefix, *command], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    return out


def by_row(dump_dir: Path) -> dict[int, dict[int, tuple]]:
    """step -> global row -> (completion ids, advantages of its tokens), from every rank's dump."""
    table: dict[int, dict[int, tuple]] = {}
    for path in sorted(dump_dir.glob("rank*.pt")):
        for record in torch.load(path):
            for i, row in enumerate(record["rows"].tolist()):
                mask = record["mask"][i].bool()
                table.setdefault(record["step"], {})[row] = (
                    record["completion_ids"][i][mask],
                    record["advantages"][i][mask]
                    if record["advantages"].ndim == 2
                    else record["advantages"][i].expand(int(mask.sum())),
                )
    return table


METHODS = ["gc2po", "gc2po_add", "grpo"]


@pytest.fixture(scope="module")
def split_and_whole(tiny_model_dir, testbed_train_file, tmp_path_factory) -> Path:
    """Every method trained by two processes (per_device 2: each group of K=4 split across the
    ranks) and by one (per_device 4), in one launch each; the folder with their runs and dumps."""
    work = tmp_path_factory.mktemp("distributed")
    helper = str(ROOT / "tests" / "training" / "distributed_helper.py")
    for processes, per_device in ((2, 2), (1, 4)):
        pairs = []
        for method in METHODS:
            name = f"{method}_{processes}"
            run = write_run(work, name, tiny_model_dir, testbed_train_file, method, per_device)
            pairs += [str(run), str(work / f"dump_{name}")]
        launch(processes, helper, *pairs)
    return work


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_accelerate_two_processes_with_a_split_group_equal_one_process(method, split_and_whole):
    work = split_and_whole
    split, whole = by_row(work / f"dump_{method}_2"), by_row(work / f"dump_{method}_1")
    assert sorted(split) == sorted(whole) == [0, 1]
    for step in whole:
        assert sorted(split[step]) == sorted(whole[step]) == [0, 1, 2, 3]
        for row, (ids, adv) in whole[step].items():
            assert torch.equal(split[step][row][0], ids)  # the same batch
            torch.testing.assert_close(split[step][row][1], adv, atol=1e-6, rtol=0)
        assert any(a.abs().sum() > 0 for _, a in whole[step].values())
    out = work / f"{method}_2"  # rank 0 alone wrote checkpoints, metrics and the final model
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "checkpoint-1",
        "checkpoint-2",
        "final",
        "metrics.jsonl",
        "run_config.json",
    ]
    steps = [
        json.loads(line)["step"]
        for line in (out / "metrics.jsonl").read_text().splitlines()
        if "loss" in json.loads(line)
    ]
    assert steps == [1, 2]


@pytest.mark.slow
def test_accelerate_launch_runs_gc2po_train_unchanged(tiny_model_dir, testbed_train_file, tmp_path):
    run = write_run(
        tmp_path, "cli", tiny_model_dir, testbed_train_file, "gc2po", per_device=2, save_steps=2
    )
    out = launch(2, "-m", "gc2po.cli", "train", "--config", str(run))
    assert "training gc2po" in out.stdout + out.stderr
    written = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert written == [
        "README.md",
        "checkpoint-2",
        "final",
        "metrics.jsonl",
        "run_config.json",
    ]  # README: model card
    assert (tmp_path / "cli" / "final" / "tokenizer.json").exists()
    records = [
        json.loads(line) for line in (tmp_path / "cli" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [r["step"] for r in records if "loss" in r] == [1, 2]
    assert sys.executable  # the launcher runs this interpreter


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_two_machines_on_localhost_train_like_one_machine(
    split_and_whole, tiny_model_dir, testbed_train_file, tmp_path
):
    """launcher.num_machines 2: one launcher per "node" (gc2po.workflow.node_launch, with the
    environment srun gives each task), one process each, against one machine running both
    processes (split_and_whole): the same total processes and global batch give the same
    batches, advantages and final weights (to 1e-6)."""
    method = "gc2po"
    run = write_run(tmp_path, "machines", tiny_model_dir, testbed_train_file, method, 2)
    two = {"config_file": str(CPU_CONFIG), "num_processes": 2, "num_machines": 2}
    command = launcher_command({**two, "main_process_port": free_port()}, "RUN")
    prefix = command[: command.index("-m", command.index("gc2po.workflow.node_launch") + 1)]
    helper = str(ROOT / "tests" / "training" / "distributed_helper.py")
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "OMP_NUM_THREADS": "1",
        "SLURM_STEP_NODELIST": "localhost",  # the first node runs the main process
        "SLURM_STEP_NUM_NODES": "2",
    }
    nodes = [
        subprocess.Popen(
            [*prefix, helper, str(run), str(tmp_path / "dump")],
            env={**env, "SLURM_NODEID": str(rank)},
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in (0, 1)
    ]
    outputs = [node.communicate(timeout=900)[0] for node in nodes]
    for rank, (node, output) in enumerate(zip(nodes, outputs)):
        assert node.returncode == 0, f"machine {rank}:\n{output[-6000:]}"
        assert f"--machine_rank {rank} --main_process_ip localhost" in output
    # both ranks dumped: one process on each machine, ranks 0 and 1 of one world
    machines, whole = by_row(tmp_path / "dump"), by_row(split_and_whole / f"dump_{method}_2")
    assert sorted(p.name for p in (tmp_path / "dump").iterdir()) == ["rank0.pt", "rank1.pt"]
    assert sorted(machines) == sorted(whole) == [0, 1]
    for step in whole:
        assert sorted(machines[step]) == sorted(whole[step]) == [0, 1, 2, 3]
        for row, (ids, adv) in whole[step].items():
            assert torch.equal(machines[step][row][0], ids)
            torch.testing.assert_close(machines[step][row][1], adv, atol=1e-6, rtol=0)
    weights = load_file(tmp_path / "machines" / "final" / "model.safetensors")
    reference = load_file(split_and_whole / f"{method}_2" / "final" / "model.safetensors")
    initial = load_file(Path(tiny_model_dir) / "model.safetensors")
    assert sorted(weights) == sorted(reference)
    for name, tensor in reference.items():
        torch.testing.assert_close(weights[name], tensor, atol=1e-6, rtol=0, msg=name)
    assert any(not torch.equal(initial[n], reference[n]) for n in reference if n in initial)
