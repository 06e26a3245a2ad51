"""benchmarks/workflow/seed_power.py: the seed-level spread of a pair's differences, read from
evaluation files, and the seeds it implies (``gc2po.reporting.power``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from gc2po.reporting.power import minimal_detectable_difference, seeds_needed
from tests.reporting.conftest import write_eval

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "workflow" / "seed_power.py"
# problems correct out of 10 per seed: per-seed differences gc2po - grpo on test_id are 10, 30,
# 20 points (sd 10), on test_longer 0, 0, 0 (sd 0)
CORRECT = {
    ("grpo", "test_id"): [3, 3, 4],
    ("gc2po", "test_id"): [4, 6, 6],
    ("grpo", "test_longer"): [5, 5, 5],
    ("gc2po", "test_longer"): [5, 5, 5],
}


def load_script():
    spec = importlib.util.spec_from_file_location("seed_power", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of the script's command line, run in this process."""
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *args])
    try:
        load_script().main()
        status = 0
    except SystemExit as exit:
        status = exit.code if isinstance(exit.code, int) else 1
        if not isinstance(exit.code, int):
            print(exit.code, file=sys.stderr)
    except ValueError as err:
        status = 1
        print(err, file=sys.stderr)
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.fixture
def eval_dir(tmp_path):
    for (model, benchmark), per_seed in CORRECT.items():
        for seed, right in enumerate(per_seed):
            correct = [1] * right + [0] * (10 - right)
            write_eval(tmp_path, "testbed", model, seed, benchmark, correct)
            write_eval(tmp_path, "testbed", "base", seed, benchmark, [0] * 10)
    return tmp_path / "eval"


def test_prints_the_spread_and_the_seeds_it_needs(eval_dir, monkeypatch, capsys):
    status, out, err = run(
        monkeypatch, capsys, "--eval-dir", str(eval_dir), "--pairs", "gc2po,grpo", "--delta", "5"
    )
    assert status == 0, err
    lines = {line.split(" | ")[2]: line for line in out.splitlines() if "| testbed |" in line}
    detectable = minimal_detectable_difference(10.0, 3)
    assert lines["Test (ID)"] == (
        f"| GC2PO (paper) - GRPO | testbed | Test (ID) | 3 | +20.0 | 10.00 | {detectable:.1f} | "
        f"{seeds_needed(5.0, 10.0)} |"
    )
    # no spread: any difference is detected by the fewest seeds a t-test takes
    assert lines["Longer chains"].endswith("| Longer chains | 3 | 0.0 | 0.00 | 0.0 | 2 |")
    # the Average: per seed (10 + 0) / 2, (30 + 0) / 2, (20 + 0) / 2 -> sd 5
    assert f"| +10.0 | 5.00 | {minimal_detectable_difference(5.0, 3):.1f} |" in lines["Average"]


def test_refuses_one_seed_and_unknown_runs_before_any_number(eval_dir, monkeypatch, capsys):
    refusals = {
        ("--pairs", "gc2po,ppo"): "--methods: no evaluation files for ['ppo']",
        ("--pairs", "gc2po"): "expected a,b",
        ("--pairs", "gc2po,grpo", "--delta", "0"): "--delta > 0",
        ("--pairs", "gc2po,grpo", "--power", "0.01"): "--alpha < --power",
    }
    for args, message in refusals.items():
        status, out, err = run(monkeypatch, capsys, "--eval-dir", str(eval_dir), *args)
        assert status != 0 and message in err and not out, (args, err)
    for extra in eval_dir.glob("*/*/seed[12]/*"):
        extra.unlink()
    status, out, err = run(
        monkeypatch, capsys, "--eval-dir", str(eval_dir), "--pairs", "gc2po,grpo"
    )
    assert status != 0 and "share 1 seed ([0])" in err and not out
