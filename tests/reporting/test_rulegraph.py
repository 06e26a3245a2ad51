"""The report's rule graph draws every rule once (issue 26): Snakemake's own spec keeps one job
per rule and DAG level, so evaluate and audit (base model before training, trained models after)
were drawn twice."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from snakemake.report.rulegraph_spec import rulegraph_spec as snakemake_spec

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
