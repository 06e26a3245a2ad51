"""Check every training set against every evaluation set of the config; fail on overlap."""

from gc2po.data.decontamination import check_files
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    report = check_files(
        dict(zip(sm.params.training, sm.input.training)),
        dict(zip(sm.params.evaluation, sm.input.evaluation)),
        sm.output.report,
    )
    log(
        f"no overlap between {report['training']} and {report['evaluation']} "
        f"({report['ngram']}-word runs)"
    )
