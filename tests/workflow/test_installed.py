"""The package installed without ``-e`` runs the workflow: ``pip install --no-deps`` of a copy of
the checkout into a fresh venv, then, from a folder holding only ``Snakefile``, ``workflow/`` and
``config/``, outside the checkout and with no PYTHONPATH: a dry run of the whole ci miniature (the
config check, its schema and every rule's plan, read from the install) and a real run of a slice
of it that reaches each part of the package a job runs (the testbed data and its check, the warm
start, a run config resolved against the packaged config fields, a training job, two evaluations
and a learning curve). Everything the package reads at run time (the config schema, the config
fields) must ship as package data, and nothing may reach into the source tree.

The whole miniature runs end to end from the checkout once per session (conftest.py,
test_workflow.py); the same jobs here from the install would add minutes and show nothing more
about the install."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workflow.slurm_workflow import planned_jobs

ROOT = Path(__file__).resolve().parents[2]
CI_CONFIG = ("--configfile", "config/config.yaml", "config/ci.yaml")
# the slice of the ci miniature run from the install: testbed_data, decontaminate, warm_start,
# run_config, train, evaluate (base model and run) and learning_curve, one job each but evaluate
SLICE = "results/ci/curves/testbed/grpo/seed0.csv"
SLICE_RULES = {
    "testbed_data": 1,
    "decontaminate": 1,
    "warm_start": 1,
    "run_config": 1,
    "train": 1,
    "evaluate": 2,
    "learning_curve": 1,
}


def _copy_checkout(dest: Path) -> None:
    """The files git tracks or would track (no results, caches or venvs)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in listed:
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def running_site_packages() -> list[str]:
    """The site-packages folders of the interpreter running the tests, in its ``sys.path`` order:
    a user's venv (``pip install -e '.[dev]'``) or CI's base interpreter, whichever runs pytest."""
    site_dirs = {os.path.realpath(p) for p in site.getsitepackages()}
    if site.ENABLE_USER_SITE:
        site_dirs.add(os.path.realpath(site.getusersitepackages()))
    return [p for p in sys.path if p and os.path.realpath(p) in site_dirs]


def make_venv(venv: Path) -> Path:
    """A venv that sees the packages of the running interpreter (the project's dependencies, pip,
    and the setuptools that the ``test`` extra requires), not those of whatever base interpreter
    the running one was made from: ``venv --system-site-packages`` would link the base, which in
    a user's venv holds only pip and its bundled setuptools. Its own site-packages come first, so
    what is installed there shadows the running interpreter's (the editable gc2po included: its
    finder's .pth is not read from a folder added this way). Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "running_interpreter.pth").write_text("\n".join(running_site_packages()))
    return python


@pytest.mark.slow
@pytest.mark.system("git")  # lists the checkout's files
def test_the_ci_miniature_plans_and_a_slice_of_it_runs_from_a_non_editable_install(tmp_path):
    source, venv, work = tmp_path / "src", tmp_path / "venv", tmp_path / "wf"
    _copy_checkout(source)
    # pip and the build backend (setuptools >= 70.1, which builds wheels itself) are the running
    # interpreter's: the test extra requires them, so nothing depends on the base interpreter
    python = make_venv(venv)
    install = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    shutil.rmtree(source)  # what runs cannot read the copy it was installed from

    work.mkdir()
    for name in ("workflow", "config"):
        shutil.copytree(ROOT / name, work / name)
    shutil.copy2(ROOT / "Snakefile", work / "Snakefile")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    # every job's python3 is the venv's; it imports the installed package, not the checkout nor
    # the editable install the running interpreter holds (its folders come after the venv's own)
    python3 = venv / "bin" / "python3"  # first on the jobs' PATH (above)
    where = subprocess.run(
        [
            python3,
            "-c",
            "import gc2po, gc2po.workflow.config_schema as s, gc2po.training.run_config as r; "
            "print(gc2po.__file__); print(s.SCHEMA.is_file(), r.FIELDS_FILE.is_file())",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where[0]).resolve().is_relative_to(Path(purelib).resolve()), where
    assert where[1:] == ["True", "True"]  # the schema and the config fields shipped as package data

    def snakemake(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [python, "-m", "snakemake", "--cores", "2", *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
        )

    # the whole miniature plans from the install as from the checkout: every rule, every job
    planned = snakemake("-n", *CI_CONFIG)
    assert planned.returncode == 0, planned.stderr[-4000:]
    from_checkout = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "-s", str(ROOT / "Snakefile")]
        + ["-d", str(tmp_path / "plan"), "--configfile"]
        + [str(ROOT / "config" / name) for name in ("config.yaml", "ci.yaml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert from_checkout.returncode == 0, from_checkout.stderr[-4000:]
    jobs = planned_jobs(planned.stdout + planned.stderr)
    assert jobs == planned_jobs(from_checkout.stdout + from_checkout.stderr)
    assert {"table", "figures", "audit", "mechanism", "report_setup"} <= set(jobs), jobs
    assert not (work / "results").exists() and not (work / "resources").exists()

    out = snakemake(SLICE, *CI_CONFIG)
    assert out.returncode == 0, out.stderr[-4000:]
    assert planned_jobs(out.stdout + out.stderr) == SLICE_RULES, out.stderr[-4000:]
    run = work / "results/ci/runs/testbed/grpo/seed0"
    assert (run / "final" / "model.safetensors").is_file()
    assert (work / "resources/ci/data/decontamination.json").is_file()
    curve = (work / SLICE).read_text().splitlines()
    assert curve[0] == "step,benchmark,accuracy,problems,samples,model" and len(curve) == 1 + 2 * 2
    # the run's evaluation, of the trained model
    summary = json.loads(
        (work / "results/ci/eval/testbed/grpo/seed0/test_id.jsonl.summary.json").read_text()
    )
    assert summary["key"] == {"base": "testbed", "run": "grpo", "seed": 0}
