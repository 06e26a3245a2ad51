# Reasoning, not sharpening or cue avoidance (evaluate.reasoning; testbed only): every model of the
# mechanism table on the problems without a bet of test_id and of test_compose (new compositions of
# trained parts, written apart so the other split files stay as they are), n samples each and
# greedily, in evaluation roots of their own (no other job's outputs change); tables/reasoning.md
# holds greedy pass@1, pass@k, the parse-failure and truncation shares and the chance levels.

# REASONING (its settings, None when off), REASONING_OUTPUTS and reasoning_files: common.smk

if REASONING:

    rule testbed_compose_data:  # drawn after the splits of testbed.sizes, which it leaves as they are
        output:
            f"{RES}/data/{COMPOSE}.jsonl",
        params:
            sizes=config["testbed"]["sizes"],
            seed=config["testbed"]["seed"],
            cue=config["testbed"].get("cue"),
            size=REASONING["compose_size"],
        log:
            f"logs/{NAME}/testbed_compose_data.log",
        conda:
            "../envs/gc2po.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=5,
        script:
            "../scripts/testbed_compose_data.py"

    rule evaluate_reasoning:  # n samples and one greedy completion of each uncued problem
        input:
            model=eval_model_input,
            data=[f"{RES}/data/{split}.jsonl" for split in REASONING["splits"]],
            train=eval_train_input,
        output:
            sampled=eval_outputs(reasoning_root(OUT), REASONING["splits"]),
            sampled_summaries=eval_outputs(reasoning_root(OUT), REASONING["splits"], SUMMARY_SUFFIX),
            greedy=eval_outputs(reasoning_root(OUT, greedy=True), REASONING["splits"]),
            greedy_summaries=eval_outputs(reasoning_root(OUT, greedy=True), REASONING["splits"],
                                          SUMMARY_SUFFIX),
        params:
            model=eval_model_path,
            benchmarks=REASONING["splits"],
            task=TASK,
            backend=config["evaluate"]["backend"],
            sampling={**config["evaluate"]["sampling"], "n": REASONING["n"]},
            batch_size=config["evaluate"].get("batch_size", 32),
            max_grader_errors=config["evaluate"].get("max_grader_errors", 0),
        log:
            f"logs/{NAME}/eval_reasoning/{{base}}_{{model}}_seed{{seed}}.log",
        conda:
            EVAL_ENV
        threads: EVAL_RESOURCES.threads
        resources:
            **EVAL_RESOURCES.snakemake(),
        script:
            "../scripts/evaluate_reasoning.py"

    rule reasoning:
        input:
            sampled=reasoning_files(False),
            greedy=reasoning_files(True),
            data=[f"{RES}/data/{split}.jsonl" for split in REASONING["splits"]],
            train=f"{RES}/data/train.jsonl",
        output:
            md=table_file(OUT, "reasoning", "md"),
            csv=table_file(OUT, "reasoning", "csv"),
        params:
            splits=REASONING["splits"],
            ks=REASONING["ks"],
            n=REASONING["n"],
            names=RUN_NAMES,
        log:
            f"logs/{NAME}/tables/reasoning.log",
        conda:
            "../envs/gc2po.yaml"
        threads: 1
        resources:
            mem_mb=2000,
            runtime=5,
        script:
            "../scripts/reasoning.py"
