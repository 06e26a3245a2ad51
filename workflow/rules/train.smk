# RL training: one job per (run, seed); each run is a method of gc2po.methods plus overrides.


rule train:
    input:
        model=base_model_dir(),
        data=train_data_file(),
    output:
        model=directory(f"{OUT}/runs/{{run}}/seed{{seed}}/final"),
        metrics=f"{OUT}/runs/{{run}}/seed{{seed}}/metrics.jsonl",
    params:
        run=lambda wc: RUNS[wc.run],
        task=config["train"]["task"],
        trainer=config["train"]["trainer"],
        max_train_examples=config["train"].get("max_train_examples"),
        out_dir=lambda wc: f"{OUT}/runs/{wc.run}/seed{wc.seed}",
    log:
        f"logs/{NAME}/train/{{run}}_seed{{seed}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=0,
    script:
        "../scripts/train.py"
