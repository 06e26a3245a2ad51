# The report's copies of the tables written only as Markdown and CSV (the comparisons and families, the
# mechanism tables, the dose-responses, the signal audit): the report shows an HTML result and
# offers any other file only as a download (gc2po.reporting.report_tables). Table 1, the
# generalisation and ablation tables are HTML already (rule table).

# name -> (kind: the caption's paragraph, the report's category, its subcategory)
REPORT_TABLES = {
    **{name: ("comparison", "3 Results", "Method against method") for name in COMPARISONS},
    **{name: ("family", "3 Results", "Pre-registered families") for name in FAMILIES},
    **{name: ("mechanism", "4 Mechanism", "Tables") for name in MECHANISM_TABLES},
    **{name: ("dose_response", "4 Mechanism", "Dose response") for name in DOSE_RESPONSE},
    **({name: ("signal_audit", "6 Reward audit", "Tables")
        for name in ("signal_audit", "signal_audit_trained")} if AUDIT_TABLES else {}),
}
REPORT_TABLE_PAGES = [report_page(OUT, f"tables/{name}") for name in REPORT_TABLES]


rule report_table:
    input:
        md=table_file(OUT, "{name}", "md"),
    output:
        html=report(report_page(OUT, "tables/{name}"), caption="../report/report_table.rst",
                    category=lambda wc: REPORT_TABLES[wc.name][1],
                    subcategory=lambda wc: REPORT_TABLES[wc.name][2], labels={"table": "{name}"}),
    params:
        kind=lambda wc: REPORT_TABLES[wc.name][0],
    wildcard_constraints:
        name="|".join(REPORT_TABLES) or "no_report_table",
    log:
        f"logs/{NAME}/report/{{name}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    script:
        "../scripts/report_table.py"
