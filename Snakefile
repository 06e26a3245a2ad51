# GC2PO reproduction workflow: data -> (testbed warm start) -> RL training -> evaluation ->
# tables, figures, report. Rules live in workflow/rules/, one file per stage.
configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/audit.smk"


rule all:
    input:
        CHECKPOINTS,  # listed so that deleting one checkpoint reruns it and what depends on it
        TABLES,
        FIGURES,
        REPORT_PAGES,
        AUDIT_FIGURE,
