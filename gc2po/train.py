"""Training entry point: a run config (YAML) -> GC2POConfig -> GC2POTrainer.

A run config:

    model: path or Hub id of the policy (also the reference model)
    train_data: normalised JSONL (id, source, question, answer, meta)
    task: testbed | math          # prompt style and outcome reward
    output_dir: where checkpoints, the final model and metrics.jsonl go
    method: gc2po                 # any name of gc2po.methods.METHODS
    seed: 0
    resume: false                 # continue from the last checkpoint in output_dir
    trainer: {...}                # any GC2POConfig / GRPOConfig field

Everything is validated (and a bad key named) before a model is loaded.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch

RUN_KEYS = {"model", "train_data", "task", "output_dir", "method", "seed", "resume", "trainer", "max_train_examples"}
TASKS = ("testbed", "math")

# TRL's defaults changed across releases and some are traps on CPU (bf16 on, gradient
# checkpointing on, loss_type dapo, beta 0): every one is set here explicitly.
TRAINER_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-6,  # paper
    "weight_decay": 0.01,  # paper
    "beta": 0.04,  # KL to the reference (DeepSeekMath); Dr.GRPO's entry sets 0
    "epsilon": 0.2,
    "num_generations": 8,  # K: the paper is silent; 8 as in Dr.GRPO
    "num_iterations": 1,
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 0,
    "max_completion_length": 1024,
    "gradient_checkpointing": False,
    "bf16": False,
    "fp16": False,
    "mask_truncated_completions": False,
    "importance_sampling_level": "token",
    "scale_rewards": "group",  # unused: advantages come from the method
    "logging_steps": 1,
    "save_strategy": "steps",
    "save_steps": 50,
    "report_to": "none",
    "log_completions": False,
    "disable_dropout": True,
    "lr_scheduler_type": "constant",
    "warmup_steps": 0,
    "max_grad_norm": 1.0,
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

    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"{path}: cannot read run config: {err}") from err
    if not isinstance(config, dict):
        raise ValueError(f"{path}: run config must be a mapping")
    return apply_overrides(config, overrides or [])


def build_args(run: dict):
    """Validate a run config and return the GC2POConfig (no model is loaded)."""
    from gc2po.trl_adapter import GC2POConfig

    unknown = sorted(set(run) - RUN_KEYS)
    if unknown:
        raise ValueError(f"run config: unknown key(s) {unknown}; valid: {sorted(RUN_KEYS)}")
    for key in ("model", "train_data", "output_dir"):
        if not run.get(key):
            raise ValueError(f"run config: missing required key {key!r}")
    if run.get("task", "math") not in TASKS:
        raise ValueError(f"run config: task must be one of {list(TASKS)}, got {run.get('task')!r}")
    trainer = dict(run.get("trainer") or {})
    valid = {f.name for f in dataclasses.fields(GC2POConfig)}
    bad = sorted(set(trainer) - valid)
    if bad:
        raise ValueError(f"run config: unknown trainer key(s) {bad} (not fields of GC2POConfig)")
    from gc2po.methods import get_method

    method = run.get("method", trainer.get("method", "gc2po"))
    kwargs = {**TRAINER_DEFAULTS, **get_method(method).defaults, **trainer}
    kwargs["method"] = method
    kwargs["seed"] = int(run.get("seed", kwargs.get("seed", 0)))
    kwargs["data_seed"] = kwargs["seed"]
    kwargs["output_dir"] = str(run["output_dir"])
    kwargs.setdefault("metrics_path", str(Path(run["output_dir"]) / "metrics.jsonl"))
    if not torch.cuda.is_available():
        kwargs["use_cpu"] = True
        kwargs["bf16"] = False
    return GC2POConfig(**kwargs)


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


def train(run: dict, log=print) -> Path:
    """Train one run; returns the directory holding the final model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.rewards import REWARDS
    from gc2po.trl_adapter import GC2POTrainer

    args = build_args(run)  # fails on a bad config before any model is loaded
    task = run.get("task", "math")
    records = read_jsonl(run["train_data"])
    if run.get("max_train_examples"):
        records = records[: int(run["max_train_examples"])]
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(run["model"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    model = AutoModelForCausalLM.from_pretrained(run["model"], dtype=dtype)
    trainer = GC2POTrainer(model=model, args=args, train_dataset=build_dataset(records, task),
                           processing_class=tokenizer, reward_funcs=[REWARDS[task]])
    output_dir = Path(args.output_dir)
    resume = bool(run.get("resume")) and any(output_dir.glob("checkpoint-*"))
    log(f"training {args.method} on {len(records)} problems -> {output_dir} (resume={resume})")
    trainer.train(resume_from_checkpoint=True if resume else None)
    final = output_dir / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(final)
    return final
