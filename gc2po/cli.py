"""``gc2po``: train, evaluate and tabulate GC2PO and its baselines (see ``gc2po --help``).

Each subcommand validates its inputs before loading a model; a bad input ends with one line
naming the file, key or option (exit status 2), not a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys


def _train(ns):
    from gc2po.training.run_config import load_run_config, precheck

    run = load_run_config(ns.config, ns.set)
    for flag in ("resume", "overwrite"):
        if getattr(ns, flag):
            run[flag] = True
    precheck(
        run
    )  # before torch, transformers and trl are imported: bad input fails within a second
    from gc2po.training.train import train

    train(run)


def _plan(ns):
    import pandas as pd

    from gc2po.training.config_schema import check_schema
    from gc2po.training.plan import load_config, memory_plan, validate

    config = load_config(ns.configfile)
    check_schema(config, ns.configfile)
    validate(config, where=" ".join(ns.configfile or ["config/config.yaml"]))
    table = memory_plan(config, gpu_memory_gib=ns.gpu_memory_gib)
    columns = [
        c
        for c in (
            "base",
            "run",
            "method",
            "seeds",
            "processes",
            "per_device_batch",
            "gradient_accumulation",
            "sequences_per_step",
            "prompts_per_step",
            "zero_stage",
            "weights_gib",
            "gradients_gib",
            "optimizer_gib",
            "reference_gib",
            "activations_gib",
            "vllm_kv_cache_gib",
            "peak_gib",
            "fits",
        )
        if c in table.columns
    ]
    with pd.option_context(
        "display.width", 250, "display.max_columns", 40, "display.max_rows", 1000
    ):
        print(table[columns].to_string(index=False))
    if "fits" in table.columns and not table["fits"].fillna(True).all():
        raise ValueError("some training jobs do not fit the GPU memory (fits = False above)")


def _read_yaml(path: str, what: str) -> dict:
    import yaml

    from gc2po.training.config_schema import one_line

    try:
        with open(path) as handle:
            return yaml.safe_load(handle) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"{path}: cannot read {what}: {one_line(err)}") from err


def _eval(ns):
    from gc2po.evaluation.cli_eval import run_eval

    summary = run_eval(
        _read_yaml(ns.config, "eval config"),
        ns.model,
        ns.benchmark,
        ns.config,
        base=ns.base,
        run=ns.run,
        seed=ns.seed,
    )
    print(
        json.dumps(
            {
                k: summary[k]
                for k in ("output", "problems", "samples", "pass@1", "pass@1_ci95", "mean_tokens")
            },
            indent=2,
        )
    )


def _audit(ns):
    from pathlib import Path

    from gc2po.audit import DEFAULT_GRID, AuditConfig, perturbation_study, plot_audit, run_audit
    from gc2po.data.jsonl import read_jsonl
    from gc2po.training.run_config import build_args, load_run_config

    args = build_args(load_run_config(ns.run_config))
    config = AuditConfig.from_trainer(
        args, k=ns.k, seed=ns.seed, max_new_tokens=ns.max_new_tokens, study_draws=ns.study_draws
    )
    frame, summary = run_audit(
        ns.model,
        read_jsonl(ns.data),
        config,
        grid=DEFAULT_GRID if ns.study else None,
        max_problems=ns.problems,
    )
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "completions.csv", index=False)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    plot_audit({Path(ns.model).name: summary}, out / "audit.png")
    if ns.study:
        perturbation_study(frame).to_csv(out / "perturbation_study.csv", index=False)
    print(json.dumps(summary["correlations"], indent=1))


def _tables(ns):
    from pathlib import Path

    from gc2po.reporting.tables import find_eval_files, write_table
    from gc2po.training.plan import display_names, load_config

    files, methods, benchmarks = find_eval_files(
        ns.eval_dir, _split(ns.methods), _split(ns.benchmarks)
    )
    names = display_names(load_config(ns.configfile)) if ns.configfile else None
    out = Path(ns.out)
    write_table(
        files,
        methods,
        benchmarks,
        ns.title,
        md=out.with_suffix(".md"),
        tex=out.with_suffix(".tex"),
        csv=out.with_suffix(".csv"),
        html=out.with_suffix(".html"),
        label=out.name,
        names=names,
    )
    print(out.with_suffix(".md").read_text())


def _split(text: str | None) -> list[str] | None:
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def _add_train(sub):
    p = sub.add_parser("train", help="train one run from a run config")
    p.add_argument(
        "--config", required=True, help="run config YAML (config/examples/run_testbed.yaml)"
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key (trainer.KEY for trainer fields); repeatable",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue from the last checkpoint of the same run config",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="start over in a used output_dir (deletes its checkpoints)",
    )
    p.set_defaults(func=_train)


def _add_eval(sub):
    p = sub.add_parser("eval", help="evaluate a model on one benchmark or testbed split")
    p.add_argument("--config", required=True, help="eval config YAML (config/examples/eval_*.yaml)")
    p.add_argument("--model", required=True, help="model folder or Hub id")
    p.add_argument(
        "--benchmark",
        required=True,
        help="benchmark name (gc2po.data.BENCHMARKS) or, with task: testbed, a testbed split",
    )
    p.add_argument(
        "--base",
        help="output key: the base model's label (default: from a workflow checkpoint path "
        "runs/<base>/<run>/seed<k>/final, else the model's name)",
    )
    p.add_argument(
        "--run", help="output key: the run's label (default: from the checkpoint path, else 'base')"
    )
    p.add_argument(
        "--seed",
        type=int,
        help="sampling seed and output key (default: sampling.seed of the config, or 0)",
    )
    p.set_defaults(func=_eval)


def _add_audit(sub):
    p = sub.add_parser(
        "audit", help="reward audit of a model on a testbed split (f, p, groups, correlations)"
    )
    p.add_argument("--model", required=True, help="model folder (a testbed model)")
    p.add_argument("--data", required=True, help="testbed split JSONL")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument(
        "--run-config",
        required=True,
        help="run.yaml of the run whose R_cf settings score the completions "
        "(perturbation, cf_state, lambdas; e.g. results/<name>/runs/<base>/<run>/seed0/run.yaml)",
    )
    p.add_argument("--k", type=int, default=8, help="completions per problem (default 8)")
    p.add_argument(
        "--problems", type=int, default=None, help="audit the first N problems (default: all)"
    )
    p.add_argument(
        "--max-new-tokens", type=int, default=96, help="completion length limit (default 96)"
    )
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--study", action="store_true", help="also run the perturbation study")
    p.add_argument(
        "--study-draws",
        type=int,
        default=5,
        help="independent noise draws per setting of the study (default 5)",
    )
    p.set_defaults(func=_audit)


def _add_plan(sub):
    p = sub.add_parser(
        "plan", help="the training jobs of a workflow config: batch layout and per-GPU memory"
    )
    p.add_argument(
        "--configfile",
        nargs="+",
        default=None,
        metavar="YAML",
        help="workflow config file(s), merged in order as the Snakefile does (default: "
        "config/config.yaml)",
    )
    p.add_argument(
        "--gpu-memory-gib", type=float, default=None, help="GPU memory to plan for (default: 80 GB)"
    )
    p.set_defaults(func=_plan)


def _add_tables(sub):
    p = sub.add_parser(
        "tables", help="write a table (Markdown, LaTeX, CSV, HTML) from evaluation files"
    )
    p.add_argument(
        "--eval-dir",
        required=True,
        help="folder of evaluations laid out <base>/<run>/seed<k>/<benchmark>.jsonl (gc2po eval's "
        "output_dir, or results/<name>/eval of the workflow)",
    )
    p.add_argument(
        "--out", required=True, help="output path without extension, e.g. results/tables/table1"
    )
    p.add_argument(
        "--methods",
        help="comma-separated runs to list (default: every run found, in the paper's order)",
    )
    p.add_argument(
        "--benchmarks",
        help="comma-separated benchmarks, in column order (default: every one found)",
    )
    p.add_argument("--title", default="Pass@1 (%) per benchmark", help="table title")
    p.add_argument(
        "--configfile",
        nargs="+",
        default=None,
        metavar="YAML",
        help="the workflow config(s) that planned the runs, which names the runs "
        "outside the method registry (lambda sweeps, variants; else: their labels)",
    )
    p.set_defaults(func=_tables)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gc2po", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_train, _add_plan, _add_eval, _add_audit, _add_tables):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    try:
        ns.func(ns)
    except (ValueError, OSError) as err:  # bad input: a message, not a traceback
        print(f"gc2po {ns.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
