"""How long the workflow takes to decide there is nothing to do: a no-op ``snakemake --cores 2``
on a finished run of the default, and a dry run (``-n``) of the paper config, each repeated
(min / median / max wall seconds of the whole process). One warm-up call first, so the memoised
config check (``gc2po.workflow.config_check``) is in place, as on any rerun.

    python benchmarks/workflow/workflow_parse.py \
        --workdir <a clone where `snakemake --cores 2` finished>
        [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def timed(command: list[str], cwd: Path, repeats: int) -> list[float]:
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)  # warm-up
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
        seconds.append(time.perf_counter() - start)
        if out.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{out.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workdir",
        required=True,
        type=Path,
        help="a checkout where the default workflow has finished",
    )
    parser.add_argument("--repeats", type=int, default=5)
    ns = parser.parse_args()
    snakemake = [sys.executable, "-m", "snakemake"]
    noop = timed([*snakemake, "--cores", "2"], ns.workdir, ns.repeats)
    plan = subprocess.run(
        [*snakemake, "-n", "--cores", "2"], cwd=ns.workdir, capture_output=True, text=True
    )
    if "Nothing to be done" not in plan.stdout + plan.stderr:
        raise SystemExit(f"{ns.workdir}: the default has not finished there (-n plans jobs)")
    dry = timed([*snakemake, "-n", "-q", "--configfile", "config/paper.yaml"], ROOT, ns.repeats)
    for label, values in (
        ("no-op snakemake --cores 2 (finished default)", noop),
        ("snakemake -n --configfile config/paper.yaml", dry),
    ):
        print(
            f"{label}: min {min(values):.2f} s, median {statistics.median(values):.2f} s, "
            f"max {max(values):.2f} s ({len(values)} runs)"
        )


if __name__ == "__main__":
    main()
