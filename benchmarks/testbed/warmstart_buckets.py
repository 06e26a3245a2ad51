"""Cost of the testbed warm start's SFT step with random vs length-bucketed batches.

Trains the default config's warm start (``testbed.warm_start`` of ``--config``, on
``--data``) for ``--steps`` steps, once per ``--length-buckets`` setting given, alternating,
and prints each run's wall time of ``warm_start`` (measured, never a limit), its padded-token
share and final loss:

    python benchmarks/testbed/warmstart_buckets.py --data resources/testbed/data/train.jsonl \
        --steps 100 --threads 1 --repeats 2
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time

import yaml

from gc2po.testbed.data import read_split
from gc2po.testbed.warmstart import (
    WarmStartConfig,
    encode_pairs,
    length_bucketed_batches,
    sft_pairs,
    sft_tokenizer,
    warm_start,
)


def example_lengths(problems, config: WarmStartConfig) -> list[int]:
    """Token lengths of the warm start's SFT examples (the same for either batching)."""
    pairs = sft_pairs(problems, config)
    return [len(ids) for ids, _ in encode_pairs(sft_tokenizer(pairs, config), pairs)]


def padded_share(lengths: list[int], config: WarmStartConfig, steps: int) -> float:
    """Padded tokens / real tokens - 1 over the run's batches (random batches: one shuffle per
    epoch, as the Trainer's sampler; the exact draw differs, the share does not by much)."""
    import random

    if config.length_buckets:
        batches = length_bucketed_batches(lengths, config.batch_size, steps, config.seed)
    else:
        rng, batches = random.Random(config.seed), []
        while len(batches) < steps:
            order = list(range(len(lengths)))
            rng.shuffle(order)
            size = config.batch_size
            batches += [order[i : i + size] for i in range(0, len(order), size)]
        batches = batches[:steps]
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    return padded / sum(lengths[i] for b in batches for i in b) - 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--data", required=True, help="a train.jsonl of the testbed")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    settings = yaml.safe_load(open(args.config))["testbed"]["warm_start"]
    problems = read_split(args.data)
    configs = {}
    for buckets in (False, True):
        config = WarmStartConfig.from_mapping(
            {**settings, "num_threads": args.threads, "length_buckets": buckets}
        )
        config.epochs = args.steps / math.ceil(len(problems) / config.batch_size)
        configs[buckets] = config
    lengths = example_lengths(problems, configs[False])
    for repeat in range(args.repeats):
        for buckets, config in configs.items():
            with tempfile.TemporaryDirectory() as out:
                start = time.perf_counter()
                stats = warm_start(problems, out, config, log=lambda *a: None)
                wall = time.perf_counter() - start
            padding = 100 * padded_share(lengths, config, stats["steps"])
            print(
                f"repeat {repeat} length_buckets={buckets}: "
                f"{stats['steps']} steps in {wall:.1f} s, padding {padding:.1f}% of real tokens, "
                f"final loss {stats['final_loss']:.4f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
