"""The how-tos (docs/howto/) work as written: each page's first command runs (Snakemake's as a dry
run, ``-n --forceall``; ``dvc repro`` with ``--dry``; ``gc2po plan`` as it is) and prints what the
page says it does; every error the troubleshooting page quotes is the one the config check
raises for the mistake it describes."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_readme_rows import planned

ROOT = Path(__file__).resolve().parents[1]
HOWTO = ROOT / "docs" / "howto"


def first_command(page: str) -> str:
    """The first line of the page's first ```bash block."""
    text = (HOWTO / page).read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL)
    assert block, f"docs/howto/{page}: no ```bash block"
    return block[1].splitlines()[0].split("  #")[0].strip()


def run(command: str) -> subprocess.CompletedProcess:
    """The page's command as this test runs it: with this interpreter, dry where it would work."""
    words = shlex.split(command)
    program, rest = words[0], words[1:]
    if program == "snakemake":
        argv = [sys.executable, "-m", "snakemake", "--forceall", *rest]
        if "-n" not in rest:
            argv.insert(3, "-n")
    elif program == "dvc":
        assert "--dry" in rest, command  # the page shows the dry form itself
        argv = [sys.executable, "-m", "dvc", *rest]
    else:
        assert program == "gc2po", command
        argv = [sys.executable, "-m", "gc2po.cli", *rest]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


def expect_hub_model(out):
    text = planned(out)
    assert "rule hub_model:" in text
    assert "resources/paper/models/Qwen2.5-1.5B-Instruct.hub.json" in text
    assert "results/paper/runs/Qwen2.5-1.5B-Instruct/gc2po/seed0/run.yaml" in text


def expect_resume(out):
    text = planned(out)
    assert "rule train:" in text and "rule table:" in text


def expect_gpu_count(out):
    """4 processes: the same 256 sequences a step, 64 accumulation steps, the 7B jobs over an
    80 GB GPU (the page's reading), which ``gc2po plan`` refuses after printing the plan."""
    assert out.returncode == 0 or "do not fit the GPU memory" in out.stderr, out.stderr[-3000:]
    assert (
        "256 sequences (32 prompts x 8 completions) = 4 processes on 1 machine x 1 per "
        "micro-batch x 64 accumulation steps" in out.stdout
    ), out.stdout[:2000]
    rows = [line.split() for line in out.stdout.splitlines()]
    rows = [row for row in rows if row[:1] == ["R1-Distill-Qwen-7B"]]  # the table's rows
    assert rows and all(row[-1] == "False" for row in rows), rows
    assert "87.9" in " ".join(rows[0])


def expect_dvc(out):
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Running stage 'workflow@testbed'" in out.stdout
    assert "> snakemake --cores 2" in out.stdout


def expect_troubleshooting(out):
    text = planned(out)
    assert "results/testbed_full/tables/table1.md" in text


EXPECTED = {
    "hub-model.md": expect_hub_model,
    "resume.md": expect_resume,
    "gpu-count.md": expect_gpu_count,
    "dvc-round-trip.md": expect_dvc,
    "troubleshooting.md": expect_troubleshooting,
}


def test_every_howto_has_a_check_and_is_indexed():
    pages = {p.name for p in HOWTO.glob("*.md")} - {"index.md"}
    assert pages == set(EXPECTED)
    index = (HOWTO / "index.md").read_text()
    for page in pages:
        assert f"]({page})" in index, page
    assert "howto/index.md" in (ROOT / "docs" / "index.md").read_text()


def test_the_page_quotes_its_overlays_command():
    """The example overlays' headers show the command their page runs."""
    for page, overlay in (("hub-model.md", "hub_model.yaml"), ("gpu-count.md", "gpus4.yaml")):
        header = (ROOT / "config" / "examples" / overlay).read_text()
        assert first_command(page) in header, (page, overlay)


@pytest.mark.slow
@pytest.mark.parametrize("page", list(EXPECTED))
def test_a_howtos_command_runs(page):
    EXPECTED[page](run(first_command(page)))


# --- the troubleshooting page's config errors ------------------------------------------------

# (the error as the page quotes it, the base config, the overlay that makes the mistake)
CONFIG_ERRORS = [
    ("unknown key(s) ['seds'] (did you mean 'seeds'?)", "config/config.yaml", {"seds": [0]}),
    (
        "unknown trainer key(s) ['learning_rat']",
        "config/config.yaml",
        {"train": {"trainer": {"learning_rat": 1e-4}}},
    ),
    (
        "got 'grpoo' (did you mean 'grpo'?)",
        "config/config.yaml",
        {"methods": ["grpo", "gc2po", "gc2po_add", "grpo_fxp", "grpoo"]},
    ),
    ("a config given alone must be complete", None, {"seeds": [0]}),
    (
        "cannot be split over 3 processes",
        "config/paper.yaml",
        {"train": {"launcher": {"num_processes": 3}}},
    ),
    ("does not fit the GPU", "config/paper.yaml", {"train": {"gpu_memory_gib": 39}}),
    (
        "training rollouts sample the full distribution",
        "config/paper.yaml",
        {"train": {"trainer": {"top_p": 0.95}}},
    ),
    (
        "vllm_enable_sleep_mode: true needs the ratio guard",
        "config/paper.yaml",
        {"train": {"trainer": {"ratio_guard_patience": 0}}},
    ),
]


@pytest.mark.parametrize("quoted, base, overlay", CONFIG_ERRORS, ids=lambda v: str(v)[:40])
def test_the_troubleshooting_page_quotes_the_error_the_check_raises(
    quoted, base, overlay, tmp_path
):
    from gc2po.workflow.config_check import checked
    from gc2po.workflow.config_files import load_config

    page = " ".join((HOWTO / "troubleshooting.md").read_text().split())
    assert f"`{quoted}" in page, quoted
    overlay_file = tmp_path / "overlay.yaml"
    overlay_file.write_text(yaml.safe_dump(overlay))
    files = [str(ROOT / base), str(overlay_file)] if base else [str(overlay_file)]
    with pytest.raises(ValueError) as raised:
        checked(load_config(files), files, cache=tmp_path / "check.json")
    assert quoted in str(raised.value), str(raised.value)
