"""``gc2po``: train, evaluate and tabulate GC2PO and its baselines (see ``gc2po --help``).

Each subcommand validates its inputs before loading a model; a bad input ends with one line
naming the file, key or option (exit status 2), not a traceback. The training subcommands
(``train``, ``plan``) and ``methods`` (the registry) are here, those that evaluate and report
in ``gc2po.cli_results``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from gc2po.cli_results import add_audit, add_eval, add_tables

# what `gc2po --help` says: plain text (the module docstring is for readers of the source)
DESCRIPTION = (
    "Train, evaluate and tabulate GC2PO and its baselines. Run 'gc2po COMMAND --help' for a "
    "command's options; docs/cli.md has examples and the workflow (snakemake) runs them all."
)


def _train(ns):
    from gc2po.training.run_config import load_run_config, precheck

    run = load_run_config(ns.config, ns.set)
    for flag in ("resume", "overwrite"):
        if getattr(ns, flag):
            run[flag] = True
    precheck(
        run
    )  # before torch, transformers and trl are imported: bad input fails within a second
    from gc2po.training.train import exit_launched_process, train

    train(run)
    exit_launched_process(0)  # under accelerate launch: exit 0 without interpreter teardown


def _plan(ns):
    from gc2po.workflow.config_check import check_plannable
    from gc2po.workflow.config_files import load_config
    from gc2po.workflow.plan_summary import print_plan

    config = load_config(ns.configfile)
    check_plannable(config, ns.configfile)
    print_plan(config, ns.gpu_memory_gib)


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
        "--gpu-memory-gib",
        type=float,
        default=None,
        help="GPU memory to plan for, GiB (default: the config's train.gpu_memory_gib, else 79: "
        "an 80 GB GPU)",
    )
    p.set_defaults(func=_plan)


def version() -> str:
    """``gc2po <version>``, and the git revision where the package runs from a checkout (the
    revision the evaluation files record as their provenance)."""
    from gc2po.evaluation.provenance import git_revision, package_version

    text = f"gc2po {package_version('gc2po') or 'unknown'}"
    git = git_revision()
    if git["revision"]:
        text += f" (git {git['revision'][:12]}{', uncommitted changes' if git['dirty'] else ''})"
    return text


def method_lines(method) -> list[str]:
    """What ``gc2po methods`` prints of one registered method."""
    lines = [
        f"{method.name}: {method.display_name}   [role: {method.role}, order {method.order}]",
        f"  {method.summary}",
        f"  fidelity: {method.fidelity}",
    ]
    if method.settings is None:
        lines.append("  settings: none of its own")
    else:  # trainer.method_args of a run config (train.per_method.<name>.method_args)
        fields = dataclasses.fields(method.settings)
        shown = ", ".join(f"{f.name}={f.default!r}" for f in fields)
        lines.append(f"  settings (method_args): {shown}")
    if method.signal_from_config:  # a form: its signal is a trainer setting
        from gc2po.training.signals import SIGNALS

        lines.append(
            f"  signal (trainer.cf_signal): one of {', '.join(SIGNALS)} (default r_cf); "
            "cf_signal_rho (in (0, 1]) noises the oracle"
        )
    elif method.preset_of is not None:
        lines.append(f"  preset of {method.preset_of} with cf_signal: {method.fixed['cf_signal']}")
    if method.sweeps:
        lines.append(f"  sweeps: {', '.join(method.sweeps)}")
    return lines


def _methods(ns):
    from gc2po.errors import did_you_mean
    from gc2po.methods import METHODS

    unknown = [name for name in ns.names if name not in METHODS]
    if unknown:
        raise ValueError(
            f"unknown method {unknown[0]!r}{did_you_mean(unknown[0], METHODS)}; "
            f"valid: {sorted(METHODS)}"
        )
    chosen = ns.names or sorted(METHODS, key=lambda name: METHODS[name].order)
    print("\n\n".join("\n".join(method_lines(METHODS[name])) for name in chosen))


def _add_methods(sub):
    p = sub.add_parser(
        "methods",
        help="the registered training methods: display name, fidelity note and settings",
    )
    p.add_argument("names", nargs="*", help="only these methods (default: every one)")
    p.set_defaults(func=_methods)


class _Version(argparse.Action):
    """--version: computed when asked (git runs only then)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gc2po", description=DESCRIPTION)
    parser.add_argument(
        "--version", action=_Version, help="the package version (and git revision) and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_train, _add_plan, _add_methods, add_eval, add_audit, add_tables):
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
