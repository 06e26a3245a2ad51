"""Peak memory of preparing the paper's 4,000-problem NuminaMath subset from a full-size file.

Writes (once) a local parquet file in NuminaMath-CoT's Hub schema (``source``, ``problem``,
``solution``, ``messages`` = [user problem, assistant solution]) with ``--rows`` rows (default
860,000, the size of the Hub's train split), row groups of 20,000 rows. Problem and solution texts
are drawn (seeded, with replacement) from the 2,000 real NuminaMath rows vendored in
data/benchmarks, each made unique by a numbered prefix, so lengths and the share of solutions
without a \\boxed answer are those of real rows. Then, in a fresh process, prepares the subset
as the workflow's ``benchmark_data`` rule does (``load_benchmark(limit=4000, seed=0)`` and
``write_normalised``) and reports that process's peak resident memory (sampled), its memory
before loading (Python, the package, pyarrow imported), and the wall time.

    python benchmarks/testbed/numinamath_memory.py [--rows 860000] \
        [--file /tmp/numinamath_full.parquet]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "benchmarks" / "numinamath_cot_2k_sample.jsonl"
ROW_GROUP = 20_000

# Run in a fresh interpreter. Resident memory is sampled every 2 ms from a thread (psutil): a forked
# child's ru_maxrss starts at its parent's, so it would not measure the preparation alone.
CHILD = r"""
import json, sys, tempfile, threading, time
import psutil
import pyarrow.parquet  # noqa: F401  (imported before the baseline, as the loader imports it)
from gc2po.data import load_benchmark, write_normalised

process = psutil.Process()
before = peak = process.memory_info().rss
done = threading.Event()

def sample():
    global peak
    while not done.is_set():
        peak = max(peak, process.memory_info().rss)
        time.sleep(0.002)

thread = threading.Thread(target=sample, daemon=True)
thread.start()
start = time.perf_counter()
skipped = []
records = load_benchmark("numinamath", sys.argv[1], limit=4000, seed=0, skipped=skipped)
with tempfile.TemporaryDirectory() as out:
    manifest = write_normalised(records, out + "/numina_4k.jsonl", source=sys.argv[1], seed=0)
seconds = time.perf_counter() - start
done.set()
thread.join()
peak = max(peak, process.memory_info().rss)
print(json.dumps({"baseline_mib": before / 2**20, "peak_mib": peak / 2**20, "seconds": seconds,
                  "records": manifest["count"], "skipped_rows": len(skipped),
                  "sha256": manifest["sha256"]}))
"""


def write_file(path: Path, rows: int, seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sample = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    rng = random.Random(seed)
    schema = pa.schema(
        [
            ("source", pa.string()),
            ("problem", pa.string()),
            ("solution", pa.string()),
            ("messages", pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))),
        ]
    )
    with pq.ParquetWriter(path, schema) as writer:
        for lo in range(0, rows, ROW_GROUP):
            batch = {"source": [], "problem": [], "solution": [], "messages": []}
            for i in range(lo, min(rows, lo + ROW_GROUP)):
                row = rng.choice(sample)
                problem, solution = f"({i}) {row['instruction']}", row["response"]
                batch["source"].append(
                    rng.choice(["cn_k12", "olympiads", "synthetic_math", "orca_math", "aops_forum"])
                )
                batch["problem"].append(problem)
                batch["solution"].append(solution)
                batch["messages"].append(
                    [
                        {"content": problem, "role": "user"},
                        {"content": solution, "role": "assistant"},
                    ]
                )
            writer.write_table(pa.Table.from_pydict(batch, schema=schema))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=860_000)
    parser.add_argument("--file", type=Path, default=Path("/tmp/numinamath_full.parquet"))
    args = parser.parse_args()
    if not args.file.exists():
        start = time.perf_counter()
        write_file(args.file, args.rows)
        print(
            f"wrote {args.rows:,} rows to {args.file} "
            f"({args.file.stat().st_size / 2**20:,.0f} MiB) "
            f"in {time.perf_counter() - start:.0f} s"
        )
    import pyarrow.parquet as pq

    rows = pq.ParquetFile(args.file).metadata.num_rows
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(args.file)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"rows in file: {rows:,}; subset: {result['records']:,} records "
        f"({result['skipped_rows']:,} rows without a boxed answer skipped)"
    )
    print(
        f"peak RSS of the preparing process: {result['peak_mib']:,.0f} MiB "
        f"(before loading: {result['baseline_mib']:,.0f} MiB); {result['seconds']:.0f} s; "
        f"output sha256 {result['sha256'][:16]}"
    )


if __name__ == "__main__":
    main()
