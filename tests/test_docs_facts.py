"""Facts in the docs that change with the code are checked against the code: the configs' base
models, Table 1 methods and job counts (docs/workflow.md, against the configs and dry runs), the
method table (docs/method.md, against the registry), the memory table (docs/training.md, against
``gc2po plan``'s rows), the command table (docs/cli.md, against ``gc2po --help``), the default's
recipe (docs/testbed.md, against the config), and the README's size, its two commands and its
citation (against CITATION.cff)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gc2po.methods import METHODS
from gc2po.workflow.base_models import base_models
from gc2po.workflow.config_files import load_config

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
COMPLETE_CONFIGS = ("config/config.yaml", "config/paper.yaml", "config/smollm2.yaml")  # given alone


def page(name: str) -> str:
    return (DOCS / name).read_text()


def table_after(text: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table after ``heading``, header and rule
    left out."""
    section = f"\n{text}".split(f"\n{heading}\n", 1)[1]
    lines = section[section.index("\n|") + 1 :].splitlines()
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[2:]


def backticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


# a third file given on top of an overlay (it adds jobs to that overlay's run): its overlay
LAYERED_ON = {
    "config/testbed_warm32_why_audit.yaml": "config/testbed_warm32_why.yaml",
    "config/testbed_warm32_seed1_why_audit.yaml": "config/testbed_warm32_seed1_why.yaml",
    "config/form_matched_seed1_reasoning.yaml": "config/form_matched_seed1.yaml",
}


def config_files(config: str) -> list[str]:
    """How the docs say a config is given: complete ones alone, overlays after the default, a
    third file after the default and its overlay."""
    if config in COMPLETE_CONFIGS:
        return [config]
    if config in LAYERED_ON:
        return ["config/config.yaml", LAYERED_ON[config], config]
    return ["config/config.yaml", config]


def config_rows() -> list[list[str]]:
    return table_after(page("workflow.md"), "## The configs")


def test_the_config_table_names_every_config():
    listed = {backticked(row[0])[0] for row in config_rows()}
    present = {str(p.relative_to(ROOT)) for p in (ROOT / "config").glob("*.yaml")}
    assert listed == present


@pytest.mark.parametrize("row", config_rows(), ids=lambda row: backticked(row[0])[0])
def test_a_configs_base_models_and_table_1_methods_are_the_configs(row):
    config = load_config(config_files(backticked(row[0])[0]))
    assert [name.strip() for name in row[2].split(",")] == list(base_models(config))
    assert backticked(row[3]) == config["report"]["main_methods"]


def dry_run_jobs(dry_run, files: list[str]) -> int:
    """The jobs ``snakemake -n --forceall`` plans (the session's dry run,
    tests/shared_outputs.py)."""
    out = dry_run("--configfile", *files)
    assert out.returncode == 0, out.stderr[-3000:]
    return int(re.search(r"^total\s+(\d+)$", out.stdout, re.MULTILINE)[1])


@pytest.mark.slow
@pytest.mark.parametrize("row", config_rows(), ids=lambda row: backticked(row[0])[0])
def test_a_configs_job_count_is_its_dry_runs(row, dry_run):
    config = backticked(row[0])[0]
    jobs = dry_run_jobs(dry_run, config_files(config))
    assert int(row[4]) == jobs, f"docs/workflow.md: {row[4]} jobs for {config}, a dry run: {jobs}"


def test_the_method_table_is_the_registry():
    rows = table_after(page("method.md"), "## Methods and how faithful they are")
    listed = [name for row in rows for name in backticked(row[0])]
    assert len(listed) == len(set(listed)), "a method listed twice"
    assert set(listed) == set(METHODS)


@pytest.mark.slow
def test_the_memory_table_is_the_plans():
    """Each row: base models of config/paper.yaml, GRPO's peak (generation / scoring / training)
    and the full-length sequences vLLM's KV cache holds, as ``gc2po plan`` prints them."""
    from gc2po.workflow.plan_summary import memory_plan

    config = load_config(["config/paper.yaml"])
    plan = memory_plan(config)
    grpo = plan[plan["run"] == "grpo"].set_index("base")
    rows = table_after(page("training.md"), "## The memory plan")
    listed = [name.strip() for row in rows for name in row[0].split(",")]
    assert sorted(listed) == sorted(base_models(config))
    for row in rows:
        for base in (name.strip() for name in row[0].split(",")):
            job = grpo.loc[base]
            peaks = [job[k] for k in ("peak_gib", "generation_peak_gib", "scoring_peak_gib")]
            expected = f"{peaks[0]} ({peaks[1]} / {peaks[2]} / {job['training_peak_gib']})"
            assert row[1] == expected, (base, row[1], expected)
            assert int(row[2]) == job["kv_cache_sequences"], base


def test_the_command_table_lists_every_subcommand():
    out = subprocess.run(
        [sys.executable, "-m", "gc2po.cli", "--help"], capture_output=True, text=True, cwd=ROOT
    )
    subcommands = re.search(r"\{([\w,-]+)\}", out.stdout)[1].split(",")
    assert "train" in subcommands and "eval" in subcommands
    rows = table_after(page("cli.md"), "# Command line")
    documented = {backticked(row[0])[0].split()[1] for row in rows}
    assert set(subcommands) <= documented, set(subcommands) - documented


def test_the_readme_is_short_and_starts_with_the_two_commands():
    """Two commands on a fresh machine: a venv with the user's install in it, then the default,
    labelled as the CPU testbed; the tests (what .ci/run runs) in the same venv."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 12 * 1024
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split("#")[0].strip() for line in first_block] == [
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && snakemake --cores 2",
        ". .venv/bin/activate && pip install -e '.[dev]' && python3 -m pytest -q",
    ]
    assert "the CPU testbed, not the paper's GPU runs" in first_block[0]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m pytest -q" in ci  # the README's test command is the one CI runs


def after_the_run() -> str:
    """The README's "After the run" block: from its bold lead to the next heading."""
    readme = (ROOT / "README.md").read_text()
    return readme.split("**After the run**", 1)[1].split("\n#", 1)[0]


def test_the_readme_says_where_the_defaults_results_land_and_which_page_holds_them():
    """The results folder is the default config's, the page is the one whose tables are bound to
    it, the excerpt is the start of that page's Table 1, and the command checks that page."""
    from gc2po.reporting.after_run import expected_page
    from gc2po.reporting.docs_check import bound_tables, table_rows

    block = " ".join(after_the_run().split())
    name = load_config(["config/config.yaml"])["name"]
    assert f"`results/{name}/tables/`" in block and f"`results/{name}/figures/`" in block
    page = expected_page(name, ROOT / "docs")
    shown = page.relative_to(ROOT).as_posix()
    assert f"`python -m gc2po.reporting.docs_check {shown}`" in block
    assert f"]({shown}#what-the-default-measured)" in block
    table1 = next(
        t
        for t in bound_tables(page.read_text())
        if t.results_file == f"results/{name}/tables/table1.md"
    )
    excerpt = [line for line in after_the_run().splitlines() if line.startswith("|")]
    rows = table_rows(excerpt)
    assert len(rows) >= 2 and rows == table1.rows[: len(rows)], (rows, table1.rows[:2])


def test_the_readme_cites_what_citation_cff_cites():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    paper = citation["preferred-citation"]
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"title = {{{paper['title']}}}" in readme
    assert f"year = {{{paper['year']}}}" in readme
    for author in paper["authors"]:
        assert f"{author['family-names']}, {author['given-names']}" in readme
    assert citation["license"] == "Apache-2.0"
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()
    assert "Apache License" in (ROOT / "LICENSE").read_text().splitlines()[1]


def test_the_defaults_recipe_is_the_configs():
    """docs/testbed.md, "What the default runs": seeds, steps, batch, learning rate, KL."""
    from gc2po.training.run_config import TRAINER_DEFAULTS

    text = " ".join(page("testbed.md").split("## What the default runs", 1)[1].split())
    recipe = re.search(
        r"\((\d+) seeds each, (\d+) steps of (\d+) prompts x (\d+) completions, "
        r"lr ([\d.e-]+), KL coefficient ([\d.]+)\)",
        text,
    )
    config = load_config(["config/config.yaml"])
    trainer = {**TRAINER_DEFAULTS, **config["train"]["trainer"]}
    k = trainer["num_generations"]
    assert int(recipe[1]) == len(config["seeds"])
    assert int(recipe[2]) == trainer["max_steps"]
    assert (int(recipe[3]), int(recipe[4])) == (trainer["per_device_train_batch_size"] // k, k)
    assert float(recipe[5]) == trainer["learning_rate"]
    assert float(recipe[6]) == trainer["beta"]


def test_the_budget_in_the_cluster_page_is_what_gc2po_plan_prints():
    """docs/cluster.md, "Budget": the end of ``gc2po plan --configfile config/paper.yaml``,
    pasted as the command prints it."""
    command = "gc2po plan --configfile config/paper.yaml"
    block = page("cluster.md").split(f"$ {command}\n...\n", 1)[1].split("```", 1)[0]
    out = subprocess.run(
        [sys.executable, "-m", "gc2po.cli", *command.split()[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert block.startswith("budget (") and out.stdout.endswith(block), out.stdout[-3000:]
