"""The report's rule graph draws every rule once: Snakemake's own spec keeps one job per rule and
DAG level, so evaluate and audit (base model before training, trained models after) were drawn
twice. The docs' picture of the pipeline (docs/rulegraph.svg) is the drawing of its committed
source, which is the default's rule graph as a fresh `snakemake --rulegraph` gives it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from snakemake.report.rulegraph_spec import rulegraph_spec as snakemake_spec

from gc2po.reporting import rulegraph as rg
from gc2po.reporting.rulegraph import rulegraph_spec

ROOT = Path(__file__).resolve().parents[2]


class Job:
    def __init__(self, name: str):
        self.name, self.rule = name, SimpleNamespace(name=name.split(":")[0])


class Dag:
    """The shape of the testbed workflow's job DAG: levels of jobs and what each job needs."""

    def __init__(self, edges: dict[str, list[str]]):
        self.jobs = {name: Job(name) for name in edges}
        self.dependencies = {
            self.jobs[n]: {self.jobs[d] for d in needs} for n, needs in edges.items()
        }
        self.edges = edges

    def toposorted(self):
        levels, placed = [], set()
        while len(placed) < len(self.edges):
            layer = [
                n for n, needs in self.edges.items() if n not in placed and set(needs) <= placed
            ]
            levels.append([self.jobs[n] for n in layer])
            placed |= set(layer)
        return levels


DAG = Dag(
    {
        "testbed_data": [],
        "warm_start": ["testbed_data"],
        "run_config:gc2po": [],
        "run_config:grpo": [],
        "evaluate:base": ["warm_start", "testbed_data"],
        "audit:base": ["warm_start", "testbed_data"],
        "train:gc2po": ["warm_start", "run_config:gc2po"],
        "train:grpo": ["warm_start", "run_config:grpo"],
        "evaluate:gc2po": ["train:gc2po"],
        "evaluate:grpo": ["train:grpo"],
        "audit:gc2po": ["train:gc2po"],
        "table": ["evaluate:base", "evaluate:gc2po", "evaluate:grpo"],
        "all": ["table", "audit:base", "audit:gc2po"],
    }
)


def test_snakemake_draws_a_rule_once_per_dag_level():
    nodes = Counter(node["rule"] for node in snakemake_spec(DAG)[0]["nodes"])
    assert nodes["evaluate"] == 2 and nodes["audit"] == 2  # the cause, if Snakemake ever changes it


def test_every_rule_is_drawn_once_below_its_inputs():
    spec, xmax, ymax = rulegraph_spec(DAG)
    rules = [node["rule"] for node in spec["nodes"]]
    assert rules == [
        "run_config",
        "testbed_data",
        "warm_start",
        "train",
        "audit",
        "evaluate",
        "table",
        "all",
    ]
    assert ymax == 7 * 50 and [node["fy"] for node in spec["nodes"]] == [i * 50 for i in range(8)]
    links = {
        (link["sourcerule"], link["targetrule"]) for link in spec["links"] + spec["links_direct"]
    }
    assert links == {
        ("testbed_data", "warm_start"),
        ("testbed_data", "evaluate"),
        ("testbed_data", "audit"),
        ("warm_start", "evaluate"),
        ("warm_start", "audit"),
        ("warm_start", "train"),
        ("run_config", "train"),
        ("train", "evaluate"),
        ("train", "audit"),
        ("evaluate", "table"),
        ("table", "all"),
        ("audit", "all"),
    }
    for link in spec["links"] + spec["links_direct"]:
        assert (
            rules[link["source"]] == link["sourcerule"]
            and rules[link["target"]] == link["targetrule"]
        )
        assert (link in spec["links_direct"]) == (link["target"] - link["source"] == 1)


WORKFLOW = """
from gc2po.reporting import rulegraph

rulegraph.install()  # as the Snakefile does

rule all:
    input: "eval_base.txt", "eval_run.txt"

rule prepare:
    output: "base.txt"
    shell: "echo base > {output}"

rule train:
    input: "base.txt"
    output: "run.txt"
    shell: "echo run > {output}"

rule evaluate:  # of the base model (level 1) and of the trained one (level 2)
    input: lambda wc: "base.txt" if wc.model == "base" else "run.txt"
    output: report("eval_{model}.txt", category="Evaluation")
    shell: "echo {wildcards.model} > {output}"
"""


def test_the_installed_spec_is_what_the_html_report_draws(tmp_path):
    (tmp_path / "Snakefile").write_text(WORKFLOW)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args in (["--cores", "1"], ["--report", "report.html"]):
        out = subprocess.run(
            [sys.executable, "-m", "snakemake", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert out.returncode == 0, out.stderr[-2000:]
    html = (tmp_path / "report.html").read_text()
    spec = json.loads(re.search(r"var rulegraph_spec = (.*);", html).group(1))
    nodes = next(data["values"] for data in spec["data"] if data["name"] == "node-data")
    assert [node["rule"] for node in nodes] == ["prepare", "train", "evaluate", "all"]


# --- the pipeline's picture for the docs -------------------------------------------------------

SNAKEMAKE_DOT = """digraph snakemake_dag {
    graph[bgcolor=white, margin=0];
	0[label = "all", color = "0.00 0.6 0.85", style="rounded"];
	1[label = "train", color = "0.55 0.6 0.85", style="rounded"];
	2[label = "testbed_data", color = "0.52 0.6 0.85", style="rounded"];
	3[label = "evaluate", color = "0.23 0.6 0.85", style="rounded"];
	4[label = "table", color = "0.49 0.6 0.85", style="rounded"];
	5[label = "rulegraph", color = "0.49 0.6 0.85", style="rounded"];
	4 -> 0
	5 -> 0
	2 -> 1
	1 -> 3
	2 -> 3
	3 -> 4
	2 -> 4
}
"""


def test_snakemakes_dot_text_becomes_a_sorted_graph_without_all_and_the_pictures_rule():
    graph = rg.parse_dot(SNAKEMAKE_DOT)
    assert graph.rules == ("evaluate", "table", "testbed_data", "train")
    assert graph.edges == (
        ("evaluate", "table"),
        ("testbed_data", "evaluate"),
        ("testbed_data", "table"),
        ("testbed_data", "train"),
        ("train", "evaluate"),
    )
    # the same graph with its nodes numbered and its edges listed in another order
    shuffled = SNAKEMAKE_DOT.replace("1[label", "9[label").replace("1 -> 3", "9 -> 3")
    shuffled = shuffled.replace("2 -> 1", "2 -> 9")
    assert rg.parse_dot(shuffled) == graph
    assert rg.read_dot(rg.to_dot(graph)) == graph
    with pytest.raises(ValueError, match="no rule in the dot text"):
        rg.parse_dot("Building DAG of jobs...")


def test_the_drawing_routes_long_edges_between_levels_and_keeps_boxes_apart():
    graph = rg.parse_dot(SNAKEMAKE_DOT)
    drawn = rg.layout(graph)
    assert [[n for n in layer if isinstance(n, str)] for layer in drawn.layers] == [
        ["testbed_data"],
        ["train"],
        ["evaluate"],
        ["table"],
    ]
    # testbed_data -> table spans three levels: a waypoint on each of the two between, the
    # first shared with testbed_data -> evaluate (one trunk)
    assert drawn.chains[("testbed_data", "table")][1:-1] == [
        ("testbed_data", 1),
        ("testbed_data", 2),
    ]
    assert drawn.chains[("testbed_data", "evaluate")][1:-1] == [("testbed_data", 1)]
    for layer in drawn.layers:
        ordered = sorted(layer, key=drawn.x.get)
        for left, right in zip(ordered, ordered[1:]):
            gap = drawn.x[right] - drawn.x[left] - (drawn.width[left] + drawn.width[right]) / 2
            assert gap >= rg.GAP_X - 1e-9, (left, right)
    svg = rg.to_svg(graph)
    assert svg.count("<title>") == len(graph.rules) + len(graph.edges)
    assert all(f"<title>{rule}</title>" in svg for rule in graph.rules)
    assert rg.to_svg(graph) == svg  # the same graph, the same bytes


def test_the_docs_picture_is_the_drawing_of_its_committed_source():
    source = (ROOT / "docs" / "rulegraph.dot").read_text()
    assert (ROOT / "docs" / "rulegraph.svg").read_text() == rg.to_svg(rg.read_dot(source)), (
        "docs/rulegraph.svg is not the drawing of docs/rulegraph.dot: run "
        "python -m gc2po.reporting.rulegraph"
    )


@pytest.mark.slow
def test_the_docs_picture_is_the_defaults_rule_graph_now():
    """A fresh `snakemake --rulegraph` of the embedded default equals the committed source: a
    rule added, removed or rewired fails here until the picture is drawn again."""
    fresh = rg.parse_dot(rg.snakemake_rulegraph(ROOT / "Snakefile", ROOT, []))
    assert rg.to_dot(fresh) == (ROOT / "docs" / "rulegraph.dot").read_text(), (
        "docs/rulegraph.dot is not the default's rule graph: run "
        "python -m gc2po.reporting.rulegraph"
    )
    assert {"train", "evaluate", "table", "mechanism_figure"} <= set(fresh.rules)
