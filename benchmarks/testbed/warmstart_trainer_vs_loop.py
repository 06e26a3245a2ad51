"""The Trainer warm start against the hand-written loop it replaced (loaded from git history,
its wall-clock cap removed): wall time of short runs, alternated so machine load hits both
alike, and, with --full, final loss and greedy test_id accuracy after the full 752 steps.

    python benchmarks/testbed/warmstart_trainer_vs_loop.py [--steps 100] [--repeats 2] \
        [--full --seeds 0,1]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import gc2po.testbed.warmstart as trainer_version
from gc2po.evaluation.backends import SamplingConfig, TransformersBackend
from gc2po.evaluation.run import evaluate_split
from gc2po.testbed.generator import generate_splits

LOOP_COMMIT = "78901eb"  # the last commit with the hand-written loop


def load_loop_version(scratch: Path):
    source = subprocess.run(
        ["git", "show", f"{LOOP_COMMIT}:gc2po/testbed/warmstart.py"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    ).stdout
    path = scratch / "loop_warmstart.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("loop_warmstart", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["loop_warmstart"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def run(variant, module, problems, out, **config):
    if variant == "loop":
        config["max_seconds"] = float("inf")  # the cap this comparison is about removing
    start = time.perf_counter()
    stats = module.warm_start(problems, out, module.WarmStartConfig(**config), log=lambda *a: None)
    return time.perf_counter() - start, stats


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="steps of each timed short run")
    parser.add_argument("--repeats", type=int, default=2, help="loop/Trainer pairs of short runs")
    parser.add_argument(
        "--full", action="store_true", help="also train 752 steps per seed and evaluate"
    )
    parser.add_argument("--seeds", default="0,1", help="warm-start seeds of the full runs")
    args = parser.parse_args()
    torch.set_num_threads(2)
    splits = generate_splits({"train": 3000, "test_id": 100}, 0)
    with tempfile.TemporaryDirectory() as scratch:
        variants = {"loop": load_loop_version(Path(scratch)), "trainer": trainer_version}
        for repeat in range(args.repeats):
            times = {
                v: run(v, m, splits["train"], Path(scratch) / v, epochs=args.steps / 94)[0]
                for v, m in variants.items()
            }
            print(
                f"{args.steps} steps, pair {repeat}: loop {times['loop']:.1f} s, Trainer "
                f"{times['trainer']:.1f} s, "
                f"Trainer / loop {times['trainer'] / times['loop']:.3f}",
                flush=True,
            )
        for seed in map(int, args.seeds.split(",")) if args.full else []:
            for variant, module in variants.items():
                out = Path(scratch) / f"{variant}_full"
                _, stats = run(variant, module, splits["train"], out, seed=seed)
                greedy = evaluate_split(
                    TransformersBackend.from_pretrained(str(out), batch_size=64),
                    splits["test_id"],
                    SamplingConfig(n=1, temperature=0.0, max_new_tokens=96),
                )
                print(
                    f"seed {seed} {variant}: {stats['steps']} steps, final loss "
                    f"{stats['final_loss']:.3f}, "
                    f"greedy test_id accuracy {greedy['accuracy']:.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
