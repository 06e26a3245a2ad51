"""What a workflow job asks its scheduler for, derived from what the job itself runs: ``gpu``
(sbatch ``--gpus``; on several nodes ``--gres=gpu:<per node>``), ``threads``
(``--cpus-per-task``), ``mem_mb`` (``--mem``) and ``runtime`` (``-t``, minutes).

Training (rule ``train``; sizes per node, the runtime the whole job's):

- GPUs: a launcher (``train.launcher``) whose accelerate config runs on GPUs (not ``use_cpu``)
  gets one GPU per process, ``num_processes / num_machines`` per node. Without a launcher the
  one process gets one GPU when it generates with vLLM (``trainer.use_vllm``) or trains in a GPU
  precision (``train.precision`` ``bf16`` or ``bf16-mixed``), else none: an ``fp32`` (or unset,
  fp32 on CPU) run is a CPU job.
- a job with GPUs: ``CPUS_PER_GPU`` CPUs and ``MEM_MB_PER_GPU`` MB per GPU and ``GPU_RUNTIME``
  minutes (the paper's 8-GPU job: 32 CPUs, 512,000 MB, 48 h); a CPU job: one CPU per process,
  ``CPU_MEM_MB``, ``CPU_RUNTIME``.

Evaluation (rules ``evaluate``, ``evaluate_greedy``, ``learning_curve``, ``evaluate_reasoning``):
one GPU with the ``vllm`` backend, and with ``transformers`` or ``auto`` where the training jobs
have GPUs (the models are evaluated on the machines they were trained on; ``auto`` picks vLLM
there); ``EVAL_GPU`` sizes, else ``EVAL_CPU``.

Config ``resources.<train|evaluate>.<gpu|threads|mem_mb|runtime>`` replaces a derived size; the
profile's ``set-resources`` (or ``--set-resources``) replaces both. A launcher with GPU processes
that would get fewer GPUs per node than it runs processes there (``resources.train.gpu: 0``, or
the profile's ``gpu``/``gres``) is refused before any job (:func:`check`,
:func:`check_overrides`). Reads the accelerate config file; no torch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gc2po.workflow.accelerate_config import read_accelerate_config
from gc2po.workflow.config_schema import setting_file

CPUS_PER_GPU = 4  # data loading, tokenisation, vLLM's scheduler and the grader, per process
MEM_MB_PER_GPU = 64_000  # host memory per GPU: a 7B policy's fp32 copy is loaded on the host
GPU_RUNTIME = 2880  # minutes: 48 h, a common partition limit
CPU_MEM_MB = 4000
CPU_RUNTIME = 60
GPU_PRECISIONS = ("bf16", "bf16-mixed")
SIZES = ("gpu", "threads", "mem_mb", "runtime")
# The warm start's time limit per 8 epochs begun (minutes): the default's 8 epochs took 3 min 14 s
# on 2 cores (docs/measurements.md), the rest is room for slower nodes.
WARM_START_MINUTES_PER_8_EPOCHS = 15


@dataclass(frozen=True)
class JobResources:
    """What one job asks for: ``gpu``, ``threads`` and ``mem_mb`` per node (one task per node),
    ``runtime`` in minutes for the whole job, on ``nodes`` nodes."""

    gpu: int
    threads: int
    mem_mb: int
    runtime: int
    nodes: int = 1

    @property
    def gpus(self) -> int:
        """GPUs of the whole job (every node's)."""
        return self.gpu * self.nodes

    def describe(self) -> str:
        """``8 GPUs, 32 CPUs, 512000 MB, 2880 min`` (``per node`` on several)."""
        text = (
            f"{self.gpu} GPU{'s' if self.gpu != 1 else ''}, {self.threads} CPU"
            f"{'s' if self.threads != 1 else ''}, {self.mem_mb} MB, {self.runtime} min"
        )
        return text if self.nodes == 1 else f"{self.nodes} nodes x ({text}) per node"

    def snakemake(self) -> dict[str, Any]:
        """The rule's resources (its ``threads`` are given apart).

        On several nodes, for snakemake-executor-plugin-slurm 2.8: ``nodes`` gives
        ``--nodes=M``; ``mpi`` makes the job run the rule's shell command itself, without
        wrapping it in ``srun -n1`` (the command starts its own step,
        ``gc2po.workflow.launch.srun_command``); with ``mpi`` the plugin needs a task count:
        ``tasks`` M gives ``--ntasks=M``, one task per node with ``--nodes=M``, and
        ``tasks_per_gpu`` 0 keeps it from also becoming ``--ntasks-per-gpu``. No
        ``slurm_extra`` (a profile's, or the ``--test-only`` preview of docs/cluster.md, would
        replace it or be replaced). The GPUs per node go through ``gres`` (``--gres=gpu:G``, a
        per-node count; ``--gpus`` counts the whole job, which SLURM may spread unevenly)."""
        resources: dict[str, Any] = {"mem_mb": self.mem_mb, "runtime": self.runtime}
        if self.nodes == 1:
            return {**resources, "gpu": self.gpu}
        resources.update(gpu=0, nodes=self.nodes, tasks=self.nodes, tasks_per_gpu=0, mpi="srun")
        if self.gpu:
            resources["gres"] = f"gpu:{self.gpu}"
        return resources


def _launcher(config: dict) -> Mapping[str, Any] | None:
    return config["train"].get("launcher")


def gpu_launcher(config: dict) -> bool:
    """Whether the training jobs run under a launcher whose processes each use a GPU."""
    launcher = _launcher(config)
    return (
        launcher is not None
        and not read_accelerate_config(launcher["config_file"], check=False).use_cpu
    )


def _processes_per_node(config: dict) -> int:
    launcher = _launcher(config) or {}
    return int(launcher.get("num_processes", 1)) // int(launcher.get("num_machines", 1))


def _sized(gpus: int, processes: int, runtime_gpu: int, nodes: int = 1) -> JobResources:
    """Per-GPU sizes with GPUs; a CPU job's (one CPU per process) without."""
    if gpus:
        return JobResources(gpus, CPUS_PER_GPU * gpus, MEM_MB_PER_GPU * gpus, runtime_gpu, nodes)
    return JobResources(0, processes, CPU_MEM_MB, CPU_RUNTIME, nodes)


def _overridden(derived: JobResources, config: dict, rule: str) -> JobResources:
    """``derived`` with the sizes ``resources.<rule>`` states."""
    stated = (config.get("resources") or {}).get(rule) or {}
    return replace(derived, **{key: int(stated[key]) for key in SIZES if key in stated})


def derived_training(config: dict) -> JobResources:
    """A training job's resources from its launcher, vLLM use and precision (module docstring)."""
    launcher = _launcher(config)
    processes = _processes_per_node(config)
    nodes = int((launcher or {}).get("num_machines", 1))
    if launcher is not None:
        gpus = processes if gpu_launcher(config) else 0
    else:
        train = config["train"]
        uses_vllm = bool((train.get("trainer") or {}).get("use_vllm"))
        gpus = int(uses_vllm or train.get("precision") in GPU_PRECISIONS)
    return _sized(gpus, processes, GPU_RUNTIME, nodes)


def training(config: dict) -> JobResources:
    """A training job's resources: derived, then ``resources.train``."""
    return _overridden(derived_training(config), config, "train")


EVAL_GPU = JobResources(gpu=1, threads=8, mem_mb=128_000, runtime=720)
EVAL_CPU = JobResources(gpu=0, threads=1, mem_mb=CPU_MEM_MB, runtime=CPU_RUNTIME)


def derived_evaluation(config: dict) -> JobResources:
    """An evaluation's resources from its backend (module docstring)."""
    on_gpu = config["evaluate"]["backend"] == "vllm" or derived_training(config).gpu > 0
    return EVAL_GPU if on_gpu else EVAL_CPU


def evaluation(config: dict) -> JobResources:
    """An evaluation's resources: derived, then ``resources.evaluate``."""
    return _overridden(derived_evaluation(config), config, "evaluate")


def gpu_environment(config: dict) -> bool:
    """Whether training jobs run in the GPU environment (workflow/envs/gc2po-gpu.yaml: vLLM and
    DeepSpeed): with GPUs, a launcher or vLLM generation."""
    train = config["train"]
    return bool(
        training(config).gpu
        or train.get("launcher")
        or (train.get("trainer") or {}).get("use_vllm")
    )


def _too_few(config: dict, gpus: int, stated: str) -> str | None:
    """Why ``gpus`` per node (``stated``: the key and value that ask for them) are too few for
    the launcher, or None."""
    if not gpu_launcher(config):
        return None
    needed = _processes_per_node(config)
    if gpus >= needed:
        return None
    launcher = _launcher(config)
    return (
        f"{stated}: the training jobs' launcher runs {needed} processes per node on GPUs "
        f"(train.launcher: {launcher['num_processes']} processes, {launcher['config_file']}), "
        f"one GPU each; ask for {needed} or leave it unset (derived: {needed})"
    )


def check(config: dict, files: list[str] | None = None) -> None:
    """Refuse a ``resources.train.gpu`` below the GPU launcher's processes per node
    (ValueError, one line naming the file that sets it, the key, the launcher and the count it
    needs)."""
    stated = ((config.get("resources") or {}).get("train") or {}).get("gpu")
    if stated is not None:
        problem = _too_few(config, int(stated), f"resources.train.gpu: {stated}")
        if problem:
            raise ValueError(f"{setting_file(files, ('resources', 'train', 'gpu'))}: {problem}")


GRES_GPUS = re.compile(r"^gpu(?::[^:]+)?:(\d+)$")  # gpu:8, gpu:a100:8


def check_overrides(config: dict, set_resources: Mapping[str, Mapping[str, Any]]) -> None:
    """The same refusal for the profile's (or command line's) ``set-resources`` of ``train``:
    ``gpu`` on one node, the count of ``gres`` (``gpu[:<type>]:<N>``) on several."""
    stated = set_resources.get("train") or {}
    nodes = int((_launcher(config) or {}).get("num_machines", 1))
    name = "gpu" if nodes == 1 else "gres"
    if name not in stated:
        return
    value = stated[name]
    if name == "gres":
        match = GRES_GPUS.match(str(value))
        gpus = int(match[1]) if match else 0
    else:
        gpus = int(value)
    problem = _too_few(config, gpus, f"set-resources: train: {name} = {value!r}")
    if problem:
        raise ValueError(f"{problem} (the profile's set-resources, or --set-resources)")


def warm_start_runtime(config: dict) -> int:
    """Minutes the testbed's warm start may run: 15 per 8 epochs begun (32 epochs: 60)."""
    from gc2po.testbed.warmstart import WarmStartConfig

    settings = (config.get("testbed") or {}).get("warm_start") or {}
    epochs = WarmStartConfig.from_mapping(settings, "testbed.warm_start").epochs
    return WARM_START_MINUTES_PER_8_EPOCHS * max(1, math.ceil(epochs / 8))
