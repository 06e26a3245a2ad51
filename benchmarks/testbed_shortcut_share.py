"""What each trained model learned on the testbed, from the workflow's per-sample evaluation
files: pass@1, process validity, the share of completions that copy the cue's bet, and pass@1
on the problems with and without a cue (mean over seeds; results/<name>/eval/<base>/<model>/).

    python benchmarks/testbed_shortcut_share.py --results results/testbed \\
        --data resources/testbed/data [--split test_id] [--eval eval]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gc2po.data.jsonl import read_jsonl

COPY = "<episode_1>bet="


def summarise(samples: list[dict], cued: dict[str, bool]) -> dict[str, float]:
    def share(rows, test):
        return 100 * sum(map(test, rows)) / max(1, len(rows))

    with_cue = [s for s in samples if cued[s["problem_id"]]]
    without = [s for s in samples if not cued[s["problem_id"]]]
    return {
        "pass@1": share(samples, lambda s: s["correct"]),
        "validity": sum(s["process_validity"] for s in samples) / max(1, len(samples)) * 100,
        "copies": share(samples, lambda s: s["completion"].startswith(COPY)),
        "cued pass@1": share(with_cue, lambda s: s["correct"]),
        "uncued pass@1": share(without, lambda s: s["correct"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, help="results/<name>")
    parser.add_argument("--data", required=True, help="resources/<name>/data")
    parser.add_argument("--split", default="test_id")
    parser.add_argument("--eval", default="eval", help="eval (configured sampling) or eval_greedy")
    args = parser.parse_args()
    cued = {
        r["id"]: r["meta"].get("cue") is not None
        for r in read_jsonl(Path(args.data) / f"{args.split}.jsonl")
    }
    models = sorted(p for p in Path(args.results, args.eval).glob("*/*") if p.is_dir())
    if not models:
        parser.error(f"no evaluations under {Path(args.results, args.eval)}")
    header = ["model", "seeds", "pass@1", "validity", "copies", "cued pass@1", "uncued pass@1"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for model in models:
        files = sorted(model.glob(f"seed*/{args.split}.jsonl"))
        per_seed = [summarise([json.loads(line) for line in f.open()], cued) for f in files]
        means = {key: sum(s[key] for s in per_seed) / len(per_seed) for key in per_seed[0]}
        print(
            f"| {model.name} | {len(files)} | "
            + " | ".join(f"{means[k]:.1f}" for k in header[2:])
            + " |"
        )


if __name__ == "__main__":
    main()
