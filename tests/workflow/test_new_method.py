"""A method is one file: a copy of the package and workflow with one new module in
``gc2po/methods/`` (a method with a setting of its own and extra generation through the trainer's
services) trains that method through the workflow (the ci miniature's settings), its setting given
in the workflow config and refused there, naming the key, when out of range; nothing else in the
copy changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.workflow.package_copy import (
    COPIED,
    ROOT,
    copy_with_method,
    run_in_copy,
    snakemake_command,
)

TOY = '''"""Toy retry: each prompt is tried again (extra generation through the trainer's services)
and a row's reward gains ``bonus`` times the mean outcome of its prompt's retries; GRPO's
estimator on that."""

from dataclasses import dataclass

import torch

from gc2po.core.groups import group_normalised
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method


@dataclass(frozen=True)
class ToySettings:
    bonus: float = 0.5  # weight of the retries' mean outcome
    retries: int = 1  # extra samples per prompt
    retry_tokens: int = 8  # tokens per retry

    def check(self) -> None:
        if self.retries < 1:
            raise ValueError(f"retries must be >= 1, got {self.retries!r}")


@register_method("toy_retry", "Toy: outcome plus a bonus for the prompt's retries",
                 display_name="Toy retry", colour="#000000", order=1000, settings=ToySettings)
def toy_retry_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    settings, services = config.method_settings, batch.services
    rows = list(range(batch.completion_mask.shape[0]))
    n = settings.retries
    samples = services.continuations([services.prompt_ids(r) for r in rows], n,
                                     settings.retry_tokens)
    texts = [services.tokenizer.decode(s, skip_special_tokens=True) for s in samples]
    retried = services.outcome([r for r in rows for _ in range(n)], texts).view(-1, n).mean(-1)
    rewards = batch.rewards + settings.bonus * retried.to(batch.rewards.device)
    advantages = group_normalised(rewards, batch.row_index, batch.group_size, gather=batch.gather)
    metrics = advantage_metrics(advantages)
    metrics["toy/retries"] = float(len(samples))
    return advantages, metrics
'''


def files(root: Path) -> dict[str, bytes]:
    """Relative path -> content of every file under ``COPIED`` (bytecode caches left out)."""
    found = {}
    for name in COPIED:
        top = root / name
        for path in [top] if top.is_file() else top.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found


def toy_overlay() -> dict:
    """The ci miniature (config/ci.yaml) training the toy method alone: no ablations, sweeps,
    learning curve, audit, comparison or dose response, which name other methods."""
    overlay = yaml.safe_load((ROOT / "config/ci.yaml").read_text())
    overlay.pop("audit")
    overlay["evaluate"].pop("learning_curve")
    overlay.update(
        name="toy",
        methods=["toy_retry"],
        ablation_methods=[],
        sweeps={"lambda_exp": [], "lambda_cf": []},
    )
    overlay["train"].setdefault("per_method", {})["toy_retry"] = {
        "method_args": {"bonus": 0.25, "retries": 2}
    }
    overlay["report"].update(
        main_methods=["toy_retry"],
        ablation_methods=[],
        cost_reference="toy_retry",
        comparisons=[],
        families=[],
        dose_response=[],
    )
    return overlay


@pytest.mark.slow
def test_a_new_method_file_trains_through_the_workflow_and_is_the_only_change(tmp_path):
    copy = copy_with_method(tmp_path / "repo", "toy_retry", TOY)
    overlay = tmp_path / "toy.yaml"
    overlay.write_text(yaml.safe_dump(toy_overlay()))
    work = tmp_path / "wf"
    target = (
        "results/toy/runs/testbed/toy_retry/seed0"  # the toy run's, relative to the work folder
    )
    command = snakemake_command(
        copy, work, f"{target}/final", configfiles=[copy / "config/config.yaml", overlay]
    )
    out = run_in_copy(copy, command, timeout=600)
    assert out.returncode == 0, out.stderr[-5000:]
    run = work / target
    assert (run / "final/config.json").is_file()
    run_config = yaml.safe_load((run / "run.yaml").read_text())
    assert run_config["method"] == "toy_retry"
    assert run_config["trainer"]["method_args"] == {"bonus": 0.25, "retries": 2}
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert any("advantages/mean" in r and r["step"] == 1 for r in records), records
    # 2 retries for each of the step's completions, generated through the services
    rows = [r["toy/retries"] for r in records if "toy/retries" in r]
    assert rows and all(r > 0 and r % 2 == 0 for r in rows), rows
    bad = yaml.safe_load(overlay.read_text())
    bad["train"]["per_method"]["toy_retry"]["method_args"]["retries"] = 0
    overlay.write_text(yaml.safe_dump(bad))
    refused = run_in_copy(copy, [*command, "--dry-run"], timeout=600)
    assert refused.returncode != 0
    assert "method_args.retries must be >= 1, got 0" in refused.stderr, refused.stderr[-3000:]
    before, after = files(ROOT), files(copy)
    changed = sorted(path for path in before.keys() & after.keys() if before[path] != after[path])
    added, removed = sorted(after.keys() - before.keys()), sorted(before.keys() - after.keys())
    assert (added, removed, changed) == (["gc2po/methods/toy_retry.py"], [], [])
