"""The memory plan applied to a workflow config: each training job whose base model has a known
shape (``gc2po.workflow.model_shapes``: the entry's ``shape``, the package's table, the model's
``config.json``) and that trains under a launcher, estimated on the config's GPU
(``train.gpu_memory_gib``), and the refusal, before any job, of a config with a job that does not
fit (``check``), unless ``train.ignore_memory_plan`` is set; then the job's run config carries a
note that ``gc2po train`` writes to the job's log (``noted_run_config``).

Jobs without a launcher are not estimated, nor are those of a base model with no known shape
(the testbed's, SmolLM2's): nothing is refused for them, and ``not_planned_lines`` names each
such model that trains under a launcher in one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gc2po.workflow.base_models import base_models
from gc2po.workflow.job_shape import GPU_80GB_GIB, ModelShape
from gc2po.workflow.model_shapes import ShapeLookup, lookup, not_planned
from gc2po.workflow.plan import training_jobs

GPU_KEY = "train.gpu_memory_gib"
OVERRIDE_KEY = "train.ignore_memory_plan"
RUN_CONFIG_KEY = "memory_plan"  # the run config's note, written to the job's log


def gpu_memory_gib(config: dict) -> float:
    """GiB of one GPU the jobs run on (``train.gpu_memory_gib``; default an 80 GB GPU's 79)."""
    value = config["train"].get("gpu_memory_gib")
    return float(value) if value is not None else GPU_80GB_GIB


def ignores_plan(config: dict) -> bool:
    return bool(config["train"].get("ignore_memory_plan", False))


def shapes(config: dict) -> dict[str, ShapeLookup]:
    """Base model -> its shape (or why none), for the base models the config trains."""
    return {label: lookup(label, entry) for label, entry in base_models(config).items()}


def shape_of(config: dict, job, known: dict[str, ShapeLookup] | None = None) -> ModelShape | None:
    """The shape of ``job``'s base model when the job has a memory plan (it trains under a
    launcher and the shape is known), else None. ``known``: ``shapes(config)``, when at hand."""
    if job.launcher is None:
        return None
    return (known or shapes(config))[job.base].shape


def not_planned_lines(config: dict) -> list[str]:
    """One line per base model whose jobs train under a launcher but have no memory plan (no
    shape known): why, and how to give one."""
    if config["train"].get("launcher") is None:
        return []
    entries = base_models(config)
    return [
        not_planned(label, entries[label], found)
        for label, found in shapes(config).items()
        if found.shape is None
    ]


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


def job_memory(
    config: dict, job, shape: ModelShape, gpu: float | None = None, args=None
) -> JobMemory:
    """The memory plan of ``job`` (its base model of ``shape``; see ``shape_of``) on a GPU of
    ``gpu`` GiB (default: the config's). ``args``: its GC2POConfig when already built."""
    from gc2po.workflow.accelerate_config import read_accelerate_config
    from gc2po.workflow.memory import estimate_memory, job_from_trainer

    gpu = gpu if gpu is not None else gpu_memory_gib(config)
    train = config["train"]
    key = json.dumps(
        [
            shape,
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

        args = build_args(job.run_config(config))
    trainer = args.to_dict()
    stage = read_accelerate_config(job.launcher["config_file"], check=False).zero_stage
    job_shape = job_from_trainer(
        shape,
        trainer,
        num_processes=int(job.launcher["num_processes"]),
        zero_stage=stage or 0,
        prompt_length=int(train.get("max_prompt_tokens", 1024)),
        keeps_episode_states=False,  # episode states are kept at episode ends only (E x d)
        gpu_memory_gib=gpu,
    )
    _CACHE[key] = JobMemory(job, estimate_memory(job_shape), stage, gpu, trainer)
    return _CACHE[key]


def over_plan(config: dict) -> list[JobMemory]:
    """The planned jobs that do not fit the config's GPU, one per distinct (base, run), the
    highest peak first."""
    known, seen, out = shapes(config), set(), []
    for job in training_jobs(config):
        shape = shape_of(config, job, known)
        if (job.base, job.run) in seen or shape is None:
            continue
        seen.add((job.base, job.run))
        memory = job_memory(config, job, shape)
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


def check(config: dict, where: str = "config") -> None:
    """Refuse ``config`` when one of its training jobs does not fit its GPU (ValueError, one
    line naming the base model, run, method, planned peak, GPU memory and the levers), unless
    ``train.ignore_memory_plan`` is set."""
    if ignores_plan(config):
        return
    over = over_plan(config)
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
    if not ignores_plan(config):
        return None
    shape = shape_of(config, job)
    if shape is None:
        return None
    memory = job_memory(config, job, shape)
    if memory.estimate.fits:
        return None
    return (
        f"the memory plan says this job does not fit its GPU ({why_not(memory)}); it runs "
        f"because {OVERRIDE_KEY} is set"
    )


def noted_run_config(config: dict, job) -> dict:
    """The run config ``job`` trains from (``TrainingJob.run_config``), with the memory plan's
    note (``RUN_CONFIG_KEY``) on a job the plan says does not fit, trained because
    ``train.ignore_memory_plan`` is set; the job's log shows it."""
    run = job.run_config(config)
    note = override_note(config, job)
    if note is not None:
        run[RUN_CONFIG_KEY] = note
    return run
