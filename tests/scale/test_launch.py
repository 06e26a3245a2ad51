"""gc2po.workflow.launch: the launcher command and the checks that run before any job starts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import gc2po.workflow.launch as launch
from gc2po.workflow.accelerate_config import read_accelerate_config
from gc2po.workflow.launch import launcher_command, validate_launcher
from gc2po.workflow.resources import JobResources

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "config" / "accelerate"
ZERO2, ZERO3, CPU = (
    str(CONFIGS / f"{n}.yaml") for n in ("deepspeed_zero2", "deepspeed_zero3", "cpu_multiprocess")
)
PAPER_TRAINER = {"bf16": True, "use_vllm": True, "vllm_mode": "colocate"}


def launcher(config_file=ZERO3, num_processes=8, **extra):
    return {"config_file": config_file, "num_processes": num_processes, **extra}


# --- the shipped configs -------------------------------------------------------------------


def test_shipped_configs_parse_as_intended():
    zero2, zero3, cpu = (read_accelerate_config(p) for p in (ZERO2, ZERO3, CPU))
    assert (zero2.zero_stage, zero3.zero_stage) == (2, 3)
    assert zero2.bf16 is True and zero3.bf16 is True
    assert zero2.num_processes is None and zero3.num_processes is None  # the launcher decides
    assert cpu.num_processes == 2 and cpu.use_cpu and not cpu.uses_deepspeed


def test_deepspeed_json_sets_what_the_issue_asks():
    zero2 = json.loads((CONFIGS / "deepspeed_zero2.json").read_text())
    zero3 = json.loads((CONFIGS / "deepspeed_zero3.json").read_text())
    for ds in (zero2, zero3):
        assert ds["bf16"] == {"enabled": True, "check_grad_overflow": True}
        assert (
            "bf16_master_weights_and_grads" not in ds["bf16"]
        )  # fp32 master weights (DeepSpeed's default)
        assert (
            ds["gradient_accumulation_steps"] == "auto"
            and ds["train_micro_batch_size_per_gpu"] == "auto"
        )
    assert zero3["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True


def test_deepspeed_config_validates_with_deepspeed():
    """DeepSpeed's own config model accepts the bf16 block (an unknown key would raise)."""
    precision = pytest.importorskip("deepspeed.runtime.precision_config")
    for name in ("deepspeed_zero2", "deepspeed_zero3"):
        ds = json.loads((CONFIGS / f"{name}.json").read_text())
        config = precision.get_bfloat16_config(ds)
        assert (
            config.enabled
            and config.check_grad_overflow
            and not config.bf16_master_weights_and_grads
        )


def test_paper_settings_pass():
    settings = validate_launcher(launcher(), {**PAPER_TRAINER, "vllm_enable_sleep_mode": True})
    assert settings.zero_stage == 3
    validate_launcher(launcher(ZERO2, 4), {**PAPER_TRAINER, "vllm_mode": "server"})
    validate_launcher(launcher(CPU, 2), {"bf16": False})


# --- bad settings fail naming the key ------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, None])
def test_num_processes_must_be_positive_int(bad):
    with pytest.raises(ValueError, match=r"^launcher\.num_processes: must be an int >= 1"):
        validate_launcher(launcher(num_processes=bad), PAPER_TRAINER)


def test_missing_accelerate_config_file():
    with pytest.raises(
        ValueError, match=r"^train\.launcher\.config_file: accelerate config 'nope\.yaml' not found"
    ):
        validate_launcher(launcher("nope.yaml"), PAPER_TRAINER, where="train.launcher")


def test_missing_deepspeed_json(tmp_path):
    shutil.copy(ZERO3, tmp_path / "z3.yaml")  # without its JSON next to it
    with pytest.raises(
        ValueError,
        match=r"launcher\.config_file: .*deepspeed_config_file 'deepspeed_zero3\.json' not found",
    ):
        validate_launcher(launcher(str(tmp_path / "z3.yaml")), PAPER_TRAINER)


def test_zero3_vllm_without_ds3_gather_is_refused():
    trainer = {**PAPER_TRAINER, "ds3_gather_for_generation": False}
    with pytest.raises(
        ValueError, match=r"^trainer\.ds3_gather_for_generation: .*not compatible with vLLM"
    ):
        validate_launcher(launcher(), trainer)
    validate_launcher(launcher(ZERO2, 8), trainer)  # only ZeRO-3 shards the weights vLLM needs
    validate_launcher(launcher(), {**trainer, "use_vllm": False})


def test_zero3_vllm_modes_trl_supports_pass():
    for mode in ("colocate", "server"):
        for sleep in (False, True):
            validate_launcher(
                launcher(), {**PAPER_TRAINER, "vllm_mode": mode, "vllm_enable_sleep_mode": sleep}
            )


def test_accelerate_config_disagreeing_on_num_processes():
    with pytest.raises(
        ValueError,
        match=r"^launcher\.num_processes: 4 disagrees with num_processes: 2 in .*cpu_multiprocess",
    ):
        validate_launcher(launcher(CPU, 4), {"bf16": False})


def test_single_process_config_with_many_processes(tmp_path):
    config = tmp_path / "single.yaml"
    config.write_text(yaml.safe_dump({"distributed_type": "NO", "mixed_precision": "no"}))
    with pytest.raises(
        ValueError, match=r"^launcher\.num_processes: 2 processes need a multi-process"
    ):
        validate_launcher(launcher(str(config), 2), {})
    validate_launcher(launcher(str(config), 1), {})


def test_deepspeed_bf16_disagreeing_with_trainer():
    with pytest.raises(
        ValueError, match=r"^launcher\.config_file: .*sets bf16 on but trainer\.bf16 is False"
    ):
        validate_launcher(launcher(), {**PAPER_TRAINER, "bf16": False})


def test_vllm_tensor_parallel_size_must_divide_processes():
    with pytest.raises(
        ValueError, match=r"^trainer\.vllm_tensor_parallel_size: 3 must be an int >= 1 dividing"
    ):
        validate_launcher(launcher(), {**PAPER_TRAINER, "vllm_tensor_parallel_size": 3})
    validate_launcher(launcher(), {**PAPER_TRAINER, "vllm_tensor_parallel_size": 2})


def test_unknown_launcher_key_and_bad_port():
    with pytest.raises(ValueError, match=r"^launcher\.processes: unknown key"):
        validate_launcher({**launcher(), "processes": 8}, PAPER_TRAINER)
    with pytest.raises(
        ValueError, match=r"^launcher\.main_process_port: must be an int in \[0, 65535\]"
    ):
        validate_launcher(launcher(main_process_port=70000), PAPER_TRAINER)
    with pytest.raises(ValueError, match=r"^launcher: must be a mapping"):
        validate_launcher("config/accelerate/deepspeed_zero3.yaml", PAPER_TRAINER)


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True, None])
def test_num_machines_must_be_positive_int(bad):
    with pytest.raises(ValueError, match=r"^train\.launcher\.num_machines: must be an int >= 1"):
        validate_launcher(
            launcher(num_machines=bad, main_process_port=29500), PAPER_TRAINER, "train.launcher"
        )


def test_num_processes_must_divide_over_the_machines():
    with pytest.raises(
        ValueError,
        match=r"^launcher\.num_processes: 6 is not divisible by num_machines 4: every machine",
    ):
        validate_launcher(launcher(num_processes=6, num_machines=4, main_process_port=29500), {})
    validate_launcher(
        launcher(num_processes=8, num_machines=2, main_process_port=29500), PAPER_TRAINER
    )
    validate_launcher(
        launcher(num_processes=8, num_machines=8, main_process_port=29500), PAPER_TRAINER
    )


@pytest.mark.parametrize("port", [None, 0])
def test_more_than_one_machine_needs_a_fixed_port(port):
    settings = {} if port is None else {"main_process_port": port}
    with pytest.raises(
        ValueError, match=r"^launcher\.main_process_port: num_machines 2 needs a fixed port"
    ):
        validate_launcher(launcher(num_machines=2, **settings), PAPER_TRAINER)
    validate_launcher(launcher(num_machines=1, **settings), PAPER_TRAINER)  # one machine: free


def test_accelerate_config_disagreeing_on_num_machines(tmp_path):
    config = tmp_path / "two.yaml"
    config.write_text(yaml.safe_dump({"distributed_type": "MULTI_GPU", "num_machines": 2}))
    with pytest.raises(
        ValueError, match=r"^launcher\.num_machines: 1 disagrees with num_machines: 2 in .*two"
    ):
        validate_launcher(launcher(str(config), 4), {})
    validate_launcher(launcher(str(config), 4, num_machines=2, main_process_port=29500), {})
    # the shipped configs say 1: the launcher's count overrides it on the command line
    validate_launcher(launcher(ZERO3, 16, num_machines=4, main_process_port=29500), PAPER_TRAINER)


def test_deepspeed_on_several_machines_needs_the_standard_launcher(tmp_path):
    config = yaml.safe_load(Path(ZERO2).read_text())
    del config["deepspeed_config"]["deepspeed_multinode_launcher"]
    config["deepspeed_config"]["deepspeed_config_file"] = str(CONFIGS / "deepspeed_zero2.json")
    (tmp_path / "pdsh.yaml").write_text(yaml.safe_dump(config))
    two = {"num_machines": 2, "main_process_port": 29500}
    with pytest.raises(
        ValueError,
        match=r"^launcher\.config_file: .*pdsh\.yaml: num_machines 2 with DeepSpeed needs "
        r"deepspeed_config\.deepspeed_multinode_launcher: standard .*got unset \(pdsh\)",
    ):
        validate_launcher(launcher(str(tmp_path / "pdsh.yaml"), 8, **two), PAPER_TRAINER)
    validate_launcher(launcher(str(tmp_path / "pdsh.yaml"), 8), PAPER_TRAINER)  # one machine
    validate_launcher(launcher(ZERO2, 8, **two), PAPER_TRAINER)  # the shipped config


def test_config_accelerate_rejects_is_named(tmp_path):
    config = tmp_path / "typo.yaml"
    config.write_text(yaml.safe_dump({"distributed_type": "MULTI_GPU", "num_proceses": 2}))
    with pytest.raises(
        ValueError, match=r"^launcher\.config_file: accelerate rejects .*num_proceses"
    ):
        validate_launcher(launcher(str(config), 2), {})


# --- the command ----------------------------------------------------------------------------


def test_command_for_deepspeed(tmp_path):
    command = launcher_command(launcher(ZERO3, 8, main_process_port=29555), tmp_path / "run.yaml")
    assert command == [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        ZERO3,
        "--num_processes",
        "8",
        "--main_process_port",
        "29555",
        "--deepspeed_config_file",
        str(CONFIGS / "deepspeed_zero3.json"),
        "-m",
        "gc2po.cli",
        "train",
        "--config",
        str(tmp_path / "run.yaml"),
    ]


def test_command_for_two_machines_runs_the_node_launcher(tmp_path):
    """One launcher per node: gc2po.workflow.node_launch adds the node's rank and the main
    process address; the rest is accelerate's arguments, with the total process count."""
    two = launcher(ZERO3, 8, num_machines=2, main_process_port=29500)
    command = launcher_command(two, tmp_path / "run.yaml")
    one = launcher_command(launcher(ZERO3, 8, main_process_port=29500), tmp_path / "run.yaml")
    assert command[:3] == [sys.executable, "-m", "gc2po.workflow.node_launch"]
    machines = command.index("--num_machines")
    assert command[machines : machines + 2] == ["--num_machines", "2"]
    assert command[3:machines] == one[3 : one.index("--main_process_port")]
    assert command[machines + 2 :] == one[one.index("--main_process_port") :]
    assert launch.srun_command(two, threads=32) == [
        "srun",
        "--nodes=2",
        "--ntasks=2",
        "--ntasks-per-node=1",
        "--cpus-per-task=32",
        "--kill-on-bad-exit=1",
    ]


def test_slurm_resources_of_a_multi_node_job():
    one = JobResources(gpu=8, threads=32, mem_mb=512000, runtime=2880)
    assert one.snakemake() == {"mem_mb": 512000, "runtime": 2880, "gpu": 8}
    two = JobResources(gpu=4, threads=16, mem_mb=256000, runtime=2880, nodes=2)
    assert two.snakemake() == {
        "mem_mb": 256000,
        "runtime": 2880,
        "gpu": 0,  # the GPUs go through gres, a per-node count
        "nodes": 2,
        "tasks": 2,
        "tasks_per_gpu": 0,
        "mpi": "srun",
        "gres": "gpu:4",  # per node
    }
    cpu = JobResources(gpu=0, threads=2, mem_mb=4000, runtime=60, nodes=2)
    assert "gres" not in cpu.snakemake()  # CPU-sized runs


def test_command_for_cpu_exports_use_cpu_and_a_free_port():
    command = launcher_command(launcher(CPU, 2), "run.yaml")
    assert command[:2] == ["env", "ACCELERATE_USE_CPU=true"]
    assert command[command.index("--main_process_port") + 1] == "0"
    assert "--deepspeed_config_file" not in command


def test_deepspeed_missing_fails_at_launch_not_at_validation(monkeypatch):
    real_find_spec = launch.importlib.util.find_spec
    monkeypatch.setattr(
        launch.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "deepspeed" else real_find_spec(name, *a),
    )
    validate_launcher(launcher(), PAPER_TRAINER)  # the workflow host need not have deepspeed
    with pytest.raises(
        ValueError, match=r"^launcher\.config_file: .*uses DeepSpeed, which is not installed"
    ):
        launcher_command(launcher(), "run.yaml")
    launcher_command(launcher(CPU, 2), "run.yaml")  # no DeepSpeed needed


@pytest.mark.slow
def test_accelerate_cpu_config_starts_two_gloo_processes(tmp_path):
    """The launcher's command with the CPU config: two processes, MULTI_CPU over gloo, and
    transformers' TrainingArguments (what gc2po train builds) sees a world of 2."""
    command = launcher_command(launcher(CPU, 2), tmp_path / "run.yaml")
    tail = ["-m", "gc2po.cli", "train", "--config", str(tmp_path / "run.yaml")]
    assert command[-len(tail) :] == tail  # run the probe script in gc2po train's place
    probe = command[: -len(tail)] + [str(Path(__file__).with_name("gloo_probe.py")), str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    result = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-4000:]
    records = [json.loads((tmp_path / f"rank{k}.json").read_text()) for k in range(2)]
    assert [r["rank"] for r in records] == [0, 1]
    for record in records:
        assert record["world_size"] == 2 and record["backend"] == "gloo"
        assert record["distributed_type"] == "DistributedType.MULTI_CPU"
        assert record["all_reduce_sum"] == 3.0  # 1 + 2: the processes talk
        assert record["trainer_world_size"] == 2 and record["trainer_device"].startswith("cpu")


def test_deepspeed_pin_covers_the_version_tested_here():
    """The gpu extra's deepspeed range includes the installed version the CPU tests ran on."""
    from importlib.metadata import version

    from packaging.requirements import Requirement

    tomllib = pytest.importorskip("tomllib", reason="standard library from Python 3.11")
    pytest.importorskip("deepspeed")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["gpu"]
    (requirement,) = [Requirement(r) for r in extras if r.startswith("deepspeed")]
    assert requirement.specifier.contains(version("deepspeed"))
