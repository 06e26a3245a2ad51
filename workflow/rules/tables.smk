# Tables: each is its own target (e.g. `snakemake results/testbed/tables/table1.md`); one block
# of rows per base model. The HTML version goes into the report.

TABLE_SPECS = {
    "table1": (config["report"]["main_methods"], BENCHMARKS, "Pass@1 (%) per benchmark"),
    "generalization": (config["report"]["main_methods"], config["report"]["generalization_benchmarks"],
                       "Generalisation: pass@1 (%) on out-of-distribution benchmarks"),
    "ablation": (config["report"]["ablation_methods"], BENCHMARKS, "Ablations of GC2PO: pass@1 (%)"),
}


rule table:
    input:
        samples=lambda wc: eval_files(["base"] + TABLE_SPECS[wc.table][0], TABLE_SPECS[wc.table][1]),
        summaries=lambda wc: [f"{f}.summary.json" for f in eval_files(["base"] + TABLE_SPECS[wc.table][0],
                                                                      TABLE_SPECS[wc.table][1])],
    output:
        md=f"{OUT}/tables/{{table}}.md",
        tex=f"{OUT}/tables/{{table}}.tex",
        csv=f"{OUT}/tables/{{table}}.csv",
        html=report(f"{OUT}/tables/{{table}}.html", caption="../report/table.rst", category="3 Evaluation",
                    subcategory="Tables", labels={"table": "{table}"}),
    params:
        spec=lambda wc: TABLE_SPECS[wc.table],
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
