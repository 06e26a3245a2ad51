"""Real DeepSpeed on CPU: the shipped ZeRO-2/ZeRO-3 configs under ``accelerate launch`` with
2 gloo processes; the ZeRO-3 gather of lm_head and DeepSpeed's bf16 non-finite-step skip.

Needs deepspeed (``gpu`` and ``dev`` extras; its CPU accelerator runs here). Each case starts two
processes and takes about a minute on two shared cores.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "deepspeed",
    reason="deepspeed comes with the dev and gpu extras; the stand-in tests in "
    "test_distributed_gather.py cover the gather without it",
)

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("deepspeed_probe.py")
CONFIGS = ROOT / "config" / "accelerate"


def run_probe(accelerate_yaml: Path, tmp_path: Path, tied: bool) -> list[dict]:
    from gc2po.workflow.accelerate_config import read_accelerate_config

    settings = read_accelerate_config(accelerate_yaml)
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(accelerate_yaml),
        "--num_processes",
        "2",
        "--main_process_port",
        "0",
        "--deepspeed_config_file",
        str(settings.deepspeed_config_file),
        str(PROBE),
        str(out),
        "tied" if tied else "untied",
    ]
    env = {
        **os.environ,
        "DS_ACCELERATOR": "cpu",
        "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "OMP_NUM_THREADS": "1",
    }
    out.mkdir()
    result = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return [json.loads((out / f"rank{k}.json").read_text()) for k in range(2)]


def check_overflow_skipped(record: dict) -> None:
    first, second = record["steps"]
    assert first == {
        "step": 1,
        "skipped": True,
        "head_unchanged": True,
    }  # NaN gradients: step skipped
    assert second == {"step": 2, "skipped": False, "head_unchanged": False}  # finite: step taken


@pytest.mark.slow
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_distributed_zero3_gather_gives_unsharded_r_cf(tmp_path, tied):
    for record in run_probe(CONFIGS / "deepspeed_zero3.yaml", tmp_path, tied):
        assert record["tied"] is tied
        assert (
            record["sharded"] and record["numel_outside"] == 0
        )  # ZeRO-3: this rank holds 0 elements
        assert record["gathered_shape"] == [96, 32] and record["nested_shape"] == [96, 32]
        assert record["shape_after_nested"] == [96, 32]  # the nested call did not re-partition it
        assert record["numel_after"] == 0  # re-partitioned on exit
        assert record["dtype"] == "torch.bfloat16"
        assert record["r_cf_gathered"] == pytest.approx(record["r_cf_unsharded"], abs=1e-6)
        check_overflow_skipped(record)


@pytest.mark.slow
def test_distributed_zero2_params_whole_and_overflow_skipped(tmp_path):
    for record in run_probe(CONFIGS / "deepspeed_zero2.yaml", tmp_path, tied=False):
        assert not record["sharded"] and record["numel_outside"] == 96 * 32
        assert record["r_cf_gathered"] == pytest.approx(record["r_cf_unsharded"], abs=1e-6)
        check_overflow_skipped(record)


@pytest.mark.slow
def test_distributed_zero2_without_check_grad_overflow_applies_nan_step(tmp_path):
    """The contrast that shows the shipped bf16.check_grad_overflow is what skips the step."""
    configs = tmp_path / "configs"
    shutil.copytree(CONFIGS, configs)
    ds_json = configs / "deepspeed_zero2.json"
    ds_config = json.loads(ds_json.read_text())
    ds_config["bf16"]["check_grad_overflow"] = False
    ds_json.write_text(json.dumps(ds_config))
    for record in run_probe(configs / "deepspeed_zero2.yaml", tmp_path, tied=False):
        first = record["steps"][0]
        assert (
            first["skipped"] is False and first["head_unchanged"] is False
        )  # NaN written into the weights
