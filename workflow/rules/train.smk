# RL training: one job per (base model, run, seed). A local rule writes the resolved run config
# beside the run (what ran is on disk); the job trains from that file, under `accelerate launch`
# (one task, N processes) when the config names a launcher; one such task per node with
# launcher.num_machines > 1. A rerun of a killed job resumes from its last checkpoint when the
# run config is unchanged and starts over when it changed.


from gc2po.workflow.memory_check import noted_run_config


localrules:
    run_config,


rule run_config:
    output:
        RUN_PATTERN.run_config(OUT),
    params:
        # a change of any setting reruns the job; the memory plan's note where it is overridden
        run=lambda wc: noted_run_config(config, training_job(wc)),
    log:
        f"logs/{NAME}/run_config/{{base}}_{{run}}_seed{{seed}}.log",
    conda:
        "../envs/gc2po.yaml"
    script:
        "../scripts/run_config.py"


rule train:
    input:
        run_config=RUN_PATTERN.run_config(OUT),
        model=base_model_input,
        data=train_data_file,
        decontamination=f"{RES}/data/decontamination.json",  # no train/test overlap (data.smk)
    output:
        model=directory(RUN_PATTERN.final(OUT)),
        metrics=RUN_PATTERN.metrics(OUT),
    params:
        command=train_command,
    log:
        f"logs/{NAME}/train/{{base}}_{{run}}_seed{{seed}}.log",
    conda:  # vLLM and DeepSpeed come with the GPU extra
        TRAIN_ENV
    threads: TRAIN_RESOURCES.threads
    resources:
        # from the launcher, vLLM use and precision, or resources.train (common.smk); with
        # num_machines M > 1: nodes=M, one task per node; mem_mb, threads and the GPUs
        # (--gres=gpu:N/M, not gpu) are per node (gc2po.workflow.resources.JobResources)
        **TRAIN_RESOURCES.snakemake(),
    shell:
        "OMP_NUM_THREADS={threads} {params.command} > {log} 2>&1"
