"""End-to-end evaluation on CPU through `gc2po eval`: a tiny random model on real benchmark
subsets and on testbed splits, the same code path as the workflow, outputs keyed by
base/run/seed, summaries with protocol and provenance."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from gc2po.cli import main

# an evaluation records the code's git revision (gc2po.evaluation.provenance)
pytestmark = pytest.mark.system("git")
ROOT = Path(__file__).resolve().parents[2]
MIRRORS = VENDORED = ROOT / "data" / "benchmarks"  # vendored copies (data/benchmarks/README.md)


def read_samples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_cli_eval_pass_at_1_budget_curve_and_provenance(tiny_model_dir, tmp_path, capsys):
    mirror = MIRRORS / "gsm8k_test.json"
    config = {
        "backend": "transformers",
        "sampling": {"n": 2, "temperature": 0.6, "top_p": 0.95, "max_new_tokens": 12, "seed": 0},
        "budgets": [4, 8],
        "batch_size": 16,
        "output_dir": str(tmp_path / "eval"),
        "benchmarks": {"gsm8k": {"path": str(mirror), "limit": 20, "seed": 0}},
    }
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(yaml.safe_dump(config))
    assert (
        main(["eval", "--config", str(cfg), "--model", str(tiny_model_dir), "--benchmark", "gsm8k"])
        == 0
    )
    out = (
        tmp_path / "eval" / Path(tiny_model_dir).name / "base" / "seed0" / "gsm8k.jsonl"
    )  # <base>/<run>/seed<k>
    assert json.loads(capsys.readouterr().out)["output"] == str(out)
    samples = read_samples(out)
    assert len(samples) == 40  # 20 problems x 2 samples
    assert {s["sample_index"] for s in samples} == {0, 1}
    assert all(
        set(s) >= {"problem_id", "sample_index", "completion", "tokens", "correct"} for s in samples
    )
    assert all(s["tokens"] <= 12 for s in samples)
    summary = json.loads(Path(str(out) + ".summary.json").read_text())
    assert summary["pass@1"] == sum(s["correct"] for s in samples) / 40
    low, high = summary["pass@1_ci95"]
    assert 0 <= low <= summary["pass@1"] <= high <= 1
    assert [row["budget"] for row in summary["budget_curve"]] == [4, 8]
    assert all(0 <= row["accuracy"] <= 1 for row in summary["budget_curve"])
    protocol = summary["protocol"]
    assert (
        protocol["n"],
        protocol["temperature"],
        protocol["top_p"],
        protocol["max_new_tokens"],
    ) == (2, 0.6, 0.95, 12)
    assert protocol["backend"] == "transformers" and protocol["grader"] == "math-verify"
    assert (
        protocol["grader_versions"]["math-verify"]
        and len(protocol["grader_versions"]["gc2po-graders"]) == 12
    )
    assert summary["data"]["sha256"] == hashlib.sha256(mirror.read_bytes()).hexdigest()
    assert summary["model"]["path"] == str(tiny_model_dir) and summary["key"] == {
        "base": Path(tiny_model_dir).name,
        "run": "base",
        "seed": 0,
    }
    assert len(summary["code"]["revision"]) == 40  # the tests run from a git checkout
    # the same seed reproduces the same samples
    assert (
        main(["eval", "--config", str(cfg), "--model", str(tiny_model_dir), "--benchmark", "gsm8k"])
        == 0
    )
    assert [s["completion"] for s in read_samples(out)] == [s["completion"] for s in samples]


@pytest.fixture
def testbed_checkout(tmp_path, monkeypatch):
    """A working directory laid out like the repository: the shipped example eval config and the
    testbed splits where the workflow writes them."""
    from gc2po.testbed.data import write_splits

    (tmp_path / "config" / "examples").mkdir(parents=True)
    shutil.copy(
        ROOT / "config" / "examples" / "eval_testbed.yaml", tmp_path / "config" / "examples"
    )
    manifest = write_splits(
        {"train": 16, "test_id": 6, "test_longer": 4},
        0,
        tmp_path / "resources" / "testbed" / "data",
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path, manifest


@pytest.mark.slow
def test_example_eval_config_runs_on_a_testbed_split_through_the_workflow_code(
    testbed_checkout, tiny_model_dir
):
    from gc2po.data.jsonl import read_jsonl
    from gc2po.evaluation.provenance import data_provenance
    from gc2po.evaluation.run import BenchmarkData, EvalKey, evaluate_model

    root, manifest = testbed_checkout
    assert (
        main(
            [
                "eval",
                "--config",
                "config/examples/eval_testbed.yaml",
                "--model",
                str(tiny_model_dir),
                "--benchmark",
                "test_id",
            ]
        )
        == 0
    )
    out = (
        root
        / "results"
        / "examples"
        / "eval"
        / Path(tiny_model_dir).name
        / "base"
        / "seed0"
        / "test_id.jsonl"
    )
    samples = read_samples(out)
    assert len(samples) == 6 and all(
        {"process_validity", "group", "formatted"} <= set(s) for s in samples
    )
    summary = json.loads(Path(str(out) + ".summary.json").read_text())
    assert summary["data"]["sha256"] == manifest["splits"]["test_id"]["sha256"]
    assert summary["protocol"]["grader"] == "testbed oracle" and set(summary["groups"]) == {
        "near_ideal",
        "near_miss",
        "lucky_guess",
        "fully_bad",
    }
    assert [row["budget"] for row in summary["budget_curve"]] == [8, 16, 32, 64]
    # the split's chance level, from train.jsonl beside it, and its reachability
    from gc2po.testbed.chance import split_labels

    data = root / "resources" / "testbed" / "data"
    labels = split_labels(read_jsonl(data / "test_id.jsonl"), read_jsonl(data / "train.jsonl"))
    assert {k: summary[k] for k in labels} == labels and labels["reachable"] is True
    assert all({"cued", "bet", "answer", "copies_bet"} <= set(s) for s in samples)
    # what the workflow's evaluate script calls, on the same inputs, writes the same samples
    data = root / "resources" / "testbed" / "data" / "test_id.jsonl"
    records = read_jsonl(data)
    evaluate_model(
        str(tiny_model_dir),
        [
            BenchmarkData(
                "test_id", records, data_provenance(data, records), root / "wf" / "test_id.jsonl"
            )
        ],
        task="testbed",
        key=EvalKey("testbed", "base", 0),
        backend="transformers",
        sampling={"n": 1, "temperature": 0.6, "top_p": 0.95, "max_new_tokens": 96},
        batch_size=64,
        log=lambda *a: None,
    )
    assert read_samples(root / "wf" / "test_id.jsonl") == samples


def test_a_testbed_split_without_its_train_split_fails_naming_it(testbed_checkout, tiny_model_dir):
    root, _ = testbed_checkout
    (root / "resources" / "testbed" / "data" / "train.jsonl").unlink()
    from gc2po.evaluation.cli_eval import run_eval

    config = yaml.safe_load((root / "config" / "examples" / "eval_testbed.yaml").read_text())
    with pytest.raises(ValueError, match=r"no benchmarks.train.path, and .*train.jsonl does not"):
        run_eval(config, str(tiny_model_dir), "test_id", "config/examples/eval_testbed.yaml")


@pytest.mark.slow
def test_two_models_never_share_an_output(testbed_checkout, tiny_model_dir, capsys):
    root, _ = testbed_checkout
    first, second = root / "a" / "final", root / "b" / "final"
    shutil.copytree(tiny_model_dir, first)
    shutil.copytree(tiny_model_dir, second)
    config = yaml.safe_load((root / "config" / "examples" / "eval_testbed.yaml").read_text())
    small = (
        root / "config" / "examples" / "small.yaml"
    )  # short completions, no budget curve: keys are the point
    small.write_text(
        yaml.safe_dump(
            {**config, "budgets": None, "sampling": {**config["sampling"], "max_new_tokens": 4}}
        )
    )
    args = ["eval", "--config", str(small), "--benchmark", "test_longer"]
    assert main(args + ["--model", str(first)]) == 0
    # same folder name, so the same default key: refused, not overwritten
    assert main(args + ["--model", str(second)]) == 2
    assert "holds the evaluation of model" in capsys.readouterr().err
    assert main(args + ["--model", str(second), "--run", "b"]) == 0
    evals = root / "results" / "examples" / "eval" / "final"
    assert sorted(p.name for p in evals.iterdir()) == ["b", "base"]
    # a workflow checkpoint keys itself: runs/<base>/<run>/seed<k>/final
    checkpoint = root / "results" / "x" / "runs" / "tb" / "grpo" / "seed2" / "final"
    shutil.copytree(tiny_model_dir, checkpoint)
    assert main(args + ["--model", str(checkpoint)]) == 0
    summary = json.loads(
        (
            root
            / "results"
            / "examples"
            / "eval"
            / "tb"
            / "grpo"
            / "seed2"
            / "test_longer.jsonl.summary.json"
        ).read_text()
    )
    assert (
        summary["key"] == {"base": "tb", "run": "grpo", "seed": 2}
        and summary["protocol"]["seed"] == 2
    )


@pytest.mark.slow
def test_example_gsm8k_config_runs(tmp_path, tiny_model_dir, monkeypatch):
    config = yaml.safe_load((ROOT / "config" / "examples" / "eval_gsm8k.yaml").read_text())
    config["benchmarks"]["gsm8k"]["limit"] = 4
    config["sampling"]["max_new_tokens"] = 8
    path = (
        ROOT / "config" / "examples" / "_test_eval_gsm8k.yaml"
    )  # beside the example: relative paths hold
    path.write_text(yaml.safe_dump({**config, "output_dir": str(tmp_path / "eval")}))
    try:
        assert (
            main(
                [
                    "eval",
                    "--config",
                    str(path),
                    "--model",
                    str(tiny_model_dir),
                    "--benchmark",
                    "gsm8k",
                ]
            )
            == 0
        )
    finally:
        path.unlink()
    assert (
        len(
            read_samples(
                tmp_path / "eval" / Path(tiny_model_dir).name / "base" / "seed0" / "gsm8k.jsonl"
            )
        )
        == 4
    )
