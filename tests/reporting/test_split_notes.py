"""Tables and comparisons print each testbed split's chance level and label the splits the train
split cannot teach, read from the evaluation summaries."""

from __future__ import annotations

import pandas as pd
import pytest

from gc2po.reporting.comparison import write_comparison
from gc2po.reporting.split_notes import split_labels
from gc2po.reporting.tables import EvalFile, write_table
from tests.reporting.conftest import write_eval

LABELS = {
    "test_id": {"chance_level": 0.0171, "reachable": True},
    "test_longer": {"chance_level": 0.0163, "reachable": False},
}


def files(root, labels=LABELS):
    return [
        EvalFile.from_path(
            write_eval(
                root, "testbed", model, seed, benchmark, [1, 0, 0, 1], labels=labels.get(benchmark)
            )
        )
        for model in ("base", "grpo")
        for seed in (0, 1)
        for benchmark in ("test_id", "test_longer")
    ]


def test_table_caption_and_csv_carry_chance_levels_and_the_unreachable_label(tmp_path):
    out = {ext: tmp_path / f"t.{ext}" for ext in ("md", "tex", "csv", "html")}
    write_table(files(tmp_path), ["grpo"], ["test_id", "test_longer"], "Pass@1", **out)
    md = out["md"].read_text()
    assert (
        "chance level (a question-blind guesser drawing from the train answers): Test (ID) 1.7%, "
        "Longer chains 1.6%; not learnable from the train split: Longer chains." in md
    )
    assert "not learnable from the train split" in out["tex"].read_text()
    cells = pd.read_csv(out["csv"]).set_index(["model", "benchmark"])
    assert cells.loc[("grpo", "test_id"), "chance_level"] == pytest.approx(1.71)
    assert cells.loc[("base", "test_longer"), "reachable"] == False  # noqa: E712 (a CSV cell)
    assert pd.isna(cells.loc[("base", "Average"), "chance_level"])


def test_comparison_says_it_too_and_benchmarks_without_labels_get_nothing(tmp_path):
    md, csv = tmp_path / "c.md", tmp_path / "c.csv"
    write_comparison(files(tmp_path), "grpo", "base", ["test_id", "test_longer"], md=md, csv=csv)
    assert md.read_text().endswith(
        "Chance level (a question-blind guesser drawing from the train answers): Test (ID) 1.7%, "
        "Longer chains 1.6%; not learnable from the train split: Longer chains.\n"
    )
    assert "chance_level" in pd.read_csv(csv).columns
    plain = tmp_path / "plain"
    write_comparison(files(plain, {}), "grpo", "base", ["test_id"], md=md, csv=csv)
    assert "hance level" not in md.read_text() and "chance_level" not in pd.read_csv(csv).columns


def test_summaries_of_one_split_must_agree(tmp_path):
    found = files(tmp_path)
    write_eval(
        tmp_path,
        "testbed",
        "grpo",
        1,
        "test_id",
        [1, 0, 0, 1],
        labels={"chance_level": 0.5, "reachable": True},
    )
    with pytest.raises(ValueError, match="test_id: evaluation summaries disagree on the split's"):
        split_labels([f.path for f in found])
