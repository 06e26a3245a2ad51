"""Training entry point: a run config (YAML) -> GC2POConfig -> GC2POTrainer.

A run config:

    model: path or Hub id of the policy (also the reference model)
    train_data: normalised JSONL (id, source, question, answer, meta)
    task: testbed | math          # prompt style and outcome reward
    output_dir: where checkpoints, the final model and metrics.jsonl go
    method: gc2po                 # any name of gc2po.methods.METHODS
    seed: 0
    precision: bf16-mixed         # bf16-mixed | bf16 | fp32 (default: bf16-mixed on GPU, fp32 on CPU)
    resume: false                 # continue from the last checkpoint of the same run config
    overwrite: false              # allow starting over in a used output_dir (deletes its checkpoints)
    max_train_examples: null      # first N problems only
    trainer: {...}                # GC2POConfig / GRPOConfig fields

Everything is validated (and a bad key or value named) before a model is loaded. The resolved
config's hash is stored beside the checkpoints (``run_config.json``), so a resumed job continues
only the run it started.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import types
import typing
from pathlib import Path
from typing import Any

import torch

RUN_KEYS = {"model", "train_data", "task", "output_dir", "method", "seed", "precision", "resume", "overwrite",
            "trainer", "max_train_examples"}
TASKS = ("testbed", "math")
RUN_STATE = "run_config.json"  # beside the checkpoints: the resolved run config and its hash

# TRL's defaults changed across releases and some are traps (bf16 on, gradient checkpointing on,
# loss_type dapo, beta 0): every one is set here explicitly. loss_type and precision come from the
# method and the run config.
TRAINER_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-6,  # paper
    "weight_decay": 0.01,  # paper
    "beta": 0.04,  # KL to the reference (DeepSeekMath); methods that define another fix it
    "epsilon": 0.2,
    "num_generations": 8,  # K: the paper is silent; 8 as in Dr.GRPO
    "num_iterations": 1,
    "steps_per_generation": 1,  # a generation batch is one micro-batch: GC2PO's advantages come from the loss forward
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
DERIVED_KEYS = {"bf16": "precision", "fp16": "precision", "method": "method", "seed": "seed",
                "output_dir": "output_dir", "use_cpu": "the machine"}


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

    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"{path}: cannot read run config: {err}") from err
    if not isinstance(config, dict):
        raise ValueError(f"{path}: run config must be a mapping")
    return apply_overrides(config, overrides or [])


def _coerce(name: str, value: Any, annotation: Any) -> Any:
    """Check a trainer value against its dataclass field type (ints accepted for floats)."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    allowed = typing.get_args(annotation) if union else (annotation,)
    if value is None and type(None) in allowed:
        return value
    for kind in allowed:
        if kind is bool and isinstance(value, bool):
            return value
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if kind is str and isinstance(value, str):
            return value
        if kind in (dict, list) and isinstance(value, kind):
            return value
    simple = [k for k in allowed if k in (bool, int, float, str, dict, list, type(None))]
    if len(simple) < len(allowed):  # a type we do not check (enums, literals, nested unions): TRL checks
        return value
    names = " or ".join(getattr(k, "__name__", str(k)) for k in allowed)
    raise ValueError(f"run config: trainer.{name} must be {names}, got {value!r}")


def resolve_precision(run: dict) -> str:
    from gc2po.config import PRECISIONS

    precision = run.get("precision") or ("bf16-mixed" if torch.cuda.is_available() else "fp32")
    if precision not in PRECISIONS:
        raise ValueError(f"run config: precision must be one of {list(PRECISIONS)}, got {precision!r}")
    return precision


def build_args(run: dict):
    """Validate a run config and return the GC2POConfig (no model is loaded)."""
    from gc2po.config import GC2POConfig
    from gc2po.methods import get_method

    unknown = sorted(set(run) - RUN_KEYS)
    if unknown:
        raise ValueError(f"run config: unknown key(s) {unknown}; valid: {sorted(RUN_KEYS)}")
    for key in ("model", "train_data", "output_dir"):
        if not run.get(key):
            raise ValueError(f"run config: missing required key {key!r}")
    if run.get("task", "math") not in TASKS:
        raise ValueError(f"run config: task must be one of {list(TASKS)}, got {run.get('task')!r}")
    trainer = dict(run.get("trainer") or {})
    fields = {f.name: f for f in dataclasses.fields(GC2POConfig)}
    bad = sorted(set(trainer) - set(fields))
    if bad:
        raise ValueError(f"run config: unknown trainer key(s) {bad} (not fields of GC2POConfig)")
    for key, source in DERIVED_KEYS.items():
        if key in trainer:
            raise ValueError(f"run config: trainer.{key} is set from {source}; remove it from the trainer section")
    hints = typing.get_type_hints(GC2POConfig)
    trainer = {k: _coerce(k, v, hints.get(k, object)) for k, v in trainer.items()}
    method = get_method(str(run.get("method", "gc2po")))
    for key, value in method.fixed.items():
        if key in trainer and trainer[key] != value:
            raise ValueError(f"run config: trainer.{key}={trainer[key]!r} conflicts with method {method.name!r}, "
                             f"which fixes {key}={value!r} (part of its definition); remove trainer.{key}")
    if not isinstance(run.get("seed", 0), int) or isinstance(run.get("seed", 0), bool):
        raise ValueError(f"run config: seed must be an integer, got {run.get('seed')!r}")
    kwargs = {**TRAINER_DEFAULTS, **trainer, **method.fixed}
    kwargs.update(method=method.name, precision=resolve_precision(run), seed=int(run.get("seed", 0)),
                  output_dir=str(run["output_dir"]))
    kwargs["data_seed"] = kwargs["seed"]
    kwargs.setdefault("metrics_path", str(Path(run["output_dir"]) / "metrics.jsonl"))
    if not torch.cuda.is_available():
        kwargs["use_cpu"] = True
    try:
        return GC2POConfig(**kwargs)
    except (TypeError, ValueError) as err:
        raise ValueError(f"run config: {err}") from err


def run_fingerprint(run: dict, args) -> dict:
    """What makes two runs the same: the resolved trainer config, model, data content, task."""
    data = Path(run["train_data"])
    resolved = {k: v for k, v in args.to_dict().items() if k not in ("output_dir", "logging_dir", "metrics_path")}
    return {"model": str(run["model"]), "task": run.get("task", "math"), "train_data": str(data),
            "train_data_sha256": hashlib.sha256(data.read_bytes()).hexdigest() if data.is_file() else None,
            "max_train_examples": run.get("max_train_examples"), "trainer": resolved}


def complete_checkpoints(out: Path) -> list[Path]:
    """Checkpoints of ``out`` in step order whose trainer state was written (it is written last,
    so a job killed while saving leaves an incomplete folder that must not be resumed from)."""
    found = [p for p in out.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return sorted((p for p in found if (p / "trainer_state.json").is_file()), key=lambda p: int(p.name.split("-")[-1]))


def prepare_output_dir(run: dict, args, log=print) -> Path | None:
    """Check ``output_dir`` before any model loads; returns the checkpoint to resume from.

    A used directory (checkpoints, metrics or a final model) is refused unless ``resume`` (same
    run config: continue from its last complete checkpoint) or ``overwrite`` (delete and start
    over); with both, a changed config starts over."""
    out = Path(args.output_dir)
    fingerprint = run_fingerprint(run, args)
    digest = hashlib.sha256(json.dumps(fingerprint, sort_keys=True, default=str).encode()).hexdigest()
    checkpoints = sorted(out.glob("checkpoint-*"))
    complete = complete_checkpoints(out)
    used = checkpoints or (out / "metrics.jsonl").exists() or (out / "final").exists()
    stored = json.loads((out / RUN_STATE).read_text()).get("sha256") if (out / RUN_STATE).exists() else None
    resume = bool(run.get("resume")) and bool(complete) and stored == digest
    main_process = int(os.environ.get("RANK", "0")) == 0  # under accelerate launch, rank 0 alone writes
    if used and not resume:
        if not run.get("overwrite"):
            reason = ("its checkpoints belong to a different run config" if run.get("resume") and checkpoints
                      else "it holds an earlier run")
            raise ValueError(f"output_dir {out}: {reason}; set overwrite: true (or --overwrite) to start over"
                             + ("" if run.get("resume") else ", or resume: true to continue it"))
        if main_process:
            log(f"output_dir {out}: starting over (deleting {len(checkpoints)} checkpoint(s), metrics, final model)")
            for path in checkpoints + [out / "final"]:
                shutil.rmtree(path, ignore_errors=True)
            (out / "metrics.jsonl").unlink(missing_ok=True)
    if resume and main_process:
        for partial in set(checkpoints) - set(complete):  # killed while saving
            log(f"output_dir {out}: removing the incomplete {partial.name}")
            shutil.rmtree(partial, ignore_errors=True)
    if main_process:
        out.mkdir(parents=True, exist_ok=True)
        (out / RUN_STATE).write_text(json.dumps({"sha256": digest, "run": fingerprint}, indent=1, default=str))
    return complete[-1] if resume else None


def build_dataset(records: list[dict], task: str):
    """TRL prompt dataset: conversational prompt + the columns the reward needs."""
    from datasets import Dataset

    from gc2po.prompts import TESTBED_INSTRUCTION, build_messages

    rows = []
    for record in records:
        if task == "testbed":
            prompt = build_messages(record["question"], instruction=TESTBED_INSTRUCTION)
        else:
            prompt = build_messages(record["question"], "math")
        rows.append({"prompt": prompt, "question": record["question"], "answer": str(record["answer"]),
                     "meta_json": json.dumps(record.get("meta", {})), "id": record["id"]})
    return Dataset.from_list(rows)


def read_jsonl(path: str | Path) -> list[dict]:
    path = Path(path)
    records = []
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        raise ValueError(f"{path}: cannot read: {err}") from err
    for row, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: row {row}: invalid JSON: {err}") from err
        for key in ("id", "question", "answer"):
            if key not in record:
                raise ValueError(f"{path}: row {row}: missing field {key!r}")
        records.append(record)
    return records


def check_model_source(model: str) -> None:
    """A local folder must hold a config; a Hub id needs the network (fails fast offline)."""
    path = Path(model)
    if path.exists() or model.startswith((".", "/")):
        if not (path / "config.json").is_file():
            raise ValueError(f"run config: model {model!r}: no such model folder (config.json missing)")
    elif os.environ.get("HF_HUB_OFFLINE") == "1":
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(model, "config.json"), str):
            raise ValueError(f"run config: model {model!r} is a Hub id, not in the local cache, and HF_HUB_OFFLINE=1")


def train(run: dict, log=print) -> Path:
    """Train one run; returns the directory holding the final model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.rewards import REWARDS
    from gc2po.trl_adapter import GC2POTrainer

    args = build_args(run)  # fails on a bad config before any model is loaded
    check_model_source(str(run["model"]))
    task = run.get("task", "math")
    records = read_jsonl(run["train_data"])
    if run.get("max_train_examples"):
        records = records[: int(run["max_train_examples"])]
    checkpoint = prepare_output_dir(run, args, log)
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(run["model"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32  # bf16-mixed keeps fp32 master weights
    model = AutoModelForCausalLM.from_pretrained(run["model"], dtype=dtype)
    trainer = GC2POTrainer(model=model, args=args, train_dataset=build_dataset(records, task),
                           processing_class=tokenizer, reward_funcs=[REWARDS[task]])
    log(f"training {args.method} ({args.precision}) on {len(records)} problems -> {args.output_dir} "
        f"(resume={checkpoint is not None}{f' from {checkpoint.name}' if checkpoint else ''})")
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    final = Path(args.output_dir) / "final"
    trainer.save_model(str(final))  # rank 0 writes; gathers ZeRO-3 shards (16-bit) first
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(final)
    trainer.accelerator.wait_for_everyone()
    return final
