"""benchmarks/gpu/gpu_check.py on CPU at a tiny shape: every stage of the GPU check (model build,
the real ``gc2po train`` for grpo, gc2po and the paper's layout, ``gc2po eval``) runs and reports,
so the one-command GPU check cannot rot between GPU loans."""

from __future__ import annotations

import importlib.util
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu" / "gpu_check.py"


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.timeout(1800)  # five child processes; each loads torch, transformers and trl
@pytest.mark.system("coreutils")  # the GPU check runs each stage under coreutils' timeout
def test_gpu_check_runs_every_stage_on_cpu(tmp_path, capsys):
    summary = load_script().main(
        [
            "--shape",
            "tiny",
            "--out",
            str(tmp_path),
            "--steps",
            "2",
            "--completions",
            "4",
            "--completion-length",
            "8",
            "--paper-length",
            "8",
            "--eval-problems",
            "2",
            "--eval-tokens",
            "8",
            "--stage-timeout",
            "300",
        ]
    )
    out = capsys.readouterr().out
    runs = summary["runs"]
    assert set(runs) == {"grpo", "gc2po", "gc2po_paper_layout"}
    for name, run in runs.items():
        assert run["status"] == 0, (name, out)
        assert run["meter"] == "peak RSS of the training process (CPU)"
        assert run["peak_mib"] > 50, name  # torch alone takes more than this
        assert run["plan_gib"] > 0, name
    assert len(runs["grpo"]["step_times"]) == len(runs["gc2po"]["step_times"]) == 2
    assert len(runs["gc2po_paper_layout"]["step_times"]) == 1
    assert summary["step_ratio"] > 0
    assert summary["eval"]["status"] == 0, out
    assert "GC2PO / GRPO step ratio at beta 0" in out and "| grpo | 0 |" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "gpu_check_logs.tar.gz",
        "gpu_check_summary.json",
    ]  # the model and the runs stay out of --out
    with tarfile.open(tmp_path / "gpu_check_logs.tar.gz") as tar:
        names = set(tar.getnames())
    assert {"logs/build.log", "logs/grpo.log", "logs/eval.log", "logs/summary.json"} <= names
    assert "metrics/gc2po.jsonl" in names and "configs/gc2po_paper_layout.yaml" in names


def test_plan_of_a_benchmark_shape_uses_that_shape():
    module = load_script()
    shape = module.model_shape("deepscaler-1.5b")
    assert shape.num_params() == 1_777_088_000  # DeepScaleR-1.5B's, untied
    trainer = {
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1,
        "max_completion_length": 512,
        "beta": 0.0,
        "gradient_checkpointing": True,
    }
    small = module.plan_gib(module.model_shape("tiny"), trainer, 216, False)
    large = module.plan_gib(shape, trainer, 216, False)
    assert small < 4 < 40 < large  # the tiny model is the runtime allowance and little else
