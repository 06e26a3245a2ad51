"""The session's ci miniature (``snakemake --cores 2`` with the ci overlay), started in the
background when the session starts (tests/conftest.py) and waited for by the first test that
reads it (``ci_local_run``, tests/workflow/conftest.py).

Why in the background: the run takes minutes (152 s of the 22 min 48 s suite on the quiet 2-core
machine) and the tests that read it are the session's last (tests/workflow), while the tests
before them keep about one core busy (that suite's CPU time was 1.05 times its wall time). Started
with the session, it uses the other core, and its tests find it done. Why at nice 10: the tests
beside it keep the CPU they would have had alone (some bound the wall time of a sandboxed
program), and the run takes what they leave. Once a test waits for it, it gets the tests'
priority back, so that other work on the machine does not starve it then.

The command, its work folder and what the tests receive (the work folder and the finished
process) are those of the run the fixture used to start itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.workflow.package_copy import snakemake_command
from tests.workflow.slurm_workflow import ROOT, new_workdir

CI_CONFIG = ("--configfile", "config/config.yaml", "config/ci.yaml")
CI_RUN_TIMEOUT_S = 1200  # the ci run's own bound, counted from when a test first waits for it
BACKGROUND_NICE = 10  # added to the session's nice value until a test waits for the run


class CiRun:
    """The ci run into ``base / "wf"``, started at construction; ``result()`` waits for it."""

    def __init__(self, base: Path):
        self.work = new_workdir(base / "wf")
        self.command = snakemake_command(ROOT, self.work, configfiles=list(CI_CONFIG[1:]))
        self._stdout, self._stderr = base / "stdout.txt", base / "stderr.txt"
        with open(self._stdout, "wb") as out, open(self._stderr, "wb") as err:
            # its own process group (stop() ends Snakemake and the jobs it started) but the
            # session's own session: a new session would get its own autogroup, whose share of
            # the CPU the scheduler splits evenly with the tests' whatever the nice value
            self.process = subprocess.Popen(
                self.command,
                stdout=out,
                stderr=err,
                process_group=0,
                preexec_fn=lambda: os.nice(BACKGROUND_NICE),
            )
        self._result: subprocess.CompletedProcess | None = None

    def result(self) -> subprocess.CompletedProcess:
        """The finished run, as ``subprocess.run(..., capture_output=True, text=True)`` returns
        it; fails (and stops the run) if it has not ended ``CI_RUN_TIMEOUT_S`` after the first
        call."""
        if self._result is None:
            self._restore_priority()
            try:
                returncode = self.process.wait(timeout=CI_RUN_TIMEOUT_S)
            except BaseException:  # the bound, a test timeout or Ctrl-C: nothing left running
                self.stop()
                raise
            self._result = subprocess.CompletedProcess(
                self.command, returncode, self._stdout.read_text(), self._stderr.read_text()
            )
        return self._result

    def stop(self) -> None:
        """Kill the run's process group (a session that ends before a test waited for it, or a
        timeout), jobs that outlived Snakemake included."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:  # nothing of it is left
            pass
        self.process.wait()

    def _restore_priority(self) -> None:
        """Snakemake and its running jobs back to the session's nice value, thread by thread:
        Linux keeps a nice value per thread, and Snakemake starts jobs from threads of its own,
        which pass theirs on. Lowering a nice value needs root, as the SLURM tests do; elsewhere
        the run goes on at nice 10."""
        import psutil

        try:
            snakemake = psutil.Process(self.process.pid)
            processes = [snakemake, *snakemake.children(recursive=True)]
        except psutil.Error:  # it has ended
            return
        own = os.getpriority(os.PRIO_PROCESS, 0)
        for process in processes:
            try:
                threads = [thread.id for thread in process.threads()]
            except psutil.Error:  # the job just ended
                continue
            for thread in threads:
                try:
                    os.setpriority(os.PRIO_PROCESS, thread, own)
                except OSError:  # not permitted, or the thread just ended
                    pass
