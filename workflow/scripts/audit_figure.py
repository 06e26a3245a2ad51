"""The reward-audit figure from every audited model's summary (panels under display names)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.audit import plot_audit  # noqa: E402
from gc2po.reporting.names import method_name  # noqa: E402

sm = snakemake  # noqa: F821
with logged(sm) as log:
    summaries = {}
    for path in map(Path, sm.input):
        # .../audit/{base}/{model}/seed{seed}/summary.json
        base, model = path.parents[2].name, path.parents[1].name
        label = method_name(model) if len({Path(f).parents[2].name for f in sm.input}) == 1 else f"{base}: {method_name(model)}"
        summaries[label] = json.loads(path.read_text())
    plot_audit(summaries, sm.output[0])
    log(f"plotted {list(summaries)}")
