"""Every command of the README's "I want to..." table runs: a Snakemake command as a dry run
(``-n --forceall``: every job planned, nothing run), ``gc2po tables`` with ``--help``, the
registry listings (``gc2po methods``), ``gc2po plan`` and the docs checker as they are, ``dvc
repro`` with ``--dry`` (the commands it would run, nothing run); each row's output is checked for
what the row promises, not only the exit status."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gc2po.data import BENCHMARKS
from gc2po.methods import METHODS
from tests.shared_outputs import DRY_RUN

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def rows() -> dict[str, str]:
    """Each row's "I want to..." text -> its command (the first backticked span of its second
    cell)."""
    table = README.split("## I want to...\n", 1)[1].strip().split("\n\n", 1)[0]
    found = {}
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        found[cells[0]] = re.match(r"`([^`]+)`", cells[1])[1]
    return found


def planned(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 0, out.stderr[-3000:]
    assert re.search(r"^total\s+\d+$", out.stdout, re.MULTILINE), out.stdout[-2000:]
    return out.stdout


def expect_everything(out):
    text = planned(out)
    for rule in ("warm_start", "train", "evaluate", "table", "figures"):
        assert f"rule {rule}:" in text, rule


def expect_full_table(out):
    text = planned(out)
    assert "results/testbed_full/tables/table1.md" in text
    assert "rule audit:" in text  # the full config's, not the default's


def expect_cluster(out):
    text = planned(out)
    train = text[text.index("rule train:") :].split("\n\n", 1)[0]
    assert "slurm_partition=" in train and "gpu=8" in train, train
    assert "accelerate.commands.launch" in text


def expect_budget(out):
    """The paper's budget: what a training and an evaluation job ask for, and the GPU-hours."""
    assert out.returncode == 0, out.stderr[-3000:]
    assert "  train     (8 GPUs, 32 CPUs, 512000 MB, 2880 min) x 108: " in out.stdout
    assert "  evaluate  (1 GPU, 8 CPUs, 128000 MB, 720 min) x 117: " in out.stdout
    assert re.search(r"^  total +225 of them: [\d,]+ GPU-hours", out.stdout, re.MULTILINE)
    assert "disk per training run" in out.stdout


def expect_one_table(out):
    text = planned(out)
    assert "rule table:" in text and "results/testbed/tables/table1.md" in text
    assert "rule figures:" not in text  # only what the table needs


def expect_tables_help(out):
    assert out.returncode == 0, out.stderr
    assert "--eval-dir" in out.stdout and "--methods" in out.stdout


def expect_plan(out):
    expect_everything(out)


def expect_methods(out):
    """``gc2po methods`` prints one block per method, headed ``<name>: <display name> ...``."""
    assert out.returncode == 0, out.stderr
    listed = re.findall(r"^([a-z0-9_]+): ", out.stdout, re.MULTILINE)
    assert listed == sorted(METHODS, key=lambda name: METHODS[name].order), out.stdout[-2000:]


def expect_benchmarks(out):
    assert out.returncode == 0, out.stderr
    assert set(out.stdout.split()) == set(BENCHMARKS)


def expect_hub_model(out):
    """The overlay's Hub model is downloaded (``hub_model``) and trained beside the paper's."""
    text = planned(out)
    assert "resources/paper/models/Qwen2.5-1.5B-Instruct.hub.json" in text, text[-2000:]
    assert "results/paper/runs/Qwen2.5-1.5B-Instruct/gc2po/seed0/run.yaml" in text
    assert "resources/paper/models/DeepScaleR-1.5B.hub.json" in text  # the paper's models stay


def expect_dvc(out):
    """``dvc repro --dry`` of the default's stage: the Snakemake command it would run."""
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Running stage 'workflow@testbed'" in out.stdout, out.stdout
    assert "> snakemake --cores 2" in out.stdout, out.stdout


def expect_docs_check(out):
    """The page of the default's tables: where this checkout holds no run, each bound table is
    MISSING and names the default's command (exit 2); where it holds one, compared (0 or 1)."""
    assert out.returncode in (0, 1, 2), out.stderr
    summary = re.search(
        r"docs/testbed\.md: (\d+) bound tables, \d+ differ, (\d+) missing", out.stdout
    )
    assert summary and int(summary[1]) >= 3, out.stdout
    if out.returncode == 2:
        assert int(summary[2]) == int(summary[1]) and "DIFFERS" not in out.stdout
        assert "config/config.yaml writes it: snakemake --cores 2" in out.stdout, out.stdout


def expect_paper_help(out):
    assert out.returncode == 0, out.stderr
    assert "--paper" in out.stdout and "paper's Table 1" in " ".join(out.stdout.split())


EXPECTED = {
    "run the default: the arithmetic testbed on CPU (not the paper's runs)": expect_everything,
    "run a bigger config (the testbed's full Table 1, the study)": expect_full_table,
    "see what the paper's runs ask a cluster for: per job, GPU-hours, disk": expect_budget,
    "submit the paper's runs to a SLURM cluster (conda or mamba on PATH)": expect_cluster,
    "regenerate one table": expect_one_table,
    "tabulate evaluations that already exist": expect_tables_help,
    "see every job before running": expect_plan,
    "add a method (then list the registry with it)": expect_methods,
    "add a benchmark (then list the registry with it)": expect_benchmarks,
    "train my own model from the Hugging Face Hub (its jobs listed first)": expect_hub_model,
    "version data, models and checkpoints with DVC": expect_dvc,
    "check my run of the default against the tables it should give": expect_docs_check,
    "compare a GPU run of the paper's config with the paper's Table 1": expect_paper_help,
}


def as_run(command: str) -> list[str]:
    """The row's command as this test runs it: with this interpreter, dry where it would work."""
    words = shlex.split(command)
    program, rest = words[0], words[1:]
    if program == "snakemake":
        if shutil.which("conda") is None and "--sdm" in rest:  # even a dry run asks conda
            at = rest.index("--sdm")
            rest = rest[:at] + rest[at + 2 :]
        return [sys.executable, "-m", "snakemake", "-n", "--forceall", *rest]
    if program == "gc2po":
        # ``gc2po methods`` and ``gc2po plan`` read no data and run as they are; another
        # subcommand shows its help
        help_flag = [] if rest[:1] in (["methods"], ["plan"]) else ["--help"]
        return [sys.executable, "-m", "gc2po.cli", *rest, *help_flag]
    if program == "dvc":  # ``dvc repro --dry``: prints the stage's command, runs nothing
        assert rest[:1] == ["repro"], command
        return [sys.executable, "-m", "dvc", "repro", "--dry", *rest[1:]]
    assert program == "python", command
    return [sys.executable, *rest]


def test_every_row_has_a_check():
    assert set(rows()) == set(EXPECTED)


@pytest.mark.slow
@pytest.mark.parametrize("want", list(EXPECTED))
def test_a_rows_command_runs(want, dry_run):
    argv = as_run(rows()[want])
    planned = [sys.executable, "-m", "snakemake", *DRY_RUN]
    if argv[: len(planned)] == planned:  # a dry run other tests make too: the session's
        out = dry_run(*argv[len(planned) :])
    else:
        out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    EXPECTED[want](out)
