"""``gc2po`` command line: train, eval, audit, tables, figures, testbed."""

from __future__ import annotations

import argparse
import sys


def _train(ns):
    from gc2po.run_config import load_run_config, precheck

    run = load_run_config(ns.config, ns.set)
    for flag in ("resume", "overwrite"):
        if getattr(ns, flag):
            run[flag] = True
    precheck(run)  # before torch, transformers and trl are imported: bad input fails within a second
    from gc2po.train import train

    train(run)


def _plan(ns):
    import pandas as pd

    from gc2po.plan import load_config, memory_plan, validate

    config = load_config(ns.configfile)
    validate(config, where=" ".join(ns.configfile or ["config/config.yaml"]))
    table = memory_plan(config, gpu_memory_gib=ns.gpu_memory_gib)
    columns = [c for c in ("base", "run", "method", "seeds", "processes", "per_device_batch", "gradient_accumulation",
                           "sequences_per_step", "prompts_per_step", "zero_stage", "weights_gib", "gradients_gib",
                           "optimizer_gib", "reference_gib", "activations_gib", "vllm_kv_cache_gib", "peak_gib", "fits")
               if c in table.columns]
    with pd.option_context("display.width", 250, "display.max_columns", 40, "display.max_rows", 1000):
        print(table[columns].to_string(index=False))
    if "fits" in table.columns and not table["fits"].fillna(True).all():
        raise ValueError("some training jobs do not fit the GPU memory (fits = False above)")


def _eval(ns):
    import json

    import yaml

    from gc2po.evaluation.cli_eval import run_eval

    try:
        config = yaml.safe_load(open(ns.config)) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"{ns.config}: cannot read eval config: {err}") from err
    summary = run_eval(config, ns.model, ns.benchmark, ns.config)
    print(json.dumps({k: v for k, v in summary.items() if k != "sampling"}, indent=2))


def _audit(ns):
    import json
    from pathlib import Path

    from gc2po.audit import DEFAULT_GRID, AuditConfig, perturbation_study, plot_audit, run_audit
    from gc2po.train import read_jsonl

    config = AuditConfig(k=ns.k, seed=ns.seed, max_new_tokens=ns.max_new_tokens)
    frame, summary = run_audit(ns.model, read_jsonl(ns.data), config, grid=DEFAULT_GRID if ns.study else None,
                               max_problems=ns.problems)
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "completions.csv", index=False)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    plot_audit({Path(ns.model).name: summary}, out / "audit.png")
    if ns.study:
        perturbation_study(frame).to_csv(out / "perturbation_study.csv", index=False)
    print(json.dumps(summary["correlations"], indent=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gc2po", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("train", help="train one run from a run config")
    p.add_argument("--config", required=True, help="run config YAML")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key (trainer.KEY for trainer fields); repeatable")
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint of the same run config")
    p.add_argument("--overwrite", action="store_true", help="start over in a used output_dir (deletes its checkpoints)")
    p.set_defaults(func=_train)
    p = sub.add_parser("plan", help="the training jobs of a workflow config: batch layout and per-GPU memory")
    p.add_argument("--configfile", nargs="+", default=None, metavar="YAML",
                   help="workflow config file(s), merged in order as the Snakefile does (default: config/config.yaml)")
    p.add_argument("--gpu-memory-gib", type=float, default=None, help="GPU memory to plan for (default: 80 GB)")
    p.set_defaults(func=_plan)
    p = sub.add_parser("eval", help="evaluate a model on one benchmark")
    p.add_argument("--config", required=True, help="eval config YAML")
    p.add_argument("--model", required=True, help="model directory or Hub id")
    p.add_argument("--benchmark", required=True, help="benchmark name (gc2po.data.BENCHMARKS)")
    p.set_defaults(func=_eval)
    p = sub.add_parser("audit", help="reward audit of a model on a testbed split (f, p, groups, correlations)")
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True, help="testbed split JSONL")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--k", type=int, default=8, help="completions per problem")
    p.add_argument("--problems", type=int, default=None, help="first N problems")
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--study", action="store_true", help="also run the perturbation study")
    p.set_defaults(func=_audit)
    ns = parser.parse_args(argv)
    try:
        ns.func(ns)
    except (ValueError, OSError) as err:  # bad input: a message, not a traceback
        print(f"gc2po {ns.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
