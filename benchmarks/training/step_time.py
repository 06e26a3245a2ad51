"""Time of one testbed training step (16 prompts x 8 completions), where it goes, and the ratio of
the step with ``gc2po.models.sampling`` (``fast_generation: true``, the default) to the step
through TRL's ``generate`` call (``fast_generation: false``), in one run.

Settings are the default's, read from config/config.yaml ``train.trainer`` (max_completion_length
64, temperature 1.0, K = 8, its learning rate and R_cf perturbation), with
per_device_train_batch_size 128 (16 prompts x 8), on CPU with ``--threads`` torch threads (the
workflow's train rule uses 1). Each measurement trains a fresh trainer from the same weights and
seed for ``--steps`` steps; the first step of each is not timed. Paths alternate (which goes
first alternates too), so machine load hits both alike. Both paths must log identical losses,
rewards and gradient norms; the script checks it.

The model is ``--model`` (a saved testbed model, e.g. a warm start) or, by default, a random
model of the testbed shape (Llama, hidden 128, 3 layers, 4 heads, vocab 400, ~0.85M parameters)
with a tokenizer trained on testbed problems: it writes full-length completions, a worst case.

    OMP_NUM_THREADS=1 python benchmarks/training/step_time.py [--model DIR] [--methods grpo,gc2po]
        [--repeats 3] [--steps 3]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _rl_step import NESTED, PhaseTimer, random_testbed_model, run, train_file  # noqa: E402

PATHS = {"old": False, "new": True}  # fast_generation


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", type=Path, help="a saved testbed model (default: random weights)"
    )
    parser.add_argument("--methods", default="grpo,gc2po")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--steps", type=int, default=3, help="steps per trainer (the first is not timed)"
    )
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    phases = PhaseTimer()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        model_dir = args.model or random_testbed_model(workdir)
        data = train_file(workdir)
        print(
            f"model={args.model or 'random testbed shape'} threads={args.threads} "
            f"torch={torch.__version__} 16 prompts x 8, max_completion_length 64, "
            f"repeats={args.repeats}"
        )
        times = collections.defaultdict(list)
        logs = {}
        for repeat in range(args.repeats):
            for method in args.methods.split(","):
                order = list(PATHS) if repeat % 2 == 0 else list(PATHS)[::-1]
                for path in order:
                    label = (method, path)
                    step_times, logged = run(
                        model_dir, data, method, PATHS[path], args.steps, workdir, phases, label
                    )
                    times[label] += step_times
                    logs.setdefault(label, logged)
    for method in args.methods.split(","):
        same = logs[(method, "old")] == logs[(method, "new")]
        print(
            f"\n{method}: identical losses, rewards, grad norms and lengths on both paths: {same}"
        )
        for path in PATHS:
            values = times[(method, path)]
            print(
                f"  {path} ({'fast_generation' if PATHS[path] else 'TRL generate'}): "
                f"step min {min(values):.2f} median {statistics.median(values):.2f} "
                f"max {max(values):.2f} s over {len(values)} steps"
            )
        ratio = statistics.median(times[(method, "new")]) / statistics.median(
            times[(method, "old")]
        )
        fastest = min(times[(method, "new")]) / min(times[(method, "old")])
        print(f"  ratio new/old: medians {ratio:.2f}, minima {fastest:.2f}")
        generation = [phases.seconds[((method, path), "generation")] for path in PATHS]
        print(f"  generation time new/old (timed steps): {generation[1] / generation[0]:.2f}")
        print("  phase shares of the step (mean s/step, share of the mean step):")
        for path in PATHS:
            mean = statistics.mean(times[(method, path)])
            count = len(times[(method, path)])
            parts = {k[1]: v / count for k, v in phases.seconds.items() if k[0] == (method, path)}
            inside = sum(
                v for k, v in parts.items() if k != NESTED
            )  # R_cf runs inside the loss forward
            parts["rest (TRL bookkeeping, data, logging)"] = mean - inside
            text = ", ".join(
                f"{name} {sec:.2f} ({100 * sec / mean:.0f}%)"
                for name, sec in sorted(parts.items(), key=lambda kv: -kv[1])
            )
            print(f"    {path}: {mean:.2f} s = {text}")


if __name__ == "__main__":
    main()
