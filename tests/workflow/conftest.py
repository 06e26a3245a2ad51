"""The ci miniature run once per session: the end-to-end test checks it and the SLURM test
compares its tables with the same config run through sbatch. It starts with the session, in the
background (tests/workflow/ci_run.py says why; tests/conftest.py starts it)."""

from __future__ import annotations

import pytest

from tests.workflow.ci_run import CI_RUN_TIMEOUT_S, CiRun

# pytest-timeout counts a test's setup: whichever test first asks for the ci run (which depends on
# the selection) waits for it there, up to CI_RUN_TIMEOUT_S, before its own work
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
def ci_local_run(ci_run_in_background, tmp_path_factory):
    """(work folder, finished process) of `snakemake --cores 2` with the ci overlay."""
    if isinstance(ci_run_in_background, Exception):
        raise ci_run_in_background
    run = ci_run_in_background or CiRun(tmp_path_factory.mktemp("ci_local"))
    try:
        return run.work, run.result()
    finally:
        if run is not ci_run_in_background:
            run.stop()  # a run started here has no other teardown
