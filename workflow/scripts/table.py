"""One table (Markdown, LaTeX, CSV with bootstrap CIs) from per-sample evaluation files."""

import sys
from pathlib import Path

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.reporting.tables import EvalFile, write_table  # noqa: E402

sm = snakemake  # noqa: F821
with logged(sm) as log:
    methods, benchmarks, title = sm.params.spec
    files = []
    for path in map(Path, sm.input):
        # {root}/{model}/seed{seed}/{benchmark}.jsonl
        files.append(EvalFile(path.parent.parent.name, int(path.parent.name.removeprefix("seed")), path.stem, path))
    table = write_table(files, sm.params.base, methods, benchmarks, title, sm.output.md, sm.output.tex, sm.output.csv)
    log(table.to_string())
