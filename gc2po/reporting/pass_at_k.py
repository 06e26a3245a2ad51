"""pass@k, parse failures and truncations of one seed's samples: pure functions, no I/O.

pass@k is the unbiased estimator of Chen et al. (2021, "Evaluating Large Language Models Trained
on Code"): from n samples of a problem of which c are correct, the probability that at least one
of k drawn without replacement is correct, ``1 - C(n - c, k) / C(n, k)``, averaged over problems.
At k = 1 it is c / n, so its mean over problems is the pass@1 of the samples.
"""

from __future__ import annotations

import math
from collections import defaultdict


def pass_at_k(n: int, c: int, k: int) -> float:
    """``1 - C(n - c, k) / C(n, k)`` for one problem: n samples, c correct, k drawn (1 <= k <= n,
    0 <= c <= n). Computed as ``1 - prod_{i = n - c + 1}^{n} (1 - k / i)`` (no huge binomials)."""
    if not (isinstance(n, int) and isinstance(c, int) and isinstance(k, int)):
        raise ValueError(f"pass@k: n, c and k must be integers, got {n!r}, {c!r}, {k!r}")
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k}: needs 1 <= k <= n samples per problem, got n = {n}")
    if not 0 <= c <= n:
        raise ValueError(f"pass@k: c = {c} correct of n = {n} samples")
    if n - c < k:  # every draw of k holds a correct sample
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def correct_counts(samples: list[dict]) -> dict[str, tuple[int, int]]:
    """problem id -> (n samples, c correct) of sample records ``{problem_id, correct}`` [N]."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for sample in samples:
        count = counts[str(sample["problem_id"])]
        count[0] += 1
        count[1] += bool(sample["correct"])
    return {problem: (n, c) for problem, (n, c) in counts.items()}


def mean_pass_at_k(samples: list[dict], k: int) -> float:
    """The mean over problems of :func:`pass_at_k` (a fraction); a problem with fewer than k
    samples fails naming it."""
    counts = correct_counts(samples)
    if not counts:
        raise ValueError("pass@k: no samples")
    short = sorted(p for p, (n, _) in counts.items() if n < k)
    if short:
        raise ValueError(
            f"pass@{k}: problem {short[0]} has {counts[short[0]][0]} samples, fewer than k "
            "(evaluate.reasoning.n must be at least every k of evaluate.reasoning.ks)"
        )
    return sum(pass_at_k(n, c, k) for n, c in counts.values()) / len(counts)


def parse_failure_share(samples: list[dict]) -> float:
    """The share of samples with no parseable final answer (``answer`` None: no ``\\boxed{}``
    integer; ``gc2po.testbed.mechanism.cue_fields``)."""
    if not samples:
        raise ValueError("parse failures: no samples")
    return sum(sample["answer"] is None for sample in samples) / len(samples)


def truncation_share(samples: list[dict]) -> float:
    """The share of samples cut by the length limit (``finished`` False: no end-of-sequence or
    stop string within max_new_tokens)."""
    if not samples:
        raise ValueError("truncations: no samples")
    return sum(not sample["finished"] for sample in samples) / len(samples)
