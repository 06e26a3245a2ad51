"""The form-matched study's calibration on one base model, before any of its runs
(docs/preregistration/form_matched.md, "Calibration"): one sample of k completions per train
problem at the run's temperature, scored as the signal audit scores them; from it

- R_cf's within-problem rho given f at ``result`` and at ``episode_end`` (the noised oracle's and
  the readout control's target is the one at ``result``, R_cf's state in the gated runs);
- lambda* (``gc2po.audit.calibration.lambda_star``) and the weight-matched lambda_cf of R_cf at
  each state (lambda* / rho);
- the readout control's validity weight (``gc2po.audit.calibration.readout_weight``) and the
  spread of per-problem rho of R_cf and of the readout at that weight;
- the share of the base model's copies of the bet whose episodes all parse as equations (a copy
  written in the step grammar: 1 on the copy-as-equation testbed, 0 on the standard one).

Prints them and writes them as JSON (``--out``):

    python benchmarks/method/calibrate_controls.py --model resources/<name>/models/testbed \\
        --data resources/<name>/data/train.jsonl --problems 300 --out calibration.json \\
        [--configfile config/config.yaml config/<overlay>.yaml] [--run <label>]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _testbed import audit_parser, run_settings, sample_groups  # noqa: E402

from gc2po.audit.batch import cf_at, prepare  # noqa: E402
from gc2po.audit.calibration import (  # noqa: E402
    lambda_star,
    mixed_readout,
    readout_rho,
    readout_weight,
    weight_matched_lambda,
)
from gc2po.audit.cue_view import rho_by_cue  # noqa: E402
from gc2po.audit.signals import episode_frame  # noqa: E402
from gc2po.audit.within import weighted_mean, within_problem  # noqa: E402
from gc2po.data.jsonl import read_jsonl  # noqa: E402
from gc2po.training.signals import oracle_validity  # noqa: E402


def main() -> None:
    parser = audit_parser(__doc__, seed_help="sampling seed (the readout's direction: seed 0's)")
    parser.add_argument("--out", type=Path, required=True, help="write the calibration as JSON")
    parser.add_argument("--episodes-csv", type=Path, default=None, help="write the episode frame")
    ns = parser.parse_args()
    torch.set_num_threads(2)
    args, audit = run_settings(parser, ns)
    start = time.perf_counter()
    model, tokenizer, problems, generations, prompts = sample_groups(
        ns.model, read_jsonl(ns.data), args, audit, ns.problems
    )
    batch = prepare(model, tokenizer, prompts, generations, args, audit)
    frame = episode_frame(batch, problems, generations, args, audit, model, tokenizer, cf_at)
    if ns.episodes_csv:
        frame.to_csv(ns.episodes_csv, index=False)
    rho = {
        state: weighted_mean(*within_problem(frame, f"r_cf@{state}"))
        for state in ("result", "episode_end")
    }
    row_problems = [problems[g.prompt_index] for g in generations]
    validity, f = oracle_validity(row_problems, batch.episodes, args.max_episodes)
    completions = frame.groupby(["prompt_index", "sample_index"], sort=False)
    copied = completions["copy"].first()
    copies = torch.zeros(len(generations), dtype=torch.bool)
    for (prompt, sample), value in copied.items():
        copies[prompt * ns.k + sample] = bool(value)
    star, groups = lambda_star(
        f, batch.episodes.episode_ids, validity, batch.mask, copies, group_size=ns.k,
        cf_std_floor=args.cf_std_floor, cf_z_clip=args.cf_z_clip,
    )  # fmt: skip
    weight, reached = readout_weight(frame, rho["result"])
    copy_rows = frame[frame["copy"].astype(bool)]
    equation_copies = copy_rows.groupby(["prompt_index", "sample_index"]).equation.all()
    mixed = frame.assign(readout_mixed=mixed_readout(frame, weight))
    result = {
        "model": str(ns.model),
        "data": str(ns.data),
        "problems": int(frame.problem_id.nunique()),
        "k": ns.k,
        "episodes": len(frame),
        "run": ns.run,
        "rho_result": rho["result"],
        "rho_episode_end": rho["episode_end"],
        "lambda_star": star,
        "lambda_star_groups": groups,
        "lambda_cf_result": weight_matched_lambda(star, rho["result"]),
        "lambda_cf_episode_end": weight_matched_lambda(star, rho["episode_end"]),
        "lambda_cf_oracle": weight_matched_lambda(star, rho["result"]),
        "readout_weight": weight,
        "readout_rho": reached,
        "readout_rho_unmixed": readout_rho(frame, 0.0),
        "rho_sd_r_cf_result": rho_by_cue(frame, "r_cf@result")["rho_sd"],
        "rho_sd_readout": rho_by_cue(mixed, "readout_mixed")["rho_sd"],
        "copies": int(len(equation_copies)),
        "copies_as_equations": float(equation_copies.mean()) if len(equation_copies) else None,
        "seconds": round(time.perf_counter() - start),
    }
    ns.out.write_text(json.dumps(result, indent=2) + "\n")
    for key, value in result.items():
        print(f"{key}: {value:.4f}" if isinstance(value, float) else f"{key}: {value}")


if __name__ == "__main__":
    main()
