"""The method registry: one entry per name, refused twice, a colour or table place refused when
taken, variants that fix more, and what each method fixes."""

from __future__ import annotations

import pytest

from gc2po.core.registry import Registry
from gc2po.methods import METHODS, base, register_method
from gc2po.methods.base import register_preset, register_variant

SHOWN = dict(display_name="Toy", colour="#000001", order=1000)  # nobody's name, colour or place


def test_a_method_registered_twice_fails_naming_both_places():
    with pytest.raises(
        ValueError,
        match=r"method 'grpo' is registered twice: first at .*methods/grpo.py:\d+, "
        r"again at .*test_registry.py:\d+",
    ):
        register_method("grpo", "another GRPO", **SHOWN)(lambda batch, config: None)
    assert METHODS["grpo"].advantages.__name__ == "grpo_advantages"  # the registry is unchanged


@pytest.mark.parametrize(
    "taken, match",
    [
        (
            {"colour": METHODS["grpo"].colour},
            r"colour '#1f77b4' is taken by method 'grpo' \(at .*methods/grpo.py",
        ),
        (
            {"order": METHODS["gc2po"].order},
            r"order 80 is taken by method 'gc2po' \(at .*methods/gc2po.py",
        ),
    ],
)
def test_a_colour_or_table_place_another_method_has_is_refused(taken, match):
    with pytest.raises(ValueError, match=r"method 'toy' at .*test_registry.py:\d+: " + match):
        register_method("toy", "a toy", **{**SHOWN, **taken})(lambda batch, config: None)
    assert "toy" not in METHODS


def test_a_variant_fixes_what_its_method_fixes_and_more(monkeypatch):
    monkeypatch.setattr(base, "METHODS", Registry("method"))  # leaves the real registry alone

    @register_method(
        "toy", "a toy", loss_type="dr_grpo", fixed={"beta": 0.0}, needs_episodes=True, **SHOWN
    )
    def toy_advantages(batch, config):
        return None

    variant = register_variant(
        "toy",
        "toy_no_rcf",
        "a toy without R_cf",
        fixed={"lambda_cf": 0.0},
        display_name="Toy w/o R_cf",
        colour="#000002",
        order=1001,
    )
    assert variant.fixed == {"loss_type": "dr_grpo", "beta": 0.0, "lambda_cf": 0.0}
    assert variant.advantages is toy_advantages and variant.needs_episodes
    assert list(base.METHODS) == ["toy", "toy_no_rcf"]  # registered in reading order


def test_a_preset_is_its_form_with_the_signal_fixed(monkeypatch):
    monkeypatch.setattr(base, "METHODS", Registry("method"))

    @register_method(
        "form", "a form", needs_cf=True, signal_from_config=True, sweeps=("lambda_cf",), **SHOWN
    )
    def form_advantages(batch, config):
        return None

    preset = register_preset(
        "form",
        "form_agree",
        "the form on sibling agreement",
        fixed={"cf_signal": "sibling_agreement"},
        display_name="Form (agreement)",
        colour="#000002",
        order=1001,
        fidelity="a toy",
        local_groups=True,
    )
    assert preset.fixed == {"loss_type": "grpo", "cf_signal": "sibling_agreement"}
    assert preset.advantages is form_advantages and preset.needs_cf and preset.local_groups
    assert (preset.preset_of, preset.signal_from_config, preset.role, preset.sweeps) == (
        "form",
        False,
        "baseline",
        (),
    )
    with pytest.raises(ValueError, match=r"cf_signal='oracle' conflicts with method 'form_agree'"):
        preset.check_fixed({"cf_signal": "oracle"})


def test_every_method_fixes_its_loss_aggregation():
    for name, method in METHODS.items():
        assert method.fixed["loss_type"] == method.loss_type, name


# --- a method's own settings (Method.settings, given as trainer.method_args) -------------------


def test_a_methods_settings_are_its_defaults_updated_by_method_args():
    mrt = METHODS["mrt"]
    assert mrt.parse_settings(None) == mrt.parse_settings({}) == mrt.settings()
    settings = mrt.parse_settings({"num_stops": 2, "alpha": 1})  # an int given for a float
    assert (settings.num_stops, settings.alpha, settings.max_episodes) == (2, 1.0, 6)
    assert isinstance(settings.alpha, float)


@pytest.mark.parametrize(
    "method, given, match",
    [
        ("mrt", {"stops": 2}, r"method_args: unknown key\(s\) \['stops'\] for method 'mrt'; valid"),
        ("mrt", {"num_stops": 2.5}, r"method_args.num_stops must be int, got 2.5"),
        ("mrt", {"num_stops": True}, r"method_args.num_stops must be int, got True"),
        ("mrt", {"num_stops": 0}, r"method_args.num_stops must be >= 1, got 0"),
        ("rest_mcts", {"value_lr": 0.0}, r"method_args.value_lr must be > 0, got 0.0"),
        ("gvpo", {"beta": -1.0}, r"method_args.beta must be > 0, got -1.0"),
        ("grpo", {"alpha": 0.1}, r"method_args: method 'grpo' has no settings of its own"),
    ],
)
def test_bad_method_args_fail_naming_the_key(method, given, match):
    with pytest.raises(ValueError, match=match):
        METHODS[method].parse_settings(given)


def test_mrt_reads_its_own_max_episodes_and_the_others_the_configs():
    class Config:
        max_episodes = 32
        method_settings = METHODS["mrt"].parse_settings({"max_episodes": 3})

    assert METHODS["mrt"].max_episodes(Config) == 3
    Config.method_settings = None
    assert METHODS["gc2po"].max_episodes(Config) == 32


def test_the_counterfactual_fields_are_trainer_fields_only_cf_methods_read():
    """``COUNTERFACTUAL_FIELDS`` names GC2POConfig fields (a renamed field fails here); GRPO reads
    none of them, the paper's GC2PO all (no warning for its own settings)."""
    import json

    from gc2po.methods.base import COUNTERFACTUAL_FIELDS
    from gc2po.training.run_config import FIELDS_FILE

    fields = json.loads(FIELDS_FILE.read_text())
    assert set(COUNTERFACTUAL_FIELDS) <= set(fields)
    settings = {"lambda_cf": 0.5, "learning_rate": 1e-6, "cf_std_floor": 0.01}
    assert METHODS["grpo"].unread(settings) == ["lambda_cf", "cf_std_floor"]
    assert METHODS["gc2po"].unread(settings) == []
    assert METHODS["mrt"].unread({"max_episodes": 4, "answer_topk": 8}) == ["answer_topk"]
