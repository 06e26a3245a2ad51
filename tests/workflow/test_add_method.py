"""The add-a-method overlay (config/examples/add_method.yaml) on a copy of the package holding the
documented example method (gc2po/methods/sign.py): the method trains through the workflow and
its row is in Table 1; the same overlay without it in report.main_methods is refused by the
config check before any job, naming report.main_methods.

The training run reuses the ci miniature of the session (tests/workflow/conftest.py): its
results are copied, the overlay is layered on the ci config, and only what the new method adds
(its training, its evaluations, the tables that show it) runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.workflow.package_copy import ROOT, copy_with_method, run_in_copy, snakemake_command

OVERLAY = ROOT / "config" / "examples" / "add_method.yaml"

# the example of "Add a method", as a user writes it
SIGN = '''"""Sign: the sign of the group-centred outcome reward on every token."""

import torch

from gc2po.core.groups import dr_grpo_advantage, group_normalised
from gc2po.methods.base import RolloutBatch, advantage_metrics, register_method


@register_method(
    "sign",
    "Sign: the sign of the group-centred outcome reward",
    display_name="Sign",
    colour="#000000",
    order=100,
)
def sign_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    centred = group_normalised(
        batch.rewards,
        batch.row_index,
        batch.group_size,
        estimator=dr_grpo_advantage,
        gather=batch.gather,
    )  # [B]
    advantages = torch.sign(centred)  # [B] per completion, or [B, T] per token
    return advantages, advantage_metrics(advantages)
'''


@pytest.fixture(scope="module")
def package_with_sign(tmp_path_factory) -> Path:
    """A copy of the package, workflow and configs with gc2po/methods/sign.py added."""
    return copy_with_method(tmp_path_factory.mktemp("add_method") / "repo", "sign", SIGN)


def snakemake(copy: Path, work: Path, *args: str, overlay: Path) -> subprocess.CompletedProcess:
    """The copy's workflow and package, the ci miniature with ``overlay`` layered on it."""
    configs = [copy / "config/config.yaml", copy / "config/ci.yaml", overlay]
    return run_in_copy(copy, snakemake_command(copy, work, *args, configfiles=configs))


@pytest.mark.slow
def test_the_add_method_overlay_trains_the_method_into_table1(
    ci_local_run, package_with_sign, tmp_path
):
    done, out = ci_local_run
    assert out.returncode == 0, out.stderr[-5000:]
    work = tmp_path / "wf"  # the session's ci results, copied: the overlay adds to them
    shutil.copytree(done, work, symlinks=True)
    table = "results/ci/tables/table1.md"
    ran = snakemake(package_with_sign, work, table, overlay=OVERLAY)
    assert ran.returncode == 0, ran.stderr[-5000:]
    assert (work / "results/ci/runs/testbed/sign/seed0/final").is_dir()
    # the rows' first cells: the base model, then "+ <display name>" for each method trained on it
    models = [
        line.split("|")[1].strip()
        for line in (work / table).read_text().splitlines()
        if line.startswith("| ")
    ]
    assert "+ Sign" in models and "+ GRPO" in models, models


@pytest.mark.slow
def test_the_overlay_without_report_main_methods_is_refused_before_any_job(
    package_with_sign, tmp_path
):
    overlay = yaml.safe_load(OVERLAY.read_text())
    overlay["report"]["main_methods"].remove("sign")
    bad = tmp_path / "add_method_unshown.yaml"
    bad.write_text(yaml.safe_dump(overlay))
    work = tmp_path / "wf"
    work.mkdir()
    refused = snakemake(package_with_sign, work, overlay=bad)
    assert refused.returncode != 0
    # named by the file that sets the key (the overlay's `methods`) and the key
    message = (
        f"config error: {bad}: methods: 'sign' is trained but no table shows it: add it to "
        "report.main_methods"
    )
    assert message in refused.stderr, refused.stderr[-3000:]
    assert "Building DAG" not in refused.stdout + refused.stderr  # the check, not a job, refused
    assert not (work / "results").exists() and not (work / "resources").exists()
