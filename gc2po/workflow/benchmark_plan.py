"""Which benchmarks and datasets a workflow config evaluates and trains on, checked before any
job: every benchmark a key names is one the config can evaluate (``evaluate.benchmarks``: a
testbed split or a ``datasets`` key) and every other key's is evaluated, a misspelt one with the
closest name; the greedily evaluated benchmarks; ``decontaminate`` only on training sets. Pure
functions of the config; each bad key raises a ValueError naming it.
"""

from __future__ import annotations

from gc2po.data.tasks import TESTBED
from gc2po.errors import did_you_mean


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


def check_datasets(config: dict) -> None:
    """``datasets.<key>.decontaminate`` is for training sets: an evaluated one is refused."""
    benchmarks = config["evaluate"]["benchmarks"]
    for key, spec in (config.get("datasets") or {}).items():
        if spec.get("decontaminate") and key in benchmarks:
            raise ValueError(
                f"datasets.{key}: decontaminate is for training sets, but {key} is evaluated"
            )
