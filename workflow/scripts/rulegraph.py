"""The pipeline's picture (gc2po.reporting.rulegraph): this config's rule graph as canonical dot
text and a layered SVG drawing."""

from pathlib import Path

from gc2po.reporting.rulegraph import parse_dot, snakemake_rulegraph, write
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    text = snakemake_rulegraph(Path(sm.params.snakefile), Path.cwd(), sm.params.configfiles)
    graph = parse_dot(text)
    write(graph, Path(sm.output.dot), Path(sm.output.svg))
    log(f"{len(graph.rules)} rules, {len(graph.edges)} edges")
