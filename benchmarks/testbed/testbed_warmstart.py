"""Warm-start the testbed's tiny model and measure it: wall time (measured, never a limit),
accuracy per split, and the share of the four groups among 8 samples per problem.

    python benchmarks/testbed/testbed_warmstart.py [--out /tmp/testbed_model] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from gc2po.evaluation.backends import SamplingConfig, TransformersBackend
from gc2po.evaluation.run import evaluate_split
from gc2po.testbed.generator import generate_splits
from gc2po.testbed.warmstart import WarmStartConfig, warm_start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/testbed_model")
    parser.add_argument("--train", type=int, default=3000)
    parser.add_argument("--test", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="torch threads of the warm start (part of its result)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = {
        "train": args.train,
        "test_id": args.test,
        "test_rephrase": args.test,
        "test_distractor": args.test,
        "test_longer": args.test,
    }
    splits = generate_splits(sizes, args.seed)
    start = time.perf_counter()
    stats = warm_start(
        splits["train"],
        args.out,
        WarmStartConfig(seed=args.seed, num_threads=args.threads),
        log=lambda *a: None,
    )
    print(
        f"warm start: {time.perf_counter() - start:.1f} s wall, "
        f"{stats['steps']}/{stats['total_steps']} steps, "
        f"final loss {stats['final_loss']:.3f}, {stats['num_parameters']} parameters"
    )
    backend = TransformersBackend.from_pretrained(args.out, batch_size=64)
    for split in ("test_id", "test_rephrase", "test_distractor", "test_longer"):
        for label, sampling in (
            ("greedy", SamplingConfig(n=1, temperature=0.0, max_new_tokens=96)),
            (
                "sampled T=0.6 n=8",
                SamplingConfig(n=8, temperature=0.6, top_p=0.95, max_new_tokens=96, seed=args.seed),
            ),
        ):
            result = evaluate_split(backend, splits[split][: args.test], sampling)
            print(
                f"{split:16s} {label:18s} accuracy {result['accuracy']:.3f} process validity "
                f"{result['process_validity']:.3f} "
                f"groups {json.dumps({k: round(v, 3) for k, v in result['groups'].items()})}"
            )


if __name__ == "__main__":
    main()
