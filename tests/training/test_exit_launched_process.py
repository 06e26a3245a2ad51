"""gc2po.training.train.exit_launched_process: a launched rank (WORLD_SIZE > 1) ends with its
status after the exit callbacks and without interpreter finalization; a single process goes on.
(The abort it avoids, under accelerate launch: benchmarks/gpu/gloo_exit_abort.py, and the 2-process
tests of tests/scale and tests/training/test_distributed.py, which end through it.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """import atexit, sys, threading, time
from gc2po.training.train import exit_launched_process

class Finalized:
    def __del__(self):
        print("finalized", flush=True)

kept = Finalized()  # a module global: deleted only by interpreter finalization
atexit.register(lambda: print("atexit ran", flush=True))
worker = threading.Thread(target=lambda: (time.sleep(0.2), print("worker done", flush=True)))
worker.start()
print("buffered", end="")  # no newline, no flush: still written
exit_launched_process(3)
print("returned")
"""


def run(world_size: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "WORLD_SIZE"}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    if world_size is not None:
        env["WORLD_SIZE"] = world_size
    return subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=300
    )


def test_a_launched_rank_exits_with_its_status_after_the_exit_callbacks_only():
    done = run("2")
    assert done.returncode == 3, done.stderr[-2000:]
    out = done.stdout
    assert "worker done" in out and "atexit ran" in out and "buffered" in out
    assert "finalized" not in out and "returned" not in out  # no finalization, no return


@pytest.mark.parametrize("world_size", [None, "1"])
def test_a_single_process_returns_and_exits_as_usual(world_size):
    done = run(world_size)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "returned" in out and "atexit ran" in out and out.rstrip().endswith("finalized")
