"""benchmarks/testbed/testbed_recipe.py's pieces that decide what is trained: the starting recipe
read from a config, and the train split cut to a share of cued problems."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location(
    "testbed_recipe", ROOT / "benchmarks" / "testbed" / "testbed_recipe.py"
)
recipe = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(recipe)


def test_the_starting_recipe_is_the_default_configs():
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    trainer, warm_start = recipe.default_recipe(ROOT / "config" / "config.yaml")
    assert trainer == config["train"]["trainer"]
    assert warm_start == config["testbed"]["warm_start"]


def test_a_config_without_a_recipe_is_refused_naming_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntrain: {}\n")
    with pytest.raises(SystemExit, match="bad.yaml: no train.trainer"):
        recipe.default_recipe(bad)


def records(cued: int, uncued: int) -> list[dict]:
    return [{"id": f"c{i}", "meta": {"cue": 5}} for i in range(cued)] + [
        {"id": f"u{i}", "meta": {"cue": None}} for i in range(uncued)
    ]


@pytest.mark.parametrize(("share", "expected_cued"), [(0.0, 0), (0.2, 15), (0.5, 50)])
def test_the_cued_share_keeps_every_uncued_problem(share, expected_cued):
    out = recipe.with_cued_share(records(cued=50, uncued=60), share)
    cued = [r for r in out if r["meta"]["cue"] is not None]
    assert len(out) - len(cued) == 60  # every uncued problem stays
    assert len(cued) == expected_cued  # int(share * 60 / (1 - share)), at most the 50 there are


def test_a_cued_share_of_one_is_refused():
    with pytest.raises(SystemExit, match="--cued-share must be in"):
        recipe.with_cued_share(records(2, 2), 1.0)


def test_a_curve_keeps_every_checkpoint():
    # 160 steps every 40: checkpoints 40, 80, 120, 160, none rotated away
    assert recipe.checkpoint_settings(160, 40) == {"save_steps": 40, "save_total_limit": 4}
    assert recipe.checkpoint_settings(10, 40) == {"save_steps": 40, "save_total_limit": 1}


def test_checkpoints_are_read_in_step_order(tmp_path):
    for step in (120, 40, 80):
        (tmp_path / f"checkpoint-{step}").mkdir()
    (tmp_path / "final").mkdir()
    assert [step for step, _ in recipe.checkpoints(tmp_path)] == [40, 80, 120]


def test_a_curve_step_below_one_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(
        "sys.argv",
        f"testbed_recipe.py --model m --data d --test t --out {tmp_path} --every 0".split(),
    )
    with pytest.raises(SystemExit, match="--every must be a positive number of steps, got 0"):
        recipe.main()


@pytest.mark.slow
def test_reuse_evaluates_a_finished_run_and_greedy_pairs_it(monkeypatch, tmp_path, capsys):
    """A 'run' that is its base model, reused: no training, and both the sampled and the
    greedy line show a difference of exactly zero (the same model, the same sampling seed)."""
    import shutil

    from gc2po.testbed.data import write_splits
    from gc2po.testbed.generator import generate_splits
    from gc2po.testbed.warmstart import WarmStartConfig, warm_start

    write_splits({"train": 40, "test_id": 24}, 0, tmp_path / "data", {"frac": 0.5, "accuracy": 0.9})
    base = tmp_path / "base"
    tiny = WarmStartConfig(hidden_size=32, num_layers=1, num_heads=2, epochs=1, vocab_size=300)
    warm_start(generate_splits({"train": 40}, 0)["train"], base, tiny, log=lambda *a: None)
    shutil.copytree(base, tmp_path / "out" / "seed3" / "final")
    argv = (
        f"testbed_recipe.py --model {base} --data {tmp_path}/data/train.jsonl "
        f"--test {tmp_path}/data/test_id.jsonl --out {tmp_path}/out --seeds 3 --n 2 "
        "--greedy --reuse"
    )
    monkeypatch.setattr("sys.argv", argv.split())
    recipe.main()
    printed = capsys.readouterr().out.splitlines()
    lines = [line for line in printed if line.startswith("seed")]  # not a library's warning
    assert not (tmp_path / "out" / "run3.yaml").exists()  # nothing was trained
    assert [line.split(":")[0] for line in lines] == ["seed 3", "seed 3 greedy"]
    assert all("(+0.0)" in line for line in lines), lines
