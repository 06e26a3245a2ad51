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
        # .../eval/{base}/{model}/seed{seed}/{benchmark}.jsonl
        seed_dir = path.parent
        files.append(EvalFile(seed_dir.parent.parent.name, seed_dir.parent.name,
                              int(seed_dir.name.removeprefix("seed")), path.stem, path))
    tables = write_table(files, methods, benchmarks, title, sm.output.md, sm.output.tex, sm.output.csv)
    for block, table in tables.items():
        log(block)
        log(table.to_string())
