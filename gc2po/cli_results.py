"""The ``gc2po`` subcommands that evaluate and report (``eval``, ``audit``, ``tables``): each
one's option parser (``add_eval``, ``add_audit``, ``add_tables``, called by
``gc2po.cli.build_parser``) and the function it runs. The training subcommands are in
``gc2po.cli``.
"""

from __future__ import annotations

import json


def _read_yaml(path: str, what: str) -> dict:
    import yaml

    from gc2po.errors import one_line

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

    from gc2po.audit import DEFAULT_GRID, AuditSampling, perturbation_study, plot_audit, run_audit
    from gc2po.audit.signals import SIGNAL_CAPTION, signal_markdown, signal_table
    from gc2po.data.jsonl import read_jsonl
    from gc2po.training.run_config import build_args, load_run_config

    args = build_args(load_run_config(ns.run_config))
    sampling = AuditSampling(
        k=ns.k, seed=ns.seed, max_new_tokens=ns.max_new_tokens, study_draws=ns.study_draws
    )
    frame, summary, episodes = run_audit(
        ns.model,
        read_jsonl(ns.data),
        args,
        sampling,
        grid=DEFAULT_GRID if ns.study else None,
        max_problems=ns.problems,
    )
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "completions.csv", index=False)
    episodes.to_csv(out / "episodes.csv", index=False)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    plot_audit({Path(ns.model).name: summary}, out / "audit.png")
    if ns.study:
        perturbation_study(frame).to_csv(out / "perturbation_study.csv", index=False)
    print(json.dumps(summary["correlations"], indent=1))
    signals = signal_table([(Path(ns.model).name, "-", summary["signals"])])
    (out / "signal_audit.md").write_text(signal_markdown(signals, SIGNAL_CAPTION))
    print(signal_markdown(signals, SIGNAL_CAPTION))


def _tables(ns):
    from pathlib import Path

    from gc2po.reporting.tables import find_eval_files, write_table
    from gc2po.workflow.config_files import load_config
    from gc2po.workflow.plan import display_names

    files, methods, benchmarks = find_eval_files(
        ns.eval_dir, _split(ns.methods), _split(ns.benchmarks)
    )
    names = display_names(load_config(ns.configfile)) if ns.configfile else None
    if ns.paper:  # refused before any table is written
        from gc2po.reporting.paper import check_overlap

        check_overlap((f.block, f.model, f.benchmark) for f in files)
    out = Path(ns.out)
    cells = write_table(
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
    if ns.paper:
        from gc2po.reporting.paper import compare

        print(compare(cells))


def _split(text: str | None) -> list[str] | None:
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def add_eval(sub):
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


def add_audit(sub):
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


def add_tables(sub):
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
    p.add_argument(
        "--paper",
        action="store_true",
        help="also print the paper's Table 1 beside this table: every cell both report, the "
        "paper's number, this run's with its 95%% interval, both gains over the base model, and "
        "whether the paper's falls inside the run's interval (docs/paper-numbers.md)",
    )
    p.set_defaults(func=_tables)
