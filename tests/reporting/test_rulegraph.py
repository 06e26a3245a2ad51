"""The report's rule graph draws every rule once (issue 26): Snakemake's own spec keeps one job
per rule and DAG level, so evaluate and audit (base model before training, trained models after)
were drawn twice."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

from snakemake.report.rulegraph_spec import rulegraph_spec as snakemake_spec

from gc2po.reporting.rulegraph import rulegraph_spec


class Job:
    def __init__(self, name: str):
        self.name, self.rule = name, SimpleNamespace(name=name.split(":")[0])


class Dag:
    """The shape of the testbed workflow's job DAG: levels of jobs and what each job needs."""

    def __init__(self, edges: dict[str, list[str]]):
        self.jobs = {name: Job(name) for name in edges}
        self.dependencies = {self.jobs[n]: {self.jobs[d] for d in needs} for n, needs in edges.items()}
        self.edges = edges

    def toposorted(self):
        levels, placed = [], set()
        while len(placed) < len(self.edges):
            layer = [n for n, needs in self.edges.items() if n not in placed and set(needs) <= placed]
            levels.append([self.jobs[n] for n in layer])
            placed |= set(layer)
        return levels


DAG = Dag({
    "testbed_data": [], "warm_start": ["testbed_data"], "run_config:gc2po": [], "run_config:grpo": [],
    "evaluate:base": ["warm_start", "testbed_data"], "audit:base": ["warm_start", "testbed_data"],
    "train:gc2po": ["warm_start", "run_config:gc2po"], "train:grpo": ["warm_start", "run_config:grpo"],
    "evaluate:gc2po": ["train:gc2po"], "evaluate:grpo": ["train:grpo"], "audit:gc2po": ["train:gc2po"],
    "table": ["evaluate:base", "evaluate:gc2po", "evaluate:grpo"],
    "all": ["table", "audit:base", "audit:gc2po"],
})


def test_snakemake_draws_a_rule_once_per_dag_level():
    nodes = Counter(node["rule"] for node in snakemake_spec(DAG)[0]["nodes"])
    assert nodes["evaluate"] == 2 and nodes["audit"] == 2  # the cause, if Snakemake ever changes it


def test_every_rule_is_drawn_once_below_its_inputs():
    spec, xmax, ymax = rulegraph_spec(DAG)
    rules = [node["rule"] for node in spec["nodes"]]
    assert rules == ["run_config", "testbed_data", "warm_start", "train", "audit", "evaluate", "table", "all"]
    assert ymax == 7 * 50 and [node["fy"] for node in spec["nodes"]] == [i * 50 for i in range(8)]
    links = {(link["sourcerule"], link["targetrule"]) for link in spec["links"] + spec["links_direct"]}
    assert links == {("testbed_data", "warm_start"), ("testbed_data", "evaluate"), ("testbed_data", "audit"),
                     ("warm_start", "evaluate"), ("warm_start", "audit"), ("warm_start", "train"),
                     ("run_config", "train"), ("train", "evaluate"), ("train", "audit"), ("evaluate", "table"),
                     ("table", "all"), ("audit", "all")}
    for link in spec["links"] + spec["links_direct"]:
        assert rules[link["source"]] == link["sourcerule"] and rules[link["target"]] == link["targetrule"]
        assert (link in spec["links_direct"]) == (link["target"] - link["source"] == 1)
