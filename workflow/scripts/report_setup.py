"""The report's setup page (config, model sizes counted from the saved files,
evaluation protocol)."""

from pathlib import Path

from gc2po.reporting.setup_page import setup_html
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
p = sm.params
with logged(sm) as log:
    page = setup_html(
        p.config, p.base_models, p.model_paths, p.runs, [Path(s) for s in sm.input.summaries]
    )
    Path(sm.output[0]).parent.mkdir(parents=True, exist_ok=True)
    Path(sm.output[0]).write_text(page)
    log(f"wrote {sm.output[0]}")
