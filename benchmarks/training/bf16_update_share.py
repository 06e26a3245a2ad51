"""Share of weights that one AdamW step at lr 1e-6 leaves unchanged: pure bf16 weights against
bf16-mixed (fp32 master weights, what DeepSpeed and accelerate's mixed precision keep).

A random-initialised model of SmolLM2-135M's shape gets one real gradient (next-token loss on
random tokens); the same gradient then drives one AdamW step (lr 1e-6, weight decay 0.01) of
(a) the model in bf16 and (b) its fp32 master weights. bf16 keeps 8 bits of mantissa, so an
update below half the spacing of a weight (|w| 2^-9) rounds to nothing: Adam's first step moves
each weight by about lr, which is below that for every |w| above ~5e-4.

    python benchmarks/training/bf16_update_share.py [--shape smollm2-135m] [--lr 1e-6]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _training import SHAPES  # noqa: E402


def unchanged_share(before: list[torch.Tensor], after: list[torch.Tensor]) -> float:
    same = sum(int((a == b).sum()) for a, b in zip(before, after))
    return same / sum(a.numel() for a in before)


def main(argv: list[str] | None = None) -> dict:
    from gc2po.models.build import build_causal_lm, synthetic_tokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="smollm2-135m", choices=sorted(SHAPES))
    parser.add_argument("--lr", type=float, default=1e-6)
    args = parser.parse_args(argv)
    architecture, hidden, layers, heads, kv_heads, intermediate, vocab, tied = SHAPES[args.shape]
    model = build_causal_lm(
        synthetic_tokenizer(vocab),
        architecture=architecture,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        intermediate_size=intermediate,
        tie_word_embeddings=tied,
        seed=0,
    )
    tokens = torch.randint(0, vocab, (4, 128), generator=torch.Generator().manual_seed(0))
    model(input_ids=tokens, labels=tokens).loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    grads = [p.grad.detach().clone() for p in params]

    results = {}
    for name, dtype in (("bf16", torch.bfloat16), ("bf16-mixed", torch.float32)):
        weights = [torch.nn.Parameter(p.detach().to(dtype).clone()) for p in params]
        for w, g in zip(weights, grads):
            w.grad = g.to(dtype)
        before = [w.detach().clone() for w in weights]
        torch.optim.AdamW(weights, lr=args.lr, weight_decay=0.01).step()
        results[name] = unchanged_share(before, [w.detach() for w in weights])
        if name == "bf16-mixed":  # what the bf16 forward pass then sees, after this one step
            results["bf16-mixed (bf16 view)"] = unchanged_share(
                [b.bfloat16() for b in before], [w.detach().bfloat16() for w in weights]
            )
    total = sum(p.numel() for p in params)
    print(f"shape={args.shape} parameters={total:,} lr={args.lr} torch={torch.__version__}")
    print(f"pure bf16 weights: {100 * results['bf16']:.1f}% of parameters unchanged by the step")
    print(f"bf16-mixed (fp32 master weights): {100 * results['bf16-mixed']:.1f}% unchanged")
    print(
        f"bf16-mixed, bf16 view after one step: {100 * results['bf16-mixed (bf16 view)']:.1f}% "
        "unchanged "
        "(the fp32 masters keep the update, so later steps accumulate past the bf16 spacing)"
    )
    return results


if __name__ == "__main__":
    main()
