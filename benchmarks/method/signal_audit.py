"""The signal audit of one model's completions of a split, with the statistics of the bonus
training adds beside the within-problem correlation (``gc2po.audit.signals.signal_audit`` with
the run's group size, std floor and clip: ``gc2po.audit.training_stats``): the workflow's
tables/signal_audit.md for one model, on any split (choose ``train``: it is what the policy
trains on).

    python benchmarks/method/signal_audit.py --model resources/testbed/models/testbed \\
        --data resources/testbed/data/train.jsonl [--problems 300] [--k 8] [--run gc2po_add] \\
        [--configfile config/config.yaml ...] [--episodes-csv FILE | --episodes-from FILE]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _testbed import audit_parser, run_settings, sample_groups  # noqa: E402

from gc2po.audit.batch import cf_at, prepare  # noqa: E402
from gc2po.audit.signals import (  # noqa: E402
    SIGNAL_CAPTION,
    episode_frame,
    signal_audit,
    signal_markdown,
    signal_table,
)
from gc2po.audit.training_stats import BonusTransform  # noqa: E402
from gc2po.data.jsonl import read_jsonl  # noqa: E402


def main() -> None:
    parser = audit_parser(__doc__, seed_help="sampling and noise seed")
    parser.add_argument("--episodes-csv", type=Path, default=None, help="write the episode frame")
    parser.add_argument(
        "--episodes-from",
        type=Path,
        default=None,
        help="audit an episode frame an earlier run wrote (--episodes-csv) instead of sampling",
    )
    ns = parser.parse_args()
    torch.set_num_threads(2)
    args, audit = run_settings(parser, ns)
    start = time.perf_counter()
    if ns.episodes_from:
        episodes = pd.read_csv(ns.episodes_from)
        completions = episodes.groupby(["prompt_index", "sample_index"]).ngroups
        source = f"{ns.episodes_from} ({completions} completions with an episode)"
    else:
        model, tokenizer, problems, generations, prompts = sample_groups(
            ns.model, read_jsonl(ns.data), args, audit, ns.problems
        )
        batch = prepare(model, tokenizer, prompts, generations, args, audit)
        episodes = episode_frame(batch, problems, generations, args, audit, model, tokenizer, cf_at)
        source = f"{len(generations)} completions"
    if ns.episodes_csv:
        episodes.to_csv(ns.episodes_csv, index=False)
    transform = BonusTransform(ns.k, args.cf_std_floor, args.cf_z_clip)
    rows = signal_audit(episodes, seed=ns.seed, transform=transform)
    print(
        f"{ns.model} on {ns.data}: {source} ({episodes.problem_id.nunique()} problems x "
        f"{ns.k}), {len(episodes)} episodes; settings of run {ns.run!r} (cf_state "
        f"{args.cf_state}, cf_std_floor {args.cf_std_floor}, z clip {args.cf_z_clip}); "
        f"{time.perf_counter() - start:.0f} s\n"
    )
    with pd.option_context("display.width", 200):
        print(signal_markdown(signal_table([("base", "0", rows)]), SIGNAL_CAPTION))


if __name__ == "__main__":
    main()
