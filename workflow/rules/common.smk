# Config validation, run expansion and input functions shared by every stage.
import os
from pathlib import Path

from snakemake.utils import validate

validate(config, workflow.source_path("../schemas/config.schema.yaml"))

NAME = config["name"]
SEEDS = config["seeds"]
RES = f"resources/{NAME}"
OUT = f"results/{NAME}"
BENCHMARKS = config["evaluate"]["benchmarks"]
TESTBED = config["mode"] == "testbed"


def _runs():
    """run label -> {method, trainer overrides}: one per method, plus the lambda sweeps."""
    runs = {m: {"method": m, "trainer": {}} for m in config["methods"]}
    for key, values in (config.get("sweeps") or {}).items():
        for value in values:
            runs[f"gc2po_{key}_{value}"] = {"method": "gc2po", "trainer": {key: value}}
    return runs


RUNS = _runs()
BASE = config["report"]["base_label"]
MODELS = [BASE] + list(RUNS)  # evaluated models: the base model and every trained run

wildcard_constraints:
    run="|".join(RUNS),
    model="|".join(MODELS),
    seed=r"\d+",
    benchmark="|".join(BENCHMARKS),


def base_model_dir():
    return f"{RES}/models/base"


def train_data_file():
    return f"{RES}/data/train.jsonl"


def model_dir(wildcards):
    if wildcards.model == BASE:
        return base_model_dir()
    return f"{OUT}/runs/{wildcards.model}/seed{wildcards.seed}/final"


def eval_files(models, benchmarks):
    return expand(f"{OUT}/eval/{{model}}/seed{{seed}}/{{benchmark}}.jsonl", model=models, seed=SEEDS, benchmark=benchmarks)


def eval_summaries(models, benchmarks):
    return expand(f"{OUT}/eval/{{model}}/seed{{seed}}/{{benchmark}}.jsonl.summary.json", model=models, seed=SEEDS,
                  benchmark=benchmarks)


def metrics_files(runs):
    return expand(f"{OUT}/runs/{{run}}/seed{{seed}}/metrics.jsonl", run=runs, seed=SEEDS)


CHECKPOINTS = expand(f"{OUT}/runs/{{run}}/seed{{seed}}/final", run=list(RUNS), seed=SEEDS)
TABLES = expand(f"{OUT}/tables/{{table}}.{{ext}}", table=["table1", "generalization", "ablation"], ext=["md", "tex", "csv"])
FIGURES = expand(f"{OUT}/figures/{{figure}}.png",
                 figure=["grad_norm", "sampling_ratio", "training_cost", "budget_curves", "token_usage", "lambda_ablation"])
