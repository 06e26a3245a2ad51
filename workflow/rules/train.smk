# RL training: one job per (base model, run, seed); a run is a method of gc2po.methods plus
# overrides.


rule train:
    input:
        model=base_model_input,
        data=train_data_file,
        decontamination=f"{RES}/data/decontamination.json",  # no train/test overlap (data.smk)
    output:
        model=directory(f"{OUT}/runs/{{base}}/{{run}}/seed{{seed}}/final"),
        metrics=f"{OUT}/runs/{{base}}/{{run}}/seed{{seed}}/metrics.jsonl",
    params:
        model=lambda wc: base_model_path(wc.base),
        run=lambda wc: RUNS[wc.run],
        task=config["train"]["task"],
        trainer=config["train"]["trainer"],
        max_train_examples=config["train"].get("max_train_examples"),
        out_dir=lambda wc, output: os.path.dirname(output.metrics),
    log:
        f"logs/{NAME}/train/{{base}}_{{run}}_seed{{seed}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1 if not GPU else 32
    resources:
        mem_mb=4000 if not GPU else 512000,
        runtime=60 if not GPU else 2880,
        gpu=0 if not GPU else 8,
    script:
        "../scripts/train.py"
