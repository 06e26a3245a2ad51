"""The memory plan applied to a workflow config: each training job whose base model has a known
shape (``gc2po.workflow.job_shape.MODEL_SHAPES``) and that trains under a launcher, estimated on
the config's GPU (``train.gpu_memory_gib``), and the refusal, before any job, of a config with a
job that does not fit (``check``), unless ``train.ignore_memory_plan`` is set; then the job's run
config carries a note that ``gc2po train`` writes to the job's log (``override_note``).

Configs whose base models have no known shape (the testbed's, SmolLM2) or that train without a
launcher are not estimated: nothing is refused and nothing is imported for them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gc2po.workflow.job_shape import GPU_80GB_GIB, MODEL_SHAPES

GPU_KEY = "train.gpu_memory_gib"
OVERRIDE_KEY = "train.ignore_memory_plan"
RUN_CONFIG_KEY = "memory_plan"  # the run config's note, written to the job's log


def gpu_memory_gib(config: dict) -> float:
    """GiB of one GPU the jobs run on (``train.gpu_memory_gib``; default an 80 GB GPU's 79)."""
    value = config["train"].get("gpu_memory_gib")
    return float(value) if value is not None else GPU_80GB_GIB


def ignores_plan(config: dict) -> bool:
    return bool(config["train"].get("ignore_memory_plan", False))


def planned(job) -> bool:
    """Whether ``job`` (a ``gc2po.workflow.plan.TrainingJob``) has a memory plan."""
    return job.model in MODEL_SHAPES and job.launcher is not None


@dataclass(frozen=True)
class JobMemory:
    """A training job's plan on the config's GPU (``stage``: its ZeRO stage, None without
    DeepSpeed; ``trainer``: the resolved GRPOConfig settings the plan read)."""

    job: Any
    estimate: Any  # gc2po.workflow.memory.MemoryEstimate
    stage: int | None
    gpu_memory_gib: float
    trainer: dict


_CACHE: dict[str, JobMemory] = {}  # the same job settings are estimated once per process


def job_memory(config: dict, job, gpu: float | None = None, args=None) -> JobMemory:
    """The memory plan of ``job`` (it must be ``planned``) on a GPU of ``gpu`` GiB (default: the
    config's). ``args``: its GC2POConfig when already built."""
    from gc2po.workflow.launch import read_accelerate_config
    from gc2po.workflow.memory import estimate_memory, job_from_trainer

    gpu = gpu if gpu is not None else gpu_memory_gib(config)
    train = config["train"]
    key = json.dumps(
        [
            job.model,
            job.method,
            job.trainer,
            job.launcher,
            train.get("precision"),
            train.get("max_prompt_tokens"),
            config.get("mode"),
            gpu,
        ],
        sort_keys=True,
        default=str,
    )
    if key in _CACHE:
        return _CACHE[key]
    if args is None:
        from gc2po.training.run_config import build_args

        args = build_args(job.run_config(config, memory_note=False))
    trainer = args.to_dict()
    stage = read_accelerate_config(job.launcher["config_file"], check=False).zero_stage
    shape = job_from_trainer(
        job.model,
        trainer,
        num_processes=int(job.launcher["num_processes"]),
        zero_stage=stage or 0,
        prompt_length=int(train.get("max_prompt_tokens", 1024)),
        keeps_episode_states=False,  # episode states are kept at episode ends only (E x d)
        gpu_memory_gib=gpu,
    )
    _CACHE[key] = JobMemory(job, estimate_memory(shape), stage, gpu, trainer)
    return _CACHE[key]


def over_plan(config: dict, jobs) -> list[JobMemory]:
    """The planned jobs of ``jobs`` (the config's training jobs, ``plan.training_jobs``: the
    caller's, so that this module and the plan, which reads its note, import each other in one
    direction only) that do not fit the config's GPU, one per distinct (base, run), the highest
    peak first."""
    seen, out = set(), []
    for job in jobs:
        if (job.base, job.run) in seen or not planned(job):
            continue
        seen.add((job.base, job.run))
        memory = job_memory(config, job)
        if not memory.estimate.fits:
            out.append(memory)
    return sorted(out, key=lambda m: -m.estimate.peak)


def why_not(memory: JobMemory) -> str:
    """``planned peak 87.9 GiB per GPU > the GPU's 79.0 GiB`` (or vLLM's cache too small)."""
    estimate, gpu = memory.estimate, memory.gpu_memory_gib
    if estimate.peak > gpu:
        return f"planned peak {estimate.peak:.1f} GiB per GPU > the GPU's {gpu:.1f} GiB"
    return (
        f"vLLM's KV cache ({estimate.vllm_kv_cache:.1f} GiB of the GPU's {gpu:.1f} GiB) holds no "
        f"full-length sequence (planned peak {estimate.peak:.1f} GiB)"
    )


def levers(memory: JobMemory) -> str:
    """What would lower the peak, with the job's current values."""
    trainer, launcher = memory.trainer, memory.job.launcher
    stage = "no ZeRO" if memory.stage is None else f"{memory.stage}"
    parts = [
        f"more processes ({launcher['num_processes']} now, train.launcher.num_processes)",
        f"a higher ZeRO stage ({stage} now{', the highest' if memory.stage == 3 else ''}; "
        "train.launcher.config_file)",
    ]
    if trainer.get("use_vllm"):
        sleep = (
            "" if trainer.get("vllm_enable_sleep_mode") else " or trainer.vllm_enable_sleep_mode"
        )
        parts.append(
            f"a smaller vLLM share ({trainer.get('vllm_gpu_memory_utilization')} now, "
            f"trainer.vllm_gpu_memory_utilization){sleep}"
        )
    parts.append(
        f"a smaller micro-batch ({trainer['per_device_train_batch_size']} now, "
        "trainer.per_device_train_batch_size)"
    )
    return ", ".join(parts)


def check(config: dict, jobs, where: str = "config") -> None:
    """Refuse ``config`` when one of its training jobs (``jobs``) does not fit its GPU
    (ValueError, one line naming the base model, run, method, planned peak, GPU memory and the
    levers), unless ``train.ignore_memory_plan`` is set."""
    if ignores_plan(config):
        return
    over = over_plan(config, jobs)
    if not over:
        return
    worst = over[0]
    job = worst.job
    more = ""
    if len(over) > 1:
        bases = sorted({m.job.base for m in over})
        more = f" (and {len(over) - 1} more runs of {', '.join(bases)})"
    stated = config["train"].get("gpu_memory_gib") is not None
    gpu = f"{GPU_KEY}: {worst.gpu_memory_gib:g}{'' if stated else ', the default: an 80 GB GPU'}"
    raise ValueError(
        f"{where}: training job {job.base}/{job.run} (base model {job.base}, method "
        f"{job.method}) does not fit the GPU: {why_not(worst)} ({gpu}){more}; levers: "
        f"{levers(worst)}; `gc2po plan` prints every job's plan; set {OVERRIDE_KEY}: true to "
        "queue them anyway"
    )


def override_note(config: dict, job) -> str | None:
    """The line ``gc2po train`` logs for a job the plan says does not fit and that trains
    because ``train.ignore_memory_plan`` is set; None otherwise."""
    if not ignores_plan(config) or not planned(job):
        return None
    memory = job_memory(config, job)
    if memory.estimate.fits:
        return None
    return (
        f"the memory plan says this job does not fit its GPU ({why_not(memory)}); it runs "
        f"because {OVERRIDE_KEY} is set"
    )
