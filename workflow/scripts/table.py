"""One table (Markdown, LaTeX, CSV, HTML; CIs and paired differences) from per-sample
evaluation files."""

from gc2po.reporting.tables import EvalFile, write_table
from gc2po.workflow.script_log import logged

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
