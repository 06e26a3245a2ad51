"""Display names and colours shared by every table and figure.

Methods appear under the display name, in the colour and at the place in tables that their
registry entry declares (``gc2po.methods``: the paper's Table 1 order, GRPO, length penalty,
ReST-MCTS*, GVPO, Dr.GRPO, GCPO, MRT, GC2PO, then the ablations); benchmarks appear under the
paper's column names. Run labels that are not registry methods (the lambda sweeps,
``gc2po_lambda_exp_0.5``, and named variants) are named by the plan
(``gc2po.workflow.plan.Run``), which the workflow passes in as ``names``, and get a colour
of their own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from gc2po.data.benchmarks import BENCHMARKS
from gc2po.methods import METHODS

# run label -> display name of the runs a config plans (``gc2po.workflow.plan.Run.display_name``)
RunNames = Mapping[str, str] | None

BASE_NAME = "Base model"
BASE_COLOUR = "#7f7f7f"
# for labels outside the registry: tab20 tones and dark hues no registered method uses
SPARE_COLOURS = ["#f7b6d2", "#9edae5", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"]


def oracle_column(rho: float, every_group: bool = False) -> str:
    """The signal audit's column of the noised oracle at correlation ``rho`` (``every_group``:
    with noise of one scale in every group; the audit writes it; the trained-signal table looks
    a run's own signal up by it)."""
    return f"oracle_every(rho={rho})" if every_group else f"oracle(rho={rho})"


def readout_column(weight: float) -> str:
    """The signal audit's column of the readout control mixed with validity weight ``weight``."""
    return f"readout(w={weight})"


# The testbed's splits; every other benchmark's name comes with its registration
# (gc2po.data.benchmarks.register), in the paper's column order.
TESTBED_SPLIT_NAMES: dict[str, str] = {
    "test_id": "Test (ID)",
    "test_rephrase": "Rephrased",
    "test_distractor": "Distractors",
    "test_longer": "Longer chains",
    "test_wrongbet": "Wrong bet",
    "test_newstart": "New starts",
    "test_compose": "New compositions",
}


def method_name(run: str, names: RunNames = None) -> str:
    """Display name of a run label: the base model, a registry method, the name ``names`` gives
    it, or the label itself."""
    if run == "base":
        return BASE_NAME
    if run in METHODS:
        return METHODS[run].display_name
    return (names or {}).get(run, run)


def method_colour(run: str) -> str:
    """One colour per run label, the same in every figure."""
    if run == "base":
        return BASE_COLOUR
    if run in METHODS:
        return METHODS[run].colour
    # labels outside the registry (sweeps): a pick from the spare colours that depends on the
    # label only, so it is the same in every figure and every run
    return SPARE_COLOURS[int(hashlib.sha256(run.encode()).hexdigest(), 16) % len(SPARE_COLOURS)]


def benchmark_names() -> dict[str, str]:
    """Display name of every named benchmark: the testbed's splits, then the registered ones."""
    registered = {name: b.display_name for name, b in BENCHMARKS.items() if b.display_name}
    return {**TESTBED_SPLIT_NAMES, **registered}


def benchmark_name(benchmark: str) -> str:
    return benchmark_names().get(benchmark, benchmark)


def benchmark_order(benchmarks: list[str]) -> list[str]:
    """``benchmarks`` in the paper's column order (named ones first, then the rest by name)."""
    known = list(benchmark_names())
    return sorted(
        benchmarks, key=lambda b: (b not in known, known.index(b) if b in known else 0, b)
    )


def method_order(runs: list[str]) -> list[str]:
    """``runs`` in the paper's order: registry methods by their ``order``, then the rest as
    given."""
    known = sorted({r for r in runs if r in METHODS}, key=lambda r: METHODS[r].order)
    return known + [r for r in runs if r not in METHODS]
