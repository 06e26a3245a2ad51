"""Display names and colours shared by every table and figure.

Methods appear under the paper's names (Table 1: GRPO, length penalty, ReST-MCTS*, GVPO,
Dr.GRPO, GCPO, MRT, GC2PO) and keep one colour in every figure; benchmarks appear under the
paper's column names. Run labels that are not registry methods (the lambda sweeps,
``gc2po_lambda_exp_0.5``) get a derived name and a colour of their own.
"""

from __future__ import annotations

import hashlib
import re

from gc2po.data.benchmarks import BENCHMARKS

# The paper's Table 1 order; the ablations follow.
METHOD_NAMES: dict[str, str] = {
    "grpo": "GRPO",
    "length_penalty": "Length penalty",
    "rest_mcts": "ReST-MCTS*",
    "gvpo": "GVPO",
    "dr_grpo": "Dr.GRPO",
    "gcpo": "GCPO",
    "mrt": "MRT",
    "gc2po": "GC2PO (paper)",
    "gc2po_no_sexp": "GC2PO (paper) w/o S_exp",
    "gc2po_no_ssta": "GC2PO (paper) w/o S_sta",
    "gc2po_no_rcf": "GC2PO (paper) w/o R_cf",
    # a departure from the paper (gc2po.core.corrected), labelled so in every table and figure
    "gc2po_add": "GC2PO (corrected, additive)",
    "gc2po_add_no_sexp": "GC2PO (corrected) w/o S_exp",
    "gc2po_add_no_ssta": "GC2PO (corrected) w/o S_sta",
    "gc2po_add_no_rcf": "GC2PO (corrected) w/o R_cf",
}
BASE_NAME = "Base model"

# tab10 first (distinct hues for the eight Table 1 methods), then tab20's light tones for the
# ablations, a dark hue for the corrected GC2PO, and spares for labels outside the registry.
_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#d62728",
            "#bcbd22", "#aec7e8", "#ffbb78", "#393b79", "#98df8a", "#c5b0d5", "#c49c94",
            "#f7b6d2", "#9edae5", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"]
METHOD_COLOURS: dict[str, str] = {m: _PALETTE[i] for i, m in enumerate(METHOD_NAMES)}
BASE_COLOUR = "#7f7f7f"

# The testbed's splits; every other benchmark's name comes with its registration
# (gc2po.data.benchmarks.register), in the paper's column order.
TESTBED_SPLIT_NAMES: dict[str, str] = {
    "test_id": "Test (ID)",
    "test_rephrase": "Rephrased",
    "test_distractor": "Distractors",
    "test_longer": "Longer chains",
}

_SWEEP = re.compile(r"^(gc2po|gc2po_add)_(lambda_exp|lambda_cf)_(.+)$")


def method_name(run: str) -> str:
    """Display name of a run label: a registry method, a lambda sweep, or the label itself."""
    if run == "base":
        return BASE_NAME
    if run in METHOD_NAMES:
        return METHOD_NAMES[run]
    sweep = _SWEEP.match(run)
    if sweep:
        form = "paper" if sweep.group(1) == "gc2po" else "corrected, additive"
        return f"GC2PO ({form}, {sweep.group(2)} = {sweep.group(3)})"
    return run


def method_colour(run: str) -> str:
    """One colour per run label, the same in every figure."""
    if run == "base":
        return BASE_COLOUR
    if run in METHOD_COLOURS:
        return METHOD_COLOURS[run]
    # labels outside the registry (sweeps): a pick from the palette's unused tail that depends
    # on the label only, so it is the same in every figure and every run
    spare = _PALETTE[len(METHOD_NAMES):]
    return spare[int(hashlib.sha256(run.encode()).hexdigest(), 16) % len(spare)]


def benchmark_names() -> dict[str, str]:
    """Display name of every named benchmark: the testbed's splits, then the registered ones."""
    registered = {name: b.display_name for name, b in BENCHMARKS.items() if b.display_name}
    return {**TESTBED_SPLIT_NAMES, **registered}


def benchmark_name(benchmark: str) -> str:
    return benchmark_names().get(benchmark, benchmark)


def benchmark_order(benchmarks: list[str]) -> list[str]:
    """``benchmarks`` in the paper's column order (named ones first, then the rest by name)."""
    known = list(benchmark_names())
    return sorted(benchmarks,
                  key=lambda b: (b not in known, known.index(b) if b in known else 0, b))


def method_order(runs: list[str]) -> list[str]:
    """``runs`` in the paper's order (registry methods first, then the rest as given)."""
    known = [m for m in METHOD_NAMES if m in runs]
    return known + [r for r in runs if r not in METHOD_NAMES]
