"""Load one dataset (Hub id or local mirror) and write normalised JSONL + manifest."""

import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.data import load_benchmark, write_normalised  # noqa: E402

sm = snakemake  # noqa: F821
spec = sm.params.spec
with logged(sm) as log:
    skipped = []
    years = tuple(spec["years"]) if spec.get("years") else None
    records = load_benchmark(spec["benchmark"], spec.get("path"), limit=spec.get("limit"), seed=spec.get("seed", 0),
                             years=years, skipped=skipped)
    manifest = write_normalised(records, sm.output.data, source=spec.get("path") or f"hub:{spec['benchmark']}",
                                seed=spec.get("seed", 0))
    if skipped:
        log(f"skipped {len(skipped)} rows without an extractable answer: {skipped}")
    log(f"wrote {manifest['count']} records (sha256 {manifest['sha256']})")
