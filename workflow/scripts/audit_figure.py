"""The reward-audit figure from every audited model's summary."""

import json
import sys
from pathlib import Path

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.audit import plot_audit  # noqa: E402

sm = snakemake  # noqa: F821
with logged(sm) as log:
    summaries = {}
    for path in map(Path, sm.input):
        # .../audit/{base}/{model}/seed{seed}/summary.json
        summaries[path.parent.parent.name] = json.loads(path.read_text())
    plot_audit(summaries, sm.output[0])
    log(f"plotted {list(summaries)}")
