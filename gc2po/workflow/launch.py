"""Launching ``gc2po train`` under ``accelerate launch`` (one launcher per machine).

A launcher is a mapping from the workflow config::

    launcher:
      config_file: config/accelerate/deepspeed_zero3.yaml   # an accelerate config
      num_processes: 8        # one process per GPU, over all machines
      num_machines: 1         # optional; > 1: one launcher per node (gc2po.workflow.node_launch)
      main_process_port: 0    # optional; 0 = a free port (one machine only)

:func:`validate_launcher` checks it against the run's trainer settings before any job starts;
:func:`launcher_command` builds the command line (and refuses a DeepSpeed config where
deepspeed is not installed: that is a property of the machine that runs the job, not of the
config). No trl import.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gc2po.workflow.accelerate_config import AccelerateSettings, key_error, read_accelerate_config

LAUNCHER_KEYS = ("config_file", "num_processes", "num_machines", "main_process_port")
# accelerate's DistributedType values that run one process per device
MULTI_PROCESS_TYPES = ("MULTI_GPU", "MULTI_CPU", "DEEPSPEED", "FSDP")
# TRL 1.16, GRPOConfig.ds3_gather_for_generation: "Disabling this option is not compatible with
# vLLM generation."
DS3_VLLM_MESSAGE = "TRL 1.16 documents that disabling it is not compatible with vLLM generation"


def _check_launcher_keys(launcher: Any, where: str) -> None:
    if not isinstance(launcher, Mapping):
        raise ValueError(f"{where}: must be a mapping with {list(LAUNCHER_KEYS)}, got {launcher!r}")
    unknown = sorted(set(launcher) - set(LAUNCHER_KEYS))
    if unknown:
        raise key_error(where, unknown[0], f"unknown key; valid keys: {list(LAUNCHER_KEYS)}")
    for key in ("config_file", "num_processes"):
        if key not in launcher:
            raise key_error(where, key, "missing")
    num = launcher["num_processes"]
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise key_error(where, "num_processes", f"must be an int >= 1, got {num!r}")
    port = launcher.get("main_process_port")
    if port is not None and (
        isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535
    ):
        raise key_error(
            where,
            "main_process_port",
            f"must be an int in [0, 65535] (0: a free port), got {port!r}",
        )
    _check_machines(launcher, where)


def num_machines(launcher: Mapping[str, Any]) -> int:
    """The launcher's machine count (1 when not set)."""
    return launcher.get("num_machines", 1)


def _check_machines(launcher: Mapping[str, Any], where: str) -> None:
    machines = num_machines(launcher)
    if isinstance(machines, bool) or not isinstance(machines, int) or machines < 1:
        raise key_error(where, "num_machines", f"must be an int >= 1, got {machines!r}")
    if machines == 1:
        return
    num = launcher["num_processes"]
    if num % machines:
        raise key_error(
            where,
            "num_processes",
            f"{num} is not divisible by num_machines {machines}: every machine runs "
            f"num_processes / num_machines processes (one per GPU)",
        )
    if not launcher.get("main_process_port"):  # 0 or unset: a free port of each machine
        raise key_error(
            where,
            "main_process_port",
            f"num_machines {machines} needs a fixed port that every node reaches on the first "
            f"one (0 or unset picks a free port of one machine); set one, e.g. 29500",
        )


def _check_process_count(
    settings: AccelerateSettings, num: int, where: str, machines: int = 1
) -> None:
    if settings.num_machines not in (None, 1, machines):
        raise key_error(
            where,
            "num_machines",
            f"{machines} disagrees with num_machines: {settings.num_machines} in {settings.path} "
            f"(the launcher's count is passed to accelerate; leave the file's at 1)",
        )
    if machines > 1 and settings.uses_deepspeed:
        # any other launcher (pdsh, mpi, ...) would start every node's processes from each node
        if settings.deepspeed_multinode_launcher != "standard":
            raise key_error(
                where,
                "config_file",
                f"{settings.path}: num_machines {machines} with DeepSpeed needs "
                f"deepspeed_config.deepspeed_multinode_launcher: standard (one torchrun per node, "
                f"as the shipped configs set), got "
                f"{settings.deepspeed_multinode_launcher or 'unset (pdsh)'}",
            )
    if settings.num_processes is not None and settings.num_processes != num:
        raise key_error(
            where,
            "num_processes",
            f"{num} disagrees with num_processes: {settings.num_processes} in {settings.path}",
        )
    if num > 1 and settings.distributed_type not in MULTI_PROCESS_TYPES:
        raise key_error(
            where,
            "num_processes",
            f"{num} processes need a multi-process accelerate config "
            f"({list(MULTI_PROCESS_TYPES)}); {settings.path} has "
            f"distributed_type {settings.distributed_type}",
        )


def _check_deepspeed_trainer(settings: AccelerateSettings, trainer: Mapping, where: str) -> None:
    if isinstance(settings.bf16, bool) and settings.bf16 != bool(trainer.get("bf16", False)):
        raise key_error(
            where,
            "config_file",
            f"{settings.deepspeed_config_file or settings.path} sets bf16 "
            f"{'on' if settings.bf16 else 'off'} but trainer.bf16 is "
            f"{trainer.get('bf16', '(not set)')!r}; make them agree",
        )
    if (
        settings.zero_stage == 3
        and trainer.get("use_vllm")
        and trainer.get("ds3_gather_for_generation") is False
    ):
        raise ValueError(
            f"trainer.ds3_gather_for_generation: false with use_vllm under DeepSpeed ZeRO-3 "
            f"({settings.path}): {DS3_VLLM_MESSAGE}; set it to true (vLLM gathers the "
            f"weights one parameter at a time when it syncs them anyway)"
        )


def _check_vllm(trainer: Mapping, num: int) -> None:
    if not trainer.get("use_vllm") or trainer.get("vllm_mode", "colocate") != "colocate":
        return
    tp = trainer.get("vllm_tensor_parallel_size", 1)
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1 or num % tp:
        # TRL raises this only after the model is loaded (VLLMGeneration._init_vllm)
        raise ValueError(
            f"trainer.vllm_tensor_parallel_size: {tp!r} must be an int >= 1 dividing the "
            f"launcher's num_processes ({num}) in colocate mode"
        )


def validate_launcher(
    launcher: Any, trainer: Mapping[str, Any], where: str = "launcher"
) -> AccelerateSettings:
    """Check a launcher mapping against the run's trainer settings; return the parsed config.

    Raises ValueError naming the key: ``num_processes`` not an int >= 1 or disagreeing with the
    accelerate config's, ``num_machines`` not an int >= 1, not dividing ``num_processes``,
    disagreeing with the accelerate config's or (above 1) without a fixed
    ``main_process_port``, a missing accelerate (or DeepSpeed JSON) config, DeepSpeed bf16 that
    disagrees with ``trainer.bf16``, ZeRO-3 with ``use_vllm`` and
    ``ds3_gather_for_generation: false`` (the one vLLM mode TRL 1.16 documents as unsupported
    under ZeRO-3; colocate and server mode, with or without sleep mode, are supported), and a
    colocated vLLM tensor-parallel size that does not divide the process count.
    Does not check that deepspeed is installed (:func:`launcher_command` does).
    """
    _check_launcher_keys(launcher, where)
    num = launcher["num_processes"]
    settings = read_accelerate_config(launcher["config_file"], where)
    _check_process_count(settings, num, where, num_machines(launcher))
    if settings.uses_deepspeed:
        _check_deepspeed_trainer(settings, trainer, where)
    _check_vllm(trainer, num)
    return settings


def launcher_command(
    launcher: Mapping[str, Any], run_config_path: str | Path, python: str = sys.executable
) -> list[str]:
    """The command that runs ``gc2po train --config <run_config_path>`` on N processes.

    ``[env ACCELERATE_USE_CPU=true] python -m accelerate.commands.launch --config_file C
    --num_processes N --main_process_port P [--deepspeed_config_file J] -m gc2po.cli train
    --config R`` (``python -m accelerate.commands.launch`` is ``accelerate launch`` run
    by ``python``, this interpreter by default; the workflow passes the job environment's
    ``python3``). Port 0 (the default) lets accelerate pick a free one, so concurrent jobs on
    a node do not collide.

    With ``num_machines`` M > 1 the command is one machine's launcher: ``python -m
    gc2po.workflow.node_launch`` in place of ``python -m accelerate.commands.launch``, with
    ``--num_machines M`` added; run once per node (:func:`srun_command`), it adds that node's
    ``--machine_rank`` and the first node's address as ``--main_process_ip`` from SLURM's
    environment and runs ``accelerate launch``, which starts N / M processes on the node.
    """
    _check_launcher_keys(launcher, "launcher")
    # checked with accelerate by validate_launcher (the workflow's config check) already
    settings = read_accelerate_config(launcher["config_file"], check=False)
    if settings.uses_deepspeed and importlib.util.find_spec("deepspeed") is None:
        raise ValueError(
            f"launcher.config_file: {settings.path} uses DeepSpeed, which is not installed "
            f"here (pip install -e '.[gpu]')"
        )
    machines = num_machines(launcher)
    command = ["env", "ACCELERATE_USE_CPU=true"] if settings.use_cpu else []
    command += [
        python,
        "-m",
        "accelerate.commands.launch" if machines == 1 else "gc2po.workflow.node_launch",
        "--config_file",
        str(settings.path),
        "--num_processes",
        str(launcher["num_processes"]),
    ]
    if machines > 1:
        command += ["--num_machines", str(machines)]
    command += ["--main_process_port", str(launcher.get("main_process_port", 0))]
    if settings.deepspeed_config_file is not None:
        command += ["--deepspeed_config_file", str(settings.deepspeed_config_file)]
    return command + ["-m", "gc2po.cli", "train", "--config", str(run_config_path)]


def srun_command(launcher: Mapping[str, Any], threads: int) -> list[str]:
    """What starts one launcher per node inside a SLURM job of ``num_machines`` nodes.

    ``srun --nodes=M --ntasks=M --ntasks-per-node=1 --cpus-per-task=T --kill-on-bad-exit=1``:
    the job step spans every node of the allocation with one task each (the node's launcher,
    which starts its N / M processes); a failing node ends the others. The step asks for no
    GPUs: a step gets every GPU the job holds on its nodes.
    """
    machines = num_machines(launcher)
    return [
        "srun",
        f"--nodes={machines}",
        f"--ntasks={machines}",
        "--ntasks-per-node=1",
        f"--cpus-per-task={threads}",
        "--kill-on-bad-exit=1",
    ]
