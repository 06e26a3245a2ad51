"""Cost of GC2PO's counterfactual reward against one LM-head projection of a training batch.

Qwen2.5-1.5B dimensions (d 1536, V 151,936), 256 episode states, M = 8 perturbations, random
weights. The reference is the LM-head projection of a 256 x 1024-token batch (the logits a
policy forward computes anyway). On CPU that projection (2.6e5 x 1536 x 151,936) takes many
minutes, so it is timed on ``--ref-tokens`` rows and scaled linearly by row count (a matmul's
time is linear in its rows); the printout says so. On a GPU the whole batch is projected in
row chunks.

    python benchmarks/method/counterfactual_cost.py [--device cuda] [--ref-tokens 4096]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _memory import peak_extra_memory  # noqa: E402

from gc2po.core.counterfactual import CounterfactualParams  # noqa: E402


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_projection(weight, tokens, d, device, chunk=4096, repeats=2):
    """Seconds to project ``tokens`` hidden states through ``weight`` (chunked rows)."""
    hidden = torch.randn(min(chunk, tokens), d, device=device, dtype=weight.dtype)
    best = float("inf")
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        done = 0
        while done < tokens:
            rows = min(chunk, tokens - done)
            logits = hidden[:rows] @ weight.T
            del logits
            done += rows
        sync(device)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--d", type=int, default=1536)
    parser.add_argument("--vocab", type=int, default=151_936)
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--batch-tokens", type=int, default=256 * 1024)
    parser.add_argument(
        "--ref-tokens",
        type=int,
        default=None,
        help="rows actually projected for the reference (default: all on GPU, 4096 on CPU)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    dtype = getattr(torch, args.dtype)
    device = args.device
    weight = (torch.randn(args.vocab, args.d, device=device) / args.d**0.5).to(dtype)
    states = torch.randn(args.episodes, args.d, device=device) * 3
    group_index = torch.arange(args.episodes, device=device) // 8
    ref_tokens = args.ref_tokens or (args.batch_tokens if device.startswith("cuda") else 4096)

    print(
        f"device={device} dtype={args.dtype} torch={torch.__version__} "
        f"threads={torch.get_num_threads()}"
    )
    print(f"d={args.d} V={args.vocab} E={args.episodes} M={args.samples}")
    proj = time_projection(weight, ref_tokens, args.d, device)
    proj_full = proj * args.batch_tokens / ref_tokens
    note = (
        ""
        if ref_tokens == args.batch_tokens
        else f" (timed on {ref_tokens} rows, scaled x{args.batch_tokens / ref_tokens:g})"
    )
    print(f"lm_head projection of {args.batch_tokens} tokens: {proj_full:.3f} s{note}")

    for space in ("topk", "vocab"):

        def run(space=space):
            params = CounterfactualParams(
                perturbation=["dropout", "gaussian"],
                num_perturbations=args.samples,
                cf_tau=0.1,
                lambda_exp=0.9,
                lambda_sta=1.0,
                cf_eps_u=1e-6,
                answer_space=space,
                answer_topk=64,
            )
            return params.reward(
                states,
                weight,
                group_index=group_index,
                generator=torch.Generator(device=device).manual_seed(args.seed),
            )

        run()  # warm-up
        _, seconds, extra = peak_extra_memory(run, device)
        print(
            f"answer_space={space}: counterfactual reward {seconds:.3f} s, "
            f"ratio to projection {seconds / proj_full:.4f}, peak extra memory "
            f"{extra / 2**20:.0f} MiB"
        )


if __name__ == "__main__":
    main()
