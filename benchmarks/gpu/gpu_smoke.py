"""GPU smoke test: TRL's GRPO and GC2PO trained alternately from the same random weights and
batch, on a model of a named shape (Qwen2.5-1.5B by default; nothing downloaded).

Per method: median step time, the GC2PO / TRL-GRPO ratio, peak GPU memory, every grad norm
and the number of skipped (non-finite) steps. The first step of each run is a warm-up and is not
timed. On a machine without a GPU it runs on the CPU (use ``--shape tiny``).

    python benchmarks/gpu/gpu_smoke.py [--shape qwen2.5-1.5b] [--steps 11] [--precision bf16-mixed]
        [--beta 0]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _training import SHAPES, alternate, build  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="qwen2.5-1.5b", choices=sorted(SHAPES))
    parser.add_argument(
        "--steps", type=int, default=11, help="steps per run; the first is a warm-up"
    )
    parser.add_argument("--repeats", type=int, default=1, help="alternating runs per method")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument(
        "--batch", type=int, default=64, help="completions per step (batch / K prompts)"
    )
    parser.add_argument("--completion-length", type=int, default=256)
    parser.add_argument(
        "--precision", default=None, help="bf16-mixed (GPU default) | bf16 | fp32 (CPU default)"
    )
    parser.add_argument(
        "--beta",
        type=float,
        default=None,
        help="KL weight for both methods (default: each method's own, GRPO 0 and GC2PO 0.04; "
        "0 compares the two at matched settings)",
    )
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error("--steps must be >= 2 (one warm-up step and at least one timed step)")
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    print(
        f"shape={args.shape} device={device} torch={torch.__version__} steps={args.steps} "
        f"K={args.k} "
        f"batch={args.batch} completion_length={args.completion_length} "
        f"precision={args.precision or 'default'} "
        f"beta={'each method' if args.beta is None else args.beta}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        model_dir, data = build(args.shape, workdir)
        results = alternate(
            model_dir,
            data,
            ["trl_grpo", "gc2po"],
            repeats=args.repeats,
            steps=args.steps,
            warmup=1,
            k=args.k,
            batch=args.batch,
            completion_length=args.completion_length,
            workdir=workdir,
            precision=args.precision,
            beta=args.beta,
        )
    for variant, result in results.items():
        finite = all(math.isfinite(g) for g in result["grad_norms"])
        peak = "n/a (no GPU)" if result["peak_gib"] is None else f"{result['peak_gib']:.2f} GiB"
        print(
            f"{variant:9s} step min {min(result['times']):.3f} median {result['median']:.3f} "
            f"max {max(result['times']):.3f} s over {len(result['times'])} timed steps, "
            f"peak GPU memory {peak}, skipped steps {result['skipped']}, "
            f"grad norms finite: {finite} ({', '.join(f'{g:.3g}' for g in result['grad_norms'])})"
        )
    ratio = results["gc2po"]["median"] / results["trl_grpo"]["median"]
    print(f"GC2PO / TRL-GRPO: {ratio:.3f}")
    return {**results, "ratio": ratio}


if __name__ == "__main__":
    main()
