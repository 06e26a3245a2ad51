"""What the rules wire beyond the training jobs (gc2po.workflow.report_plan): defaults derived from
each method's role and sweeps (never its name) equal to the names the rules used to spell, and a
bad report key refused naming it, with the memoised check, before any job."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gc2po.testbed.mechanism import MEASURE_SPLITS
from gc2po.workflow import plan, report_plan, testbed_plan
from gc2po.workflow.config_check import checked
from gc2po.workflow.config_files import load_config
from gc2po.workflow.method_facts import default_sweep_methods, method_facts

ROOT = Path(__file__).resolve().parents[2]
CI = [ROOT / "config/config.yaml", ROOT / "config/ci.yaml"]


@pytest.fixture(scope="module")
def facts():
    return method_facts()


def test_sweeps_and_defaults_follow_the_methods_roles(facts):
    assert plan.SWEEP_KEYS == {
        "lambda_exp": ("gc2po", "gc2po_add"),
        "lambda_cf": ("gc2po", "gc2po_add", "gc2po_add_oracle"),
        "cf_std_floor": ("gc2po_add",),
        "cf_signal_rho": ("gc2po_add_oracle", "grpo_fxp"),
    }
    assert plan.SWEEP_METHODS == ("gc2po", "gc2po_add", "gc2po_add_oracle", "grpo_fxp")
    assert default_sweep_methods(facts) == ["gc2po"]
    config = load_config(CI)
    runs = plan.runs(config, facts)
    assert report_plan.length_runs(config, runs, facts) == ["grpo", "gc2po", "gc2po_add"]
    assert testbed_plan.audit_reward_run(config, runs, facts) == "gc2po_add"
    assert report_plan.figure_sweep_methods(config, facts) == ["gc2po"]
    config["methods"] = ["grpo", "gc2po"]  # no corrected run: the paper's scores the audit
    config["report"]["main_methods"] = ["grpo", "gc2po"]
    runs = plan.runs(config, facts)
    assert testbed_plan.audit_reward_run(config, runs, facts) == "gc2po"
    assert report_plan.length_runs(config, runs, facts) == ["grpo", "gc2po"]


def test_the_ci_tables_are_those_the_rules_built():
    specs = report_plan.table_specs(load_config(CI))
    assert list(specs) == ["table1", "generalization", "ablation", "table1_greedy"]
    assert specs["table1_greedy"]["benchmarks"] == ["test_id", "test_wrongbet"]
    assert specs["table1_greedy"]["greedy"] and not specs["table1"]["greedy"]
    assert specs["ablation"]["bases"] == ["testbed"]


def _set(config, path, value):
    *parents, last = path.split(".")
    node = config
    for key in parents:
        node = node[key]
    node[last] = value
    return config


@pytest.mark.parametrize(
    "path, value, message",
    [
        ("evaluate.greedy_benchmarks", ["gsm8k"], r"evaluate.greedy_benchmarks: \['gsm8k'\]"),
        ("report.comparisons", [["gc2po", "ppo"]], r"report.comparisons: 'ppo' \(gc2po_vs_ppo\)"),
        (
            "evaluate.learning_curve",
            {"runs": ["mrt"], "benchmarks": ["test_id"], "problems": 4},
            r"evaluate.learning_curve.runs: \['mrt'\] are not runs",
        ),
        ("report.length_runs", ["gcpo"], r"report.length_runs: \['gcpo'\] are not runs"),
        ("audit.reward_run", "gcpo", r"audit.reward_run: 'gcpo' is not a run"),
        (
            "datasets",
            {"test_id": {"benchmark": "gsm8k", "decontaminate": True}},
            r"datasets.test_id: decontaminate is for training sets, but test_id is evaluated",
        ),
    ],
)
def test_a_bad_report_key_fails_the_check_naming_it(path, value, message, facts, tmp_path):
    config = _set(copy.deepcopy(load_config(CI)), path, value)
    with pytest.raises(ValueError, match=message):
        report_plan.check(config, facts, MEASURE_SPLITS)
    with pytest.raises(ValueError, match=message):  # with the memoised check, before any job
        checked(config, None, cache=tmp_path / "check.json")


@pytest.mark.parametrize("value", [100.5, -0.1])
def test_a_sweep_value_out_of_the_trainers_range_names_the_job_and_key(value):
    """The schema gives sweeps no range: the trainer's, where the job's GC2POConfig is built."""
    config = load_config(CI)
    config["sweeps"] = {"lambda_exp": [], "lambda_cf": [value]}
    with pytest.raises(ValueError, match=rf"gc2po_lambda_cf_{value}: .*lambda_cf"):
        plan.validate(config)


@pytest.mark.parametrize(
    "path, value, message",
    [
        # a method trained but in no table (Table 1 would silently leave it out)
        (
            "methods",
            ["grpo", "gc2po", "gc2po_add", "grpo_fxp", "mrt"],
            "methods: 'mrt' is trained but no table shows it: add it to report.main_methods",
        ),
        (
            "report.ablation_methods",
            ["gc2po", "gc2po_no_sexp", "gc2po_no_ssta"],
            "ablation_methods: 'gc2po_no_rcf' is trained but no table shows it: add it to "
            "report.main_methods (the rows of Table 1 and the generalisation table) or "
            "report.ablation_methods",
        ),
        (
            "report.main_methods",
            ["grpo", "gc2po", "gc2po_add", "grpo_fxp", "gvpo"],
            "report.main_methods: 'gvpo' is not a run of this config",
        ),
        # misspelt names get the closest one
        (
            "evaluate.benchmarks",
            ["test_id", "test_longr"],
            "evaluate.benchmarks: unknown benchmark 'test_longr' (did you mean 'test_longer'?)",
        ),
        (
            "report.generalization_benchmarks",
            ["test_rephrase", "test_distractr"],
            "report.generalization_benchmarks: 'test_distractr' is not evaluated (did you mean "
            "'test_distractor'?)",
        ),
        (
            "report.comparisons",
            [["gc2po", "grp"]],
            "report.comparisons: 'grp' (gc2po_vs_grp) is not a run of this config (did you mean "
            "'grpo'?)",
        ),
    ],
)
def test_unshown_methods_and_misspelt_names_are_refused_naming_the_key(path, value, message, facts):
    config = _set(copy.deepcopy(load_config(CI)), path, value)
    with pytest.raises(ValueError) as err:
        report_plan.check(config, facts, MEASURE_SPLITS)
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize(
    "overlay",
    [
        "config.yaml",
        "ci.yaml",
        "testbed_full.yaml",
        "testbed_seed1.yaml",
        "testbed_study.yaml",
        "paper.yaml",
        "smollm2.yaml",
    ],
)
def test_every_shipped_config_shows_every_method_it_trains(overlay, facts):
    alone = overlay in ("paper.yaml", "smollm2.yaml")  # complete on their own
    files = (
        [ROOT / "config" / overlay]
        if alone
        else [ROOT / "config/config.yaml", ROOT / "config" / overlay]
    )
    report_plan.check(load_config(files), facts, MEASURE_SPLITS)


@pytest.mark.parametrize("overlay", ["paper.yaml", "smollm2.yaml"])
def test_a_complete_config_layered_on_the_default_passes_the_check(overlay, facts):
    """As the cluster plan test layers them: the default's dict keys (n_per_benchmark) stay."""
    config = load_config([ROOT / "config/config.yaml", ROOT / "config" / overlay])
    report_plan.check(config, facts, MEASURE_SPLITS)


@pytest.mark.parametrize(
    "family, message",
    [
        (
            {"benchmark": "test_wrongbet", "reference": "grpo", "runs": ["grpo_fx"]},
            r"report.families.f: 'grpo_fx' is not a run of this config \(did you mean 'grpo_fxp'",
        ),
        (
            {"benchmark": "test_wrongbt", "reference": "grpo", "runs": ["grpo_fxp"]},
            r"report.families.f.benchmark: 'test_wrongbt' is not evaluated \(did you mean "
            r"'test_wrongbet'",
        ),
        (
            {"benchmark": "test_id", "reference": "grpo", "runs": ["grpo", "gc2po"]},
            r"report.families.f.runs: holds the reference 'grpo' itself",
        ),
        (
            {
                "benchmark": "test_id",
                "reference": "grpo",
                "runs": ["gc2po"],
                "preregistered": "no/such/file.md",
            },
            r"report.families.f.preregistered: 'no/such/file.md' not found",
        ),
        (
            {
                "benchmark": "test_rephrase",
                "reference": "grpo",
                "runs": ["gc2po"],
                "candidates": {"uncued_margin": 2},
            },
            r"report.families.f.candidates: the family's benchmark 'test_rephrase' has no copy "
            r"share; one of \['test_id', 'test_wrongbet'\]",
        ),
    ],
)
def test_a_bad_family_is_refused_naming_its_key(facts, family, message):
    config = load_config(CI)
    config["report"]["families"] = [{"name": "f", **family}]
    with pytest.raises(ValueError, match=message):
        report_plan.families(config, plan.runs(config, facts))


def test_the_ci_family_is_wired():
    config = load_config(CI)
    families = report_plan.families(config, plan.runs(config))
    assert list(families) == ["family_controls"]
    assert families["family_controls"]["runs"] == ["grpo_fxp", "gc2po_add"]
    assert report_plan.candidate_tables(families) == {"candidates_controls": "family_controls"}


def test_the_candidate_rule_needs_the_testbed(facts):
    config = load_config(CI)
    config["mode"] = "benchmark"
    message = r"report.families.controls.candidates: needs mode testbed"
    with pytest.raises(ValueError, match=message):
        report_plan.families(config, plan.runs(config, facts))


def test_each_audited_run_is_read_on_the_signal_it_trains_on(facts):
    config = load_config([ROOT / "config/config.yaml", ROOT / "config/testbed_warm32_why.yaml"])
    config["audit"] = {"models": ["base", "grpo", "grpo_fxp", "gc2po", "gated_rcf",
                                  "gated_oracle_rho0.07", "add_rcf_l4.1", "add_agree_l0.29",
                                  "gated_operand", "gated_agree"]}  # fmt: skip
    runs = plan.runs(config, facts)
    names = {label: f"name of {label}" for label in runs}
    assert testbed_plan.audit_trained_signals(config, runs, names) == {
        "name of gc2po": "r_cf@episode_end",  # the paper's state
        "name of gated_rcf": "r_cf@result",  # the gated form reads R_cf where the corrected does
        "name of gated_oracle_rho0.07": "oracle(rho=0.07)",
        "name of add_rcf_l4.1": "r_cf@result",
        "name of add_agree_l0.29": "sibling_agreement",  # a preset fixes its signal
        "name of gated_operand": "operand_sensitivity",  # a variant's trainer.cf_signal
        "name of gated_agree": "sibling_agreement",
    }  # the base model, GRPO and the unnoised control train on no per-episode signal
