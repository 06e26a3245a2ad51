"""One table (Markdown, LaTeX, CSV, HTML; CIs and paired differences) from per-sample
evaluation files."""

import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.reporting.tables import EvalFile, write_table  # noqa: E402

sm = snakemake  # noqa: F821
with logged(sm) as log:
    methods, benchmarks, title = sm.params.spec
    files = [EvalFile.from_path(path) for path in sm.input.samples]
    cells = write_table(
        files,
        methods,
        benchmarks,
        title,
        md=sm.output.md,
        tex=sm.output.tex,
        csv=sm.output.csv,
        html=sm.output.html,
        label=sm.wildcards.table,
        names=sm.params.names,
    )
    log(cells.to_string())
