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
    def key(path: Path) -> tuple[str, str]:
        """(base, label) of .../audit/{base}/{model}/seed{k}[/step{n}]/summary.json"""
        if path.parent.name.startswith("step"):  # a checkpoint along training
            run = method_name(path.parents[2].name, sm.params.names)
            return path.parents[3].name, f"{run} at step {path.parent.name[4:]}"
        return path.parents[2].name, method_name(path.parents[1].name, sm.params.names)

    paths = list(map(Path, sm.input))
    one_base = len({key(path)[0] for path in paths}) == 1
    summaries = {}
    for path in paths:
        base, label = key(path)
        summaries[label if one_base else f"{base}: {label}"] = json.loads(path.read_text())
    plot_audit(summaries, sm.output[0])
    log(f"plotted {list(summaries)}")
