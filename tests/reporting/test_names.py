"""Display names, colours and table order: the registry's for methods, the plan's for the runs
outside it (lambda sweeps, variants)."""

from __future__ import annotations

from pathlib import Path

from gc2po.methods import METHODS
from gc2po.reporting.names import SPARE_COLOURS, method_colour, method_name, method_order
from gc2po.workflow.config_files import load_config
from gc2po.workflow.plan import runs

# the paper's Table 1 order, then the paper form's ablations, then the corrected GC2PO and its
# ablations: what every table and figure has shown (names, colours, order) since before the
# registry declared them
SHOWN = [
    ("grpo", "GRPO", "#1f77b4"),
    ("length_penalty", "Length penalty", "#ff7f0e"),
    ("rest_mcts", "ReST-MCTS*", "#2ca02c"),
    ("gvpo", "GVPO", "#9467bd"),
    ("dr_grpo", "Dr.GRPO", "#8c564b"),
    ("gcpo", "GCPO", "#e377c2"),
    ("mrt", "MRT", "#17becf"),
    ("gc2po", "GC2PO (paper)", "#d62728"),
    ("gc2po_no_sexp", "GC2PO (paper) w/o S_exp", "#bcbd22"),
    ("gc2po_no_ssta", "GC2PO (paper) w/o S_sta", "#aec7e8"),
    ("gc2po_no_rcf", "GC2PO (paper) w/o R_cf", "#ffbb78"),
    ("gc2po_add", "GC2PO (corrected, additive)", "#393b79"),
    ("gc2po_add_no_sexp", "GC2PO (corrected) w/o S_exp", "#98df8a"),
    ("gc2po_add_no_ssta", "GC2PO (corrected) w/o S_sta", "#c5b0d5"),
    ("gc2po_add_no_rcf", "GC2PO (corrected) w/o R_cf", "#c49c94"),
    ("gc2po_add_oracle", "Control (oracle): GC2PO (corrected, oracle validity)", "#e7969c"),
    ("gc2po_add_answer", "GC2PO (corrected, answer dependence; beyond the paper)", "#6b6ecf"),
    ("gc2po_add_agree", "GC2PO (corrected, sibling agreement; beyond the paper)", "#9c9ede"),
    ("gc2po_add_operand", "GC2PO (corrected, operand sensitivity; beyond the paper)", "#5254a3"),
    ("grpo_gated_agree", "GRPO on f x sibling agreement (gated; beyond the paper)", "#b5cf6b"),
    # the gated form on the run's cf_signal (issue 49)
    ("grpo_gated", "GRPO on f x g (gated)", "#8ca252"),
    # the positive control of issue 31, after every method it controls for
    ("grpo_fxp", "Control (oracle): GRPO on f x p", "#2f4f4f"),
]
ROOT = Path(__file__).resolve().parents[2]


def test_methods_keep_their_names_colours_and_order():
    assert method_order(sorted(METHODS)) == [name for name, _, _ in SHOWN]
    assert [(m, method_name(m), method_colour(m)) for m, _, _ in SHOWN] == SHOWN
    assert not {colour for _, _, colour in SHOWN} & set(SPARE_COLOURS)


def test_runs_outside_the_registry_are_named_by_the_plan_and_sort_after_it():
    config = load_config([ROOT / "config/config.yaml", ROOT / "config/testbed_full.yaml"])
    config["variants"] = {
        "gc2po_mean": {"method": "gc2po", "trainer": {"episode_weight_norm": "mean"}},
        "grpo_slow": {"method": "grpo", "trainer": {"learning_rate": 1.0e-7}},
    }
    config["sweeps"].update(cf_std_floor=[0.001], cf_signal_rho=[0.07])
    config["sweep_methods"] = [*config["sweep_methods"], "gc2po_add_oracle"]
    planned = runs(config)
    names = {label: run.display_name for label, run in planned.items()}
    assert {label: names[label] for label in names if label not in METHODS} == {
        "gc2po_lambda_exp_0.5": "GC2PO (paper, lambda_exp = 0.5)",
        "gc2po_add_lambda_exp_0.5": "GC2PO (corrected, additive, lambda_exp = 0.5)",
        "gc2po_lambda_cf_0.4": "GC2PO (paper, lambda_cf = 0.4)",
        "gc2po_add_lambda_cf_0.4": "GC2PO (corrected, additive, lambda_cf = 0.4)",
        "gc2po_add_cf_std_floor_0.001": "GC2PO (corrected, additive, std floor = 0.001)",
        "gc2po_add_oracle_cf_signal_rho_0.07": (
            "Control (oracle): GC2PO (corrected, oracle validity, rho = 0.07)"
        ),
        "gc2po_add_oracle_lambda_cf_0.4": (
            "Control (oracle): GC2PO (corrected, oracle validity, lambda_cf = 0.4)"
        ),
        "gc2po_mean": "GC2PO (paper, episode_weight_norm = mean)",
        "grpo_slow": "GRPO (learning_rate = 1e-07)",
    }
    assert all(names[m] == METHODS[m].display_name for m in names if m in METHODS)
    assert method_name("gc2po_mean", names) == "GC2PO (paper, episode_weight_norm = mean)"
    assert method_name("gc2po_mean") == "gc2po_mean"  # no plan: the label itself
    assert method_order(["gc2po_mean", "gc2po", "grpo"]) == ["grpo", "gc2po", "gc2po_mean"]
    # a colour of the spare palette that depends on the label only (the sweeps' of before)
    assert method_colour("gc2po_lambda_exp_0.5") == "#9edae5"
    assert method_colour("gc2po_add_lambda_cf_0.4") == "#8c6d31"
