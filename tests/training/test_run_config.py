"""Run configs fail fast and clearly: the commonest mistakes are caught before torch is even
imported; a used output_dir is refused unless resumed or overwritten; resuming only continues
the same config from a complete checkpoint."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gc2po.training.output_dir import prepare_output_dir
from gc2po.training.run_config import FIELDS_FILE, build_args, describe_fields

ROOT = Path(__file__).resolve().parents[2]


def test_the_field_table_of_the_fast_check_equals_the_config_dataclass():
    from gc2po.training.config import GC2POConfig

    assert json.loads(FIELDS_FILE.read_text()) == describe_fields(GC2POConfig), (
        "gc2po/training/config_fields.json is stale: regenerate it from "
        "describe_fields(GC2POConfig)"
    )


def cli_train(
    tmp_path, run: dict, *flags: str, env: dict | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(run))
    # the CLI, with a check that its refusal came before torch was imported (so it is fast)
    code = (
        "import sys, runpy; sys.argv = ['gc2po'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('gc2po.cli', run_name='__main__')\n"
        "finally:\n    print('TORCH_IMPORTED' if 'torch' in sys.modules else "
        "'TORCH_NOT_IMPORTED', file=sys.stderr)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "train", "--config", str(path), *flags],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    "change, env, message",
    [
        (
            {"trainer": {"learning_rate": "abc"}},
            None,
            "trainer.learning_rate must be float, got 'abc'",
        ),
        ({"model": "/no/such/model"}, None, "model '/no/such/model': no such model folder"),
        (
            {"model": "Qwen/Qwen2.5-7B-Instruct"},
            {"HF_HUB_OFFLINE": "1", "HF_HOME": "/nonexistent-cache"},
            "is a Hub id, not in the local cache, and HF_HUB_OFFLINE=1",
        ),
        ({"trainer": {"bf16": True}}, None, "trainer.bf16 is set from precision"),
        ({"train_data": "/no/such.jsonl"}, None, "train_data '/no/such.jsonl': no such file"),
        ({"epochs": 3}, None, "unknown key(s) ['epochs']"),
    ],
)
def test_gc2po_train_refuses_bad_input_before_importing_torch(
    change, env, message, run_files, tmp_path
):
    out = cli_train(tmp_path, {**run_files, **change}, env=env)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert "TORCH_NOT_IMPORTED" in out.stderr


def test_a_used_output_dir_is_refused_unless_resumed_or_overwritten(run_files, tmp_path):
    out_dir = Path(run_files["output_dir"])
    (out_dir / "checkpoint-3").mkdir(parents=True)
    (out_dir / "metrics.jsonl").write_text("{}\n")
    refused = cli_train(tmp_path, run_files)
    assert (
        refused.returncode == 2
        and "holds an earlier run" in refused.stderr
        and "--overwrite" in refused.stderr
    )
    assert (out_dir / "metrics.jsonl").exists()  # nothing was deleted
    # --overwrite passes the fast check (and would start over once the model loads)
    assert (
        "holds an earlier run"
        not in cli_train(
            tmp_path, {**run_files, "trainer": {"learning_rate": "x"}}, "--overwrite"
        ).stderr
    )


def test_resume_continues_only_the_same_config_from_a_complete_checkpoint(run_files):
    out = Path(run_files["output_dir"])
    run = {
        **run_files,
        "resume": True,
        "trainer": {"num_generations": 2, "per_device_train_batch_size": 2},
    }
    args = build_args(run)
    assert prepare_output_dir(run, args, log=lambda *a: None) is None  # nothing to resume yet
    for step in (1, 2, 3):
        (out / f"checkpoint-{step}").mkdir()
    for step in (1, 2):  # checkpoint-3 was being written when the job was killed
        (out / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    assert prepare_output_dir(run, args, log=lambda *a: None) == out / "checkpoint-2"
    assert not (out / "checkpoint-3").exists()
    changed = {**run, "trainer": {**run["trainer"], "learning_rate": 1e-3}}
    with pytest.raises(ValueError, match="its checkpoints belong to a different run config"):
        prepare_output_dir(changed, build_args(changed), log=lambda *a: None)
    logs = []
    assert (
        prepare_output_dir({**changed, "overwrite": True}, build_args(changed), log=logs.append)
        is None
    )
    assert not list(out.glob("checkpoint-*")) and "starting over" in logs[0]


@pytest.mark.slow
def test_a_training_job_builds_its_config_once_and_checks_each_setting_once(
    tiny_model_dir, testbed_train_file, tmp_path, monkeypatch
):
    """One job, start to end (``gc2po.training.train.train``, one step): one ``GC2POConfig``,
    what the method fixes checked once, its own settings parsed once, the core parameters' ranges
    checked once, and the
    method reads the settings object the config holds (nothing written back)."""
    from gc2po.methods import METHODS
    from gc2po.training import config_checks
    from gc2po.training.config import GC2POConfig
    from gc2po.training.train import train
    from tests.training.conftest import run_config

    calls = {"config": 0, "fixed": 0, "settings": 0, "ranges": 0}
    built, seen = [], []

    def counted(name, function, keep=None):
        def wrapped(*args, **kwargs):
            calls[name] += 1
            if keep is not None:
                keep.append(args[0])
            return function(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(
        GC2POConfig, "__post_init__", counted("config", GC2POConfig.__post_init__, built)
    )
    method = METHODS["length_penalty"]
    monkeypatch.setattr(
        type(method), "parse_settings", counted("settings", type(method).parse_settings)
    )
    monkeypatch.setattr(
        config_checks, "check_params", counted("ranges", config_checks.check_params)
    )
    monkeypatch.setattr(type(method), "check_fixed", counted("fixed", type(method).check_fixed))
    original = method.advantages

    def advantages(batch, config):
        seen.append(config)
        return original(batch, config)

    monkeypatch.setitem(
        METHODS._entries, "length_penalty", dataclasses.replace(method, advantages=advantages)
    )
    run = run_config(
        tiny_model_dir,
        testbed_train_file,
        tmp_path / "run",
        "length_penalty",
        max_steps=1,
        method_args={"alpha": 0.25},
    )
    train(run, log=lambda *a: None)
    assert calls == {"config": 1, "fixed": 1, "settings": 1, "ranges": 1}
    assert seen and all(config is built[0] for config in seen)
    assert built[0].method_settings.alpha == 0.25


def test_keep_checkpoints_must_be_a_boolean(run_files, tmp_path):
    out = cli_train(tmp_path, {**run_files, "keep_checkpoints": "no"})
    assert out.returncode == 2 and "TORCH_NOT_IMPORTED" in out.stderr
    assert "run config: keep_checkpoints must be true or false, got 'no'" in out.stderr


def test_an_ended_runs_checkpoints_are_deleted_and_its_final_model_kept(tmp_path):
    from gc2po.training.output_dir import remove_checkpoints

    out = tmp_path / "run"
    for name in ("checkpoint-10", "checkpoint-20", "final"):
        (out / name).mkdir(parents=True)
        (out / name / "model.safetensors").write_text("weights")
    (out / "metrics.jsonl").write_text("{}\n")
    logs = []
    removed = remove_checkpoints(out, logs.append)
    assert [p.name for p in removed] == ["checkpoint-10", "checkpoint-20"]
    assert sorted(p.name for p in out.iterdir()) == ["final", "metrics.jsonl"]
    assert logs == [
        f"output_dir {out}: the run ended, deleted 2 checkpoint(s) (keep_checkpoints: false)"
    ]


@pytest.mark.slow
def test_a_run_with_keep_checkpoints_false_ends_with_its_final_model_only(
    tiny_model_dir, testbed_train_file, tmp_path
):
    """`gc2po train` as the workflow's train rule runs it: a checkpoint every step of two, both
    deleted when the run ends; the final model and the metrics stay."""
    from tests.training.conftest import run_config

    run = {
        **run_config(tiny_model_dir, testbed_train_file, tmp_path / "run", "grpo", save_steps=1),
        "keep_checkpoints": False,
    }
    out = cli_train(tmp_path, run, timeout=600)  # it trains: minutes on a busy machine
    assert out.returncode == 0, out.stderr[-3000:]
    assert "deleted 2 checkpoint(s) (keep_checkpoints: false)" in out.stdout + out.stderr
    left = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert "final" in left and "metrics.jsonl" in left
    assert not [name for name in left if name.startswith("checkpoint-")], left
