# Data preparation. Testbed mode generates the problems and warm-starts the tiny model.


if TESTBED:

    rule testbed_data:
        output:
            expand(f"{RES}/data/{{split}}.jsonl", split=["train"] + BENCHMARKS),
            manifest=f"{RES}/data/manifest.json",
        params:
            sizes=config["testbed"]["sizes"],
            seed=config["testbed"]["seed"],
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

    rule warm_start:
        input:
            train=f"{RES}/data/train.jsonl",
        output:
            directory(f"{RES}/models/base"),
        params:
            warm_start=config["testbed"].get("warm_start", {}),
        log:
            f"logs/{NAME}/warm_start.log",
        conda:
            "../envs/gc2po.yaml"
        threads: 2
        resources:
            mem_mb=4000,
            runtime=15,
        script:
            "../scripts/warm_start.py"
