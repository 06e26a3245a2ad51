"""A benchmark is one registration (gc2po.data.benchmarks.register): its loader, grader and
display name are then known to the data rules, evaluation, ``gc2po eval`` and the tables."""

from __future__ import annotations

import json

import pytest

from gc2po.data import BENCHMARKS, Benchmark, load_benchmark, register
from gc2po.data.prompts import ANSWER_FORMATS
from gc2po.data.tasks import BENCHMARK
from gc2po.evaluation import cli_eval
from gc2po.evaluation.graders import GRADER_KINDS
from gc2po.evaluation.run import grader_for, prompts_for
from gc2po.reporting.names import benchmark_name, benchmark_order


@pytest.fixture
def registry():
    """The registry as it was before the test (registering changes the shared mapping)."""
    before = dict(BENCHMARKS)
    yield BENCHMARKS
    BENCHMARKS.clear()
    BENCHMARKS.update(before)


def parse_toy(row, index):
    return row["prompt"], row["letter"], {"level": row.get("level")}


def test_a_toy_benchmark_registered_in_one_place_is_loaded_graded_and_named(registry, tmp_path):
    register(
        Benchmark(
            "toy",
            "nobody/toy",
            "test",
            parse_toy,
            "Toy Bench",
            grader="choice",
            answer_format="choice",
        )
    )
    path = tmp_path / "toy.jsonl"
    rows = [{"id": i, "prompt": f"Pick one\n(A) x\n(B) y #{i}", "letter": "B"} for i in range(3)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    records = load_benchmark("toy", path)
    assert [r["id"] for r in records] == ["toy-0", "toy-1", "toy-2"]
    assert records[0]["meta"] == {"grader": "choice", "answer_format": "choice", "level": None}
    grade = grader_for(BENCHMARK)
    assert grade(records[0], "\\boxed{B}") == {"correct": True}
    assert grade(records[0], "The answer is (A).") == {"correct": False}
    assert prompts_for(records, BENCHMARK)[0][0]["content"].endswith(ANSWER_FORMATS["choice"])
    assert benchmark_name("toy") == "Toy Bench"
    assert benchmark_order(["zzz", "toy", "gsm8k", "test_id"]) == ["test_id", "gsm8k", "toy", "zzz"]
    config = cli_eval.validate_config({"benchmarks": {"toy": {"path": str(path)}}}, "eval.yaml")
    data = cli_eval.load_benchmark_data(config, "toy", "eval.yaml", tmp_path / "out.jsonl")
    assert data.records == records


def test_a_name_is_registered_once(registry):
    with pytest.raises(ValueError, match="benchmark 'gsm8k' is already registered"):
        register(Benchmark("gsm8k", "x/y", "test", parse_toy))


def test_every_registered_benchmark_names_a_grader_and_keeps_its_column_name():
    assert {b.grader for b in BENCHMARKS.values()} <= set(GRADER_KINDS)
    keys = ("aime2024", "math500", "minerva", "gsmplus", "commonsenseqa")
    names = [benchmark_name(b) for b in keys]
    assert names == ["AIME 2024", "MATH500", "MinervaMATH", "GSM-Plus", "CommonsenseQA"]
    assert benchmark_name("test_id") == "Test (ID)" and benchmark_name("numinamath") == "numinamath"
