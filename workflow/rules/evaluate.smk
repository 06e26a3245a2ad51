# Evaluation: per-sample records of every (base, model, seed) on every benchmark; one job per
# (base, model, seed) so the model is loaded once.


rule evaluate:
    input:
        model=eval_model_input,
        data=expand(f"{RES}/data/{{benchmark}}.jsonl", benchmark=BENCHMARKS),
    output:
        samples=expand(f"{OUT}/eval/{{{{base}}}}/{{{{model}}}}/seed{{{{seed}}}}/{{benchmark}}.jsonl", benchmark=BENCHMARKS),
        summaries=expand(f"{OUT}/eval/{{{{base}}}}/{{{{model}}}}/seed{{{{seed}}}}/{{benchmark}}.jsonl.summary.json",
                         benchmark=BENCHMARKS),
    params:
        model=eval_model_path,
        benchmarks=BENCHMARKS,
        task=config["train"]["task"] if TESTBED else "benchmark",
        backend=config["evaluate"]["backend"],
        sampling=config["evaluate"]["sampling"],
        n_per_benchmark=config["evaluate"].get("n_per_benchmark", {}),
        budgets=config["evaluate"].get("budgets", []),  # on the first benchmark
        batch_size=config["evaluate"].get("batch_size", 32),
    log:
        f"logs/{NAME}/eval/{{base}}_{{model}}_seed{{seed}}.log",
    conda:
        "../envs/gc2po-gpu.yaml" if GPU else "../envs/gc2po.yaml"  # GPU: the vllm backend
    threads: 1 if not GPU else 8
    resources:
        mem_mb=4000 if not GPU else 128000,
        runtime=60 if not GPU else 720,
        gpu=0 if not GPU else 1,
    script:
        "../scripts/evaluate.py"


if GREEDY:

    rule evaluate_greedy:  # the same models and benchmarks, greedy decoding (one completion each)
        input:
            model=eval_model_input,
            data=expand(f"{RES}/data/{{benchmark}}.jsonl", benchmark=BENCHMARKS),
        output:
            samples=expand(f"{OUT}/eval_greedy/{{{{base}}}}/{{{{model}}}}/seed{{{{seed}}}}/{{benchmark}}.jsonl",
                           benchmark=BENCHMARKS),
            summaries=expand(f"{OUT}/eval_greedy/{{{{base}}}}/{{{{model}}}}/seed{{{{seed}}}}/{{benchmark}}.jsonl.summary.json",
                             benchmark=BENCHMARKS),
        params:
            model=eval_model_path,
            benchmarks=BENCHMARKS,
            task=config["train"]["task"] if TESTBED else "benchmark",
            backend=config["evaluate"]["backend"],
            sampling={**config["evaluate"]["sampling"], "n": 1, "temperature": 0.0, "top_p": 1.0},
            n_per_benchmark={},
            budgets=[],
            batch_size=config["evaluate"].get("batch_size", 32),
        log:
            f"logs/{NAME}/eval_greedy/{{base}}_{{model}}_seed{{seed}}.log",
        conda:
            "../envs/gc2po-gpu.yaml" if GPU else "../envs/gc2po.yaml"
        threads: 1 if not GPU else 8
        resources:
            mem_mb=4000 if not GPU else 128000,
            runtime=60 if not GPU else 720,
            gpu=0 if not GPU else 1,
        script:
            "../scripts/evaluate.py"


if LEARNING_CURVE:

    rule learning_curve:  # accuracy along training: base (step 0), kept checkpoints, final
        input:
            model=f"{OUT}/runs/{{base}}/{{run}}/seed{{seed}}/final",
            data=expand(f"{RES}/data/{{benchmark}}.jsonl", benchmark=LEARNING_CURVE["benchmarks"]),
            # the two ends are read from their evaluations (same sampling), not generated again
            base_samples=expand(f"{OUT}/eval/{{{{base}}}}/base/seed{{{{seed}}}}/{{benchmark}}.jsonl",
                                benchmark=LEARNING_CURVE["benchmarks"]),
            final_samples=expand(f"{OUT}/eval/{{{{base}}}}/{{{{run}}}}/seed{{{{seed}}}}/{{benchmark}}.jsonl",
                                 benchmark=LEARNING_CURVE["benchmarks"]),
        output:
            f"{OUT}/curves/{{base}}/{{run}}/seed{{seed}}.csv",
        params:
            base_model=lambda wc: base_model_path(wc.base),
            max_steps=lambda wc: training_job(wc).trainer["max_steps"],
            benchmarks=LEARNING_CURVE["benchmarks"],
            problems=LEARNING_CURVE["problems"],
            task=config["train"]["task"] if TESTBED else "benchmark",
            backend=config["evaluate"]["backend"],
            sampling=config["evaluate"]["sampling"],
            batch_size=config["evaluate"].get("batch_size", 32),
        log:
            f"logs/{NAME}/curves/{{base}}_{{run}}_seed{{seed}}.log",
        conda:
            "../envs/gc2po-gpu.yaml" if GPU else "../envs/gc2po.yaml"
        threads: 1 if not GPU else 8
        resources:
            mem_mb=4000 if not GPU else 128000,
            runtime=60 if not GPU else 720,
            gpu=0 if not GPU else 1,
        script:
            "../scripts/learning_curve.py"
