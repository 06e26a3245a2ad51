"""The exit-time abort of a finished multi-process run, reproduced with the smallest script that
shows it, and the workaround of ``gc2po.training.train.exit_launched_process`` measured.

    python3 benchmarks/gpu/gloo_exit_abort.py --config cpu_multiprocess --exit python --launches 30
    python3 benchmarks/gpu/gloo_exit_abort.py --config deepspeed_zero2 --exit workaround \
        --launches 30

Each launch is ``accelerate launch`` (a shipped config of ``config/accelerate/``, 2 processes,
gloo on CPU) of this file in ``--rank`` mode, whose whole work is: join the process group,
all-gather one tensor, end, by returning (``python``: a normal interpreter exit) or through
``exit_launched_process`` (``workaround``). One line per launch (exit status, whether a rank
printed "terminate called without an active exception"), then the counts. Launch k runs in
``WORKDIR/k`` (a temporary folder by default); with ``ulimit -c unlimited`` an aborted rank
leaves its core there, and ``gdb -batch -ex bt python3 core`` shows a gloo worker thread in
``~AsyncAllgatherWork`` -> ``TensorImpl::decref_pyobject`` -> ``gil_scoped_acquire`` ->
``take_gil`` -> ``pthread_exit`` -> ``std::terminate`` while the main thread is in
``Py_FinalizeEx``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ABORT = "terminate called without an active exception"


def rank(exit_mode: str) -> None:
    import torch
    import torch.distributed as dist
    from accelerate import PartialState

    from gc2po.training.train import exit_launched_process

    PartialState()  # joins the process group as accelerate does (gloo on CPU)
    out = [torch.empty(1) for _ in range(dist.get_world_size())]
    dist.all_gather(out, torch.ones(1))
    if exit_mode == "workaround":
        exit_launched_process(0)


def launch_command(config: str) -> tuple[list[str], dict]:
    from gc2po.workflow.launch import launcher_command

    launcher = {"config_file": str(ROOT / "config" / "accelerate" / f"{config}.yaml")}
    command = launcher_command({**launcher, "num_processes": 2}, "unused")
    prefix = command[: command.index("-m", command.index("accelerate.commands.launch") + 1)]
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "OMP_NUM_THREADS": "1",
        "DS_ACCELERATOR": "cpu",
    }
    return prefix, env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="cpu_multiprocess", help="config/accelerate/<name>")
    parser.add_argument("--exit", choices=["python", "workaround"], default="python")
    parser.add_argument("--launches", type=int, default=30)
    parser.add_argument("--workdir", type=Path, default=None, help="keep launch k's files here/k")
    parser.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank:
        rank(args.exit)
        return
    prefix, env = launch_command(args.config)
    command = [*prefix, __file__, "--rank", "--exit", args.exit]
    failed = aborted = 0
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        for number in range(1, args.launches + 1):
            cwd = workdir / str(number)
            cwd.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
            (cwd / "launch.log").write_text(done.stdout + done.stderr)
            abort = ABORT in done.stderr
            failed += done.returncode != 0
            aborted += abort
            print(f"launch {number}: exit status {done.returncode}, aborted: {abort}", flush=True)
    print(
        f"{args.config}, exit {args.exit}: {args.launches} launches, {failed} exited non-zero, "
        f"{aborted} with {ABORT!r}"
    )


if __name__ == "__main__":
    sys.exit(main())
