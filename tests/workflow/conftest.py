"""The ci miniature run once per session: the end-to-end test checks it and the SLURM test
compares its tables with the same config run through sbatch."""

from __future__ import annotations

import subprocess

import pytest

from tests.workflow.package_copy import snakemake_command
from tests.workflow.slurm_workflow import ROOT, new_workdir

CI_CONFIG = ("--configfile", "config/config.yaml", "config/ci.yaml")
CI_RUN_TIMEOUT_S = 1200  # the ci run's own bound (below)
# pytest-timeout counts a test's setup: whichever test first asks for the ci run (which depends on
# the selection) runs it there, up to CI_RUN_TIMEOUT_S, before its own work
CI_TEST_TIMEOUT_S = CI_RUN_TIMEOUT_S + 600


def pytest_collection_modifyitems(items):
    """A test that uses the ci run, directly or through another fixture, gets at least
    ``CI_TEST_TIMEOUT_S``: under load the run alone took 9.5 minutes, past the suite's 600 s."""
    for item in items:
        if "ci_local_run" not in getattr(item, "fixturenames", ()):
            continue
        marker = item.get_closest_marker("timeout")
        if marker is None or (marker.args and marker.args[0] < CI_TEST_TIMEOUT_S):
            item.add_marker(pytest.mark.timeout(CI_TEST_TIMEOUT_S), append=False)


@pytest.fixture(scope="session")
def ci_local_run(tmp_path_factory):
    """(work folder, finished process) of `snakemake --cores 2` with the ci overlay."""
    work = new_workdir(tmp_path_factory.mktemp("ci_local") / "wf")
    out = subprocess.run(
        snakemake_command(ROOT, work, configfiles=list(CI_CONFIG[1:])),
        capture_output=True,
        text=True,
        timeout=CI_RUN_TIMEOUT_S,
    )
    return work, out
