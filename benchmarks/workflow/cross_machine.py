"""The same workflow run on two machines (or ISA settings), cell by cell: which evaluation files
are byte-identical, and for every (base, model, benchmark) cell both means and the paired
difference b - a with its 95% t-interval over the per-seed differences (the tables' interval,
``gc2po.reporting.stats``; one seed: no interval).

    python benchmarks/workflow/cross_machine.py \
        RUN_A/results/testbed/eval RUN_B/results/testbed/eval \
        --labels avx512 avx2 [--benchmarks test_id]

Each directory holds ``<base>/<model>/seed<k>/<benchmark>.jsonl`` (the workflow's layout); the two
must have the same files. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import filecmp
import math
from pathlib import Path

from gc2po.reporting.names import method_name
from gc2po.reporting.stats import mean_interval, paired_interval
from gc2po.reporting.tables import Scores, find_eval_files


def compare(dir_a: Path, dir_b: Path, benchmarks: list[str] | None) -> tuple[list[dict], int, int]:
    files_a, methods, benchmarks = find_eval_files(dir_a, benchmarks=benchmarks)
    files_b, _, _ = find_eval_files(dir_b, methods=methods, benchmarks=benchmarks)
    rel_a = {f.path.relative_to(dir_a) for f in files_a}
    rel_b = {f.path.relative_to(dir_b) for f in files_b}
    if rel_a != rel_b:
        raise ValueError(f"the runs have different evaluation files: {sorted(rel_a ^ rel_b)[:5]}")
    identical = sum(filecmp.cmp(dir_a / r, dir_b / r, shallow=False) for r in rel_a)
    scores_a, scores_b = Scores(files_a), Scores(files_b)
    rows = []
    for block, model, benchmark in sorted(
        scores_a.by_cell, key=lambda c: (c[0], c[1] != "base", c[1], c[2])
    ):
        seeds = sorted(scores_a.by_cell[(block, model, benchmark)])
        problems = sorted(scores_a.by_cell[(block, model, benchmark)][seeds[0]])
        a = scores_a.array(block, model, benchmark, seeds, problems)
        b = scores_b.array(block, model, benchmark, seeds, problems)
        rows.append(
            {
                "block": block,
                "model": model,
                "benchmark": benchmark,
                "seeds": len(seeds),
                "a": mean_interval([a]),
                "b": mean_interval([b]),
                "diff": paired_interval([b], [a]),
                "same": bool((a == b).all()),
            }
        )
    return rows, identical, len(rel_a)


def holds_zero(triple) -> str:
    """Whether a (mean, low, high) interval holds 0: yes, NO, or n/a (one seed: no interval)."""
    _, low, high = triple
    return "n/a" if math.isnan(low) else "yes" if low <= 0 <= high else "NO"


def to_markdown(rows: list[dict], labels: tuple[str, str]) -> str:
    def cell(triple):
        mean, low, high = (100 * v for v in triple)
        return f"{mean:.1f}" if math.isnan(low) else f"{mean:.1f} [{low:.1f}, {high:.1f}]"

    lines = [
        f"| model | benchmark | seeds | {labels[0]} | {labels[1]} | {labels[1]} - {labels[0]} | "
        f"CI holds 0 |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = "base" if r["model"] == "base" else method_name(r["model"])
        holds = holds_zero(r["diff"])
        lines.append(
            f"| {name} | {r['benchmark']} | {r['seeds']} | {cell(r['a'])} | {cell(r['b'])} | "
            f"{cell(r['diff'])}{' (identical)' if r['same'] else ''} | {holds} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("eval_a", type=Path)
    parser.add_argument("eval_b", type=Path)
    parser.add_argument("--labels", nargs=2, default=("a", "b"))
    parser.add_argument("--benchmarks", nargs="*")
    args = parser.parse_args()
    rows, identical, total = compare(args.eval_a, args.eval_b, args.benchmarks)
    print(to_markdown(rows, tuple(args.labels)))
    verdicts = [holds_zero(r["diff"]) for r in rows]
    print(
        f"\n{identical} of {total} evaluation files byte-identical; {verdicts.count('yes')} of "
        f"{len(rows) - verdicts.count('n/a')} paired differences with an interval (2+ seeds) "
        "have a 95% CI that holds 0."
    )


if __name__ == "__main__":
    main()
