"""benchmarks/method/signal_cost.py's --methods: a method with its own settings, as a variant
sets them."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks" / "method"))
from signal_cost import method_spec  # noqa: E402


def test_a_method_with_settings():
    assert method_spec("grpo") == ("grpo", {})
    assert method_spec("grpo_gated:cf_signal=operand_sensitivity") == (
        "grpo_gated",
        {"cf_signal": "operand_sensitivity"},
    )
    assert method_spec("gc2po_add_agree:lambda_cf=0.29+num_perturbations=4") == (
        "gc2po_add_agree",
        {"lambda_cf": 0.29, "num_perturbations": 4},
    )
    assert method_spec("grpo:learning_rate=1e-4") == ("grpo", {"learning_rate": 1e-4})


def test_a_setting_without_a_value_is_refused_naming_it():
    with pytest.raises(
        SystemExit, match=r"--methods: 'grpo_gated:cf_signal': a setting is key=value"
    ):
        method_spec("grpo_gated:cf_signal")
