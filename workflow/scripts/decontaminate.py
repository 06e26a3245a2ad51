"""Check every training set against every evaluation set of the config; fail on overlap."""

import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.data.decontamination import check_files  # noqa: E402

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
