"""The rule graph of the Snakemake report with one node per rule.

Snakemake's report (``snakemake.report.rulegraph_spec``) keeps one job of each rule per level of
the job DAG, so a rule whose jobs sit at several depths is drawn several times: ``evaluate`` and
``audit`` of the base model run before any training, those of the trained models after it. The
Snakefile calls :func:`install`, which puts :func:`rulegraph_spec` in its place (same data, one
node per rule).
"""

from __future__ import annotations

LINK_SPACING = 50  # vertical distance between two nodes, as in Snakemake's own spec


def rulegraph_spec(dag) -> tuple[dict, int, int]:
    """(vega data {nodes, links, links_direct}, xmax, ymax) like Snakemake's spec.

    ``dag``: anything with ``toposorted()`` (levels of jobs, each with ``job.rule.name``) and
    ``dependencies[job]`` (the jobs it needs). A rule sits at the deepest level of its jobs, so
    that its inputs come above it; ties are ordered by name. A link joins two rules when a job of
    one needs a job of the other; links between neighbouring nodes are drawn straight
    (``links_direct``), the others as arcs.
    """
    depth: dict[str, int] = {}
    jobs = []
    for level, layer in enumerate(dag.toposorted()):
        for job in layer:
            depth[job.rule.name] = level
            jobs.append(job)
    rules = sorted(depth, key=lambda name: (depth[name], name))
    index = {name: i for i, name in enumerate(rules)}
    nodes = [{"rule": name, "fx": 10, "fy": i * LINK_SPACING} for i, name in enumerate(rules)]
    pairs = sorted(
        {
            (index[needed.rule.name], index[job.rule.name])
            for job in jobs
            for needed in dag.dependencies[job]
            if needed.rule.name != job.rule.name
        }
    )
    links, direct = [], []
    for source, target in pairs:
        link = {
            "target": target,
            "source": source,
            "sourcerule": rules[source],
            "targetrule": rules[target],
            "value": 1,
        }
        (direct if target - source == 1 else links).append(link)
    return (
        {"nodes": nodes, "links": links, "links_direct": direct},
        100,
        max(len(rules) - 1, 0) * LINK_SPACING,
    )


def install() -> None:
    """Make Snakemake's HTML report draw :func:`rulegraph_spec` (the reporter looks the name up
    in its module when it renders)."""
    import snakemake.report.html_reporter as html_reporter

    html_reporter.rulegraph_spec = rulegraph_spec
