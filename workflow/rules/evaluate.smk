# Evaluation: per-sample records for every (model, seed) on every benchmark; one job per
# (model, seed) so the model is loaded once.


rule evaluate:
    input:
        model=model_dir,
        data=expand(f"{RES}/data/{{benchmark}}.jsonl", benchmark=BENCHMARKS),
    output:
        samples=expand(f"{OUT}/eval/{{{{model}}}}/seed{{{{seed}}}}/{{benchmark}}.jsonl", benchmark=BENCHMARKS),
        summaries=expand(f"{OUT}/eval/{{{{model}}}}/seed{{{{seed}}}}/{{benchmark}}.jsonl.summary.json", benchmark=BENCHMARKS),
    params:
        benchmarks=BENCHMARKS,
        task=config["train"]["task"],
        backend=config["evaluate"]["backend"],
        sampling=config["evaluate"]["sampling"],
        n_per_benchmark=config["evaluate"].get("n_per_benchmark", {}),
        budgets=config["evaluate"].get("budgets", []),  # on the first benchmark
        batch_size=config["evaluate"].get("batch_size", 32),
    log:
        f"logs/{NAME}/eval/{{model}}_seed{{seed}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=0,
    script:
        "../scripts/evaluate.py"
