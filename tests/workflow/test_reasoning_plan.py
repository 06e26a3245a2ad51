"""evaluate.reasoning, decided from the config: off by default, on in the 32-epoch overlays, and
each bad setting refused naming its key before any job."""

from __future__ import annotations

from pathlib import Path

import pytest

from gc2po.testbed.generator import COMPOSE as GENERATOR_COMPOSE
from gc2po.testbed.mechanism import MEASURE_SPLITS
from gc2po.workflow import report_plan
from gc2po.workflow.config_files import load_config
from gc2po.workflow.method_facts import method_facts
from gc2po.workflow.reasoning_plan import COMPOSE, reasoning_settings

ROOT = Path(__file__).resolve().parents[2]


def load(*names: str) -> dict:
    """The config files layered as the workflow layers them."""
    return load_config([ROOT / "config" / name for name in names])


def with_reasoning(**spec) -> dict:
    config = load("config.yaml")
    config["evaluate"]["reasoning"] = {"enabled": True, **spec}
    return config


def test_compose_name_is_the_generators():
    assert COMPOSE == GENERATOR_COMPOSE


def test_off_in_the_default_on_in_the_32_epoch_overlays():
    assert reasoning_settings(load("config.yaml")) is None
    for overlay in (
        "testbed_warm32.yaml",
        "testbed_warm32_doses.yaml",
        "testbed_warm32_study.yaml",
        "testbed_warm32_why.yaml",
        "testbed_warm32_seed1.yaml",
        "testbed_warm32_seed1_additive.yaml",
    ):
        settings = reasoning_settings(load("config.yaml", overlay))
        assert settings == {
            "ks": [1, 4, 8],
            "n": 8,
            "splits": ["test_id", COMPOSE],
            "compose_size": 300,
        }, overlay


def test_defaults_and_sorted_ks():
    assert reasoning_settings(with_reasoning(ks=[8, 1, 2], splits=["test_id"])) == {
        "ks": [1, 2, 8],
        "n": 8,
        "splits": ["test_id"],
        "compose_size": 300,
    }
    assert reasoning_settings(with_reasoning(enabled=False, n=1)) is None


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            {"ks": [1, 4, 8], "n": 4},
            r"evaluate\.reasoning\.n: 4 samples per problem, below the largest k of "
            r"evaluate\.reasoning\.ks \(8\)",
        ),
        ({"splits": ["test_newstart"]}, r"evaluate\.reasoning\.splits: test_newstart is not"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(spec, message):
    with pytest.raises(ValueError, match=message):
        reasoning_settings(with_reasoning(**spec))


def test_the_composition_split_is_sized_apart_and_testbed_only():
    config = with_reasoning()
    config["testbed"]["sizes"][COMPOSE] = 100
    with pytest.raises(ValueError, match=r"testbed\.sizes\.test_compose: .*compose_size"):
        reasoning_settings(config)
    config = with_reasoning()
    config["mode"] = "benchmark"
    with pytest.raises(ValueError, match=r"evaluate\.reasoning: the testbed's splits only"):
        reasoning_settings(config)


def test_the_workflow_check_refuses_it_before_any_job():
    config = load("config.yaml", "testbed_warm32.yaml")
    report_plan.check(config, method_facts(), MEASURE_SPLITS)
    config["evaluate"]["reasoning"]["n"] = 2
    with pytest.raises(ValueError, match=r"evaluate\.reasoning\.n: 2 samples per problem"):
        report_plan.check(config, method_facts(), MEASURE_SPLITS)


def test_models_narrows_the_evaluated_models_and_names_one_that_is_no_run():
    config = load("config.yaml", "testbed_warm32.yaml")
    config["evaluate"]["reasoning"]["models"] = ["base", "grpo", "grpo_fxp"]
    report_plan.check(config, method_facts(), MEASURE_SPLITS)
    assert reasoning_settings(config)["models"] == ["base", "grpo", "grpo_fxp"]
    config["evaluate"]["reasoning"]["models"] = ["base", "grop"]
    with pytest.raises(
        ValueError, match=r"evaluate\.reasoning\.models: 'grop' is not a run .*'grpo'"
    ):
        report_plan.check(config, method_facts(), MEASURE_SPLITS)
