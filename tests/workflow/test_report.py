"""The Snakemake report of the ci miniature, opened in headless Chromium as a reader opens it:
the report's navigation shows its groups, and every table (Table 1, generalisation, greedy,
ablation, each comparison, the mechanism tables, the dose-response, the signal audit) and every
figure is an entry of its group whose page, rendered, holds the table. Asked for before the run,
the report is refused in one line naming what to run first.

The report is built from the session's ci run (tests/workflow/conftest.py) once per module."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workflow.slurm_workflow import ROOT, new_workdir

pytestmark = [pytest.mark.slow, pytest.mark.system("chromium")]
CI_CONFIG = ("--configfile", "config/config.yaml", "config/ci.yaml")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=10000",  # let the report's scripts run before the DOM is taken
)
OUT = "results/ci"
# group -> subgroup -> the tables (report entries) a reader finds there
TABLES = {
    "3 Results": {
        "Tables": ["tables/table1.html", "tables/generalization.html", "tables/table1_greedy.html"],
        "Method against method": [
            "report/tables/gc2po_vs_grpo.html",
            "report/tables/grpo_fxp_vs_grpo.html",
        ],
    },
    "4 Mechanism": {
        "Tables": ["report/tables/mechanism.html", "report/tables/mechanism_greedy.html"],
        "Dose response": ["report/tables/dose_response_gc2po_lambda_cf.html"],
    },
    "5 Ablations": {"Tables": ["tables/ablation.html"]},
    "6 Reward audit": {
        "Tables": ["report/tables/signal_audit.html", "report/tables/signal_audit_trained.html"]
    },
}
GROUPS = ["1 Setup", "2 Training", "3 Results", "4 Mechanism", "5 Ablations", "6 Reward audit"]


def rendered_dom(page: Path, profile: Path) -> str:
    """The DOM of ``page`` after Chromium ran its scripts (a fresh profile each time)."""
    out = subprocess.run(
        ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0 and out.stdout.strip(), out.stderr[-2000:]
    return out.stdout


def script_value(dom: str, name: str):
    """The JSON the report assigns to ``var <name>`` in its ``<script id="<name>">``."""
    found = re.search(rf'<script id="{name}">\s*var {name} = (.*?);\s*</script>', dom, re.S)
    assert found, f"the rendered report has no {name} script"
    return json.loads(found.group(1))


def snakemake_report(work: Path, report: Path) -> subprocess.CompletedProcess:
    """``snakemake --report`` run from ``work`` as a user runs it there (the configs relative)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(ROOT / "Snakefile"),
            *CI_CONFIG,
            "--report",
            str(report),
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def report_dom(ci_local_run, tmp_path_factory):
    """(work folder, the rendered DOM of the ci miniature's report, scratch folder)."""
    work, out = ci_local_run
    assert out.returncode == 0, out.stderr[-5000:]
    scratch = tmp_path_factory.mktemp("report")
    made = snakemake_report(work, scratch / "report.html")
    assert made.returncode == 0, made.stderr[-3000:]
    return work, rendered_dom(scratch / "report.html", scratch / "profile"), scratch


def test_every_table_and_figure_is_in_its_group_of_the_rendered_report(report_dom):
    work, dom, scratch = report_dom
    navigation = re.sub(r"<script.*?</script>", "", dom, flags=re.S)
    for group in GROUPS:  # the navigation the report's scripts drew
        assert f">{group}<" in navigation, group
    categories, results = script_value(dom, "categories"), script_value(dom, "results")
    for group, subgroups in TABLES.items():
        for subgroup, tables in subgroups.items():
            for table in tables:
                assert f"{OUT}/{table}" in categories[group][subgroup], (group, subgroup, table)
    shown = {
        path for group in categories.values() for entries in group.values() for path in entries
    }
    # every figure and every table the run wrote is an entry (none left out)
    written = [
        p.relative_to(work).as_posix() for p in sorted((work / OUT / "figures").glob("*.png"))
    ]
    written += [f"{OUT}/{t}" for s in TABLES.values() for ts in s.values() for t in ts]
    assert sorted(set(written) - shown) == [], sorted(set(written) - shown)
    assert f"{OUT}/report/setup.html" in categories["1 Setup"]["Other"]

    # each table's page as the report's frame shows it (its data URI), rendered
    for subgroups in TABLES.values():
        for tables in subgroups.values():
            for table in tables:
                entry = results[f"{OUT}/{table}"]
                assert entry["mime_type"] == "text/html" and entry["caption"].strip(), table
                page = scratch / f"{Path(table).stem}.html"
                page.write_bytes(base64.b64decode(entry["data_uri"].split("base64,", 1)[1]))
                rendered = rendered_dom(page, scratch / f"profile_{page.stem}")
                rows = re.findall(r"<tr[ >]", rendered)
                assert "<table" in rendered and len(rows) >= 2, (table, rendered[:2000])
                if "table1" in table or "generalization" in table:
                    assert "GRPO" in rendered and "GC2PO" in rendered, table


def test_the_report_before_the_run_is_refused_in_one_line(report_dom, tmp_path):
    work, _, _ = report_dom
    empty = new_workdir(tmp_path / "wf")
    # the memoised config check of the same config (no TRL import): only the report is new here
    shutil.copytree(work / ".snakemake" / "gc2po", empty / ".snakemake" / "gc2po")
    refused = snakemake_report(empty, tmp_path / "report.html")
    assert refused.returncode == 1
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    ours = [line for line in lines if line.startswith("snakemake --report:")]
    assert len(ours) == 1, refused.stderr
    assert "do not exist yet (the first: results/ci/" in ours[0], ours[0]
    assert ours[0].endswith(
        "run the workflow first: snakemake --cores 2 --configfile config/config.yaml config/ci.yaml"
    ), ours[0]
    assert not [line for line in lines if "Missing metadata" in line or "WARNING" in line], lines
    assert "marked for report but does not exist" not in refused.stderr
    assert not (tmp_path / "report.html").exists()
