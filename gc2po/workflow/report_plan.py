"""The report a workflow config asks for, decided from it: the tables (``table_specs``), the
comparisons and pre-registered families, that every trained method is a row of a table, the
learning-curve files, the length figure's runs and the lambda figure's methods. Pure functions of
the config (and of the methods' roles, ``gc2po.workflow.method_facts``); each bad key raises a
ValueError naming it. ``check`` runs them all, with the benchmarks' (``benchmark_plan``), the
testbed analyses' (``testbed_plan``) and the reasoning table's (``reasoning_plan``) checks, in the
memoised config check (``gc2po.workflow.config_check``); ``workflow/rules/*.smk`` only call them.
"""

from __future__ import annotations

from pathlib import Path

from gc2po.data.tasks import TESTBED
from gc2po.errors import did_you_mean
from gc2po.layout import CurveFile
from gc2po.workflow import plan
from gc2po.workflow.base_models import base_models
from gc2po.workflow.benchmark_plan import check_benchmarks, check_datasets, greedy_benchmarks
from gc2po.workflow.method_facts import Facts, default_sweep_methods
from gc2po.workflow.reasoning_plan import reasoning_settings
from gc2po.workflow.testbed_plan import (
    CANDIDATE_SPLITS,
    audit_reward_run,
    candidate_check,
    decomposition,
    dose_responses,
)

# the length figure's default runs: the reference, the paper's method and the corrected one
LENGTH_ROLES = ("reference", "paper", "corrected")


def _not_runs(key: str, labels, runs) -> None:
    missing = sorted(set(labels) - set(runs))
    if missing:
        raise ValueError(f"{key}: {missing} are not runs of this config")


def table_specs(config: dict) -> dict[str, dict]:
    """Table name -> {methods, benchmarks, title, bases, greedy}: Table 1, generalisation, the
    ablations (when ``report.ablation_methods`` names any), Table 1 greedily
    (``evaluate.greedy``)."""
    report, bases = config["report"], list(base_models(config))
    table1 = report.get("table1_benchmarks") or config["evaluate"]["benchmarks"]

    def spec(methods, benchmarks, title, bases, greedy=False):
        return dict(methods=methods, benchmarks=benchmarks, title=title, bases=bases, greedy=greedy)

    specs = {
        "table1": spec(report["main_methods"], table1, "Pass@1 (%) per benchmark", bases),
        "generalization": spec(
            report["main_methods"],
            report["generalization_benchmarks"],
            "Generalisation: pass@1 (%) on out-of-distribution benchmarks",
            bases,
        ),
    }
    if report["ablation_methods"]:  # a config without ablations has no ablation table
        specs["ablation"] = spec(
            report["ablation_methods"],
            table1,
            "Ablations of GC2PO: pass@1 (%)",
            plan.ablation_bases(config),
        )
    if config["evaluate"].get("greedy", False):
        greedy = greedy_benchmarks(config)
        specs["table1_greedy"] = spec(
            report["main_methods"],
            [b for b in table1 if b in greedy],
            "Pass@1 (%) per benchmark, greedy decoding",
            bases,
            True,
        )
    return specs


def comparisons(config: dict, runs: dict) -> dict[str, tuple[str, str]]:
    """``report.comparisons``: "<a>_vs_<b>" -> (a, b), each a run or the base model."""
    out = {f"{a}_vs_{b}": (a, b) for a, b in config["report"].get("comparisons", [])}
    for label, pair in out.items():
        for method in pair:
            if method != "base" and method not in runs:
                # an overlay that replaces `methods` keeps its base config's comparisons
                raise ValueError(
                    f"report.comparisons: {method!r} ({label}) is not a run of this config"
                    f"{did_you_mean(method, runs)}; list the pairs of the methods it trains "
                    "(`methods`), or `comparisons: []` for none"
                )
    return out


def families(config: dict, runs: dict) -> dict[str, dict]:
    """``report.families`` (a list): "family_<name>" -> its spec, each run and the reference a
    run of the config (or the base model), its split evaluated, its pre-registration file
    present."""
    out = {}
    evaluated = config["evaluate"]["benchmarks"]
    for spec in config["report"].get("families") or []:
        name = spec["name"]
        where = f"report.families.{name}"
        if f"family_{name}" in out:
            raise ValueError(f"{where}: a second family of that name")
        for method in [spec["reference"], *spec["runs"]]:
            if method != "base" and method not in runs:
                # an overlay that replaces `methods` keeps its base config's families
                raise ValueError(
                    f"{where}: {method!r} is not a run of this config{did_you_mean(method, runs)}"
                    "; list the runs it trains, or `families: []` for none"
                )
        if spec["reference"] in spec["runs"]:
            raise ValueError(f"{where}.runs: holds the reference {spec['reference']!r} itself")
        if spec["benchmark"] not in evaluated:
            raise ValueError(
                f"{where}.benchmark: {spec['benchmark']!r} is not evaluated"
                f"{did_you_mean(spec['benchmark'], evaluated)}; evaluate.benchmarks: {evaluated}"
            )
        prereg = spec.get("preregistered")
        if prereg is not None and not Path(prereg).is_file():
            raise ValueError(
                f"{where}.preregistered: {prereg!r} not found (relative to {Path.cwd()})"
            )
        if spec.get("candidates") is not None:
            candidate_check(config, spec, where)
        if spec.get("measure") == "copy_share" and (
            config["mode"] != TESTBED or spec["benchmark"] not in CANDIDATE_SPLITS
        ):
            raise ValueError(
                f"{where}.measure: copy_share reads the testbed's bets: needs mode testbed and a "
                f"benchmark with bets, one of {list(CANDIDATE_SPLITS)}"
            )
        out[f"family_{name}"] = spec
    return out


def reasoning_models(config: dict, runs: dict) -> None:
    """``evaluate.reasoning`` checked (``reasoning_settings``), and each of its ``models`` the
    base model or a run of the config."""
    settings = reasoning_settings(config)
    for model in (settings or {}).get("models") or []:
        if model != "base" and model not in runs:
            raise ValueError(
                f"evaluate.reasoning.models: {model!r} is not a run of this config"
                f"{did_you_mean(model, runs)}; list base or the runs it trains"
            )


def candidate_tables(families: dict[str, dict]) -> dict[str, str]:
    """ "candidates_<name>" -> "family_<name>" for every family with ``candidates``."""
    return {
        f"candidates_{spec['name']}": family
        for family, spec in families.items()
        if spec.get("candidates") is not None
    }


def check_shown(config: dict, runs: dict) -> None:
    """Every method the config trains under its own name (``methods``, ``ablation_methods``) is
    a row of a table (``report.main_methods``: Table 1 and the generalisation table;
    ``report.ablation_methods``: the ablation table), and every row is a run: a trained method
    no table shows would cost its training and evaluation for nothing."""
    report = config["report"]
    for key in ("main_methods", "ablation_methods"):
        for method in report[key]:
            if method not in runs:
                raise ValueError(
                    f"report.{key}: {method!r} is not a run of this config"
                    f"{did_you_mean(method, runs)}; add it to `methods` to train it"
                )
    shown = set(report["main_methods"]) | set(report["ablation_methods"])
    for key in ("methods", "ablation_methods"):
        for method in config.get(key) or []:
            if method not in shown:
                raise ValueError(
                    f"{key}: {method!r} is trained but no table shows it: add it to "
                    "report.main_methods (the rows of Table 1 and the generalisation table)"
                    + (" or report.ablation_methods" if key == "ablation_methods" else "")
                )


def curve_files(config: dict, jobs, out: str) -> dict[tuple[str, str], list[str]]:
    """(base, run) -> one learning-curve CSV per seed (``evaluate.learning_curve.runs``)."""
    curve = config["evaluate"].get("learning_curve")
    if not curve:
        return {}
    files: dict[tuple[str, str], list[str]] = {}
    for job in jobs:
        if job.run in curve["runs"]:
            files.setdefault((job.base, job.run), []).append(
                CurveFile(job.base, job.run, job.seed).path(out)
            )
    _not_runs("evaluate.learning_curve.runs", curve["runs"], {run for _, run in files})
    return files


def length_runs(config: dict, runs: dict, facts: Facts) -> list[str]:
    """``report.length_runs`` (default: the runs of the reference, the paper's and the corrected
    method, those the config trains)."""
    chosen = config["report"].get("length_runs") or [
        label for role in LENGTH_ROLES for label in plan.runs_of_role(runs, facts, role)
    ]
    _not_runs("report.length_runs", chosen, runs)
    return list(chosen)


def figure_sweep_methods(config: dict, facts: Facts) -> list[str]:
    """The methods whose sweeps the lambda figure draws (``sweep_methods``; default: the
    paper's)."""
    return list(config.get("sweep_methods") or default_sweep_methods(facts))


def check_kept_checkpoints(config: dict) -> None:
    """``train.keep_checkpoints: false`` deletes a run's checkpoints when it ends: refused
    beside a key that reads them (the learning curve's kept checkpoints, the audit's
    ``checkpoint-<step>``)."""
    if config["train"].get("keep_checkpoints", True):
        return
    readers = {
        "evaluate.learning_curve": (config["evaluate"].get("learning_curve") or {}).get("runs"),
        "audit.checkpoint_steps": (config.get("audit") or {}).get("checkpoint_steps"),
    }
    for key, value in readers.items():
        if value:
            raise ValueError(
                f"train.keep_checkpoints: false deletes the checkpoints {key} reads ({value}); "
                f"keep them (true, the default) or drop {key}"
            )


def check(config: dict, facts: Facts, measure_splits) -> None:
    """Every check above (ValueError naming the key), before any job runs."""
    check_kept_checkpoints(config)
    check_datasets(config)
    check_benchmarks(config)
    runs = plan.runs(config, facts)
    check_shown(config, runs)
    dose_responses(config, runs, measure_splits)
    greedy_benchmarks(config)
    table_specs(config)
    comparisons(config, runs)
    families(config, runs)
    decomposition(config, runs)
    curve_files(config, plan.training_jobs(config, facts), plan.paths(config)[1])
    length_runs(config, runs, facts)
    audit_reward_run(config, runs, facts)
    reasoning_models(config, runs)
