# Config validation, run expansion and input functions shared by every stage.
import os
from pathlib import Path

from snakemake.utils import validate

validate(config, workflow.source_path("../schemas/config.schema.yaml"))

NAME = config["name"]
SEEDS = config["seeds"]
RES = f"resources/{NAME}"
OUT = f"results/{NAME}"
TESTBED = config["mode"] == "testbed"
GPU = config["evaluate"]["backend"] == "vllm"  # GPU-sized resources (paper scale) vs CPU-sized ones
BENCHMARKS = config["evaluate"]["benchmarks"]  # dataset keys evaluated
BASE_MODELS = config.get("base_models") or {"testbed": {"source": "warm_start", "train_data": "train"}}
DATASETS = config.get("datasets") or {}  # benchmarks mode: dataset key -> loader spec


def _runs():
    """run label -> {method, trainer overrides}: one per method, plus the lambda sweeps."""
    runs = {m: {"method": m, "trainer": {}} for m in config["methods"]}
    for key, values in (config.get("sweeps") or {}).items():
        for value in values:
            runs[f"gc2po_{key}_{value}"] = {"method": "gc2po", "trainer": {key: value}}
    return runs


RUNS = _runs()
MODELS = ["base"] + list(RUNS)  # evaluated per base model: the base itself and every trained run


wildcard_constraints:
    base="|".join(map(str, BASE_MODELS)),
    run="|".join(RUNS),
    model="|".join(MODELS),
    seed=r"\d+",
    benchmark="|".join(BENCHMARKS),
    dataset="|".join(list(DATASETS) or ["train"]),


def base_model_path(base):
    """What the training script loads: a generated folder or a Hub id / local path."""
    spec = BASE_MODELS[base]
    return spec["path"] if spec["source"] == "hub" else f"{RES}/models/{base}"


def base_model_input(wildcards):
    """Snakemake inputs of a base model: the generated folder (nothing for a Hub id)."""
    spec = BASE_MODELS[wildcards.base]
    return [] if spec["source"] == "hub" else [f"{RES}/models/{wildcards.base}"]


def train_data_file(wildcards):
    return f"{RES}/data/{BASE_MODELS[wildcards.base]['train_data']}.jsonl"


def eval_model_input(wildcards):
    if wildcards.model == "base":
        return base_model_input(wildcards)
    return [f"{OUT}/runs/{wildcards.base}/{wildcards.model}/seed{wildcards.seed}/final"]


def eval_model_path(wildcards):
    if wildcards.model == "base":
        return base_model_path(wildcards.base)
    return f"{OUT}/runs/{wildcards.base}/{wildcards.model}/seed{wildcards.seed}/final"


def eval_files(models, benchmarks, bases=None):
    return expand(f"{OUT}/eval/{{base}}/{{model}}/seed{{seed}}/{{benchmark}}.jsonl", base=bases or list(BASE_MODELS),
                  model=models, seed=SEEDS, benchmark=benchmarks)


def eval_summaries(models, benchmarks):
    return expand(f"{OUT}/eval/{{base}}/{{model}}/seed{{seed}}/{{benchmark}}.jsonl.summary.json",
                  base=list(BASE_MODELS), model=models, seed=SEEDS, benchmark=benchmarks)


def metrics_files(runs):
    return expand(f"{OUT}/runs/{{base}}/{{run}}/seed{{seed}}/metrics.jsonl", base=list(BASE_MODELS), run=runs, seed=SEEDS)


CHECKPOINTS = expand(f"{OUT}/runs/{{base}}/{{run}}/seed{{seed}}/final", base=list(BASE_MODELS), run=list(RUNS), seed=SEEDS)
TABLES = expand(f"{OUT}/tables/{{table}}.{{ext}}", table=["table1", "generalization", "ablation"],
                ext=["md", "tex", "csv", "html"])
FIGURES = expand(f"{OUT}/figures/{{figure}}.png",
                 figure=["grad_norm", "sampling_ratio", "budget_curves", "token_usage", "lambda_ablation"]) + \
          expand(f"{OUT}/figures/training_cost_{{base}}.png", base=list(BASE_MODELS))  # one per base model
REPORT_PAGES = [f"{OUT}/report/setup.html"]
