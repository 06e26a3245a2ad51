# Tables: each is its own target (e.g. `snakemake results/testbed/tables/table1.md`); one block
# of rows per base model (the ablation table: the ablation base models). The HTML version goes
# into the report.


rule table:
    input:
        samples=table_files,
        summaries=lambda wc: table_files(wc, suffix=SUMMARY_SUFFIX),
    output:
        md=table_file(OUT, "{table}", "md"),
        tex=table_file(OUT, "{table}", "tex"),
        csv=table_file(OUT, "{table}", "csv"),
        html=report(table_file(OUT, "{table}", "html"), caption="../report/table.rst",
                    category=lambda wc: "5 Ablations" if wc.table == "ablation" else "3 Results",
                    subcategory="Tables", labels={"table": "{table}"}),
    params:
        spec=lambda wc: [TABLE_SPECS[wc.table][k] for k in ("methods", "benchmarks", "title")],
        names=RUN_NAMES,
    wildcard_constraints:
        table="|".join(TABLE_SPECS),
    log:
        f"logs/{NAME}/tables/{{table}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/table.py"


rule comparison:
    input:
        samples=lambda wc: eval_files(COMPARISONS[wc.comparison], config["evaluate"]["benchmarks"]),
        summaries=lambda wc: eval_files(COMPARISONS[wc.comparison], config["evaluate"]["benchmarks"],
                                        suffix=SUMMARY_SUFFIX),  # the splits' chance levels
    output:
        md=table_file(OUT, "{comparison}", "md"),
        csv=table_file(OUT, "{comparison}", "csv"),
    params:
        pair=lambda wc: COMPARISONS[wc.comparison],
        names=RUN_NAMES,
        benchmarks=config["evaluate"]["benchmarks"],
    wildcard_constraints:
        comparison="|".join(COMPARISONS) or "no_comparison",
    log:
        f"logs/{NAME}/tables/{{comparison}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/comparison.py"


rule family:
    input:
        samples=lambda wc: eval_files([FAMILIES[wc.family]["reference"], *FAMILIES[wc.family]["runs"]],
                                      [FAMILIES[wc.family]["benchmark"]]),
        # a copy-share family reads the split's bets
        data=lambda wc: ([f"{RES}/data/{FAMILIES[wc.family]['benchmark']}.jsonl"]
                         if FAMILIES[wc.family].get("measure") == "copy_share" else []),
    output:
        md=table_file(OUT, "{family}", "md"),
        csv=table_file(OUT, "{family}", "csv"),
    params:
        spec=lambda wc: FAMILIES[wc.family],
        names=RUN_NAMES,
    wildcard_constraints:
        family="|".join(FAMILIES) or "no_family",
    log:
        f"logs/{NAME}/tables/{{family}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/family.py"


rule training_signals:  # report.training_signals: what the additive bonus did in training
    input:
        [run_dir(job).metrics(OUT) for job in JOBS.values()],
    output:
        md=table_file(OUT, "training_signals", "md"),
        csv=table_file(OUT, "training_signals", "csv"),
    params:
        names=RUN_NAMES,
    log:
        f"logs/{NAME}/tables/training_signals.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/training_signals.py"
