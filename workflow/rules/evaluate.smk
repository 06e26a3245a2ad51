# Evaluation: per-sample records of every (base, model, seed) on every benchmark; one job per
# (base, model, seed) so the model is loaded once.


rule evaluate:
    input:
        model=eval_model_input,
        data=expand(f"{RES}/data/{{benchmark}}.jsonl", benchmark=BENCHMARKS),
        train=eval_train_input,  # a testbed split's chance level is computed from it (common.smk)
    output:
        samples=eval_outputs(eval_root(OUT), BENCHMARKS),
        summaries=eval_outputs(eval_root(OUT), BENCHMARKS, SUMMARY_SUFFIX),
    params:
        model=eval_model_path,
        benchmarks=BENCHMARKS,
        task=TASK,
        backend=config["evaluate"]["backend"],
        sampling=config["evaluate"]["sampling"],
        n_per_benchmark=config["evaluate"].get("n_per_benchmark", {}),
        budgets=config["evaluate"].get("budgets", []),  # on the first benchmark
        batch_size=config["evaluate"].get("batch_size", 32),
        max_grader_errors=config["evaluate"].get("max_grader_errors", 0),
    log:
        f"logs/{NAME}/eval/{{base}}_{{model}}_seed{{seed}}.log",
    conda:
        EVAL_ENV  # with a GPU: the vllm backend
    threads: EVAL_RESOURCES.threads
    resources:  # from the backend, or resources.evaluate (common.smk)
        **EVAL_RESOURCES.snakemake(),
    script:
        "../scripts/evaluate.py"


if GREEDY:

    rule evaluate_greedy:  # the same models, greedy decoding (one completion each) of
        # evaluate.greedy_benchmarks (default: every benchmark)
        input:
            model=eval_model_input,
            data=expand(f"{RES}/data/{{benchmark}}.jsonl", benchmark=GREEDY_BENCHMARKS),
            train=eval_train_input,
        output:
            samples=eval_outputs(eval_root(OUT, greedy=True), GREEDY_BENCHMARKS),
            summaries=eval_outputs(eval_root(OUT, greedy=True), GREEDY_BENCHMARKS, SUMMARY_SUFFIX),
        params:
            model=eval_model_path,
            benchmarks=GREEDY_BENCHMARKS,
            task=TASK,
            backend=config["evaluate"]["backend"],
            sampling={**config["evaluate"]["sampling"], "n": 1, "temperature": 0.0, "top_p": 1.0},
            n_per_benchmark={},
            budgets=[],
            batch_size=config["evaluate"].get("batch_size", 32),
            max_grader_errors=config["evaluate"].get("max_grader_errors", 0),
        log:
            f"logs/{NAME}/eval_greedy/{{base}}_{{model}}_seed{{seed}}.log",
        conda:
            EVAL_ENV
        threads: EVAL_RESOURCES.threads
        resources:
            **EVAL_RESOURCES.snakemake(),
        script:
            "../scripts/evaluate.py"


if LEARNING_CURVE:

    rule learning_curve:  # accuracy along training: base (step 0), kept checkpoints, final
        input:
            model=RUN_PATTERN.final(OUT),
            data=expand(f"{RES}/data/{{benchmark}}.jsonl", benchmark=LEARNING_CURVE["benchmarks"]),
            # the two ends are read from their evaluations (same sampling), not generated again
            base_samples=[EvalFile("{base}", "base", "{seed}", benchmark).path(eval_root(OUT))
                          for benchmark in LEARNING_CURVE["benchmarks"]],
            final_samples=[EvalFile("{base}", "{run}", "{seed}", benchmark).path(eval_root(OUT))
                           for benchmark in LEARNING_CURVE["benchmarks"]],
        output:
            CurveFile("{base}", "{run}", "{seed}").path(OUT),
        params:
            base_model=lambda wc: base_model_path(wc.base),
            max_steps=lambda wc: training_job(wc).trainer["max_steps"],
            benchmarks=LEARNING_CURVE["benchmarks"],
            problems=LEARNING_CURVE["problems"],
            task=TASK,
            backend=config["evaluate"]["backend"],
            sampling=config["evaluate"]["sampling"],
            batch_size=config["evaluate"].get("batch_size", 32),
        log:
            f"logs/{NAME}/curves/{{base}}_{{run}}_seed{{seed}}.log",
        conda:
            EVAL_ENV
        threads: EVAL_RESOURCES.threads
        resources:
            **EVAL_RESOURCES.snakemake(),
        script:
            "../scripts/learning_curve.py"
