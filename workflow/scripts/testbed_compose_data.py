"""Write the testbed's composition split (test_compose) apart from the other splits."""

from gc2po.testbed.data import write_compose
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    p = sm.params
    written = write_compose(p.sizes, p.seed, p.size, sm.output[0], p.cue)
    log(f"wrote test_compose {written['count']} (sha256 {written['sha256']})")
