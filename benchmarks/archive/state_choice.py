"""Which token's state should R_cf read (``cf_state``)? For one model and split, cor(R_cf, p | f)
(the partial correlation of a completion's mean R_cf with the oracle's process validity, given
correctness) at every choice of ``gc2po.training.episode_states.STATE_CHOICES``, with a 95%
bootstrap CI over problems. R_cf is computed with the settings a run of the workflow config
trains with (its resolved ``GC2POConfig``: perturbation, M, tau, lambdas, top-k), not with
restated defaults.

Choose on the ``train`` split, not on a test split: the choice is a hyper-parameter.

    python benchmarks/archive/state_choice.py --model resources/testbed/models/testbed \\
        --data resources/testbed/data/train.jsonl [--problems 300] [--k 8] [--run gc2po_add] \\
        [--configfile config/config.yaml ...]
"""

from __future__ import annotations

import argparse

import torch

from gc2po.audit import AuditSampling, run_audit
from gc2po.data.jsonl import read_jsonl
from gc2po.training.run_config import build_args
from gc2po.workflow.config_files import load_config
from gc2po.workflow.plan import training_jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="model folder")
    parser.add_argument("--data", required=True, help="testbed split JSONL")
    parser.add_argument("--problems", type=int, default=300, help="first N problems of the split")
    parser.add_argument("--k", type=int, default=8, help="completions per problem")
    parser.add_argument("--seed", type=int, default=0, help="sampling and noise seed")
    parser.add_argument("--run", default="gc2po_add", help="the run whose R_cf settings are used")
    parser.add_argument(
        "--configfile", nargs="+", default=None, help="workflow config(s), in order"
    )
    ns = parser.parse_args()
    torch.set_num_threads(2)
    config = load_config(ns.configfile)
    job = next((j for j in training_jobs(config) if j.run == ns.run), None)
    if job is None:
        parser.error(f"--run {ns.run!r} is not a run of the config")
    args = build_args(job.run_config(config))
    sampling = AuditSampling(k=ns.k, seed=ns.seed)
    records = read_jsonl(ns.data)
    summary = run_audit(ns.model, records, args, sampling, max_problems=ns.problems).summary
    print(
        f"{ns.model} on {ns.data}: {summary['completions']} completions "
        f"({ns.problems} problems x {ns.k}), R_cf settings of run {ns.run!r} "
        f"({args.perturbation}, M={args.num_perturbations}, top-k {args.answer_topk})"
    )
    print("| cf_state | cor(R_cf, p given f) [95% CI] | cor(R_cf, p) |")
    print("|---|---|---|")
    for choice, row in summary["state_choices"].items():
        print(
            f"| {choice} | {row['partial_p_given_f']:+.3f} [{row['ci_low']:+.3f}, "
            f"{row['ci_high']:+.3f}] | {row['pearson_p']:+.3f} |"
        )


if __name__ == "__main__":
    main()
