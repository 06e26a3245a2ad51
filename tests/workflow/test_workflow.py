"""The Snakemake workflow: lint, dry runs, a bad config, and a miniature end-to-end run."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gc2po.methods import METHODS
from gc2po.reporting.docs_check import check_page, results_machine

ROOT = Path(__file__).resolve().parents[2]


def snakemake(*args, cwd=ROOT, timeout=900):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_lint_is_clean():
    out = snakemake("--lint")
    assert out.returncode == 0, out.stdout + out.stderr


def test_dry_run_of_default_config_plans_every_stage(dry_run):
    out = dry_run()  # snakemake -n --forceall: plan every job even where results exist
    assert out.returncode == 0, out.stderr
    for rule in (
        "testbed_data",
        "warm_start",
        "train",
        "evaluate",
        "table",
        "comparison",
        "report_table",
        "figures",
        "length_figure",
        "mechanism",
    ):
        assert f"rule {rule}:" in out.stdout, rule
    assert "rule evaluate_greedy:" not in out.stdout  # the default: the training temperature only
    assert "rule audit:" not in out.stdout  # the audit is config/testbed_full.yaml's


def test_dry_run_of_the_full_testbed_table_plans_the_audit_and_one_table_alone(dry_run):
    out = dry_run("--configfile", "config/config.yaml", "config/testbed_full.yaml")
    assert out.returncode == 0, out.stderr
    for rule in (
        "train",
        "evaluate",
        "evaluate_greedy",
        "table",
        "audit",
        "audit_figure",
        "signal_audit_table",
    ):
        assert f"rule {rule}:" in out.stdout, rule
    # the target before --configfile, which takes every argument after it
    one = snakemake(
        "-n",
        "--forceall",
        "--cores",
        "2",
        "results/testbed_full/tables/table1.md",
        "--configfile",
        "config/config.yaml",
        "config/testbed_full.yaml",
    )
    assert one.returncode == 0, one.stderr
    assert (
        "rule audit:" not in one.stdout
        and "rule table:" in one.stdout
        and "rule figures:" not in one.stdout
    )


@pytest.mark.parametrize(
    "overlay, rules",
    [
        ("config/paper.yaml", ("benchmark_data", "train", "evaluate", "table", "figures")),
        (
            "config/smollm2.yaml",
            ("benchmark_data", "gguf_model", "train", "evaluate", "table", "figures"),
        ),
    ],
)
def test_dry_run_of_overlay_configs_plans_the_dag(overlay, rules, dry_run):
    out = dry_run("--configfile", overlay)
    assert out.returncode == 0, out.stderr[-3000:]
    for rule in rules:
        assert f"rule {rule}:" in out.stdout, rule
    if overlay.endswith("paper.yaml"):
        # 3 base models x 8 Table 1 methods x 3 seeds
        # + (3 ablations + 9 lambda sweeps) x 1 base x 3 seeds
        assert re.search(r"^train\s+108$", out.stdout, re.MULTILINE), out.stdout[-2000:]


def test_bad_config_value_fails_before_any_job(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("methods: [gc2po, ppo]\n")
    out = snakemake("-n", "--cores", "1", "--configfile", "config/config.yaml", str(bad))
    assert out.returncode != 0
    assert out.stderr.strip() == (
        f"config error: config/config.yaml {bad}: methods[1]: must be one of "
        f"{sorted(METHODS)}, got 'ppo'"
    )


@pytest.mark.slow
def test_miniature_default_runs_end_to_end(ci_local_run):
    work, out = ci_local_run  # `snakemake --cores 2` with the ci overlay (conftest.py)
    assert out.returncode == 0, out.stderr[-5000:]
    tables = work / "results" / "ci" / "tables"
    table1 = (tables / "table1.md").read_text()
    assert (
        "| testbed (base) |" in table1
        and "| + GC2PO (paper) |" in table1
        and "| + GRPO |" in table1
    )
    assert "| + GC2PO (corrected, additive) |" in table1  # a departure from the paper, labelled so
    signals = (tables / "signal_audit.md").read_text()  # every audited model's episode signals
    assert "| Base model | 0 | R_cf at last_content |" in signals
    assert "| GC2PO (paper) | end | noisy oracle, rho = 0.3 (check) |" in signals
    # the paper's run's own signal (R_cf at episode_end) on the base, at step 1 and at the end
    trained = (tables / "signal_audit_trained.md").read_text().splitlines()
    assert [line.split(" | ")[2] for line in trained if line.startswith("| GC2PO (paper) |")] == [
        "base",
        "step 1",
        "end",
    ]
    assert all(
        "| R_cf at episode_end |" in line for line in trained if line.startswith("| GC2PO (paper)")
    )
    assert "| + Control (oracle): GRPO on f x p |" in table1  # the positive control, labelled so
    assert "| Longer chains | Wrong bet | Average |" in table1  # the wrong-bet split, evaluated
    # every split's chance level, and the two splits no reward on the train split can teach
    assert "chance level (a question-blind guesser drawing from the train answers): " in table1
    assert "not learnable from the train split: Rephrased, Distractors, Longer chains." in table1
    assert (
        "Evaluation protocol: n = 1 sample per problem, temperature 0.6, top-p 0.95, at most 16 "
        "new tokens" in table1
    )
    csv = (tables / "table1.csv").read_text().splitlines()
    assert csv[0].startswith(
        "block,model,benchmark,mean,ci_low,ci_high,diff,diff_ci_low,diff_ci_high"
    )
    assert all(
        (tables / f"{t}.{ext}").exists()
        for t in ("table1", "generalization", "ablation")
        for ext in ("tex", "html")
    )
    assert (
        "| testbed | Test (ID) |" in (tables / "gc2po_vs_grpo.md").read_text()
    )  # report.comparisons
    assert "Chance level" in (tables / "grpo_fxp_vs_grpo.md").read_text()
    family = (tables / "family_controls.md").read_text()  # report.families, Holm over 2 runs
    assert "### controls: each run - GRPO on Wrong bet, pass@1 (%)" in family
    assert "| Holm p (2 runs) |" in family and "Exploratory" in family
    # its candidate rule over the mechanism table: one seed gives no interval, so none passes
    candidates = (tables / "candidates_controls.md").read_text()
    assert "| 2. copies no more |" in candidates and "No run passed." in candidates
    # the floor-bind share of the additive run, from its metrics
    training_signals = (tables / "training_signals.md").read_text()
    assert "| testbed | GC2PO (corrected, additive) | 100.0 |" in training_signals
    # the mechanism measures, for the base model and every run (sweeps included)
    for name in ("mechanism", "mechanism_greedy"):
        mechanism = (tables / f"{name}.md").read_text()
        assert "| Model | Test (ID): process validity | Test (ID): copy share |" in mechanism
        assert "| + GC2PO (paper, lambda_cf = 0.5) |" in mechanism
        assert "| + Control (oracle): GRPO on f x p |" in mechanism
    dose = (tables / "dose_response_gc2po_lambda_cf.md").read_text()
    assert "| testbed | 0.5 | GC2PO (paper, lambda_cf = 0.5) |" in dose
    assert (work / "results" / "ci" / "figures" / "dose_response_gc2po_lambda_cf.png").exists()
    wrongbet = json.loads(
        (
            work
            / "results"
            / "ci"
            / "eval"
            / "testbed"
            / "base"
            / "seed0"
            / "test_wrongbet.jsonl.summary.json"
        ).read_text()
    )
    assert 0 < wrongbet["chance_level"] < 1 and wrongbet["reachable"] is True
    curve = (
        (work / "results" / "ci" / "curves" / "testbed" / "gc2po" / "seed0.csv")
        .read_text()
        .splitlines()
    )
    assert (
        curve[0] == "step,benchmark,accuracy,problems,samples,model" and len(curve) == 1 + 2 * 2
    )  # steps 0, 1
    for name in (
        "grad_norm",
        "sampling_ratio",
        "training_cost_testbed",
        "budget_curves",
        "token_usage",
        "lambda_ablation",
        "reward_audit",
        "learning_curves",
        "length_episodes",
    ):
        assert (work / "results" / "ci" / "figures" / f"{name}.png").stat().st_size > 1000
        assert (work / "results" / "ci" / "figures" / f"{name}.pdf").exists()
    summary = json.loads(
        (
            work
            / "results"
            / "ci"
            / "eval"
            / "testbed"
            / "grpo"
            / "seed0"
            / "test_id.jsonl.summary.json"
        ).read_text()
    )
    assert (
        summary["key"] == {"base": "testbed", "run": "grpo", "seed": 0}
        and len(summary["data"]["sha256"]) == 64
    )
    # the machine that computed it (the tables above never read it); the setup page lists it
    capability = summary["machine"]["torch_cpu_capability"]
    setup = (work / "results" / "ci" / "report" / "setup.html").read_text()
    assert "<h3>Machines</h3>" in setup and f"<td>{capability}</td>" in setup
    # the report opens on the run's description and holds the tables and the setup page
    report = snakemake(
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(work),
        "--configfile",
        "config/config.yaml",
        "config/ci.yaml",
        "--report",
        str(work / "report.html"),
    )
    assert report.returncode == 0, report.stderr[-3000:]
    html = (work / "report.html").read_text()
    assert "GC2PO reproduction: ci" in html and "Seeds: 0" in html
    for entry in (
        "tables/table1.html",
        "tables/ablation.html",
        "report/setup.html",
        "figures/training_cost_testbed.png",
        "figures/family_controls.png",
        "figures/mechanism.png",
        "figures/rulegraph.svg",
    ):
        assert entry in html, entry
    rulegraph = json.loads(re.search(r"var rulegraph_spec = (.*);", html).group(1))
    nodes = next(data["values"] for data in rulegraph["data"] if data["name"] == "node-data")
    drawn = [node["rule"] for node in nodes]
    assert len(drawn) == len(set(drawn)) and {"evaluate", "audit", "train"} <= set(drawn), (
        drawn
    )  # once each
    # a rerun has nothing to do
    again = snakemake(
        "-n",
        "--cores",
        "2",
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(work),
        "--configfile",
        "config/config.yaml",
        "config/ci.yaml",
    )
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.slow
def test_a_docs_table_bound_to_a_miniature_output_is_checked_row_by_row(ci_local_run, tmp_path):
    """The docs checker on real workflow output: a page that pastes the miniature's Table 1 and
    names its file passes; one changed cell fails, naming the row."""
    work, out = ci_local_run
    assert out.returncode == 0, out.stderr[-5000:]
    produced = (work / "results" / "ci" / "tables" / "table1.md").read_text().splitlines()
    rows = [line for line in produced if line.startswith("|")]
    machine = results_machine(work / "results" / "ci")
    assert machine is not None  # the summaries carry their machine's fingerprint

    def page(table_rows):
        path = tmp_path / "page.md"
        path.write_text(
            f"<!-- machine: {machine} -->\n\nFrom `results/ci/tables/table1.md`:\n\n"
            + "\n".join(table_rows)
            + "\n"
        )
        return path

    found = check_page(page(rows), work)
    assert (len(found.tables), found.differences, found.missing, found.notes) == (1, [], [], [])
    edited = rows[:-1] + [rows[-1].rsplit("|", 2)[0] + "| 99.9 |"]
    differences = check_page(page(edited), work).differences
    assert len(differences) == 1 and f"row {len(rows) - 1} is" in differences[0]


def readme_docs_check() -> list[str]:
    """The docs_check command of the README's "After the run" block, as words."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("**After the run**", 1)[1].split("\n#", 1)[0]
    return shlex.split(re.search(r"`(python -m gc2po\.reporting\.docs_check [^`]+)`", block)[1])


@pytest.mark.slow
def test_the_readmes_docs_check_after_the_ci_run(ci_local_run, tmp_path):
    """The README's command checks the page of the default's tables (the page whose tables are
    bound to the default config's results). Run after the ci miniature, whose results are under
    another name, it reports each of them MISSING with the config that writes it, never a
    difference; with the miniature's folder standing in for the default's, on another machine than
    the page's (compared by shape) Table 1 and the control's comparison have the page's shape (same
    methods and splits) and the mechanism table differs only because the miniature also trains
    ablations and sweeps; on the page's machine (compared value for value) every table differs."""
    from gc2po.reporting.after_run import expected_page
    from gc2po.reporting.docs_check import bound_tables
    from gc2po.workflow.config_files import load_config

    work, out = ci_local_run
    assert out.returncode == 0, out.stderr[-5000:]
    command = readme_docs_check()
    assert command[:3] == ["python", "-m", "gc2po.reporting.docs_check"] and len(command) == 4
    name = load_config(["config/config.yaml"])["name"]
    page = ROOT / command[3]
    assert page == expected_page(name, ROOT / "docs")
    bound = [t.results_file for t in bound_tables(page.read_text())]
    assert len(bound) >= 3 and all(f.startswith(f"results/{name}/") for f in bound)

    def docs_check(root: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, *command[1:], "--root", str(root)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )

    after_ci = docs_check(work)
    assert after_ci.returncode == 2, after_ci.stdout + after_ci.stderr
    missing = [line for line in after_ci.stdout.splitlines() if line.startswith("MISSING: ")]
    assert len(missing) == len(bound) and "DIFFERS" not in after_ci.stdout
    for line, results_file in zip(missing, bound):
        assert f": {results_file}: not under {work}; config/config.yaml writes it: " in line
        assert line.endswith("snakemake --cores 2"), line
    assert f"{command[3]}: {len(bound)} bound tables, 0 differ, {len(bound)} missing" in (
        after_ci.stdout
    )

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / name).symlink_to(work / "results" / "ci")
    stand_in = docs_check(tmp_path)
    differs = [line for line in stand_in.stdout.splitlines() if line.startswith("DIFFERS")]
    assert "MISSING" not in stand_in.stdout
    if "shape only" in stand_in.stdout:  # the page's tables came from another machine
        assert [line.split(": ")[2] for line in differs] == [f"results/{name}/tables/mechanism.md"]
    else:  # this machine made the page's tables: the miniature's numbers differ in every one
        assert [line.split(": ")[2] for line in differs] == bound
    mechanism = (work / "results" / "ci" / "tables" / "mechanism.md").read_text()
    assert "| + GC2PO (paper, lambda_cf = 0.5) |" in mechanism  # the rows the page has not


@pytest.mark.slow
def test_the_run_says_where_its_results_are_and_draws_its_figures(ci_local_run):
    """The last lines of the ci run, its rule graph (the config's, as a fresh `snakemake
    --rulegraph` draws it) and the figures drawn from its family and mechanism tables."""
    from gc2po.reporting import rulegraph

    work, out = ci_local_run
    assert out.returncode == 0, out.stderr[-5000:]
    printed = out.stdout + out.stderr
    assert "gc2po: the results of config 'ci' are in results/ci/ (tables/, figures/)" in printed
    assert "results/ci/tables/table1.md:\n### " in printed and "| testbed (base) |" in printed
    assert "No page of " in printed  # no docs page shows the miniature's tables
    figures = work / "results" / "ci" / "figures"
    for name in ("family_controls", "mechanism", "mechanism_greedy"):
        assert (figures / f"{name}.png").stat().st_size > 10_000, name
    fresh = rulegraph.snakemake_rulegraph(
        ROOT / "Snakefile", work, ["config/config.yaml", "config/ci.yaml"]
    )
    assert (figures / "rulegraph.dot").read_text() == rulegraph.to_dot(rulegraph.parse_dot(fresh))
    drawn = rulegraph.read_dot((figures / "rulegraph.dot").read_text())
    assert (figures / "rulegraph.svg").read_text() == rulegraph.to_svg(drawn)
    assert {"family_figure", "mechanism_figure", "audit", "train"} <= set(drawn.rules)
