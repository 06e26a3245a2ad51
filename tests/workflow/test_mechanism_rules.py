"""The mechanism and dose-response rules: planned for testbed configs, a dose response that no
run sweeps refused before any job, and the rules' copy of the measured splits kept equal to the
testbed's."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from gc2po.testbed.mechanism import MEASURE_SPLITS
from gc2po.workflow import testbed_plan
from gc2po.workflow.config_files import load_config
from tests.workflow.slurm_workflow import planned_jobs

ROOT = Path(__file__).resolve().parents[2]


def dry_run_into(workdir, *overlays, extra=()):
    """``snakemake -n --forceall`` of the default config (plus ``overlays``, then ``extra``
    arguments: flags and targets) into ``workdir``."""
    configs = [str(ROOT / "config/config.yaml"), *map(str, overlays)]
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--forceall", "--cores", "2", "-d", str(workdir)]
        + ["-s", str(ROOT / "Snakefile"), "--configfile", *configs, *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_mechanism_tables_read_the_measured_splits_the_config_evaluates():
    config = load_config([ROOT / "config/config.yaml", ROOT / "config/ci.yaml"])
    tables = testbed_plan.mechanism_tables(config, MEASURE_SPLITS)
    assert tables == {
        "mechanism": (["test_id", "test_wrongbet"], False),
        "mechanism_greedy": (["test_id", "test_wrongbet"], True),
    }
    config["evaluate"].update(
        benchmarks=["test_id", "test_rephrase"], greedy_benchmarks=["test_id"]
    )
    assert testbed_plan.mechanism_tables(config, MEASURE_SPLITS) == {
        "mechanism": (["test_id"], False),
        "mechanism_greedy": (["test_id"], True),
    }
    config["mode"] = "benchmark"  # the measures read the testbed's cue: none elsewhere
    assert testbed_plan.mechanism_tables(config, MEASURE_SPLITS) == {}


def test_the_default_plans_the_mechanism_tables(dry_run):
    out = dry_run("--configfile", "config/config.yaml")  # the session's (tests/shared_outputs.py)
    assert out.returncode == 0, out.stderr[-3000:]
    assert re.search(r"^mechanism\s+1$", out.stdout, re.MULTILINE), out.stdout[-3000:]
    assert "rule dose_response:" not in out.stdout  # the default sweeps nothing


def test_a_dose_response_that_no_run_sweeps_fails_before_any_job(tmp_path):
    overlay = tmp_path / "dose.yaml"
    overlay.write_text("report: {dose_response: [{method: gc2po_add, key: lambda_cf}]}\n")
    out = dry_run_into(tmp_path, overlay)
    assert out.returncode != 0
    assert (
        "report.dose_response[0]: no run of 'gc2po_add' sets 'lambda_cf'" in out.stdout + out.stderr
    )


def test_greedy_benchmarks_narrow_the_greedy_evaluations_and_their_tables(tmp_path):
    overlay = tmp_path / "greedy.yaml"
    overlay.write_text("evaluate: {greedy: true, greedy_benchmarks: [test_wrongbet]}\n")
    out = dry_run_into(
        tmp_path,
        overlay,
        extra=(
            "-p",
            "results/testbed/tables/mechanism_greedy.md",
            "results/testbed/tables/table1_greedy.md",
        ),
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    greedy = "results/testbed/eval_greedy/testbed/base/seed0/"
    assert f"{greedy}test_wrongbet.jsonl" in out.stdout
    assert f"{greedy}test_id.jsonl" not in out.stdout  # evaluated greedily only where asked
    bad = tmp_path / "bad.yaml"
    bad.write_text("evaluate: {greedy_benchmarks: [gsm8k]}\n")
    out = dry_run_into(tmp_path, bad)
    assert "evaluate.greedy_benchmarks: ['gsm8k'] are not evaluated" in out.stdout + out.stderr


@pytest.mark.slow
@pytest.mark.timeout(1200)  # trains and evaluates two runs: past 600 s on a loaded machine
def test_a_second_dose_response_renders_its_table_and_figure(ci_local_run, tmp_path):
    """At the ci miniature's scale: the gated control's rho sweep beside the paper's lambda sweep,
    each dose response its own table and figure, the measured marker named in the caption. The
    session's ci run is copied (conftest.py): its data, warm start and lambda_cf run are reused and
    only the rho sweep's runs and the two dose responses run."""
    done, ci = ci_local_run
    assert ci.returncode == 0, ci.stderr[-5000:]
    overlay = tmp_path / "dose.yaml"
    overlay.write_text(
        "sweeps: {lambda_exp: [], lambda_cf: [0.5], cf_signal_rho: [0.3, 1.0]}\n"
        "sweep_methods: [gc2po, grpo_fxp]\n"
        "report:\n"
        "  dose_response:\n"
        "    - {method: gc2po, key: lambda_cf}\n"
        "    - {method: grpo_fxp, key: cf_signal_rho, markers: {R_cf measured: 0.143}}\n"
    )
    work = tmp_path / "wf"
    shutil.copytree(done, work, symlinks=True)
    names = ("dose_response_gc2po_lambda_cf", "dose_response_grpo_fxp_cf_signal_rho")
    kinds = (("tables", "md"), ("tables", "csv"), ("figures", "png"))
    targets = [f"results/ci/{kind}/{name}.{ext}" for name in names for kind, ext in kinds]
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "-d", str(work)]
        + ["-s", str(ROOT / "Snakefile"), "--configfile", str(ROOT / "config/config.yaml")]
        + [str(ROOT / "config/ci.yaml"), str(overlay), "--", *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    # both dose responses made here (the ci run's gc2po one had another marker), from the rho
    # sweep's two new runs
    assert planned_jobs(out.stdout + out.stderr) == {
        "run_config": 2,
        "train": 2,
        "evaluate": 2,
        "dose_response": 2,
    }, out.stderr[-3000:]
    assert all((work / target).exists() for target in targets)
    lambda_cf = (work / "results/ci/tables/dose_response_gc2po_lambda_cf.md").read_text()
    assert "| testbed | 0.5 | GC2PO (paper, lambda_cf = 0.5) |" in lambda_cf
    assert "the paper's lambda_cf" not in lambda_cf  # the ci run's marker, not this overlay's
    gated = (work / "results/ci/tables/dose_response_grpo_fxp_cf_signal_rho.md").read_text()
    assert "### Dose response: Control (oracle): GRPO on f x p against cf_signal_rho" in gated
    for rho in ("0.3", "1"):
        assert f"| testbed | {rho} | Control (oracle): GRPO on f x p (rho = {rho}" in gated, rho
    assert "Marked on the axis: R_cf measured at 0.143." in gated
    rows = pd.read_csv(work / "results/ci/tables/dose_response_grpo_fxp_cf_signal_rho.csv")
    assert sorted(rows.value.dropna().unique()) == [0.3, 1.0]
