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

One run for all of a session's processes: under pytest-xdist every worker collects the whole
selection, and the first to claim the run's folder (an atomic ``mkdir`` in the workers' common
temporary folder) starts it; the others attach to it (``CiRun.attach``) and wait for the exit
code that the run's wrapper writes to a file when Snakemake ends.

The command, its work folder and what the tests receive (the work folder and the finished
process) are those of the run the fixture used to start itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.workflow.package_copy import snakemake_command
from tests.workflow.slurm_workflow import ROOT, new_workdir

CI_CONFIG = ("--configfile", "config/config.yaml", "config/ci.yaml")
CI_RUN_TIMEOUT_S = 1200  # the ci run's own bound, counted from when a test first waits for it
BACKGROUND_NICE = 10  # added to the session's nice value until a test waits for the run
POLL_S = 0.2  # how often a waiting test looks for the exit code
# Runs the command in argv[2:] and writes its exit code to argv[1] when it ends (atomically: the
# file appears complete), so that processes other than the parent can wait for it.
_WRAPPER = (
    "import os, subprocess, sys\n"
    "code = subprocess.call(sys.argv[2:])\n"
    "part = sys.argv[1] + '.part'\n"
    "with open(part, 'w') as f:\n"
    "    f.write(str(code))\n"
    "os.replace(part, sys.argv[1])\n"
)


class CiRun:
    """The ci run into ``base / "wf"``, started at construction (``attach`` joins one that
    another process started in ``base``); ``result()`` waits for it. ``command`` replaces the
    ci run's (tests/workflow/test_ci_run.py runs short programs through the same machinery)."""

    def __init__(self, base: Path, start: bool = True, command: list[str] | None = None):
        self.work = base / "wf"
        self.command = command or snakemake_command(
            ROOT, self.work, configfiles=list(CI_CONFIG[1:])
        )
        self._stdout, self._stderr = base / "stdout.txt", base / "stderr.txt"
        self._exit_code, self._pid_file = base / "exit_code", base / "pid"
        self.process: subprocess.Popen | None = None  # the wrapper, where this process started it
        self._result: subprocess.CompletedProcess | None = None
        self._start_error = base / "start_error"  # why the starting process could not start it
        if not start:
            return
        try:
            self._start()
        except Exception as err:
            self._start_error.write_text(f"{type(err).__name__}: {err}")
            raise

    def _start(self) -> None:
        new_workdir(self.work)
        with open(self._stdout, "wb") as out, open(self._stderr, "wb") as err:
            # its own process group (stop() ends Snakemake and the jobs it started) but the
            # session's own session: a new session would get its own autogroup, whose share of
            # the CPU the scheduler splits evenly with the tests' whatever the nice value
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WRAPPER, str(self._exit_code), *self.command],
                stdout=out,
                stderr=err,
                process_group=0,
                preexec_fn=lambda: os.nice(BACKGROUND_NICE),
            )
        part = self._pid_file.with_suffix(".part")
        part.write_text(str(self.process.pid))
        part.replace(self._pid_file)

    @classmethod
    def attach(cls, base: Path) -> CiRun:
        """The run another process started (or is starting) in ``base``."""
        return cls(base, start=False)

    @property
    def finished(self) -> bool:
        return self._exit_code.exists()

    def result(self) -> subprocess.CompletedProcess:
        """The finished run, as ``subprocess.run(..., capture_output=True, text=True)`` returns
        it; fails (and stops the run) if it has not ended ``CI_RUN_TIMEOUT_S`` after the first
        call, or if its wrapper ended without an exit code (killed)."""
        if self._result is None:
            deadline = time.monotonic() + CI_RUN_TIMEOUT_S
            restored = False
            try:
                while not self.finished:
                    if self._start_error.exists():
                        raise RuntimeError(
                            f"the ci run could not start: {self._start_error.read_text()}"
                        )
                    pid = self._pid()
                    if pid is not None and not restored:
                        self._restore_priority(pid)
                        restored = True
                    if pid is not None and not _alive(pid) and not self.finished:
                        raise RuntimeError(f"the ci run ({self.work}) ended without an exit code")
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"the ci run did not end within {CI_RUN_TIMEOUT_S} s")
                    time.sleep(POLL_S)
            except BaseException:  # the bound, a test timeout or Ctrl-C: nothing left running
                self.stop()
                raise
            self._result = subprocess.CompletedProcess(
                self.command,
                int(self._exit_code.read_text()),
                self._stdout.read_text(),
                self._stderr.read_text(),
            )
        return self._result

    def stop(self) -> None:
        """Kill the run's process group (a session that ends before a test waited for it, or a
        timeout), jobs that outlived Snakemake included; nothing once it has ended."""
        pid = self._pid()
        if pid is not None and not self.finished:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:  # nothing of it is left
                pass
        if self.process is not None:
            self.process.wait()

    def wait_or_stop(self, stopping: bool) -> None:
        """At the end of the session that started the run, where other processes may still be
        waiting for it: if the session is ``stopping`` early (-x, a failure limit) stop it,
        else let it end (it is needed by a test elsewhere) within the run's bound."""
        deadline = time.monotonic() + CI_RUN_TIMEOUT_S
        try:
            while not stopping and not self.finished and time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    break
                time.sleep(POLL_S)
        finally:
            self.stop()

    def _pid(self) -> int | None:
        """The wrapper's PID (its process group's id), once the starting process wrote it."""
        if self.process is not None:
            return self.process.pid
        try:
            return int(self._pid_file.read_text())
        except FileNotFoundError:
            return None

    @staticmethod
    def _restore_priority(pid: int) -> None:
        """The wrapper, Snakemake and its running jobs back to the session's nice value, thread
        by thread: Linux keeps a nice value per thread, and Snakemake starts jobs from threads of
        its own, which pass theirs on. Lowering a nice value needs root, as the SLURM tests do;
        elsewhere the run goes on at nice 10."""
        import psutil

        try:
            wrapper = psutil.Process(pid)
            processes = [wrapper, *wrapper.children(recursive=True)]
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


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status
