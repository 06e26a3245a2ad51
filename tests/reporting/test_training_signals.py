"""tables/training_signals: the floor-bind and sign-flip shares over training, by hand."""

import json

import pytest

from gc2po.reporting.training_signals import training_signal_rows, write_training_signals


def _metrics(root, run, seed, floors, flips=None):
    path = root / "runs" / "testbed" / run / f"seed{seed}" / "metrics.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    records = []
    for step, floor in enumerate(floors, 1):
        record = {"step": step, "loss": 0.1}
        if floor is not None:
            record["advantages/floor_binds"] = floor
            record["advantages/sign_flip_frac"] = (flips or floors)[step - 1]
        records.append(record)
    records.append({"step": len(floors), "train_runtime": 1.0})  # the end record: no loss
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_floor_binds_by_hand(tmp_path):
    paths = [
        _metrics(tmp_path, "add", 0, [1.0, 0.5, 0.0]),  # mean 0.5, first 1, last 0
        _metrics(tmp_path, "add", 1, [1.0, 1.0, 0.5]),  # mean 5/6
        _metrics(tmp_path, "grpo", 0, [None, None, None]),  # logs no bonus: no row
    ]
    rows = training_signal_rows(paths)
    floor = rows[rows.key == "advantages/floor_binds"].set_index("when")
    assert set(rows.run) == {"add"}
    assert floor.loc["all steps", "mean"] == pytest.approx(100 * (0.5 + 5 / 6) / 2)
    assert floor.loc["first step", "mean"] == pytest.approx(100.0)
    assert floor.loc["last step", "mean"] == pytest.approx(25.0)
    assert floor.loc["first step", "ci_low"] == pytest.approx(100.0)  # no spread
    assert floor.loc["all steps", "seeds"] == "0,1" and floor.loc["all steps", "steps"] == 3


def test_a_non_finite_value_names_the_file_and_row(tmp_path):
    path = _metrics(tmp_path, "add", 0, [0.5, float("nan")])
    with pytest.raises(ValueError, match=r"metrics.jsonl: row 2: advantages/floor_binds is nan"):
        training_signal_rows([path])


def test_not_a_run_folder(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("")
    with pytest.raises(ValueError, match="not a run's metrics.jsonl"):
        training_signal_rows([path])


def test_markdown_without_rows_says_so(tmp_path):
    path = _metrics(tmp_path, "grpo", 0, [None])
    md, csv = tmp_path / "o" / "t.md", tmp_path / "o" / "t.csv"
    write_training_signals([path], md=md, csv=csv)
    assert "no run logs these keys" in md.read_text()
