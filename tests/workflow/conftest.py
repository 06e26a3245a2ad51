"""The ci miniature run once per session: the end-to-end test checks it and the SLURM test
compares its tables with the same config run through sbatch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.workflow.slurm_workflow import ROOT, new_workdir

CI_CONFIG = ("--configfile", "config/config.yaml", "config/ci.yaml")


@pytest.fixture(scope="session")
def ci_local_run(tmp_path_factory):
    """(work folder, finished process) of `snakemake --cores 2` with the ci overlay."""
    work = new_workdir(tmp_path_factory.mktemp("ci_local") / "wf")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            "2",
            "-s",
            str(ROOT / "Snakefile"),
            "-d",
            str(work),
            *CI_CONFIG,
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    return work, out
