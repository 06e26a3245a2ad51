"""What the workflow's rules wire beyond the training jobs, decided from the config: the tables
(``table_specs``), the greedily evaluated benchmarks, the comparisons and pre-registered
families, the learning-curve files,
the length figure's runs, the audit's reward run, the mechanism tables and the dose-responses.
Pure functions of the config (and of the
methods' roles, ``gc2po.workflow.method_facts``); each bad key raises a ValueError naming it.
``check`` runs them all with the memoised config check (``gc2po.workflow.config_check``);
``workflow/rules/*.smk`` only call them.
"""

from __future__ import annotations

from pathlib import Path

from gc2po.data.tasks import TESTBED
from gc2po.errors import did_you_mean
from gc2po.layout import CurveFile
from gc2po.workflow import plan
from gc2po.workflow.method_facts import Facts, default_sweep_methods
from gc2po.workflow.reasoning_plan import reasoning_settings

# the length figure's default runs: the reference, the paper's method and the corrected one
LENGTH_ROLES = ("reference", "paper", "corrected")
AUDIT_ROLES = ("corrected", "paper")  # the audit's default reward run: the first trained


def _not_runs(key: str, labels, runs) -> None:
    missing = sorted(set(labels) - set(runs))
    if missing:
        raise ValueError(f"{key}: {missing} are not runs of this config")


def _runs_of_role(runs: dict, facts: Facts, role: str) -> list[str]:
    """Runs of a method of ``role`` trained under its own name (not a sweep's or variant's)."""
    return [
        label
        for label, run in runs.items()
        if run.method == label and facts.get(run.method, {}).get("role") == role
    ]


def greedy_benchmarks(config: dict) -> list[str]:
    """``evaluate.greedy_benchmarks`` (default: every evaluated benchmark)."""
    benchmarks = config["evaluate"]["benchmarks"]
    greedy = config["evaluate"].get("greedy_benchmarks") or benchmarks
    extra = sorted(set(greedy) - set(benchmarks))
    if extra:
        raise ValueError(
            f"evaluate.greedy_benchmarks: {extra} are not evaluated (evaluate.benchmarks)"
        )
    return list(greedy)


def table_specs(config: dict) -> dict[str, dict]:
    """Table name -> {methods, benchmarks, title, bases, greedy}: Table 1, generalisation, the
    ablations (when ``report.ablation_methods`` names any), Table 1 greedily
    (``evaluate.greedy``)."""
    report, bases = config["report"], list(plan.base_models(config))
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


DECOMPOSITION_SPLIT = "test_wrongbet"  # every bet wrong: a copy is a wrong answer


def decomposition(config: dict, runs: dict) -> str | None:
    """``report.decomposition``'s reference run, checked (None: no decomposition table): the
    testbed, the wrong-bet split evaluated, the reference a run of the config."""
    spec = config["report"].get("decomposition")
    if spec is None:
        return None
    where = "report.decomposition"
    if config["mode"] != TESTBED:
        raise ValueError(f"{where}: needs mode testbed (the wrong-bet split's bets)")
    if DECOMPOSITION_SPLIT not in config["evaluate"]["benchmarks"]:
        raise ValueError(f"{where}: evaluate.benchmarks lacks {DECOMPOSITION_SPLIT}")
    if spec["reference"] not in runs:
        raise ValueError(
            f"{where}.reference: {spec['reference']!r} is not a run of this config"
            f"{did_you_mean(spec['reference'], runs)}"
        )
    return spec["reference"]


CANDIDATE_SPLITS = ("test_id", "test_wrongbet")  # the mechanism measures the rule reads


def candidate_check(config: dict, spec: dict, where: str) -> None:
    """A family's ``candidates`` reads the mechanism table: the testbed, test_id (uncued pass@1)
    and a split with a copy share."""
    if config["mode"] != TESTBED:
        raise ValueError(f"{where}.candidates: needs mode testbed (the mechanism measures)")
    if "test_id" not in config["evaluate"]["benchmarks"]:  # the family's own split is checked above
        raise ValueError(f"{where}.candidates: evaluate.benchmarks lacks test_id (uncued pass@1)")
    if spec["benchmark"] not in CANDIDATE_SPLITS:
        raise ValueError(
            f"{where}.candidates: the family's benchmark {spec['benchmark']!r} has no copy "
            f"share; one of {list(CANDIDATE_SPLITS)}"
        )


def candidate_tables(families: dict[str, dict]) -> dict[str, str]:
    """ "candidates_<name>" -> "family_<name>" for every family with ``candidates``."""
    return {
        f"candidates_{spec['name']}": family
        for family, spec in families.items()
        if spec.get("candidates") is not None
    }


def known_benchmarks(config: dict) -> list[str]:
    """What ``evaluate.benchmarks`` may name: the testbed's test splits (mode testbed), else the
    config's ``datasets`` keys."""
    if config["mode"] == TESTBED:
        from gc2po.testbed.generator import SPLITS

        return [split for split in SPLITS if split != "train"]
    return list(config.get("datasets") or {})


def check_benchmarks(config: dict) -> None:
    """Every benchmark name is one the config can evaluate (``evaluate.benchmarks``: a testbed
    split or a ``datasets`` key), and every other key's are evaluated; a misspelt one gets the
    closest name."""
    evaluate, report = config["evaluate"], config["report"]
    known = known_benchmarks(config)
    what = "the testbed's test splits" if config["mode"] == TESTBED else "the keys of datasets"
    for name in evaluate["benchmarks"]:
        if name not in known:
            raise ValueError(
                f"evaluate.benchmarks: unknown benchmark {name!r}{did_you_mean(name, known)}; "
                f"valid ({what}): {known}"
            )
    evaluated = list(evaluate["benchmarks"])
    # not evaluate.n_per_benchmark: a dict, merged key by key, so an overlay on the default keeps
    # the default's splits there (config/paper.yaml layered on config/config.yaml); they are unused
    named = {
        "report.table1_benchmarks": report.get("table1_benchmarks") or [],
        "report.generalization_benchmarks": report.get("generalization_benchmarks") or [],
        "evaluate.learning_curve.benchmarks": (evaluate.get("learning_curve") or {}).get(
            "benchmarks", []
        ),
    }
    for key, names in named.items():
        for name in names:
            if name not in evaluated:
                raise ValueError(
                    f"{key}: {name!r} is not evaluated{did_you_mean(name, evaluated)}; "
                    f"evaluate.benchmarks: {evaluated}"
                )


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
        label for role in LENGTH_ROLES for label in _runs_of_role(runs, facts, role)
    ]
    _not_runs("report.length_runs", chosen, runs)
    return list(chosen)


def audit_reward_run(config: dict, runs: dict, facts: Facts) -> str | None:
    """``audit.reward_run``: the run whose R_cf settings score every audited model (default: the
    corrected method's run if trained, else the paper's); None without an audit (testbed only)."""
    audit = config.get("audit") or {}
    if config["mode"] != TESTBED or not audit.get("models"):
        return None
    default = [label for role in AUDIT_ROLES for label in _runs_of_role(runs, facts, role)]
    run = audit.get("reward_run") or next(iter(default), None)
    if run not in runs:
        raise ValueError(
            f"audit.reward_run: {run!r} is not a run of this config "
            "(the audit scores R_cf with a GC2PO run's settings)"
        )
    return run


def figure_sweep_methods(config: dict, facts: Facts) -> list[str]:
    """The methods whose sweeps the lambda figure draws (``sweep_methods``; default: the
    paper's)."""
    return list(config.get("sweep_methods") or default_sweep_methods(facts))


def mechanism_splits(config: dict, measure_splits) -> list[str]:
    """The testbed splits the mechanism measures read (``measure_splits``:
    ``gc2po.testbed.mechanism.MEASURE_SPLITS``) that the config evaluates; none outside the
    testbed."""
    benchmarks = config["evaluate"]["benchmarks"]
    testbed = config["mode"] == TESTBED
    return [split for split in measure_splits if split in benchmarks] if testbed else []


def mechanism_tables(config: dict, measure_splits) -> dict[str, tuple[list[str], bool]]:
    """Mechanism table -> (the splits it reads, greedy evaluations or not)."""
    splits = mechanism_splits(config, measure_splits)
    tables = {"mechanism": (splits, False)} if splits else {}
    greedy = greedy_benchmarks(config)
    if config["evaluate"].get("greedy", False) and set(splits) & set(greedy):
        tables["mechanism_greedy"] = ([s for s in splits if s in greedy], True)
    return tables


def mechanism_figures(tables: dict[str, tuple[list[str], bool]]) -> list[str]:
    """The mechanism tables (:func:`mechanism_tables`) that hold both axes of the mechanism
    figure (``gc2po.reporting.result_figures``: the copy share on test_id, pass@1 on
    test_wrongbet): each gets ``figures/<table>.png``."""
    from gc2po.reporting.result_figures import COPY_SHARE, WRONG_BET

    needed = {COPY_SHARE[0], WRONG_BET[0]}
    return [name for name, (splits, _) in tables.items() if needed <= set(splits)]


def dose_responses(config: dict, runs: dict, measure_splits) -> dict[str, dict]:
    """``report.dose_response``: output name -> {method, key, markers}; each needs the mechanism
    measures and a run of its method that sets its key."""
    out = {}
    measured = mechanism_splits(config, measure_splits)
    for i, spec in enumerate(config["report"].get("dose_response") or []):
        where = f"report.dose_response[{i}]"
        if not measured:
            raise ValueError(
                f"{where}: needs mode testbed with test_id or test_wrongbet evaluated "
                "(the mechanism measures)"
            )
        if not any(r.method == spec["method"] and spec["key"] in r.trainer for r in runs.values()):
            raise ValueError(
                f"{where}: no run of {spec['method']!r} sets {spec['key']!r}; sweep it "
                f"(sweeps.{spec['key']}, sweep_methods) or name a run that does"
            )
        out[f"dose_response_{spec['method']}_{spec['key']}"] = spec
    return out


def check_datasets(config: dict) -> None:
    """``datasets.<key>.decontaminate`` is for training sets: an evaluated one is refused."""
    benchmarks = config["evaluate"]["benchmarks"]
    for key, spec in (config.get("datasets") or {}).items():
        if spec.get("decontaminate") and key in benchmarks:
            raise ValueError(
                f"datasets.{key}: decontaminate is for training sets, but {key} is evaluated"
            )


def check(config: dict, facts: Facts, measure_splits) -> None:
    """Every check above (ValueError naming the key), before any job runs."""
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


def audit_trained_signals(config: dict, runs: dict, names: dict[str, str]) -> dict[str, str]:
    """The audited runs that train on a per-episode signal: their names in tables (``names``:
    run label -> display name) -> the signal audit's column of that signal (R_cf at the run's
    cf_state, a policy-only signal by name, the noisy oracle at the run's rho). Runs without a
    per-episode signal (GRPO, the oracle's f x p) and the base model are left out."""
    from gc2po.methods import get_method
    from gc2po.reporting.names import oracle_column, readout_column

    trained = {}
    for label in (config.get("audit") or {}).get("models", []):
        if label not in runs:
            continue
        run = runs[label]
        method = get_method(run.method)
        settings = {**method.fixed, **run.trainer}
        signal = settings.get("cf_signal", "r_cf" if method.needs_cf else None)
        if signal == "r_cf":
            trained[names[label]] = f"r_cf@{settings.get('cf_state') or method.cf_state}"
        elif signal == "oracle" and settings.get("cf_signal_rho") is not None:
            every = settings.get("cf_signal_noise") == "every_group"
            trained[names[label]] = oracle_column(settings["cf_signal_rho"], every)
        elif signal == "readout":
            trained[names[label]] = readout_column(settings.get("cf_readout_weight", 0.0))
        elif signal not in (None, "oracle"):
            trained[names[label]] = signal
    return trained
