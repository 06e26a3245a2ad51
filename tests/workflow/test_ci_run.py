"""The shared ci run's machinery (tests/workflow/ci_run.py) with short programs in place of the
ci miniature: a process that attaches to a run started elsewhere gets its exit code and output,
and learns when the run could not start or was killed instead of waiting for its time limit."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from tests.workflow.ci_run import CiRun


def _program(source: str) -> list[str]:
    return [sys.executable, "-c", source]


def test_an_attached_process_reads_the_exit_code_and_output_of_the_started_run(tmp_path):
    started = CiRun(tmp_path, command=_program("import sys; print('done'); sys.exit(3)"))
    attached = CiRun.attach(tmp_path)
    result = attached.result()
    assert (result.returncode, result.stdout) == (3, "done\n")
    assert started.result().returncode == 3 and started.finished and attached.finished
    started.stop()  # a finished run: nothing to kill, the wrapper is reaped


def test_a_run_that_could_not_start_fails_the_attached_process_at_once(tmp_path):
    (tmp_path / "wf").mkdir()  # the work folder must be new
    with pytest.raises(FileExistsError):
        CiRun(tmp_path, command=_program("pass"))
    begun = time.monotonic()
    with pytest.raises(RuntimeError, match="the ci run could not start: FileExistsError"):
        CiRun.attach(tmp_path).result()
    assert time.monotonic() - begun < 5


def test_a_killed_run_fails_the_attached_process_instead_of_a_wait(tmp_path):
    started = CiRun(tmp_path, command=_program("import time; time.sleep(600)"))
    os.killpg(started.process.pid, signal.SIGKILL)
    started.process.wait()
    with pytest.raises(RuntimeError, match="ended without an exit code"):
        CiRun.attach(tmp_path).result()


def test_the_starting_session_stops_a_run_when_it_stops_early(tmp_path):
    started = CiRun(tmp_path, command=_program("import time; time.sleep(600)"))
    begun = time.monotonic()
    started.wait_or_stop(stopping=True)
    assert time.monotonic() - begun < 5 and started.process.returncode == -signal.SIGKILL
    assert not started.finished
