"""``evaluate.reasoning``, decided from the config: whether the workflow evaluates the problems
without a bet of its splits with n samples and greedily, and writes ``tables/reasoning.md``
(``gc2po.reporting.reasoning``). A pure function of the config; each bad key raises a ValueError
naming it, before any job runs (``gc2po.workflow.report_plan.check``).
"""

from __future__ import annotations

from gc2po.data.tasks import TESTBED

# gc2po.testbed.generator.COMPOSE (a test keeps them equal; importing the testbed imports torch)
COMPOSE = "test_compose"

DEFAULTS = {"ks": [1, 4, 8], "splits": ["test_id", COMPOSE], "compose_size": 300}


def reasoning_settings(config: dict) -> dict | None:
    """``{ks, n, splits, compose_size}`` (ks sorted, n defaulting to the largest k), or None
    when ``evaluate.reasoning.enabled`` is not true."""
    spec = config["evaluate"].get("reasoning") or {}
    if not spec.get("enabled", False):
        return None
    if config["mode"] != TESTBED:
        raise ValueError("evaluate.reasoning: the testbed's splits only (mode: testbed)")
    settings = {**DEFAULTS, **{k: v for k, v in spec.items() if k != "enabled"}}
    settings["ks"] = sorted(set(settings["ks"]))
    largest = settings["ks"][-1]
    settings.setdefault("n", largest)
    if settings["n"] < largest:
        raise ValueError(
            f"evaluate.reasoning.n: {settings['n']} samples per problem, below the largest k of "
            f"evaluate.reasoning.ks ({largest}): the unbiased pass@k needs n >= k"
        )
    sizes = config["testbed"]["sizes"]
    if COMPOSE in sizes:
        raise ValueError(
            f"testbed.sizes.{COMPOSE}: the composition split is written apart, sized by "
            "evaluate.reasoning.compose_size"
        )
    for split in settings["splits"]:
        if split != COMPOSE and split not in config["evaluate"]["benchmarks"]:
            raise ValueError(
                f"evaluate.reasoning.splits: {split} is not evaluated (evaluate.benchmarks), so "
                "its file is not written"
            )
    if COMPOSE in settings["splits"] and "train" not in sizes:
        raise ValueError(f"evaluate.reasoning.splits: {COMPOSE} needs testbed.sizes.train")
    return settings
