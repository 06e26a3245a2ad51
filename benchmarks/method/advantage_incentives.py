"""Incentives of the paper's GC2PO advantage and of the corrected (additive) one on synthetic
groups whose content does not depend on length (docs/method.md quotes its figures).

Each group: K = 8 completions, R_out ~ Bernoulli(0.4), L ~ U{1..6} episodes of U{2..10} tokens,
R_cf = 1.9 + N(0, 0.1) per episode, surprise ~ Exp(1) per token. Reported per form: the
least-squares slopes of the sequence advantage on log T and on L (controlling for R_out and the
mean R_cf), the mean |A| in all-correct groups whose R_cf differs by Monte-Carlo noise only
(sd 0.002; GRPO gives 0), and the 99.9th percentile and max of |A_t|.

    python benchmarks/method/advantage_incentives.py [--groups 2000] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from gc2po.core.advantages import gc2po_token_advantages
from gc2po.core.corrected import additive_token_advantages

K = 8


def group(rng: np.random.Generator, all_correct: bool, cf_sd: float):
    lengths = [rng.integers(2, 11, size=rng.integers(1, 7)) for _ in range(K)]
    width = max(int(n.sum()) for n in lengths)
    ids = torch.full((K, width), -1, dtype=torch.long)
    r_cf = torch.zeros(K, 6, dtype=torch.float64)
    for k, episode_lengths in enumerate(lengths):
        ids[k, : int(episode_lengths.sum())] = torch.repeat_interleave(
            torch.arange(len(episode_lengths)), torch.as_tensor(episode_lengths)
        )
        r_cf[k, : len(episode_lengths)] = torch.as_tensor(
            1.9 + cf_sd * rng.standard_normal(len(episode_lengths))
        )
    r_out = torch.ones(K) if all_correct else torch.as_tensor(rng.random(K) < 0.4).float()
    logps = -torch.as_tensor(rng.exponential(1.0, size=(K, width))).float()
    return r_out, ids, r_cf, logps, ids >= 0


def advantages(form: str, r_out, ids, r_cf, logps, mask):
    """(sequence advantages [K], token advantages [K, T]) of one form."""
    if form == "paper":
        out = gc2po_token_advantages(
            r_out,
            ids,
            r_cf,
            logps,
            mask,
            group_size=K,
            lambda_cf=0.8,
            trunc_frac=0.05,
            adv_clip=10.0,
        )
    else:
        out = additive_token_advantages(
            r_out, ids, r_cf, mask, group_size=K, lambda_cf=0.8, cf_std_floor=0.1, cf_z_clip=3.0
        )
    return out.sequence_advantages.numpy(), out.token_advantages[mask].numpy()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        f"{'form':<10} {'slope log T':>12} {'slope L':>9} {'|A| noise':>10} {'p99.9 |A_t|':>12} "
        f"{'max |A_t|':>10}"
    )
    for form in ("paper", "corrected"):
        rng = np.random.default_rng(args.seed)
        rows, targets, tokens = [], [], []
        for _ in range(args.groups):
            r_out, ids, r_cf, logps, mask = group(rng, all_correct=False, cf_sd=0.1)
            seq, token = advantages(form, r_out, ids, r_cf, logps, mask)
            tokens.append(np.abs(token))
            count = mask.sum(-1).numpy()
            episodes = (ids.max(-1).values + 1).numpy()
            mean_cf = (r_cf.sum(-1) / torch.as_tensor(episodes)).numpy()
            for k in range(K):
                rows.append([1.0, float(r_out[k]), mean_cf[k], np.log(count[k]), episodes[k]])
                targets.append(seq[k])
        coef, *_ = np.linalg.lstsq(np.array(rows), np.array(targets), rcond=None)
        noise = [
            np.abs(advantages(form, *group(rng, all_correct=True, cf_sd=0.002))[0]).mean()
            for _ in range(args.groups // 4)
        ]
        tokens = np.concatenate(tokens)
        print(
            f"{form:<10} {coef[3]:>12.3f} {coef[4]:>9.3f} {np.mean(noise):>10.3f} "
            f"{np.quantile(tokens, 0.999):>12.2f} {tokens.max():>10.2f}"
        )


if __name__ == "__main__":
    main()
