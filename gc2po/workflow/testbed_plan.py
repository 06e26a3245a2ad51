"""The testbed's analyses a workflow config asks for, decided from it: the mechanism tables (the
measures of ``gc2po.testbed.mechanism`` on the evaluated splits that carry them), the
dose-responses (``report.dose_response``), a family's candidate rule (``candidates``), the reward
audit's reward run and the signals its audited runs trained on. Pure functions of the config (and
of the methods' roles, ``gc2po.workflow.method_facts``); each bad key raises a ValueError naming
it, before any job (``gc2po.workflow.report_plan.check``).
"""

from __future__ import annotations

from gc2po.data.tasks import TESTBED
from gc2po.errors import did_you_mean
from gc2po.workflow.benchmark_plan import greedy_benchmarks
from gc2po.workflow.method_facts import Facts
from gc2po.workflow.plan import runs_of_role

AUDIT_ROLES = ("corrected", "paper")  # the audit's default reward run: the first trained
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


def audit_reward_run(config: dict, runs: dict, facts: Facts) -> str | None:
    """``audit.reward_run``: the run whose R_cf settings score every audited model (default: the
    corrected method's run if trained, else the paper's); None without an audit (testbed only)."""
    audit = config.get("audit") or {}
    if config["mode"] != TESTBED or not audit.get("models"):
        return None
    default = [label for role in AUDIT_ROLES for label in runs_of_role(runs, facts, role)]
    run = audit.get("reward_run") or next(iter(default), None)
    if run not in runs:
        raise ValueError(
            f"audit.reward_run: {run!r} is not a run of this config "
            "(the audit scores R_cf with a GC2PO run's settings)"
        )
    return run


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
