"""Seeds a comparison needs, from the seed-level spread a study measured: for each pair a, b
and each benchmark (and their Average), the per-seed differences a - b read from a run's
per-sample evaluation files (the comparison tables' pairing: seed s of a minus seed s of b),
their standard deviation, the smallest difference the study's seeds detect, and the seeds
needed to detect ``--delta`` points (paired t-test, ``gc2po.reporting.power``).

    python benchmarks/workflow/seed_power.py --eval-dir results/testbed_study/eval \\
        --pairs grpo,base gc2po,grpo gc2po_add,grpo gc2po_add,gc2po dr_grpo,grpo \\
        [--delta 5] [--alpha 0.05] [--power 0.8]

Prints a Markdown table. Needs 2 or more shared seeds per pair.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gc2po.reporting.comparison import pairs
from gc2po.reporting.names import benchmark_name, method_name
from gc2po.reporting.power import difference_sd, minimal_detectable_difference, seeds_needed
from gc2po.reporting.table_format import signed
from gc2po.reporting.tables import AVERAGE, find_eval_files


def pair_arg(text: str) -> tuple[str, str]:
    a, sep, b = text.partition(",")
    if not sep or not a or not b or "," in b:
        raise argparse.ArgumentTypeError(f"--pairs: expected a,b (two run labels), got {text!r}")
    return a, b


def rows(eval_dir: Path, pair_list, delta: float, alpha: float, power: float) -> list[dict]:
    """One row per (pair, base model, benchmark or Average); delta in points of pass@1."""
    labels = sorted({label for pair in pair_list for label in pair} - {"base"})
    files, _, benchmarks = find_eval_files(eval_dir, methods=labels)
    out = []
    for a, b in pair_list:
        chosen = [f for f in files if f.model in (a, b)]
        for pair in pairs(chosen, a, b, benchmarks):
            if len(pair.seeds) < 2:
                raise ValueError(
                    f"{eval_dir}: {a} and {b} share {len(pair.seeds)} seed ({pair.seeds}) on "
                    f"{pair.block}: a seed-level spread needs at least 2"
                )
            for i, benchmark in enumerate([*benchmarks, AVERAGE]):
                part = slice(i, i + 1) if benchmark != AVERAGE else slice(None)
                differences = 100 * pair.differences(part)  # points
                sd = difference_sd(differences)
                out.append(
                    {
                        "pair": f"{method_name(a)} - {method_name(b)}",
                        "block": pair.block,
                        "benchmark": benchmark_name(benchmark),
                        "seeds": len(pair.seeds),
                        "mean": differences.mean(),
                        "sd": sd,
                        "detectable": minimal_detectable_difference(
                            sd, len(pair.seeds), alpha, power
                        ),
                        "needed": seeds_needed(delta, sd, alpha, power),
                    }
                )
    return out


def to_markdown(table: list[dict], delta: float, alpha: float, power: float) -> str:
    lines = [
        "| pair | base model | benchmark | seeds | mean a - b | sd over seeds | "
        f"detectable with these seeds | seeds for {delta:g} points |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        lines.append(
            f"| {r['pair']} | {r['block']} | {r['benchmark']} | {r['seeds']} | {signed(r['mean'])} "
            f"| {r['sd']:.2f} | {r['detectable']:.1f} | {r['needed']} |"
        )
    lines += [
        "",
        f"Points of pass@1; paired t-test, two-sided, alpha {alpha:g}, power {power:g}; sd: of "
        "the per-seed differences (S - 1 denominator).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval-dir", required=True, type=Path, help="results/<name>/eval")
    parser.add_argument("--pairs", required=True, nargs="+", type=pair_arg, help="a,b ...")
    parser.add_argument("--delta", type=float, default=5.0, help="difference to detect (points)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--power", type=float, default=0.8)
    ns = parser.parse_args()
    if not (ns.delta > 0 and 0 < ns.alpha < ns.power < 1):
        parser.error(
            f"need --delta > 0 and 0 < --alpha < --power < 1, got --delta {ns.delta}, "
            f"--alpha {ns.alpha}, --power {ns.power}"
        )
    table = rows(ns.eval_dir, ns.pairs, ns.delta, ns.alpha, ns.power)
    print(to_markdown(table, ns.delta, ns.alpha, ns.power))


if __name__ == "__main__":
    main()
