"""The report's setup page (config, model sizes counted from the saved files,
evaluation protocol)."""

import sys
from pathlib import Path

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.reporting.setup_page import setup_html  # noqa: E402

sm = snakemake  # noqa: F821
p = sm.params
with logged(sm) as log:
    page = setup_html(
        p.config, p.base_models, p.model_paths, p.runs, [Path(s) for s in sm.input.summaries]
    )
    Path(sm.output[0]).parent.mkdir(parents=True, exist_ok=True)
    Path(sm.output[0]).write_text(page)
    log(f"wrote {sm.output[0]}")
