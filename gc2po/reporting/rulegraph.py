"""The rule graph: the Snakemake report's with one node per rule, and the docs' picture.

Snakemake's report (``snakemake.report.rulegraph_spec``) keeps one job of each rule per level of
the job DAG, so a rule whose jobs sit at several depths is drawn several times: ``evaluate`` and
``audit`` of the base model run before any training, those of the trained models after it. The
Snakefile calls :func:`install`, which puts :func:`rulegraph_spec` in its place (same data, one
node per rule).

The docs show the pipeline as a picture, ``docs/rulegraph.svg``, drawn from the default's rule
graph (below :func:`install`); the workflow's ``rulegraph`` rule draws every config's
(``results/<name>/figures/rulegraph.svg``), and ``python -m gc2po.reporting.rulegraph`` rewrites
the docs' copy.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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


# --- the pipeline's picture for the docs -------------------------------------------------------
#
# ``snakemake --rulegraph`` prints Graphviz dot text whose node numbers and edge order change
# from one run to the next (they follow set iteration order). The docs' picture is drawn from a
# canonical form of it (rules and edges sorted, ``all`` and this picture's own rule left out) by
# :func:`to_svg`, a layered drawing in plain SVG: no Graphviz needed, and the same graph always
# gives the same bytes, so a test can compare the committed picture with a fresh one.

DOT_NODE = re.compile(r'^\s*(\d+)\[label = "([^"]+)"', re.MULTILINE)
DOT_EDGE = re.compile(r"^\s*(\d+) -> (\d+)\s*$", re.MULTILINE)
LEFT_OUT = ("all", "rulegraph")  # the target that gathers everything, and the picture's own rule
DOCS_DOT = Path(__file__).resolve().parents[2] / "docs" / "rulegraph.dot"
# drawing sizes, in SVG pixels
CHAR_WIDTH, BOX_HEIGHT, PAD = 7.2, 26, 12
GAP_X, GAP_Y, MARGIN = 18, 46, 10
WAYPOINT_WIDTH = 8  # the room a long edge takes where it passes a level


@dataclass(frozen=True)
class RuleGraph:
    """Rule names (sorted) and edges (needed rule, rule that needs it), sorted."""

    rules: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]


def parse_dot(text: str) -> RuleGraph:
    """The rules and edges of ``snakemake --rulegraph`` output, without ``LEFT_OUT``."""
    names = {number: name for number, name in DOT_NODE.findall(text)}
    if not names:
        raise ValueError("rulegraph: no rule in the dot text (is it snakemake --rulegraph output?)")
    edges = {
        (names[a], names[b])
        for a, b in DOT_EDGE.findall(text)
        if names[a] not in LEFT_OUT and names[b] not in LEFT_OUT
    }
    rules = sorted(name for name in set(names.values()) if name not in LEFT_OUT)
    return RuleGraph(tuple(rules), tuple(sorted(edges)))


def to_dot(graph: RuleGraph) -> str:
    """The canonical dot text of a rule graph (what docs/rulegraph.dot holds)."""
    lines = ["digraph rules {", "    node [shape=box, style=rounded];"]
    lines += [f'    "{rule}";' for rule in graph.rules]
    lines += [f'    "{a}" -> "{b}";' for a, b in graph.edges]
    return "\n".join(lines + ["}", ""])


def read_dot(text: str) -> RuleGraph:
    """A rule graph from its canonical dot text (:func:`to_dot`'s, docs/rulegraph.dot)."""
    rules = re.findall(r'^\s*"([^"]+)";$', text, re.MULTILINE)
    edges = re.findall(r'^\s*"([^"]+)" -> "([^"]+)";$', text, re.MULTILINE)
    return RuleGraph(tuple(rules), tuple(edges))


def depths(graph: RuleGraph) -> dict[str, int]:
    """Each rule's level: one below the deepest rule it needs (0: it needs none)."""
    needs = {rule: [a for a, b in graph.edges if b == rule] for rule in graph.rules}
    depth: dict[str, int] = {}

    def depth_of(rule: str) -> int:
        if rule not in depth:
            depth[rule] = 1 + max((depth_of(n) for n in needs[rule]), default=-1)
        return depth[rule]

    for rule in graph.rules:
        depth_of(rule)
    return depth


@dataclass
class Layout:
    """Levels of nodes (rules, and the waypoints ``(a, level)`` of the edges from rule ``a``
    that pass a level), each node's width and centre x, and each edge's chain of nodes."""

    layers: list[list]
    width: dict
    x: dict
    chains: dict


def _chains(graph: RuleGraph, depth: dict[str, int]) -> dict:
    """Each edge's nodes from the rule needed to the rule that needs it, with a waypoint on
    every level between, so that a long edge is routed between the boxes, not through them.
    The long edges of one rule share its waypoint on a level: they run as one trunk and branch
    off where they end (the testbed's data feeds a dozen rules on five levels)."""
    return {
        (a, b): [a, *((a, level) for level in range(depth[a] + 1, depth[b])), b]
        for a, b in graph.edges
    }


def _order(layers: list[list], chains: dict, sweeps: int = 4) -> None:
    """Order each level by the mean position of its neighbours on the level above (down
    sweeps) and below (up sweeps), ties by name: fewer crossings (the Sugiyama heuristic)."""
    above, below = {}, {}
    for chain in chains.values():
        for upper, lower in zip(chain, chain[1:]):
            above.setdefault(lower, []).append(upper)
            below.setdefault(upper, []).append(lower)
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        neighbours = above if down else below
        order = layers[1:] if down else layers[-2::-1]
        for layer in order:
            position = {node: i for level in layers for i, node in enumerate(level)}
            keys = {}
            for node in layer:
                near = neighbours.get(node, [])
                mean = sum(position[n] for n in near) / len(near) if near else position[node]
                keys[node] = (mean, str(node))
            layer.sort(key=keys.get)


def _place(layers: list[list], width: dict, chains: dict, passes: int = 6) -> dict:
    """Centre x of every node: packed levels first, then each node pulled towards the mean of
    its neighbours' x and the level pushed apart to keep GAP_X between boxes."""
    x = {}
    for layer in layers:
        left = 0.0
        for node in layer:
            x[node] = left + width[node] / 2
            left += width[node] + GAP_X
    near: dict = {}
    for chain in chains.values():
        for upper, lower in zip(chain, chain[1:]):
            near.setdefault(lower, []).append(upper)
            near.setdefault(upper, []).append(lower)
    for _ in range(passes):
        for layer in layers:
            wanted = {
                n: sum(x[m] for m in near[n]) / len(near[n]) if n in near else x[n] for n in layer
            }
            for i, node in enumerate(layer):  # left to right: no overlap with the left one
                low = (
                    x[layer[i - 1]] + (width[layer[i - 1]] + width[node]) / 2 + GAP_X if i else -1e9
                )
                x[node] = max(wanted[node], low)
            for i in range(len(layer) - 2, -1, -1):  # right to left, the same
                node, right = layer[i], layer[i + 1]
                x[node] = min(x[node], x[right] - (width[right] + width[node]) / 2 - GAP_X)
    shift = MARGIN - min(x[n] - width[n] / 2 for n in x)
    return {n: value + shift for n, value in x.items()}


def layout(graph: RuleGraph) -> Layout:
    """Levels, order and x of every rule and waypoint of the drawing."""
    depth = depths(graph)
    chains = _chains(graph, depth)
    layers: list[list] = [[] for _ in range(1 + max(depth.values(), default=0))]
    for rule in graph.rules:
        layers[depth[rule]].append(rule)
    for waypoint in sorted({w for chain in chains.values() for w in chain[1:-1]}):
        layers[waypoint[1]].append(waypoint)
    width = {node: round(len(node) * CHAR_WIDTH + 2 * PAD) for node in graph.rules}
    width.update({node: WAYPOINT_WIDTH for layer in layers for node in layer if node not in width})
    _order(layers, chains)
    return Layout(layers, width, _place(layers, width, chains), chains)


def to_svg(graph: RuleGraph) -> str:
    """A layered drawing of the rule graph as an SVG document (pure text, deterministic)."""
    drawn = layout(graph)
    top = {
        n: MARGIN + depth * (BOX_HEIGHT + GAP_Y)
        for depth, layer in enumerate(drawn.layers)
        for n in layer
    }
    total = round(max((drawn.x[n] + drawn.width[n] / 2 for n in drawn.x), default=0) + MARGIN)
    height = MARGIN * 2 + len(drawn.layers) * BOX_HEIGHT + (len(drawn.layers) - 1) * GAP_Y
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="{height}" '
        f'viewBox="0 0 {total} {height}" font-family="sans-serif" font-size="12">',
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#888"/>'
        "</marker></defs>",
        f'<rect width="{total}" height="{height}" fill="white"/>',
    ]
    for (a, b), chain in drawn.chains.items():
        # from the bottom of the needed rule through each waypoint to the top of the rule
        points = [(drawn.x[a], top[a] + BOX_HEIGHT)]
        for waypoint in chain[1:-1]:
            points += [
                (drawn.x[waypoint], top[waypoint]),
                (drawn.x[waypoint], top[waypoint] + BOX_HEIGHT),
            ]
        points.append((drawn.x[b], top[b]))
        path = f"M{points[0][0]:.0f},{points[0][1]}"
        for (x1, y1), (x2, y2) in zip(points[::2], points[1::2]):
            bend = (y2 - y1) / 2
            path += f" C{x1:.0f},{y1 + bend:.0f} {x2:.0f},{y2 - bend:.0f} {x2:.0f},{y2}"
            path += "" if (x2, y2) == points[-1] else f" L{x2:.0f},{y2 + BOX_HEIGHT}"
        out.append(
            f'<path d="{path}" fill="none" stroke="#888" stroke-width="1.5" '
            f'marker-end="url(#arrow)"><title>{a} -&gt; {b}</title></path>'
        )
    for rule in graph.rules:
        x, y, w = drawn.x[rule] - drawn.width[rule] / 2, top[rule], drawn.width[rule]
        out.append(
            f'<g><title>{rule}</title><rect x="{x:.0f}" y="{y}" width="{w}" height="{BOX_HEIGHT}" '
            f'rx="6" fill="#eef3fb" stroke="#4a6fa5" stroke-width="1.5"/>'
            f'<text x="{drawn.x[rule]:.0f}" y="{y + BOX_HEIGHT / 2 + 4:.0f}" '
            f'text-anchor="middle">{rule}</text></g>'
        )
    return "\n".join(out + ["</svg>", ""])


def snakemake_rulegraph(snakefile: Path, workdir: Path, configfiles: list[str]) -> str:
    """``snakemake --rulegraph`` of a workflow and config, every rule planned (``--forceall``:
    the graph of the whole config, whatever already exists); ``--nolock``, so a job of the
    running workflow can ask for it."""
    command = [sys.executable, "-m", "snakemake", "--rulegraph", "--forceall", "--nolock"]
    command += ["--cores", "1", "-s", str(snakefile), "-d", str(workdir)]
    command += ["--configfile", *map(str, configfiles)] if configfiles else []
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"snakemake --rulegraph failed ({out.returncode}): {last}")
    return out.stdout


def write(graph: RuleGraph, dot: Path, svg: Path) -> None:
    """The canonical dot text and its drawing."""
    dot.write_text(to_dot(graph))
    svg.write_text(to_svg(graph))


def main(argv: list[str] | None = None) -> int:
    """Rewrite docs/rulegraph.{dot,svg} from the embedded default's rule graph."""
    parser = argparse.ArgumentParser(
        prog="python -m gc2po.reporting.rulegraph",
        description=(
            "write docs/rulegraph.dot and docs/rulegraph.svg: the default config's rule graph"
        ),
    )
    parser.parse_args(argv)
    root = DOCS_DOT.parents[1]
    graph = parse_dot(snakemake_rulegraph(root / "Snakefile", root, []))
    write(graph, DOCS_DOT, DOCS_DOT.with_suffix(".svg"))
    print(f"{DOCS_DOT} and {DOCS_DOT.with_suffix('.svg')}: {len(graph.rules)} rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
