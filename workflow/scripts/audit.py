"""Reward audit of one model (and the perturbation study on the base model)."""

import json
from pathlib import Path

import pandas as pd
import torch

from gc2po.audit import DEFAULT_GRID, AuditSampling, perturbation_study, run_audit
from gc2po.data.jsonl import read_jsonl
from gc2po.training.run_config import build_args, load_run_config
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
a = sm.params.audit
with logged(sm) as log:
    torch.set_num_threads(sm.threads)
    run = build_args(load_run_config(sm.input.settings))  # the reward run's resolved settings
    sampling = AuditSampling(
        k=a.get("k", 8),
        seed=int(sm.wildcards.seed),
        max_new_tokens=a.get("max_new_tokens", 96),
        study_draws=a.get("study_draws", 5),
        **({"signal_rhos": tuple(a["signal_rhos"])} if "signal_rhos" in a else {}),
        **({"readout_weights": tuple(a["readout_weights"])} if "readout_weights" in a else {}),
    )
    if not Path(sm.params.model).is_dir():
        raise ValueError(
            f"audit: {sm.params.model} does not exist: audit.checkpoint_steps must name "
            "steps whose "
            "checkpoints the run keeps (train.trainer save_steps and save_total_limit)"
        )
    frame, summary, episodes = run_audit(
        sm.params.model,
        read_jsonl(sm.input.data),
        run,
        sampling,
        grid=DEFAULT_GRID if sm.params.study else None,
        max_problems=a.get("problems"),
    )
    frame.to_csv(sm.output.completions, index=False)
    episodes.to_csv(sm.output.episodes, index=False)
    with open(sm.output.summary, "w") as handle:
        json.dump(summary, handle, indent=1)
    study = perturbation_study(frame) if sm.params.study else pd.DataFrame()
    study.to_csv(sm.output.study, index=False)
    log(json.dumps(summary["correlations"], indent=1))
    log(
        "cor(R_cf, p | f) per cf_state choice, 95% CI over problems:",
        json.dumps(summary["state_choices"], indent=1),
    )
    log("per-episode signals, within problems given f:", json.dumps(summary["signals"], indent=1))
    if sm.params.study:
        log(study.to_string())
