"""``gc2po`` command line: train, eval, audit, tables, figures, testbed."""

from __future__ import annotations

import argparse
import sys


def _train(ns):
    from gc2po.train import load_run_config, train

    train(load_run_config(ns.config, ns.set))


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
    p.set_defaults(func=_train)
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
    except ValueError as err:
        print(f"gc2po {ns.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
