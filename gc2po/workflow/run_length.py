"""How long a training run is, from its plan row (``gc2po.workflow.plan_summary.run_summary``):
the problems of its training set, its optimizer steps and the tokens of a step, read by the budget
(GPU-hours) and the disk estimate (checkpoints written).

- problems: counted in the prepared training set (``resources/<name>/data/<key>.jsonl``), else
  ``datasets.<key>.limit`` (at most that many), else the testbed's ``sizes.train``; capped by
  ``train.max_train_examples``;
- optimizer steps: ``max_steps`` when set, else ``num_train_epochs x ceil(problems / prompts per
  step)`` (one generation batch per optimizer step, as ``train.sequences_per_step`` makes it);
- tokens per step: ``sequences_per_step x (train.max_prompt_tokens + max_completion_length)``,
  every sequence at full length: an upper bound.
"""

from __future__ import annotations

import math
from pathlib import Path

from gc2po.workflow.base_models import base_models
from gc2po.workflow.plan import paths


def training_set_size(config: dict, base: str) -> tuple[int | None, str]:
    """(problems of ``base``'s training set or None, where the count comes from): the prepared
    file, else ``datasets.<key>.limit`` (at most), else the testbed's ``sizes.train``."""
    key = base_models(config)[base]["train_data"]
    prepared = Path(paths(config)[0]) / "data" / f"{key}.jsonl"
    if prepared.is_file():
        with prepared.open() as handle:
            return sum(1 for line in handle if line.strip()), str(prepared)
    limit = ((config.get("datasets") or {}).get(key) or {}).get("limit")
    if limit is not None:
        return int(limit), f"datasets.{key}.limit"
    if key == "train" and config.get("mode") == "testbed":
        return int(config["testbed"]["sizes"]["train"]), "testbed.sizes.train"
    return None, f"no prepared {prepared} and no datasets.{key}.limit"


def optimizer_steps(config: dict, row: dict) -> int | None:
    """Optimizer steps of one run of a ``gc2po.workflow.plan_summary.run_summary`` row, or
    None where its training set's size is not known."""
    args = row["args"]
    if args.max_steps > 0:
        return int(args.max_steps)
    problems, _ = training_set_size(config, row["base"])
    if problems is None:
        return None
    problems = min(problems, config["train"].get("max_train_examples") or problems)
    per_epoch = math.ceil(problems / row["prompts_per_step"])
    return math.ceil(args.num_train_epochs * per_epoch)


def tokens_per_step(config: dict, row: dict) -> int:
    """Every sequence of a step at full length: sequences x (longest prompt + completion)."""
    prompt = int(config["train"].get("max_prompt_tokens", 1024))
    return row["sequences_per_step"] * (prompt + row["args"].max_completion_length)
