"""The pipeline's picture (gc2po.reporting.rulegraph): this config's rule graph as canonical dot
text and a layered SVG drawing. The graph is that of the workflow this script belongs to and of
the config the job runs (written to a temporary file): no path is a parameter, so a clone of a
run, or a run from another working directory, plans nothing again."""

import json
import tempfile
from pathlib import Path

from gc2po.reporting.rulegraph import parse_dot, snakemake_rulegraph, write
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    # workflow/scripts/ (scriptdir may read workflow/rules/../scripts) -> the repository
    snakefile = Path(sm.scriptdir).resolve().parents[1] / "Snakefile"
    with tempfile.TemporaryDirectory() as folder:
        merged = Path(folder) / "config.yaml"
        merged.write_text(json.dumps(dict(sm.config)))  # JSON is YAML
        text = snakemake_rulegraph(snakefile, Path.cwd(), [merged])
    graph = parse_dot(text)
    write(graph, Path(sm.output.dot), Path(sm.output.svg))
    log(f"{len(graph.rules)} rules, {len(graph.edges)} edges")
