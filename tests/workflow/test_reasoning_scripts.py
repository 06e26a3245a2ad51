"""The reasoning rules' scripts run as the workflow runs them (a snakemake object with the rules'
inputs, outputs and params): test_compose written apart, a tiny model evaluated on the problems
without a bet with n samples and greedily, and the reasoning table written from those files."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from gc2po.layout import SUMMARY_SUFFIX, EvalFile, reasoning_root
from gc2po.testbed.data import write_splits

ROOT = Path(__file__).resolve().parents[2]
SIZES = {"train": 300, "test_id": 8}
CUE = {"frac": 0.5, "accuracy": 0.9}


class Named(list):
    """A Snakemake named list: indexable, with its entries' names as attributes."""

    def __init__(self, items=(), **named):
        super().__init__(items or [v for v in named.values() if isinstance(v, str)])
        self.__dict__.update(named)


def run(script: str, **fields) -> None:
    sm = SimpleNamespace(**{"log": [], "threads": 1, "wildcards": SimpleNamespace(), **fields})
    runpy.run_path(str(ROOT / "workflow" / "scripts" / script), init_globals={"snakemake": sm})


@pytest.mark.system("git")  # the summaries' code provenance
def test_compose_data_evaluation_and_table(tmp_path, tiny_model_dir):
    data = tmp_path / "data"
    write_splits(SIZES, 0, data, CUE)
    compose = data / "test_compose.jsonl"
    run(
        "testbed_compose_data.py",
        output=Named([str(compose)]),
        params=SimpleNamespace(sizes=SIZES, seed=0, cue=CUE, size=6),
    )
    splits = ["test_id", "test_compose"]
    inputs = [str(data / "test_id.jsonl"), str(compose)]
    out = tmp_path / "results"

    def files(greedy, suffix=""):
        return [
            EvalFile("testbed", "base", 0, s).path(reasoning_root(out, greedy)) + suffix
            for s in splits
        ]

    run(
        "evaluate_reasoning.py",
        wildcards=SimpleNamespace(base="testbed", model="base", seed="0"),
        input=SimpleNamespace(
            model=str(tiny_model_dir), data=inputs, train=str(data / "train.jsonl")
        ),
        output=SimpleNamespace(sampled=files(False), greedy=files(True)),
        params=SimpleNamespace(
            model=str(tiny_model_dir),
            benchmarks=splits,
            task="testbed",
            backend="transformers",
            sampling={"n": 4, "temperature": 1.0, "top_p": 1.0, "max_new_tokens": 8},
            batch_size=16,
            max_grader_errors=0,
        ),
    )
    uncued = sum("cue" not in json.loads(line)["meta"] for line in open(inputs[0]))
    sampled = [json.loads(line) for line in open(files(False)[0])]
    greedy = [json.loads(line) for line in open(files(True)[0])]
    assert 0 < uncued < 8 and len(sampled) == 4 * uncued and len(greedy) == uncued
    assert len(open(files(False)[1]).read().splitlines()) == 4 * 6  # every compose problem
    summary = json.loads(Path(files(True)[0] + SUMMARY_SUFFIX).read_text())
    assert summary["protocol"]["temperature"] == 0.0 and summary["n"] == 1
    assert summary["reachable"] is True and 0 <= summary["chance_level"] <= 1
    md, csv = tmp_path / "reasoning.md", tmp_path / "reasoning.csv"
    run(
        "reasoning.py",
        input=SimpleNamespace(
            sampled=files(False), greedy=files(True), data=inputs, train=str(data / "train.jsonl")
        ),
        output=SimpleNamespace(md=str(md), csv=str(csv)),
        params=SimpleNamespace(splits=splits, ks=[1, 2, 4], n=4, names=None),
    )
    frame = pd.read_csv(csv)
    assert set(frame["split"]) == set(splits)
    assert set(frame["measure"]) == {
        "greedy_pass@1",
        "pass@1",
        "pass@2",
        "pass@4",
        "parse_failure",
        "truncated",
    }
    assert frame["mean"].between(0, 100).all()
    assert "#### New compositions" in md.read_text()
