"""The candidate rule over a family's runs (report.families[].candidates): which run passes."""

import pandas as pd

from gc2po.reporting.candidates import write_candidates
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    spec = sm.params.spec
    rows = write_candidates(
        pd.read_csv(sm.input.family),
        pd.read_csv(sm.input.mechanism),
        family=spec["name"],
        split=spec["benchmark"],
        uncued_margin=float(spec["candidates"]["uncued_margin"]),
        md=sm.output.md,
        csv=sm.output.csv,
        names=sm.params.names,
    )
    log(rows.to_string())
