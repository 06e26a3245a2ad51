"""A method is one file: a copy of the package and workflow with one new module in
``gc2po/methods/`` trains that method through the workflow (the ci miniature's settings, one
step), and nothing else in the copy changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COPIED = ["gc2po", "workflow", "config", "Snakefile"]  # what the workflow runs from
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")

TOY = '''"""Toy: the sign of the group-centred reward on every token."""

import torch

from gc2po.core.groups import dr_grpo_advantage, group_normalised
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method


@register_method("toy_sign", "Toy: sign of the group-centred outcome reward",
                 display_name="Toy sign", colour="#000000", order=1000)
def toy_sign_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    centred = group_normalised(batch.rewards, batch.row_index, batch.group_size,
                               estimator=dr_grpo_advantage, gather=batch.gather)  # [B]
    advantages = torch.sign(centred)
    return advantages, advantage_metrics(advantages)
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
        methods=["toy_sign"],
        ablation_methods=[],
        sweeps={"lambda_exp": [], "lambda_cf": []},
    )
    overlay["report"].update(
        main_methods=["toy_sign"],
        ablation_methods=[],
        cost_reference="toy_sign",
        comparisons=[],
        dose_response=[],
    )
    return overlay


@pytest.mark.slow
def test_a_new_method_file_trains_through_the_workflow_and_is_the_only_change(tmp_path):
    copy = tmp_path / "repo"
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=IGNORED)
        else:
            shutil.copy2(source, copy / name)
    (copy / "gc2po/methods/toy_sign.py").write_text(TOY)
    overlay = tmp_path / "toy.yaml"
    overlay.write_text(yaml.safe_dump(toy_overlay()))
    work = tmp_path / "wf"
    target = "results/toy/runs/testbed/toy_sign/seed0"  # the toy run's, relative to the work folder
    # the copy's package, not the installed one nor this checkout's (`python -m` puts the working
    # folder first on sys.path)
    env = {**os.environ, "PYTHONPATH": str(copy)}
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        "-s",
        str(copy / "Snakefile"),
        "-d",
        str(work),
        f"{target}/final",
        "--configfile",
        str(copy / "config/config.yaml"),
        str(overlay),
    ]
    out = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-5000:]
    run = work / target
    assert (run / "final/config.json").is_file()
    assert yaml.safe_load((run / "run.yaml").read_text())["method"] == "toy_sign"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert any("advantages/mean" in r and r["step"] == 1 for r in records), records
    before, after = files(ROOT), files(copy)
    changed = sorted(path for path in before.keys() & after.keys() if before[path] != after[path])
    added, removed = sorted(after.keys() - before.keys()), sorted(before.keys() - after.keys())
    assert (added, removed, changed) == (["gc2po/methods/toy_sign.py"], [], [])
