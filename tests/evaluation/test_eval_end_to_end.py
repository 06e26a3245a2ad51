"""End-to-end evaluation on CPU: a tiny random model on a 20-problem real subset."""

import json
from pathlib import Path

import pytest
import yaml

from gc2po.cli import main

MIRRORS = Path(__file__).resolve().parents[2] / "data" / "benchmarks"  # vendored copies (data/benchmarks/README.md)


@pytest.mark.slow
def test_cli_eval_pass_at_1_and_budget_curve(tiny_model_dir, tmp_path, capsys):
    config = {
        "backend": "transformers",
        "sampling": {"n": 2, "temperature": 0.6, "top_p": 0.95, "max_new_tokens": 12, "seed": 0},
        "budgets": [4, 8],
        "batch_size": 16,
        "output_dir": str(tmp_path / "eval"),
        "benchmarks": {"gsm8k": {"path": str(MIRRORS / "gsm8k_test.json"), "limit": 20, "seed": 0}},
    }
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(yaml.safe_dump(config))
    assert main(["eval", "--config", str(cfg), "--model", str(tiny_model_dir), "--benchmark", "gsm8k"]) == 0
    out = tmp_path / "eval" / Path(tiny_model_dir).name / "gsm8k.jsonl"
    samples = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(samples) == 40  # 20 problems x 2 samples
    assert {s["sample_index"] for s in samples} == {0, 1}
    assert all(set(s) >= {"problem_id", "sample_index", "completion", "tokens", "correct"} for s in samples)
    assert all(s["tokens"] <= 12 for s in samples)
    summary = json.loads(Path(str(out) + ".summary.json").read_text())
    assert summary["pass@1"] == sum(s["correct"] for s in samples) / 40
    assert [row["budget"] for row in summary["budget_curve"]] == [4, 8]
    assert all(0 <= row["accuracy"] <= 1 for row in summary["budget_curve"])
    # the same seed reproduces the same samples
    assert main(["eval", "--config", str(cfg), "--model", str(tiny_model_dir), "--benchmark", "gsm8k"]) == 0
    assert [json.loads(line)["completion"] for line in out.read_text().splitlines()] == [s["completion"] for s in samples]


def test_cli_eval_bad_input(tmp_path, capsys):
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("backend: transformers\nsurprise: 1\n")
    assert main(["eval", "--config", str(cfg), "--model", "x", "--benchmark", "gsm8k"]) == 2
    assert "unknown key(s) ['surprise']" in capsys.readouterr().err
    cfg.write_text("backend: transformers\n")
    assert main(["eval", "--config", str(cfg), "--model", "x", "--benchmark", "mmlu"]) == 2
    assert "unknown benchmark 'mmlu'" in capsys.readouterr().err
