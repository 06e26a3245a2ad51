# Data preparation and base models: testbed generation + warm start, benchmark loaders
# (Hub or local mirrors), Hub base models into the cache, GGUF-in-a-wheel conversion; the
# train/test decontamination check that every training job depends on.

TRAINING_SETS = sorted({spec["train_data"] for spec in BASE_MODELS.values()})
# the sets checked against the test splits: a testbed's warm start trains on the whole train split
CHECKED_SETS = sorted(set(TRAINING_SETS) | ({"train"} if TESTBED else set()))
# local mirrors: a relative path is read from the repository (the Snakefile's folder)
LOCAL_SOURCES = {key: os.path.join(workflow.basedir, spec["path"]) for key, spec in DATASETS.items() if spec.get("path")}


if TESTBED:
    # testbed.rl_cued_share: the RL runs' cut of the train split (train_rl.jsonl), if set
    RL_TRAIN_SPLIT = [name for name in [testbed_train_set(config)] if name != "train"]

    rule testbed_data:
        output:
            expand(f"{RES}/data/{{split}}.jsonl", split=["train"] + BENCHMARKS + RL_TRAIN_SPLIT),
            manifest=f"{RES}/data/manifest.json",
        params:
            sizes=config["testbed"]["sizes"],
            seed=config["testbed"]["seed"],
            cue=config["testbed"].get("cue"),
            # the RL runs' train split cut to this share of cued problems (train_rl.jsonl)
            rl_cued_share=config["testbed"].get("rl_cued_share"),
            out_dir=lambda wc, output: os.path.dirname(output.manifest),
        log:
            f"logs/{NAME}/testbed_data.log",
        conda:
            "../envs/gc2po.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=5,
        script:
            "../scripts/testbed_data.py"

    # the shipped base model of this recipe (data/base_models/, checksums verified), or the warm
    # start trained here for a recipe none is shipped for (gc2po.testbed.base_models)
    rule warm_start:
        input:
            train=f"{RES}/data/train.jsonl",
        output:
            directory(f"{RES}/models/testbed"),
        params:
            warm_start=config["testbed"].get("warm_start", {}),
            # the repository's data/base_models/, found by the script (no path here: a clone of
            # a run, or a run from another working directory, has the same params)
            shipped=True,
        log:
            f"logs/{NAME}/warm_start.log",
        conda:
            "../envs/gc2po.yaml"
        threads: 2
        resources:
            mem_mb=4000,
            runtime=resources.warm_start_runtime(config),  # grows with the epochs
        script:
            "../scripts/warm_start.py"

    # the same recipe trained here even where a base model is shipped (never a dependency of
    # another rule): `snakemake --cores 2 resources/<name>/models/testbed_rebuilt`, then
    # `python -m gc2po.testbed.base_models compare` against the shipped one (docs/testbed.md)
    use rule warm_start as warm_start_rebuild with:
        output:
            directory(f"{RES}/models/testbed_rebuilt"),
        params:
            warm_start=config["testbed"].get("warm_start", {}),
            shipped=False,
        log:
            f"logs/{NAME}/warm_start_rebuild.log",

else:

    rule benchmark_data:
        input:
            source=lambda wc: LOCAL_SOURCES.get(wc.dataset, []),
            # a training set with `decontaminate: true` drops questions overlapping these
            evaluation=lambda wc: expand(f"{RES}/data/{{name}}.jsonl", name=BENCHMARKS)
            if DATASETS[wc.dataset].get("decontaminate") else [],
        output:
            data=f"{RES}/data/{{dataset}}.jsonl",
            manifest=f"{RES}/data/{{dataset}}.jsonl.manifest.json",
        params:
            spec=lambda wc: {**DATASETS[wc.dataset], "path": LOCAL_SOURCES.get(wc.dataset)},
            evaluation=BENCHMARKS,
        log:
            f"logs/{NAME}/data/{{dataset}}.log",
        conda:
            "../envs/gc2po.yaml"
        threads: 1
        resources:
            mem_mb=4000,
            runtime=30,
        script:
            "../scripts/benchmark_data.py"

    rule hub_model:
        output:
            f"{RES}/models/{{base}}.hub.json",
        params:
            repo=lambda wc: BASE_MODELS[wc.base]["path"],
        log:
            f"logs/{NAME}/models/{{base}}.log",
        conda:
            "../envs/gc2po.yaml"
        threads: 1
        resources:
            mem_mb=2000,
            runtime=120,
        script:
            "../scripts/hub_model.py"

    rule gguf_model:
        output:
            directory(f"{RES}/models/{{base}}"),
        params:
            requirement=lambda wc: BASE_MODELS[wc.base]["requirement"],
        log:
            f"logs/{NAME}/models/{{base}}.log",
        conda:
            "../envs/gc2po.yaml"
        threads: 1
        resources:
            mem_mb=8000,
            runtime=30,
        script:
            "../scripts/gguf_model.py"


rule decontaminate:
    input:
        training=expand(f"{RES}/data/{{name}}.jsonl", name=CHECKED_SETS),
        evaluation=expand(f"{RES}/data/{{name}}.jsonl", name=BENCHMARKS),
    output:
        report=f"{RES}/data/decontamination.json",
    params:
        training=CHECKED_SETS,
        evaluation=BENCHMARKS,
    log:
        f"logs/{NAME}/decontaminate.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    script:
        "../scripts/decontaminate.py"
