"""lambda_cf calibrated for the corrected GC2PO's z-scored bonus: on recorded groups (one model's
completions of a split, k per problem, scored by the testbed oracle), the lambda_cf at which the
plain oracle's bonus (episode validity z-scored within the group, the corrected form's floor and
clip) brings a correct copy's sequence advantage to 0 (``gc2po.core.corrected.flip_lambda``).

lambda_cf = 0.8 is the paper's weight on its raw R_cf; on a within-group z-score it means
something else, so it is calibrated here: a copy (the answer is the problem's bet, the steps do
not derive it: ``gc2po.testbed.mechanism.cue_fields``) that is right should lose to a valid
solution once the process signal is trusted, and the flip lambda says from which weight on the
oracle's own signal makes that happen. Per group, the median over its correct copies; the
distribution over the groups that have one is printed (and, for comparison, over every correct
completion with a negative bonus). Settings are those a run of the workflow config trains with.

    python benchmarks/method/lambda_calibration.py --model resources/testbed/models/testbed \\
        --data resources/testbed/data/train.jsonl [--problems 300] [--k 8] \\
        [--run gc2po_add] [--configfile config/config.yaml ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _testbed import audit_parser, run_settings, sample_groups  # noqa: E402

from gc2po.core.corrected import flip_lambda  # noqa: E402
from gc2po.data.jsonl import read_jsonl  # noqa: E402
from gc2po.testbed.mechanism import cue_fields  # noqa: E402
from gc2po.testbed.oracle import grade  # noqa: E402
from gc2po.training.episodes import segment_completions  # noqa: E402
from gc2po.training.signals import oracle_validity  # noqa: E402


def quantiles(values: np.ndarray) -> str:
    if len(values) == 0:
        return "none"
    q = np.quantile(values, [0.1, 0.25, 0.5, 0.75, 0.9])
    return (
        f"median {q[2]:.3f} (IQR {q[1]:.3f} .. {q[3]:.3f}; 10%..90% {q[0]:.3f} .. {q[4]:.3f}; "
        f"n = {len(values)})"
    )


def main() -> None:
    parser = audit_parser(__doc__)
    ns = parser.parse_args()
    torch.set_num_threads(2)
    args, audit = run_settings(parser, ns)
    _, tokenizer, problems, generations, _ = sample_groups(
        ns.model, read_jsonl(ns.data), args, audit, ns.problems
    )
    eos = [tokenizer.eos_token_id]
    ids = [g.token_ids + eos * bool(g.finished) for g in generations]
    width = max(map(len, ids))
    padded = torch.tensor([c + [tokenizer.pad_token_id] * (width - len(c)) for c in ids])
    mask = torch.tensor([[t < len(c) for t in range(width)] for c in ids])
    episodes = segment_completions(tokenizer, padded, mask, args.max_episodes)
    row_problems = [problems[g.prompt_index] for g in generations]
    validity, f = oracle_validity(row_problems, episodes, args.max_episodes)
    found = flip_lambda(
        f.double(), episodes.episode_ids, validity, mask, group_size=ns.k,
        cf_std_floor=args.cf_std_floor, cf_z_clip=args.cf_z_clip,
    )  # fmt: skip
    copies = torch.tensor(
        [
            bool(
                cue_fields(problem, text, grade(problem, text, max_episodes=args.max_episodes).p)[
                    "copies_bet"
                ]
            )
            for problem, text in zip(row_problems, episodes.texts)
        ]
    )
    correct_copy = copies & (f == 1)
    group = torch.arange(len(generations)) // ns.k
    per_group, flipped_groups = [], 0
    for g in range(len(problems)):
        rows = correct_copy & (group == g)
        if not bool(rows.any()):
            continue
        if bool((rows & found.flips).any()):
            flipped_groups += 1
            per_group.append(float(found.lambda_flip[rows & found.flips].median()))
    print(
        f"{ns.model} on {ns.data}: {len(generations)} completions ({ns.problems} problems x "
        f"{ns.k}); settings of run {ns.run!r} (cf_std_floor {args.cf_std_floor}, z clip "
        f"{args.cf_z_clip}, trained lambda_cf {args.lambda_cf}, max_episodes "
        f"{args.max_episodes})\n"
    )
    print(
        f"correct completions {int((f == 1).sum())}, correct copies of the bet "
        f"{int(correct_copy.sum())}, groups with one {len(set(group[correct_copy].tolist()))}; "
        f"groups where the plain oracle's bonus of a correct copy is negative {flipped_groups}\n"
    )
    print("| rows | flip lambda over groups (per group: median over its rows) |")
    print("|---|---|")
    print(f"| correct copies of the bet | {quantiles(np.array(per_group))} |")
    lowered = (f == 1) & found.flips
    every = [
        float(found.lambda_flip[lowered & (group == g)].median())
        for g in range(len(problems))
        if bool((lowered & (group == g)).any())
    ]
    print(f"| every correct completion with a negative bonus | {quantiles(np.array(every))} |")
    if per_group:
        star = float(np.median(per_group))
        print(
            f"\nlambda* (median over groups, correct copies) = {star:.3f}; a sweep around it: "
            f"{[round(x, 2) for x in (0.8, star / 2, star, 1.5 * star)]}"
        )


if __name__ == "__main__":
    main()
