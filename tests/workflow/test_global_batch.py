"""The global batch is the config's (``train.sequences_per_step``): the accumulation is derived
from the process count, so a change of GPU count keeps the paper's 256 sequences per optimizer
step; a count that cannot divide it, or a trainer value that disagrees, is refused before any
job, naming both numbers and the key; configs without the key train exactly as written."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gc2po import cli
from gc2po.workflow import config_check, global_batch
from gc2po.workflow.config_files import load_config
from gc2po.workflow.plan import runs, training_jobs
from gc2po.workflow.plan_summary import batch_splits, run_summary

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "config" / "paper.yaml"
SCHEMA = ROOT / "gc2po" / "workflow" / "config.schema.yaml"


def overlay(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "gpus.yaml"
    path.write_text(text)
    return [str(PAPER), str(path)]


def processes_overlay(tmp_path: Path, processes: int) -> list[str]:
    return overlay(tmp_path, f"train:\n  launcher: {{num_processes: {processes}}}\n")


# --- the split, by hand ---------------------------------------------------------------------


def test_accumulation_is_the_global_batch_over_processes_and_micro_batch():
    assert global_batch.accumulation_steps(256, 8, 1) == 32
    assert global_batch.accumulation_steps(256, 4, 2) == 32
    assert global_batch.accumulation_steps(256, 256, 1) == 1
    assert global_batch.process_counts(24, 2) == [1, 2, 3, 4, 6, 12]
    with pytest.raises(ValueError) as err:
        global_batch.accumulation_steps(256, 3, 1)
    assert str(err.value) == (
        "train.sequences_per_step: 256 sequences per optimizer step cannot be split over 3 "
        "processes (train.launcher.num_processes) x 1 per micro-batch "
        "(trainer.per_device_train_batch_size): 256 is not a multiple of 3; process counts that "
        "divide it: 1, 2, 4, 8, 16, 32, 64, 128, 256"
    )


def test_the_derived_trainer_sets_accumulation_and_one_generation_batch_per_step():
    trainer = {"per_device_train_batch_size": 2, "num_generations": 8}
    derived = global_batch.derived_trainer(trainer, 256, 4, {})
    assert derived == {**trainer, "gradient_accumulation_steps": 32, "steps_per_generation": 32}
    assert trainer == {"per_device_train_batch_size": 2, "num_generations": 8}  # not changed
    # values the config states are kept where they agree and refused, named, where they do not
    same = {**trainer, "gradient_accumulation_steps": 32, "steps_per_generation": 32}
    assert global_batch.derived_trainer(same, 256, 4, {}) == same
    sources = {"gradient_accumulation_steps": "train.per_method.grpo.gradient_accumulation_steps"}
    with pytest.raises(ValueError) as err:
        global_batch.derived_trainer(
            {**trainer, "gradient_accumulation_steps": 16}, 256, 4, sources
        )
    assert str(err.value).startswith(
        "train.per_method.grpo.gradient_accumulation_steps: 16 disagrees with "
        "train.sequences_per_step (256 sequences over 4 processes x 2 per micro-batch need 32 "
        "accumulation steps)"
    )
    with pytest.raises(ValueError, match=r"^trainer.steps_per_generation: 1 disagrees"):
        global_batch.derived_trainer({**trainer, "steps_per_generation": 1}, 256, 4, {})
    # TRL takes a generation batch size or steps per generation, not both
    sized = {**trainer, "generation_batch_size": 256}
    assert global_batch.derived_trainer(sized, 256, 4, {}) == {
        **sized,
        "gradient_accumulation_steps": 32,
    }
    with pytest.raises(ValueError, match=r"generation_batch_size: 64 disagrees"):
        global_batch.derived_trainer({**trainer, "generation_batch_size": 64}, 256, 4, {})
    with pytest.raises(ValueError, match="set trainer.per_device_train_batch_size too"):
        global_batch.derived_trainer({"num_generations": 8}, 256, 4, {})


# --- the paper config -----------------------------------------------------------------------


def test_the_paper_config_trains_what_its_explicit_accumulation_trained():
    """The paper's 256 stated as the global batch gives every job the run config the explicit
    32 accumulation steps and 32 steps per generation gave it before the key existed."""
    stated = load_config([PAPER])
    assert stated["train"]["sequences_per_step"] == 256
    explicit = copy.deepcopy(stated)
    del explicit["train"]["sequences_per_step"]
    explicit["train"]["trainer"].update(gradient_accumulation_steps=32, steps_per_generation=32)
    derived_jobs, explicit_jobs = training_jobs(stated), training_jobs(explicit)
    assert len(derived_jobs) == len(explicit_jobs) > 0
    for derived, written in zip(derived_jobs, explicit_jobs, strict=True):
        assert derived.run_config(stated) == written.run_config(explicit)


@pytest.mark.parametrize("processes", [8, 4, 2])
def test_the_gpu_count_keeps_the_global_batch(processes, tmp_path):
    files = processes_overlay(tmp_path, processes)
    rows = run_summary(load_config(files))
    assert {row["processes"] for row in rows} == {processes}
    assert {row["gradient_accumulation"] for row in rows} == {256 // processes}
    assert {row["steps_per_generation"] for row in rows} == {256 // processes}
    assert {row["sequences_per_step"] for row in rows} == {256}
    assert {row["prompts_per_step"] for row in rows} == {32}


def test_gc2po_plan_prints_the_global_batch_and_its_split_for_8_4_and_2_gpus(tmp_path, capsys):
    """`gc2po plan`'s output: the stated batch, then how it is split; the table's
    sequences_per_step column is 256 on every row. (4 and 2 processes put the 7B jobs over an
    80 GB GPU: the plan prints its table and then refuses them.)"""
    for processes in (8, 4, 2):
        (tmp_path / str(processes)).mkdir()
        files = processes_overlay(tmp_path / str(processes), processes)
        status = cli.main(["plan", "--configfile", *files])
        out, err = capsys.readouterr()
        lines = out.splitlines()
        assert lines[0] == (
            "global batch: 256 sequences per optimizer step (train.sequences_per_step), split as"
        )
        rows = len(run_summary(load_config(files)))
        assert lines[1] == (
            f"  256 sequences (32 prompts x 8 completions) = {processes} processes on 1 machine "
            f"x 1 per micro-batch x {256 // processes} accumulation steps (all {rows} rows)"
        )
        header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["base", "run"])
        column = lines[header].split().index("sequences_per_step")
        table = lines[header + 1 : header + 1 + rows]  # the budget's lines follow the table
        assert {line.split()[column] for line in table} == {"256"}
        assert status == (0 if processes == 8 else 2), err


def test_three_gpus_are_refused_before_any_job_naming_both_numbers(tmp_path):
    config = load_config(processes_overlay(tmp_path, 3))
    cache = tmp_path / "check.json"
    with pytest.raises(ValueError) as err:
        config_check.checked(config, None, SCHEMA, cache)
    message = str(err.value)
    assert message.startswith("config 'paper': train.sequences_per_step: 256 sequences per ")
    assert "over 3 processes (train.launcher.num_processes)" in message
    assert "256 is not a multiple of 3" in message and "\n" not in message
    assert not cache.exists()  # nothing recorded as checked


def test_an_accumulation_that_disagrees_with_the_global_batch_is_refused_naming_the_key(tmp_path):
    files = overlay(
        tmp_path,
        "train:\n  launcher: {num_processes: 4}\n  trainer: {gradient_accumulation_steps: 32}\n",
    )
    with pytest.raises(ValueError) as err:
        config_check.checked(load_config(files), None, SCHEMA, tmp_path / "check.json")
    assert str(err.value).startswith(
        "config 'paper': train.trainer.gradient_accumulation_steps: 32 disagrees with "
        "train.sequences_per_step (256 sequences over 4 processes x 1 per micro-batch need 64 "
        "accumulation steps)"
    )


def test_the_split_names_the_machines_when_the_launcher_has_them():
    config = load_config([PAPER])
    table = run_summary(config)
    import pandas as pd

    frame = pd.DataFrame(table)
    config["train"]["launcher"] = {**config["train"]["launcher"], "num_machines": 2}
    assert batch_splits(config, frame) == [
        "256 sequences (32 prompts x 8 completions) = 8 processes on 2 machines x 1 per "
        f"micro-batch x 32 accumulation steps (all {len(frame)} rows)"
    ]


# --- configs without the key ----------------------------------------------------------------


@pytest.mark.parametrize(
    "files",
    [
        pytest.param([], id="default"),
        pytest.param([ROOT / "config/config.yaml", ROOT / "config/ci.yaml"], id="ci"),
    ],
)
def test_configs_without_the_key_train_their_settings_as_written(files, monkeypatch):
    """The default and ci configs state no global batch: each job's trainer is exactly the
    shared settings, then the method's, then the run's, and the derivation is never called."""
    config = load_config(files)
    assert "sequences_per_step" not in config["train"]

    def never(*args, **kwargs):
        raise AssertionError("the global batch was derived")

    monkeypatch.setattr(global_batch, "derived_trainer", never)
    jobs = training_jobs(config)
    plan_runs = runs(config)
    per_method = config["train"].get("per_method") or {}
    assert jobs
    for job in jobs:
        run = plan_runs[job.run]
        written = {
            **config["train"]["trainer"],
            **per_method.get(job.method, {}),
            **run.trainer,
        }
        assert job.trainer == written, job.run
        resolved = job.run_config(config)
        assert resolved["trainer"] == written and "memory_plan" not in resolved
