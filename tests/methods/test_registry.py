"""The method registry: one entry per name, refused twice, and what each method fixes."""

from __future__ import annotations

import pytest

from gc2po.methods import METHODS, register_method


def test_a_method_registered_twice_fails_naming_both_places():
    with pytest.raises(ValueError, match=r"method 'grpo' is registered twice: first at .*methods/grpo.py:\d+, "
                                         r"again at .*test_registry.py:\d+"):
        register_method("grpo", "another GRPO")(lambda batch, config: None)
    assert METHODS["grpo"].advantages.__name__ == "grpo_advantages"  # the registry is unchanged


def test_every_method_fixes_its_loss_aggregation():
    for name, method in METHODS.items():
        assert method.fixed["loss_type"] == method.loss_type, name
