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
    ns = parser.parse_args(argv)
    try:
        ns.func(ns)
    except ValueError as err:
        print(f"gc2po {ns.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
