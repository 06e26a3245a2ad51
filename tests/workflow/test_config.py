"""What every training job of every shipped config computes, resolved without loading a model:
method-defining values cannot be overridden, configs inherit nothing they do not state, the paper
plan fits its GPUs with 256 sequences per step, and the schema knows every registered method."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gc2po.core.perturbations import spec_from_fields
from gc2po.methods import METHODS
from gc2po.training.run_config import build_args
from gc2po.workflow import base_models
from gc2po.workflow.config_files import load_config
from gc2po.workflow.config_schema import load_schema
from gc2po.workflow.plan import training_jobs, validate
from gc2po.workflow.plan_summary import memory_plan, run_summary
from gc2po.workflow.resources import warm_start_runtime

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = {  # what `snakemake --configfile ...` is given for each shipped config
    "default": [],
    "paper": [ROOT / "config/paper.yaml"],
    "smollm2": [ROOT / "config/smollm2.yaml"],
    "ci": [ROOT / "config/config.yaml", ROOT / "config/ci.yaml"],
    "testbed_study": [ROOT / "config/config.yaml", ROOT / "config/testbed_study.yaml"],
    "testbed_full": [ROOT / "config/config.yaml", ROOT / "config/testbed_full.yaml"],
    "testbed_seed1": [ROOT / "config/config.yaml", ROOT / "config/testbed_seed1.yaml"],
}
ESTIMATOR = {  # the advantage function each method trains with (gc2po.methods)
    "grpo": "grpo_advantages",
    "dr_grpo": "dr_grpo_advantages",
    "length_penalty": "length_penalty_advantages_",
    "gvpo": "gvpo_advantages",
    "gcpo": "gcpo_advantages",
    "mrt": "mrt_advantages",
    "rest_mcts": "rest_advantages",
    "gc2po": "gc2po_advantages",
    "gc2po_no_sexp": "gc2po_advantages",
    "gc2po_no_ssta": "gc2po_advantages",
    "gc2po_no_rcf": "gc2po_advantages",
    "gc2po_add": "gc2po_add_advantages",
    "gc2po_add_no_sexp": "gc2po_add_advantages",
    "gc2po_add_no_ssta": "gc2po_add_advantages",
    "gc2po_add_no_rcf": "gc2po_add_advantages",
    "gc2po_add_oracle": "gc2po_add_advantages",  # the same form on another signal (cf_signal)
    "gc2po_add_answer": "gc2po_add_advantages",
    "gc2po_add_agree": "gc2po_add_advantages",
    "gc2po_add_operand": "gc2po_add_advantages",
    "grpo_gated": "grpo_gated_advantages",
    "grpo_gated_agree": "grpo_gated_advantages",  # the gated form, sibling agreement fixed
    "grpo_fxp": "grpo_fxp_advantages",
}
SIGNAL = {  # else the run's cf_signal (gc2po_add, grpo_gated), else r_cf
    "gc2po_add_oracle": "oracle",
    "grpo_fxp": "oracle",  # its gated reward f x p_rho, one value per completion
    "gc2po_add_answer": "answer_dependence",
    "gc2po_add_agree": "sibling_agreement",
    "gc2po_add_operand": "operand_sensitivity",
    "grpo_gated_agree": "sibling_agreement",  # its gated reward f x mean agreement
}
BETA = {
    "dr_grpo": 0.0,
    "gvpo": 0.0,
    "rest_mcts": 0.0,
    "gcpo": 0.06,
}  # what the methods fix; others: the config's
LOSS = {"dr_grpo": "dr_grpo"}  # TRL loss aggregation; others: "grpo"
FIXED_LAMBDAS = {
    "gc2po_no_sexp": ("lambda_exp", 0.0),
    "gc2po_no_ssta": ("lambda_sta", 0.0),
    "gc2po_no_rcf": ("lambda_cf", 0.0),
    "gc2po_add_no_sexp": ("lambda_exp", 0.0),
    "gc2po_add_no_ssta": ("lambda_sta", 0.0),
    "gc2po_add_no_rcf": ("lambda_cf", 0.0),
}


def declared(config: dict, method: str, key: str, default):
    train = config["train"]
    return {**train.get("trainer", {}), **train.get("per_method", {}).get(method, {})}.get(
        key, default
    )


@pytest.mark.parametrize(
    "name", [n for n, files in CONFIGS.items() if all(f.exists() for f in files)]
)
def test_every_training_job_resolves_to_what_its_config_declares(name):
    config = load_config(CONFIGS[name])
    validate(config)
    jobs = training_jobs(config)
    assert jobs
    for job in jobs:
        args = build_args(job.run_config(config))
        method = job.method
        assert METHODS[method].advantages.__name__ == ESTIMATOR[method]
        assert args.loss_type == LOSS.get(method, "grpo"), job
        assert args.beta == BETA.get(method, declared(config, method, "beta", 0.04)), job
        if method in FIXED_LAMBDAS:
            key, value = FIXED_LAMBDAS[method]
            assert getattr(args, key) == value
        expected = spec_from_fields(
            declared(config, method, "perturbation", "dropout,gaussian"),
            p=declared(config, method, "perturbation_p", 0.1),
            sigma=declared(config, method, "perturbation_sigma", 0.1),
            alpha=declared(config, method, "perturbation_alpha", 0.3),
        )
        assert args.perturbation_spec() == expected, (job, args.perturbation_spec())
        for form in (
            "gc2po_",
            "gc2po_add_",
            "gc2po_add_oracle_",
        ):  # the lambda sweeps of the paper's and the corrected form (R_cf, the plain oracle)
            if job.run.startswith(f"{form}lambda"):
                key, value = job.run.removeprefix(form).rsplit("_", 1)
                assert getattr(args, key) == float(value) and method == form[:-1], job
        assert args.cf_signal == SIGNAL.get(method, job.trainer.get("cf_signal", "r_cf")), job
        # the corrected form's std-floor sweep and the oracle controls' dose-responses
        for form, key in (
            ("gc2po_add_", "cf_std_floor"),
            ("gc2po_add_oracle_", "cf_signal_rho"),
            ("grpo_fxp_", "cf_signal_rho"),
        ):
            if job.run.startswith(f"{form}{key}_"):
                assert getattr(args, key) == float(job.run.rsplit("_", 1)[1]), job
                assert method == form[:-1], job
        # where R_cf reads u: the paper's episode ends unless the run says otherwise; the
        # corrected GC2PO reads the token before a step's result
        if METHODS[method].needs_cf:
            default = "result" if method.startswith("gc2po_add") else "episode_end"
            assert args.cf_state == declared(config, method, "cf_state", default), job
    summary = run_summary(config)
    if name == "paper":
        assert {row["sequences_per_step"] for row in summary} == {256}  # "batch size 256"
        assert {row["prompts_per_step"] for row in summary} == {32}


def test_the_paper_uses_the_spec_perturbation():
    # the first wave's silent error: the paper config inherited the testbed's gaussian sigma 0.3
    paper = load_config(CONFIGS["paper"])
    for job in training_jobs(paper):
        if METHODS[job.method].needs_cf:
            assert build_args(job.run_config(paper)).perturbation_spec() == [
                {"name": "dropout", "p": 0.1},
                {"name": "gaussian", "sigma": 0.1},
            ]


@pytest.mark.parametrize("name", ["paper", "smollm2"])
def test_a_config_given_alone_inherits_nothing_from_the_default(name, dry_run):
    """Snakemake loads the default only when no config file is given: the effective config is the
    file itself. A dry run of the paper counts its own jobs (the default's method_seeds would cut
    the costly methods to one seed each if it leaked in; the session's dry run,
    tests/shared_outputs.py)."""
    config = load_config(CONFIGS[name])
    stated = yaml.safe_load(CONFIGS[name][0].read_text())
    assert config == stated
    default = load_config([])
    inherited = sorted(k for k in default if k not in stated)
    assert inherited and all(
        k not in config for k in inherited
    )  # e.g. testbed, method_seeds, audit
    out = dry_run("--configfile", str(CONFIGS[name][0].relative_to(ROOT)))
    assert out.returncode == 0, out.stderr[-3000:]
    planned = int(re.search(r"^train\s+(\d+)$", out.stdout, re.MULTILINE).group(1))
    assert planned == len(training_jobs(config))


def test_every_paper_job_fits_an_80_gb_gpu_with_256_sequences_per_step():
    plan = memory_plan(load_config(CONFIGS["paper"]))
    assert len(plan) == len({(j.base, j.run) for j in training_jobs(load_config(CONFIGS["paper"]))})
    assert plan["fits"].all(), plan[~plan["fits"]].to_string()
    assert (plan["peak_gib"] < 80 * 1e9 / 2**30).all()
    assert set(plan["sequences_per_step"]) == {256}


def test_gc2po_plan_command_prints_the_paper_plan():
    out = subprocess.run(
        [sys.executable, "-m", "gc2po.cli", "plan", "--configfile", "config/paper.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    # the table's rows start with the base model (the budget's lines name it after "  ")
    lines = [line for line in out.stdout.splitlines() if line.split()[:1] == ["R1-Distill-Qwen-7B"]]
    assert len(lines) == 8 and all(
        line.rstrip().endswith("True") for line in lines
    )  # 8 Table 1 rows fit


def test_the_schema_takes_its_method_names_from_the_registry():
    assert load_schema()["$defs"]["method"]["enum"] == sorted(METHODS)


@pytest.mark.parametrize(
    "trainer, match",
    [
        ({"learning_rate": "abc"}, r"trainer.learning_rate must be float, got 'abc'"),
        ({"beta": 0.02}, r"trainer.beta=0.02 conflicts with method 'dr_grpo'"),
    ],
)
def test_a_bad_trainer_value_fails_validation_naming_the_key(trainer, match):
    config = load_config(CONFIGS["ci"])
    config["train"]["trainer"].update(trainer)
    config["methods"] = ["grpo", "dr_grpo"]
    with pytest.raises(ValueError, match=match):
        validate(config)


def test_the_study_runs_the_controls_doses_floors_and_lambdas():
    config = load_config(CONFIGS["testbed_study"])
    runs = {(job.run, job.method) for job in training_jobs(config)}
    rhos = [0.15, 0.3, 0.6, 1.0]  # both dose-responses: the additive and the gated control
    lambdas = [1.97, 3.95, 5.92]  # around the plain oracle's flip weight
    assert runs == {
        ("grpo", "grpo"),
        ("gc2po", "gc2po"),
        ("gc2po_add", "gc2po_add"),
        ("grpo_fxp", "grpo_fxp"),
        # the policy-only candidates (beyond the paper): agreement in both forms, operand additive
        ("gc2po_add_agree", "gc2po_add_agree"),
        ("grpo_gated_agree", "grpo_gated_agree"),
        ("gc2po_add_operand", "gc2po_add_operand"),
        ("gc2po_add_cf_std_floor_0.001", "gc2po_add"),
        *((f"gc2po_add_oracle_cf_signal_rho_{rho}", "gc2po_add_oracle") for rho in rhos),
        *((f"grpo_fxp_cf_signal_rho_{rho}", "grpo_fxp") for rho in rhos),
        *(
            (f"{m}_lambda_cf_{lam}", m)
            for m in ("gc2po_add", "gc2po_add_oracle")
            for lam in lambdas
        ),
    }
    names = [f"dose_response_{d['method']}_{d['key']}" for d in config["report"]["dose_response"]]
    assert names == [
        "dose_response_gc2po_add_oracle_cf_signal_rho",
        "dose_response_grpo_fxp_cf_signal_rho",
        "dose_response_gc2po_add_oracle_lambda_cf",
        "dose_response_gc2po_add_lambda_cf",
    ]
    assert {job.seed for job in training_jobs(config)} == {0, 1, 2, 3, 4}
    assert "test_wrongbet" in config["evaluate"]["benchmarks"]


@pytest.mark.parametrize(
    "sweeps, methods, match",
    [
        (
            {"cf_signal_rho": [0.3]},
            ["gc2po_add"],
            r"sweeps.cf_signal_rho: swept for \['gc2po_add_oracle', 'grpo_fxp'\]",
        ),
        ({"cf_std_floor": [0.01]}, ["gc2po"], r"sweeps.cf_std_floor: swept for \['gc2po_add'\]"),
        ({"lambda_cf": [0.4]}, ["grpo"], r"sweep_methods: 'grpo' has no sweep"),
        ({"beta": [0.1]}, ["gc2po"], r"sweeps: unknown key 'beta'"),
    ],
)
def test_a_sweep_without_a_method_it_applies_to_fails_naming_it(sweeps, methods, match):
    from gc2po.workflow.plan import runs

    config = load_config(CONFIGS["default"])
    config.update(sweeps=sweeps, sweep_methods=methods)
    with pytest.raises(ValueError, match=match):
        runs(config)


def test_the_recipe_overlay_trains_rl_on_the_cut_split_and_the_warm_start_on_the_whole():
    config = load_config([ROOT / "config/config.yaml", ROOT / "config/testbed_recipe.yaml"])
    jobs = training_jobs(config)
    assert {job.train_data for job in jobs} == {"resources/testbed_recipe/data/train_rl.jsonl"}
    assert {(j.trainer["max_steps"], j.trainer["per_device_train_batch_size"]) for j in jobs} == {
        (160, 256)
    }
    default_jobs = training_jobs(load_config([]))  # the default's share: the cut split too
    assert {job.train_data for job in default_jobs} == {"resources/testbed/data/train_rl.jsonl"}
    # null: the whole train split (the 8-epoch recipe's overlays pin it)
    study = load_config([ROOT / "config/config.yaml", ROOT / "config/testbed_study.yaml"])
    assert {job.train_data for job in training_jobs(study)} == {
        "resources/testbed_study/data/train.jsonl"
    }
    warm_start = (ROOT / "workflow/rules/data.smk").read_text().split("rule warm_start:")[1]
    assert 'train=f"{RES}/data/train.jsonl"' in warm_start.split("output:")[0]


@pytest.mark.parametrize(
    ("overlay", "minutes"),
    [
        (None, 60),
        ("config/testbed_study.yaml", 15),
        ("config/testbed_recipe.yaml", 30),
        ("config/testbed_warm32.yaml", 60),
        ("config/testbed_warm32_seed1.yaml", 60),
    ],
)
def test_the_warm_starts_time_limit_grows_with_its_epochs(overlay, minutes):
    config = load_config([ROOT / "config/config.yaml"] + ([ROOT / overlay] if overlay else []))
    assert warm_start_runtime(config) == minutes
    assert warm_start_runtime({"testbed": {"warm_start": {"epochs": 8.5}}}) == 30  # 8 begun twice
    assert warm_start_runtime({"testbed": {"warm_start": {"epochs": 1}}}) == 15
    with pytest.raises(ValueError, match=r"testbed\.warm_start: unknown key 'epoch'"):
        warm_start_runtime({"testbed": {"warm_start": {"epoch": 32}}})
    warm_start = (ROOT / "workflow/rules/data.smk").read_text().split("rule warm_start:")[1]
    assert "runtime=resources.warm_start_runtime(config)" in warm_start.split("script:")[0]


@pytest.mark.parametrize(
    ("overlay", "name", "message"),
    [
        (
            "config/testbed_recipe.yaml",
            "train",
            "must be 'train_rl' (testbed.rl_cued_share is set), got 'train'",
        ),
        (None, "train", "must be 'train_rl' (testbed.rl_cued_share is set), got 'train'"),
        ("config/testbed_study.yaml", "train_rl", "must be 'train', got 'train_rl'"),
    ],
)
def test_base_models_that_ignore_or_miss_the_rl_cut_are_refused(overlay, name, message):
    config = load_config([ROOT / "config/config.yaml"] + ([ROOT / overlay] if overlay else []))
    config["base_models"] = {"testbed": {"source": "warm_start", "train_data": name}}
    with pytest.raises(ValueError, match=re.escape(f"base_models.testbed.train_data: {message}")):
        base_models.check(config)


def _training_jobs_by_dir(overlay: str) -> tuple[dict, dict]:
    """``overlay`` after config/config.yaml: the config and its training jobs by output folder."""
    config = load_config([ROOT / "config/config.yaml", ROOT / overlay])
    return config, {job.output_dir: job for job in training_jobs(config)}


def _warm32_sweep_runs(overlay: str, base: str = "config/testbed_warm32.yaml") -> list[str]:
    """The runs an overlay that writes into ``base``'s results folder adds to that overlay's,
    after checking that everything deciding its data, warm start and shared runs is ``base``'s."""
    base_config, shared = _training_jobs_by_dir(base)
    other, swept = _training_jobs_by_dir(overlay)
    assert other["name"] == base_config["name"]
    for key in ("seeds", "testbed", "train", "evaluate", "methods", "base_models"):
        assert other.get(key) == base_config.get(key), key
    assert all(swept[out] == job for out, job in shared.items())  # the same runs, unchanged
    return sorted(set(swept) - set(shared))


def _sweep(run: str, key: str, values, name: str = "testbed_warm32") -> list[str]:
    return [
        f"results/{name}/runs/testbed/{run}_{key}_{value}/seed{seed}"
        for value in values
        for seed in range(5)
    ]


def test_the_warm32_dose_response_shares_the_warm32_runs_recipe():
    """config/testbed_warm32_doses.yaml: the gated dose-response added, nothing else."""
    assert _warm32_sweep_runs("config/testbed_warm32_doses.yaml") == sorted(
        _sweep("grpo_fxp", "cf_signal_rho", ("0.15", "0.3", "0.6", "1.0"))
    )


def test_the_warm32_study_keeps_the_dose_response_and_adds_the_additive_form():
    """config/testbed_warm32_study.yaml: the gated dose-response's runs as the doses overlay
    trains them, the additive one, and the lambda_cf sweep of both additive methods (0.8, the
    default, included: its runs must repeat the unswept ones)."""
    rhos, lambdas = ("0.15", "0.3", "0.6", "1.0"), ("0.14", "0.29", "0.43", "0.8")
    assert _warm32_sweep_runs("config/testbed_warm32_study.yaml") == sorted(
        _sweep("grpo_fxp", "cf_signal_rho", rhos)
        + _sweep("gc2po_add_oracle", "cf_signal_rho", rhos)
        + _sweep("gc2po_add_oracle", "lambda_cf", lambdas)
        + _sweep("gc2po_add", "lambda_cf", lambdas)
    )
    _, dose_jobs = _training_jobs_by_dir("config/testbed_warm32_doses.yaml")
    _, study_jobs = _training_jobs_by_dir("config/testbed_warm32_study.yaml")
    # every run of the doses overlay is one of the study's, with the same settings
    assert all(study_jobs.get(out) == job for out, job in dose_jobs.items())


def test_the_second_testbeds_additive_points_keep_its_recipe():
    """config/testbed_warm32_seed1_additive.yaml: config/testbed_warm32_seed1.yaml's runs
    unchanged, plus the plain-oracle additive control at lambda_cf 0.8 (rho 1.0) and at that
    testbed's lambda* (0.25), and the corrected GC2PO on R_cf at lambda*."""
    name = "testbed_warm32_seed1"
    added = _warm32_sweep_runs(
        "config/testbed_warm32_seed1_additive.yaml", base="config/testbed_warm32_seed1.yaml"
    )
    assert added == sorted(
        _sweep("gc2po_add_oracle", "cf_signal_rho", ("1.0",), name)
        + _sweep("gc2po_add_oracle", "lambda_cf", ("0.25",), name)
        + _sweep("gc2po_add", "lambda_cf", ("0.25",), name)
    )
