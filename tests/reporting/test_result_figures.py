"""gc2po.reporting.result_figures on hand-built tables: a family's forest plot draws each run's
difference and interval where the CSV puts them, fills the Holm survivors only and shades the
margin; the mechanism figure puts each model at (copy share, wrong-bet pass@1) with both
intervals; a table of the wrong kind is refused in one line naming the file."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from gc2po.reporting.family import COLUMNS, Family  # noqa: E402
from gc2po.reporting.result_figures import (  # noqa: E402
    draw_family,
    draw_mechanism,
    mechanism_points,
    read_table,
    write_family_figure,
    write_mechanism_figure,
)

SPEC = {
    "name": "controls",
    "benchmark": "test_wrongbet",
    "reference": "grpo",
    "runs": ["grpo_fxp", "gc2po_add"],
    "margin": 3,
}


def family_rows() -> pd.DataFrame:
    rows = [
        # block, run, diff, low, high, holm_survives
        ("testbed", "grpo_fxp", 59.4, 47.9, 71.0, "yes"),
        ("testbed", "gc2po_add", -1.0, -2.5, 2.0, "no"),
    ]
    frame = pd.DataFrame(
        [
            {
                "block": block,
                "run": run,
                "reference": "grpo",
                "benchmark": "test_wrongbet",
                "mean_run": 50.0,
                "mean_reference": 13.2,
                "diff": diff,
                "diff_ci_low": low,
                "diff_ci_high": high,
                "t_p": 0.01,
                "holm_p": 0.02,
                "holm_survives": survives,
                "verdict": "",
                "seeds": "0,1,2",
                "problems": 300,
            }
            for block, run, diff, low, high, survives in rows
        ]
    )
    return frame[COLUMNS]


def drawn_points(ax):
    """(x, y, face colour, x error extents) of every error-bar point of an axes."""
    found = []
    for container in ax.containers:
        line, _caps, bars = container.lines
        x, y = line.get_xdata()[0], line.get_ydata()[0]
        segments = bars[0].get_segments() if bars else []
        extent = tuple(segments[0][:, 0]) if segments else None
        found.append((float(x), float(y), to_rgba(line.get_markerfacecolor()), extent))
    return found


def test_the_forest_plot_draws_each_run_at_its_difference_filled_where_it_survives_holm():
    fig, (ax,) = draw_family(family_rows(), Family.from_mapping(SPEC))
    try:
        points = drawn_points(ax)
        # the family's first run on top (the highest y)
        assert [(x, y) for x, y, _, _ in points] == [(-1.0, 0.0), (59.4, 1.0)]
        assert [extent for *_, extent in points] == [(-2.5, 2.0), (47.9, 71.0)]
        hollow, filled = points[0][2], points[1][2]
        assert hollow == to_rgba("white") and filled != to_rgba("white")
        labels = [tick.get_text() for tick in ax.get_yticklabels()]
        assert labels == ["GC2PO (corrected, additive)", "Control (oracle): GRPO on f x p"]
        band = [p for p in ax.patches if p.get_label() == "margin +-3"]
        assert len(band) == 1
        left = band[0].get_x()
        assert (left, left + band[0].get_width()) == (-3.0, 3.0)
        assert "controls: each run - GRPO on Wrong bet" in fig._suptitle.get_text()
    finally:
        plt.close(fig)


def test_a_family_without_margin_has_no_band_and_one_panel_per_base_model():
    rows = pd.concat([family_rows(), family_rows().assign(block="second")])
    fig, axes = draw_family(rows, Family.from_mapping({**SPEC, "margin": None}))
    try:
        assert [ax.get_title() for ax in axes] == ["testbed", "second"]
        assert not any(p.get_label().startswith("margin") for ax in axes for p in ax.patches)
    finally:
        plt.close(fig)


def mechanism_rows() -> pd.DataFrame:
    """tables/mechanism.csv's rows for a base model and GRPO (the three measures the figure does
    not read included)."""
    nan = float("nan")
    rows = []
    for model, copy, wrong in (("base", (52.2, 48.5, 55.9), (32.3, 30.7, 34.0)),
                               ("grpo", (83.9, 71.6, 96.3), (13.2, 2.0, 24.4))):  # fmt: skip
        for split, measure, (mean, low, high) in (
            ("test_id", "process_validity", (58.1, 55.9, 60.3)),
            ("test_id", "copy_share", copy),
            ("test_wrongbet", "pass@1", wrong),
            ("test_wrongbet", "copy_share", (50.9, 48.5, 53.3)),
        ):
            rows.append(
                {
                    "block": "testbed",
                    "model": model,
                    "split": split,
                    "measure": measure,
                    "mean": mean,
                    "ci_low": low,
                    "ci_high": high,
                    "diff": nan,
                    "diff_ci_low": nan,
                    "diff_ci_high": nan,
                    "seeds": "0,1,2",
                    "paired_seeds": "",
                    "seed_values": "",
                }
            )
    return pd.DataFrame(rows)


def test_the_mechanism_figure_puts_each_model_at_its_copy_share_and_wrong_bet_pass_at_1():
    fig, (ax,) = draw_mechanism(mechanism_rows())
    try:
        points = [(x, y) for x, y, _, _ in drawn_points(ax)]
        assert points == [(52.2, 32.3), (83.9, 13.2)]
        grpo = ax.containers[1]
        x_bars, y_bars = grpo.lines[2]
        assert np.allclose(x_bars.get_segments()[0][:, 0], [71.6, 96.3])
        assert np.allclose(y_bars.get_segments()[0][:, 1], [2.0, 24.4])
        assert ax.get_legend_handles_labels()[1] == ["Base model", "GRPO"]
    finally:
        plt.close(fig)


def test_the_greedy_tables_figure_says_so():
    fig, _ = draw_mechanism(mechanism_rows(), greedy=True)
    try:
        assert "greedy decoding" in fig._suptitle.get_text()
    finally:
        plt.close(fig)


def test_a_model_with_one_seed_is_drawn_without_interval():
    rows = mechanism_rows()
    rows.loc[rows["model"] == "grpo", ["ci_low", "ci_high"]] = float("nan")
    points = mechanism_points(rows)
    assert points.loc[1, "copy_share_mean"] == 83.9 and np.isnan(points.loc[1, "pass@1_ci_low"])
    fig, (ax,) = draw_mechanism(rows)
    try:
        _, y_bars = ax.containers[1].lines[2]
        assert np.allclose(y_bars.get_segments()[0][:, 1], [13.2, 13.2])
    finally:
        plt.close(fig)


def test_a_table_without_the_measures_is_refused_naming_the_file():
    rows = mechanism_rows()
    with pytest.raises(ValueError, match=r"^t/mechanism.csv: no pass@1 on test_wrongbet"):
        mechanism_points(rows[rows["split"] == "test_id"], "t/mechanism.csv")


def test_the_rules_read_the_csv_and_write_png_and_pdf(tmp_path):
    family_csv, mechanism_csv = tmp_path / "family_controls.csv", tmp_path / "mechanism.csv"
    family_rows().to_csv(family_csv, index=False)
    mechanism_rows().to_csv(mechanism_csv, index=False)
    write_family_figure(family_csv, SPEC, tmp_path / "figures" / "family_controls.png")
    write_mechanism_figure(mechanism_csv, tmp_path / "figures" / "mechanism.png")
    for name in ("family_controls", "mechanism"):
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 10_000
        assert (tmp_path / "figures" / f"{name}.pdf").exists()
    # the family's table given as the mechanism's: its columns are not the mechanism table's
    with pytest.raises(ValueError, match=rf"^{family_csv}: no column\(s\) \['model', 'split'"):
        read_table(family_csv, list(mechanism_rows().columns))
    (tmp_path / "empty.csv").write_text(",".join(COLUMNS) + "\n")
    with pytest.raises(ValueError, match="empty.csv: no rows"):
        write_family_figure(tmp_path / "empty.csv", SPEC, tmp_path / "x.png")
