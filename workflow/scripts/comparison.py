"""One method against another (e.g. GC2PO - GRPO): paired differences with CIs and tests."""

from gc2po.reporting.comparison import write_comparison
from gc2po.reporting.tables import EvalFile
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    method_a, method_b = sm.params.pair
    files = [EvalFile.from_path(path) for path in sm.input.samples]
    rows = write_comparison(
        files,
        method_a,
        method_b,
        sm.params.benchmarks,
        md=sm.output.md,
        csv=sm.output.csv,
        names=sm.params.names,
    )
    log(rows.to_string())
