"""A table's Markdown as an HTML page for the report (gc2po.reporting.report_tables)."""

from pathlib import Path

from gc2po.reporting.report_tables import markdown_page
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    page = markdown_page(Path(sm.input.md).read_text(), sm.wildcards.name)
    Path(sm.output.html).write_text(page)
    log(f"{sm.output.html}: {len(page)} characters")
