"""The corrected GC2PO's std floor (``cf_std_floor``), measured, and its per-episode signals
audited, on one model's completions of a split (choose on ``train``: the floor is a
hyper-parameter).

For each signal the corrected form can z-score (R_cf at the run's ``cf_state``, the answer
dependence, the oracle's episode validity): its within-problem correlation with episode validity
given f with a 95% bootstrap CI over problems (``gc2po.audit.signals``, the audit rule's
statistic); then, at each floor, how often the floor binds (share of groups whose signal std,
share-weighted as the corrected form computes it, is below the floor) and what share of the
token advantage variance the signal's bonus lambda_cf * z carries (var(bonus) / var(A) over the
completion tokens; about share x rho^2 of it tracks validity, rho being scale-free within a
group). For the answer dependence, its mean by the episode's place (the completion's last
episode or an earlier one) and validity. For R_cf also its Monte-Carlo noise: two independent
perturbation draws, the median within-group std of their difference / sqrt(2) beside the median
group std of R_cf, and the within-group correlation of the two draws (how much of R_cf's spread
in a group is the states', not the noise's). Settings are those a run of the workflow config
trains with (``--run``).

    python benchmarks/method/std_floor.py --model resources/testbed/models/testbed \\
        --data resources/testbed/data/train.jsonl [--problems 300] [--k 8] \\
        [--floors 0.001,0.01,0.1] [--run gc2po_add] [--configfile config/config.yaml ...]
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _testbed import audit_parser, run_settings, sample_groups  # noqa: E402

from gc2po.audit.batch import cf_at, prepare  # noqa: E402
from gc2po.audit.signals import episode_frame, signal_audit, signal_label  # noqa: E402
from gc2po.core.corrected import additive_token_advantages  # noqa: E402
from gc2po.core.signals import within_group_correlation  # noqa: E402
from gc2po.data.jsonl import read_jsonl  # noqa: E402
from gc2po.training.signals import (  # noqa: E402
    answer_dependence,
    answer_token_logps,
    oracle_validity,
    present_episodes,
)


def floor_rows(name, table, batch, f, args, floors, rho) -> list[str]:
    """One markdown row per floor: binding share, bonus share of the advantage variance."""
    rows = []
    for floor in floors:
        result = additive_token_advantages(
            f.double(), batch.episodes.episode_ids, table, batch.mask, group_size=batch.k,
            lambda_cf=args.lambda_cf, cf_std_floor=floor, cf_z_clip=args.cf_z_clip,
        )  # fmt: skip
        tokens = batch.mask
        adv = result.token_advantages[tokens].double()
        bonus = adv - result.outcome_advantages.unsqueeze(-1).expand_as(tokens)[tokens]
        share = float(bonus.var() / adv.var())
        binds = float((result.signal_std[:: batch.k] < floor).double().mean())
        rows.append(
            f"| {name} | {floor:g} | {100 * binds:.1f}% | {100 * share:.2f}% | "
            f"{100 * share * rho**2:.3f}% |"
        )
    return rows


def main() -> None:
    parser = audit_parser(__doc__, seed_help="sampling and noise seed")
    parser.add_argument("--floors", default="0.001,0.01,0.1", help="cf_std_floor values")
    ns = parser.parse_args()
    torch.set_num_threads(2)
    args, audit = run_settings(parser, ns)
    model, tokenizer, problems, generations, prompts = sample_groups(
        ns.model, read_jsonl(ns.data), args, audit, ns.problems
    )
    batch = prepare(model, tokenizer, prompts, generations, args, audit)
    episodes = episode_frame(batch, problems, generations, args, audit, model, tokenizer, cf_at)
    audited = {row["signal"]: row for row in signal_audit(episodes, seed=ns.seed)}
    print(
        f"{ns.model} on {ns.data}: {len(generations)} completions ({ns.problems} problems x "
        f"{ns.k}), {len(episodes)} episodes; settings of run {ns.run!r} (cf_state "
        f"{args.cf_state}, {args.perturbation}, M={args.num_perturbations}, lambda_cf "
        f"{args.lambda_cf}, z clip {args.cf_z_clip})\n"
    )
    print("| signal | rho given f [95% CI over problems] | rho (not given f) | problems |")
    print("|---|---|---|---|")
    for row in audited.values():
        print(
            f"| {signal_label(row['signal'])} | {row['rho']:+.3f} [{row['ci_low']:+.3f}, "
            f"{row['ci_high']:+.3f}] | {row['rho_unconditional']:+.3f} | {row['problems']} |"
        )
    # where the answer dependence comes from: the episode the answer is read from, or validity
    last = episodes.episode == episodes.groupby(["prompt_index", "sample_index"]).episode.transform(
        "max"
    )
    print("\n| answer dependence: mean [median] (episodes) | valid episode | invalid episode |")
    print("|---|---|---|")
    for place, chosen in (("the last of its completion", last), ("an earlier one", ~last)):
        cells = []
        for valid in (1.0, 0.0):
            values = episodes.answer_dependence[chosen & (episodes.valid == valid)]
            cells.append(f"{values.mean():.3f} [{values.median():.3f}] ({len(values)})")
        print(f"| {place} | {cells[0]} | {cells[1]} |")
    row_problems = [problems[g.prompt_index] for g in generations]
    validity, f = oracle_validity(row_problems, batch.episodes, args.max_episodes)
    perturbation = args.counterfactual_params().perturbation
    r_cf = cf_at(batch, args, args.cf_state, perturbation, ns.seed)[1]
    logps_of = functools.partial(
        answer_token_logps, model, pad_id=tokenizer.pad_token_id,
        temperature=args.temperature, batch_size=64,
    )  # fmt: skip
    signals = {
        f"r_cf@{args.cf_state}": widened(r_cf, validity.shape),
        "answer_dependence": answer_dependence(
            logps_of, batch.prompt_ids, batch.completion_ids, batch.episodes
        ),
        "oracle": validity,
    }
    floors = [float(x) for x in ns.floors.split(",")]
    print("\n| signal | cf_std_floor | floor binds (groups) | bonus share of var(A) | x rho^2 |")
    print("|---|---|---|---|---|")
    rho_of = {"oracle": 1.0}  # the oracle's validity is validity
    for name, table in signals.items():
        rho = rho_of.get(name, audited.get(name, {}).get("rho", float("nan")))
        for line in floor_rows(signal_label(name), table, batch, f, args, floors, rho):
            print(line)
    # R_cf's Monte-Carlo noise: a second, independent perturbation draw
    again = cf_at(batch, args, args.cf_state, perturbation, ns.seed + 1)[1]
    rows, slots = present_episodes(batch.episodes, validity.shape[1]).nonzero(as_tuple=True)
    x1, x2 = (widened(t, validity.shape)[rows, slots] for t in (r_cf, again))
    group = rows // ns.k
    frame = pd.DataFrame({"g": group.numpy(), "x": x1.numpy(), "d": ((x1 - x2) / 2**0.5).numpy()})
    spread = frame.groupby("g").x.std(ddof=0).median()
    noise = frame.groupby("g").d.std(ddof=0).median()
    corr, counts = within_group_correlation(x1, x2, torch.zeros_like(group), group, given_f=False)
    defined = torch.isfinite(corr)
    retest = float(np.average(corr[defined].numpy(), weights=counts[defined].numpy()))
    weighted = additive_token_advantages(
        f.double(), batch.episodes.episode_ids, r_cf, batch.mask, group_size=ns.k,
        lambda_cf=args.lambda_cf, cf_std_floor=1e-12, cf_z_clip=args.cf_z_clip,
    ).signal_std[:: ns.k]  # fmt: skip
    print(
        f"\nR_cf at {args.cf_state}, per group (median over {len(weighted)} groups): std "
        f"{float(weighted.median()):.5f} share-weighted as the corrected form computes it, "
        f"{spread:.5f} with episodes counted equally; Monte-Carlo noise std {noise:.5f} (two "
        f"independent perturbation draws); within-group correlation of the two draws "
        f"{retest:+.3f} ({int(defined.sum())} groups)"
    )


def widened(table: torch.Tensor, shape) -> torch.Tensor:
    """A signal table [N, L'] as [N, L] (0 for an episode without a state, as in training)."""
    out = torch.zeros(shape, dtype=torch.float64)
    out[:, : table.shape[1]] = table[:, : shape[1]].double()
    return out


if __name__ == "__main__":
    main()
