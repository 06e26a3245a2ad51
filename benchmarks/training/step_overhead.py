"""GC2PO's training step against TRL's own GRPO step, on the same random-initialised model and
the same batch.

Model shape: SmolLM2-135M (Llama, hidden 576, 30 layers, 9 heads / 3 KV heads, intermediate
1536, vocab 49,152) by default. Each measurement is one full optimizer step (generation, rewards,
advantages, forward/backward, update) of a fresh trainer from the same initial weights and seed,
so every method sees the identical batch. Methods alternate, ``--repeats`` times; the median is
reported. ``trl_grpo`` is ``trl.GRPOTrainer`` itself with the GRPO settings.

    python benchmarks/training/step_overhead.py [--methods gc2po,trl_grpo] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _training import SHAPES, alternate, build  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="smollm2-135m", choices=sorted(SHAPES))
    parser.add_argument(
        "--methods", default="gc2po,trl_grpo", help="comma-separated method names and/or trl_grpo"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--completion-length", type=int, default=64)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(
        f"shape={args.shape} device={device} torch={torch.__version__} "
        f"threads={torch.get_num_threads()} "
        f"K={args.k} batch={args.batch} completion_length={args.completion_length} "
        f"repeats={args.repeats}"
    )
    variants = args.methods.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        model_dir, data = build(args.shape, workdir)
        results = alternate(
            model_dir,
            data,
            variants,
            repeats=args.repeats,
            steps=1,
            warmup=0,
            k=args.k,
            batch=args.batch,
            completion_length=args.completion_length,
            workdir=workdir,
        )
    for variant, result in results.items():
        runs = ", ".join(f"{t:.2f}" for t in result["times"])
        print(f"{variant:16s} median step {result['median']:.2f} s (runs: {runs})")
    if "trl_grpo" in results:
        for variant in variants:
            if variant != "trl_grpo":
                name = "GC2PO" if variant == "gc2po" else variant
                print(
                    f"{name} / TRL-GRPO: "
                    f"{results[variant]['median'] / results['trl_grpo']['median']:.3f}"
                )


if __name__ == "__main__":
    main()
