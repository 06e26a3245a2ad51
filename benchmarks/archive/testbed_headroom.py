"""The testbed's headroom before RL: pass@1 and pass@k of a model on a split at one temperature,
with the share of completions that copy the cue's bet and their accuracy on cued and uncued
problems (the shortcut RL can learn, gc2po.testbed.generator).

pass@k is the unbiased estimator of Chen et al. (2021) from n >= k samples per problem:
1 - C(n - c, k) / C(n, k), averaged over problems; pass@1 is the mean correctness.

    python benchmarks/archive/testbed_headroom.py --model resources/testbed/models/testbed \\
        --data resources/testbed/data/test_id.jsonl [--n 16] [--k 8] [--temperature 1.0]
"""

from __future__ import annotations

import sys
from collections import defaultdict
from math import comb
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _testbed import testbed_parser  # noqa: E402

from gc2po.data.jsonl import read_jsonl  # noqa: E402
from gc2po.evaluation.backends import SamplingConfig, TransformersBackend  # noqa: E402
from gc2po.evaluation.run import generate_and_grade  # noqa: E402


def pass_at_k(n: int, c: int, k: int) -> float:
    return 1.0 if n - c < k else 1.0 - comb(n - c, k) / comb(n, k)


def main() -> None:
    parser = testbed_parser(__doc__, n=16, k=8, temperature=1.0, max_new_tokens=96, seed=0)
    args = parser.parse_args()
    if args.n < args.k:
        parser.error(f"--n ({args.n}) must be at least --k ({args.k})")
    torch.set_num_threads(1)
    records = read_jsonl(args.data)
    backend = TransformersBackend.from_pretrained(args.model, batch_size=128)
    sampling = SamplingConfig(
        n=args.n,
        temperature=args.temperature,
        top_p=1.0,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
    )
    _, samples = generate_and_grade(backend, records, "testbed", sampling)
    cued = {r["id"]: r["meta"].get("cue") is not None for r in records}
    correct = defaultdict(int)
    for s in samples:
        correct[s["problem_id"]] += int(s["correct"])
    copies = [s for s in samples if s["completion"].startswith("<episode_1>bet=")]
    print(
        f"{args.model} on {args.data}: {len(records)} problems x {args.n} samples, "
        f"temperature {args.temperature}"
    )
    print(
        f"pass@1 {100 * sum(correct.values()) / len(samples):.1f}%  "
        f"pass@{args.k} "
        f"{100 * sum(pass_at_k(args.n, c, args.k) for c in correct.values()) / len(records):.1f}%"
    )
    print(
        "process validity "
        f"{100 * sum(s['process_validity'] for s in samples) / len(samples):.1f}%  "
        f"copies of the bet {100 * len(copies) / len(samples):.1f}% of completions "
        f"(correct {100 * sum(s['correct'] for s in copies) / max(1, len(copies)):.1f}%)"
    )
    for label, want in (("cued", True), ("uncued", False)):
        part = [s for s in samples if cued[s["problem_id"]] is want]
        if part:
            copied = sum(s["completion"].startswith("<episode_1>bet=") for s in part)
            print(
                f"{label} problems: {len(part) // args.n}, pass@1 "
                f"{100 * sum(s['correct'] for s in part) / len(part):.1f}%, "
                f"copies {100 * copied / len(part):.1f}%"
            )


if __name__ == "__main__":
    main()
