# GC2PO reproduction workflow: data -> (testbed warm start) -> RL training -> evaluation ->
# tables, figures, report. Rules live in workflow/rules/, one file per stage; config/README.md
# describes every config and key.
from snakemake.utils import min_version

min_version("9.10")

# The embedded default; a config given with --configfile replaces it (configs inherit nothing:
# layer them explicitly, e.g. --configfile config/config.yaml config/ci.yaml).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


# The report's rule graph with one node per rule (Snakemake's draws a rule once per DAG level, so
# evaluate and audit, whose base-model jobs come before any training, appeared twice).
from gc2po.reporting import rulegraph

rulegraph.install()

# `snakemake --report` before the run: one line naming what to run first, not a warning per
# missing output and then a missing-file error (gc2po.reporting.report_guard)
from gc2po.reporting import report_guard

report_guard.install(workflow.overwrite_configfiles)

# A cluster profile's placeholder values (CHANGE_ME_... in workflow/profiles/slurm) stop a run
# before any job is submitted, naming each key; a dry run prints its plan and names them
# (gc2po.workflow.profile_check)
from gc2po.workflow import profile_check

profile_check.install(workflow)


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/mechanism.smk"
include: "workflow/rules/reasoning.smk"
include: "workflow/rules/report.smk"

# The last lines of a run that ended well: where its results are, the first rows of its Table 1,
# the docs page that holds the tables to expect and the command that compares them
# (gc2po.reporting.after_run)
onsuccess:
    import os
    from pathlib import Path

    from gc2po.reporting import after_run

    docs = Path(workflow.basedir) / "docs"
    print(after_run.message(NAME, Path(OUT), docs, os.path.relpath(docs)))


# Downloads run on the submit host, never as cluster jobs (DOWNLOAD_RULES in common.smk).
workflow.localrules(*(rule.name for rule in workflow.rules if rule.name in DOWNLOAD_RULES))


rule all:
    input:
        CHECKPOINTS,  # listed so that deleting one checkpoint reruns it and what depends on it
        TABLES,
        FIGURES,
        REPORT_PAGES,
        AUDIT_FIGURE,
        AUDIT_TABLES,
        MECHANISM_OUTPUTS,
        REASONING_OUTPUTS,
        REPORT_TABLE_PAGES,
        FAMILY_FIGURES,
        RULEGRAPH,
