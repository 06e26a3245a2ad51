"""Run configs: validation (before any model loads) and the resolved GC2POConfig; the output
directory's state (refuse, resume or start over) is ``gc2po.training.output_dir``. See
``gc2po.training.train`` for the format.

``precheck`` needs no torch, transformers or trl import (it reads the GC2POConfig field types
from ``config_fields.json``, kept equal to the dataclass by a test), so the commonest mistakes
fail within a second; ``build_args`` then builds the real config.
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from pathlib import Path
from typing import Any

from gc2po.data.tasks import BENCHMARK, TESTBED, check_task
from gc2po.errors import as_type, did_you_mean
from gc2po.layout import RunDir

FIELDS_FILE = Path(__file__).with_name("config_fields.json")  # field -> allowed simple types

# every key of a run config (gc2po train) -> what it means (docs/config-reference.md shows it)
RUN_KEYS = {
    "model": "path or Hub id of the policy (also the reference model); required",
    "train_data": "normalised JSONL (id, source, question, answer, meta); required",
    "task": "testbed or benchmark (gc2po.data.tasks): the prompt style and outcome reward; "
    "default benchmark (each record's meta.answer_format and meta.grader)",
    "output_dir": "where checkpoints, the final model and metrics.jsonl go; required",
    "method": "a name of gc2po.methods.METHODS (default gc2po)",
    "seed": "the training seed (default 0)",
    "precision": "bf16-mixed, bf16 or fp32 (default bf16-mixed on GPU, fp32 on CPU)",
    "resume": "continue from the last checkpoint of the same run config (default false)",
    "overwrite": "start over in a used output_dir, deleting its checkpoints (default false)",
    "trainer": "GC2POConfig fields (the trainer keys below)",
    "max_train_examples": "train on the first N problems only (default all)",
    # the workflow's note: the plan says the job does not fit, trained anyway
    "memory_plan": "set by the workflow for a job its memory plan says will not fit, trained "
    "because train.ignore_memory_plan is set: logged",
    "keep_checkpoints": "false: the run deletes its checkpoints when it ends (final stays; "
    "default true)",
}

# TRL's defaults changed across releases and some are traps (bf16 on, gradient checkpointing on,
# loss_type dapo, beta 0): every one is set here explicitly. loss_type and precision come from the
# method and the run config.
TRAINER_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-6,  # paper
    "weight_decay": 0.01,  # paper
    "beta": 0.04,  # KL to the reference (DeepSeekMath); methods that define another fix it
    # TRL weights the k3 KL term by pi/pi_old; equal in value on-policy, a slightly different
    # gradient from the paper's plain term (set false for that; gc2po.core.losses documents both)
    "use_bias_correction_kl": True,
    "epsilon": 0.2,
    "num_generations": 8,  # K: the paper is silent; 8 as in Dr.GRPO
    "num_iterations": 1,
    # a generation batch is one micro-batch: GC2PO's advantages come from the loss forward
    "steps_per_generation": 1,
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 0,
    "max_completion_length": 1024,
    "gradient_checkpointing": False,
    "mask_truncated_completions": False,
    "importance_sampling_level": "token",
    "scale_rewards": "group",  # unused: advantages come from the method
    "logging_steps": 1,
    "save_strategy": "steps",
    "save_steps": 50,
    "save_total_limit": 2,  # bounded disk; the last checkpoint is what a rerun resumes from
    "report_to": "none",
    "log_completions": False,
    "disable_dropout": True,
    "lr_scheduler_type": "constant",
    "warmup_steps": 0,
    "max_grad_norm": 1.0,
}
# set through the run config, never directly: precision decides bf16/fp16
DERIVED_KEYS = {
    "bf16": "precision",
    "fp16": "precision",
    "method": "method",
    "seed": "seed",
    "output_dir": "output_dir",
    "use_cpu": "the machine",
    "given_keys": "the trainer keys the run config gives",
}


def apply_overrides(config: dict, overrides: list[str]) -> dict:
    """``key=value`` or ``trainer.key=value`` pairs, values parsed as YAML scalars."""
    import yaml

    config = json.loads(json.dumps(config))
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got {item!r}")
        key, raw = item.split("=", 1)
        node = config
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = yaml.safe_load(raw)
    return config


def load_run_config(path: str | Path, overrides: list[str] | None = None) -> dict:
    import yaml

    from gc2po.errors import one_line

    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"{path}: cannot read run config: {one_line(err)}") from err
    if not isinstance(config, dict):
        raise ValueError(f"{path}: run config must be a mapping")
    check_task(config.get("task", BENCHMARK), f"{path}: task")  # an old spelling, with its file
    return apply_overrides(config, overrides or [])


def run_task(run: dict) -> str:
    """The run's task (gc2po.data.tasks), ``benchmark`` when not given."""
    return check_task(run.get("task", BENCHMARK), "run config: task")


SIMPLE_TYPES = {
    "bool": bool,
    "int": int,
    "float": float,
    "str": str,
    "dict": dict,
    "list": list,
    "null": type(None),
}


def describe_fields(config_class) -> dict[str, list[str]]:
    """Field -> the simple types a run config may give it (``["any"]``:
    a type left to TRL to check)."""
    names = {kind: name for name, kind in SIMPLE_TYPES.items()}
    hints = typing.get_type_hints(config_class)
    described = {}
    for field in dataclasses.fields(config_class):
        annotation = hints.get(field.name, object)
        union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
        allowed = [
            typing.get_origin(k) or k
            for k in (typing.get_args(annotation) if union else (annotation,))
        ]
        described[field.name] = (
            [names[k] for k in allowed] if all(k in names for k in allowed) else ["any"]
        )
    return described


def check_value(name: str, value: Any, allowed: list[str]) -> Any:
    """A trainer value of an allowed type (an int is accepted for a float), else ValueError."""
    if "any" in allowed:
        return value
    for kind in allowed:
        try:
            return as_type(value, SIMPLE_TYPES[kind])
        except TypeError:
            continue
    raise ValueError(f"run config: trainer.{name} must be {' or '.join(allowed)}, got {value!r}")


def checked_trainer(run: dict) -> dict:
    """The checks of a run config that need no torch, transformers or trl import: its keys, the
    required ones, the task and seed, and every trainer key and value type (from
    ``config_fields.json``, kept equal to ``GC2POConfig`` by a test). Returns the trainer
    settings with their values typed (an int given for a float becomes a float). Raises
    ValueError naming the key."""
    unknown = sorted(set(run) - set(RUN_KEYS))
    if unknown:
        raise ValueError(
            f"run config: unknown key(s) {unknown}{did_you_mean(unknown[0], RUN_KEYS)}; "
            f"valid: {sorted(RUN_KEYS)}"
        )
    for key in ("model", "train_data", "output_dir"):
        if not run.get(key):
            raise ValueError(f"run config: missing required key {key!r}")
    run_task(run)
    if not isinstance(run.get("memory_plan", ""), str):
        raise ValueError(f"run config: memory_plan must be a string, got {run['memory_plan']!r}")
    if not isinstance(run.get("keep_checkpoints", True), bool):
        raise ValueError(
            f"run config: keep_checkpoints must be true or false, got {run['keep_checkpoints']!r}"
        )
    if not isinstance(run.get("seed", 0), int) or isinstance(run.get("seed", 0), bool):
        raise ValueError(f"run config: seed must be an integer, got {run.get('seed')!r}")
    trainer = run.get("trainer") or {}
    if not isinstance(trainer, dict):
        raise ValueError("run config: trainer must be a mapping of GC2POConfig fields")
    fields = json.loads(FIELDS_FILE.read_text())
    bad = sorted(set(trainer) - set(fields))
    if bad:
        raise ValueError(
            f"run config: unknown trainer key(s) {bad}{did_you_mean(bad[0], fields)}: not "
            "fields of GC2POConfig (docs/config-reference-trainer.md lists them)"
        )
    for key, source in DERIVED_KEYS.items():
        if key in trainer:
            raise ValueError(
                f"run config: trainer.{key} is set from {source}; "
                "remove it from the trainer section"
            )
    return {key: check_value(key, value, fields[key]) for key, value in trainer.items()}


def precheck(run: dict) -> None:
    """Within a second, before torch is imported: :func:`checked_trainer`, the model and data
    paths, and a used output_dir. Raises ValueError naming the key."""
    checked_trainer(run)
    check_model_source(str(run["model"]))
    if not Path(run["train_data"]).is_file():
        raise ValueError(f"run config: train_data {run['train_data']!r}: no such file")
    out = Path(run["output_dir"])
    used = (
        any(out.glob(RunDir.CHECKPOINTS))
        or (out / RunDir.METRICS).exists()
        or (out / RunDir.FINAL).exists()
    )
    if used and not (run.get("resume") or run.get("overwrite")):
        raise ValueError(
            f"output_dir {out}: it holds an earlier run; set overwrite: true (or --overwrite) "
            "to start "
            "over, or resume: true (--resume) to continue it"
        )


def resolve_precision(run: dict) -> str:
    import torch

    from gc2po.training.config_checks import PRECISIONS

    precision = run.get("precision") or ("bf16-mixed" if torch.cuda.is_available() else "fp32")
    if precision not in PRECISIONS:
        raise ValueError(
            f"run config: precision must be one of {list(PRECISIONS)}, got {precision!r}"
        )
    return precision


def build_args(run: dict):
    """Validate a run config and return the GC2POConfig (no model is loaded)."""
    from gc2po.methods import get_method
    from gc2po.training.config import GC2POConfig

    trainer = checked_trainer(run)
    method = get_method(str(run.get("method", "gc2po")))
    # what the method fixes fills what the run config leaves out; a given value that differs is
    # refused by GC2POConfig (Method.check_fixed on given_keys)
    kwargs = {**TRAINER_DEFAULTS, **method.fixed, **trainer}
    kwargs.update(
        given_keys=sorted(trainer),
        method=method.name,
        precision=resolve_precision(run),
        seed=int(run.get("seed", 0)),
        output_dir=str(run["output_dir"]),
    )
    kwargs["data_seed"] = kwargs["seed"]
    kwargs.setdefault("metrics_path", str(Path(run["output_dir"]) / RunDir.METRICS))
    import torch

    if not torch.cuda.is_available():
        kwargs["use_cpu"] = True
    try:
        args = GC2POConfig(**kwargs)
    except (TypeError, ValueError) as err:
        raise ValueError(f"run config: {err}") from err
    from gc2po.methods.grpo_gated import needs_steps
    from gc2po.training.rewards import check_nonnegative_rewards, reward_functions
    from gc2po.training.signals import ORACLE_SIGNALS

    try:  # a method that owns its reward refuses a task it has none for
        functions = reward_functions(method, run_task(run))
    except ValueError as err:
        raise ValueError(f"run config: {err}") from err
    if method.nonnegative_rewards:
        weights = args.reward_weights or [1.0] * len(functions)  # the method's fixed or the run's
        try:
            check_nonnegative_rewards(method.name, functions, weights)
        except ValueError as err:
            raise ValueError(f"run config: trainer.reward_weights: {err}") from err
    if args.cf_signal in ORACLE_SIGNALS and run_task(run) != TESTBED:
        raise ValueError(
            f"run config: task: method {method.name!r} (cf_signal {args.cf_signal!r}) grades "
            f"episodes with the testbed oracle, so it needs task {TESTBED!r}, got "
            f"{run_task(run)!r}"
        )
    if needs_steps(method, args) and run_task(run) != TESTBED:
        raise ValueError(
            f"run config: task: method {method.name!r} with cf_gate 'value' divides by the "
            f"problem's step count, which only task {TESTBED!r} rows carry, got {run_task(run)!r}"
        )
    return args


def check_model_source(model: str) -> None:
    """A local folder must hold a config; a Hub id needs the network (fails fast offline)."""
    path = Path(model)
    if path.exists() or model.startswith((".", "/")):
        if not (path / "config.json").is_file():
            raise ValueError(
                f"run config: model {model!r}: no such model folder (config.json missing)"
            )
    elif os.environ.get("HF_HUB_OFFLINE") == "1":
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(model, "config.json"), str):
            raise ValueError(
                f"run config: model {model!r} is a Hub id, not in the local cache, and "
                "HF_HUB_OFFLINE=1"
            )
