"""Outputs that several test files read, made once per session whatever the worker: a dry run of
the workflow (``snakemake -n --forceall --cores 2 ...`` from the checkout) and the mini warm start
(the testbed's tiny model, the ci miniature's warm start).

A dry run of a large config (the paper's plans over a thousand jobs) takes seconds of CPU, and the
same commands were run by tests/workflow/test_workflow.py, tests/workflow/test_config.py,
tests/workflow/test_mechanism_rules.py, tests/test_docs_facts.py and tests/test_readme_rows.py
alike; the same warm start was trained by tests/testbed/test_warmstart.py (twice) and
tests/evaluation/test_backend_fast_sampling.py. The first process to ask makes the output under a
file lock in the session's folder (under pytest-xdist the workers' common temporary folder,
tests/conftest.py) and marks it done; the others wait on the lock and read it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
DRY_RUN = ("-n", "--forceall", "--cores", "2")
DONE = ".done"  # written last, in the output's folder: a folder without it is rebuilt


def made_once(folder: Path, make: Callable[[Path], None]) -> Path:
    """``folder``, which ``make(folder)`` fills, made once for every process that shares its
    parent: the first to ask makes it under a file lock, the others wait and read it."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(folder.with_name(folder.name + ".lock")):
        if not (folder / DONE).exists():
            folder.mkdir(exist_ok=True)
            make(folder)
            (folder / DONE).write_text("")
    return folder


class SharedOutputs:
    """The session's shared outputs, kept in ``folder``."""

    def __init__(self, folder: Path):
        self.folder = folder

    def dry_run(self, *args: str) -> subprocess.CompletedProcess:
        """``snakemake -n --forceall --cores 2 *args`` in the checkout, once per distinct
        ``args``."""
        command = [sys.executable, "-m", "snakemake", *DRY_RUN, *args]
        key = hashlib.sha256(json.dumps(command[1:]).encode()).hexdigest()[:16]

        def make(folder: Path) -> None:
            out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
            saved = {"returncode": out.returncode, "stdout": out.stdout, "stderr": out.stderr}
            (folder / "out.json").write_text(json.dumps(saved))

        folder = made_once(self.folder / "dry_runs" / key, make)
        return subprocess.CompletedProcess(command, **json.loads((folder / "out.json").read_text()))

    def mini_warm_start(self) -> tuple[Path, dict]:
        """(model folder, the statistics ``warm_start`` returned) of ``MINI_WARM_START`` on the
        first 64 train problems of generator seed 0; the model folder holds what ``warm_start``
        wrote and nothing else."""
        from gc2po.testbed.generator import generate_splits
        from gc2po.testbed.warmstart import WarmStartConfig, warm_start

        def make(folder: Path) -> None:
            problems = generate_splits({"train": 64}, 0)["train"]
            config = WarmStartConfig(**MINI_WARM_START)
            stats = warm_start(problems, folder / "model", config, log=lambda *a: None)
            (folder / "returned.json").write_text(json.dumps(stats))

        folder = made_once(self.folder / "mini_warm_start", make)
        return folder / "model", json.loads((folder / "returned.json").read_text())


# the ci miniature's warm start (config/ci.yaml's testbed.warm_start): 4 steps of a 1-layer model
MINI_WARM_START = {
    "epochs": 1,
    "hidden_size": 32,
    "num_layers": 1,
    "num_heads": 2,
    "vocab_size": 300,
    "batch_size": 16,
}
