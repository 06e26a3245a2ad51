"""One command per task: every written SLURM submission is the one docs/cluster.md needs
(``--sdm conda``: the jobs run in workflow/envs), and the profile's placeholder values
(``CHANGE_ME_...``) stop a run before any job is submitted, naming each key (issue 51)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gc2po.workflow import profile_check
from tests.workflow.slurm_workflow import ROOT, new_workdir

PROFILE = "workflow/profiles/slurm"
SUBMIT = f"snakemake --profile {PROFILE} --configfile config/paper.yaml --sdm conda"
# what a written command may add after the submission itself: a plan, or the envs built first
EXTRA_FLAGS = {"-n", "--conda-create-envs-only"}
# the places a user copies the command from; each must write it at least once
PLACES = [
    "README.md",
    "docs/workflow.md",
    "docs/cluster.md",
    "dvc.yaml",
    ".snakemake-workflow-catalog.yml",
]
SKIP_DIRS = {".git", "archive", "results", "resources", ".snakemake", "gc2po.egg-info", "tests"}


def _text_files() -> list[Path]:
    return [
        p
        for p in sorted(ROOT.rglob("*"))
        if p.is_file()
        and p.suffix in {".md", ".yaml", ".yml"}
        and not SKIP_DIRS & set(p.relative_to(ROOT).parts)
    ]


def _unwrap_inline_code(text: str) -> str:
    """Markdown prose with each inline code span on one line (a paragraph may wrap inside one);
    the line breaks it held move after it, so line numbers stay those of the span's start.
    Fenced blocks are left as they are (one command a line)."""
    parts = re.split(r"(^```.*?^```)", text, flags=re.MULTILINE | re.DOTALL)

    def one_line(match: re.Match) -> str:
        return match[0].replace("\n", " ") + "\n" * match[0].count("\n")

    return "".join(
        part if part.startswith("```") else re.sub(r"`[^`]+`", one_line, part) for part in parts
    )


def written_commands() -> list[tuple[str, str]]:
    """(file:line, command) for every command that submits through the SLURM profile: a span
    that starts at ``snakemake`` and ends at a backtick, a comment or the line's end; dvc.yaml's
    stage as the command its ``cmd`` runs."""
    found = []
    for path in _text_files():
        where = str(path.relative_to(ROOT))
        if where == "dvc.yaml":
            stage = yaml.safe_load(path.read_text())["stages"]["workflow"]
            for name, item in stage["foreach"].items():
                command = stage["do"]["cmd"].replace("${item.snakemake}", item["snakemake"])
                if PROFILE in command:
                    found.append((f"dvc.yaml: workflow@{name}", command))
            continue
        text = path.read_text()
        if path.suffix == ".md":
            text = _unwrap_inline_code(text)
        for number, line in enumerate(text.splitlines(), 1):
            for match in re.finditer(r"snakemake [^`#\n]*--profile " + re.escape(PROFILE), line):
                span = line[match.start() :]
                command = re.split(r"`|\s#", span, maxsplit=1)[0].strip().rstrip(".")
                found.append((f"{where}:{number}", command))
    return found


def submission(command: str) -> tuple[str, list[str], list[str]]:
    """The command without its extra flags, its config files after config/paper.yaml, and the
    extra flags."""
    words = shlex.split(command)
    files_end = words.index("--configfile") + 1
    while files_end < len(words) and not words[files_end].startswith("-"):
        files_end += 1
    files = words[words.index("--configfile") + 1 : files_end]
    rest = words[files_end:]
    extra = [w for w in rest if w in EXTRA_FLAGS]
    kept = [w for w in rest if w not in EXTRA_FLAGS]
    base = words[: words.index("--configfile") + 2] + kept  # the first config file only
    return " ".join(base), files[1:], extra


def test_every_written_slurm_submission_is_the_same_command():
    commands = written_commands()
    places = {where.split(":")[0] for where, _ in commands}
    missing = [p for p in PLACES if p not in places]
    assert not missing, f"no SLURM command found in {missing} (the test's pattern: {SUBMIT})"
    differ = {where: command for where, command in commands if submission(command)[0] != SUBMIT}
    assert not differ, f"write every SLURM submission as `{SUBMIT}` (plus -n or overlays): {differ}"


def test_an_overlay_goes_between_the_paper_config_and_the_flags():
    for where, command in written_commands():
        _, overlays, _ = submission(command)
        assert all(f.startswith("config/") for f in overlays), (where, command)


def test_a_command_that_drops_sdm_conda_is_caught():
    old = f"snakemake --profile {PROFILE} --configfile config/paper.yaml"
    assert submission(old)[0] != SUBMIT
    assert submission(f"{SUBMIT} -n")[0] == SUBMIT
    assert submission(f"{old} config/examples/hub_model.yaml --sdm conda")[0] == SUBMIT


def test_a_command_wrapped_inside_its_code_span_is_read_whole():
    text = "see `snakemake --profile a\n--configfile b` here\n```\nx `y\n```\nend"
    lines = _unwrap_inline_code(text).splitlines()
    assert lines[0] == "see `snakemake --profile a --configfile b`"
    assert len(lines) == len(text.splitlines()) and lines[-1] == "end"


# -- the profile's placeholders ----------------------------------------------------------------


def test_placeholders_are_named_with_their_profile_keys():
    profile = yaml.safe_load((ROOT / PROFILE / "config.yaml").read_text())
    default = profile["default-resources"]
    per_rule = profile["set-resources"]
    with pytest.raises(ValueError) as err:
        profile_check.check(default, per_rule)
    message = str(err.value)
    assert "\n" not in message
    assert "default-resources: slurm_account = 'CHANGE_ME_account'" in message
    assert "set-resources: train: slurm_partition = 'CHANGE_ME_gpu_partition'" in message
    assert "docs/cluster.md" in message


def test_filled_values_pass():
    profile_check.check(
        {"slurm_account": "lab", "mem_mb": 4000}, {"train": {"slurm_partition": "gpu"}}
    )


def _snakemake(work: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), *args],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.timeout(600)
def test_a_dry_run_with_the_profile_names_the_placeholders_and_plans(tmp_path):
    work = new_workdir(tmp_path / "wf")
    out = _snakemake(
        work,
        "-n",
        "--profile",
        str(ROOT / PROFILE),
        "--configfile",
        "config/config.yaml",
        "config/ci.yaml",
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "warning: profile: placeholder value(s) default-resources: slurm_account" in out.stderr
    assert re.search(r"^total\s+\d+$", out.stdout, re.MULTILINE), out.stdout[-2000:]


@pytest.mark.timeout(600)
def test_a_run_with_placeholders_stops_before_its_first_job(tmp_path):
    """The same check whatever the executor: a local run given a placeholder stops after its
    plan, before the first job (which would write the testbed's data)."""
    work = new_workdir(tmp_path / "wf")
    target = "resources/ci/data/manifest.json"
    out = _snakemake(
        work,
        target,
        "--cores",
        "1",
        "--default-resources",
        "slurm_account=CHANGE_ME_account",
        "--configfile",
        "config/config.yaml",
        "config/ci.yaml",
    )
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: profile: placeholder value(s) default-resources: slurm_account")
    assert not (work / target).exists()
    assert not (work / "resources").exists()
