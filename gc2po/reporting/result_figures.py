"""The figures of a results page, drawn from the tables the workflow writes (never from the
evaluations again, so a figure shows exactly its table's numbers):

- :func:`family_figure`: a pre-registered family (``tables/family_<name>.csv``,
  ``gc2po.reporting.family``) as a forest plot, one row per run: its paired difference to the
  reference with the 95% interval, zero, the equivalence margin as a band, the runs that survive
  Holm filled and the others hollow; one panel per base model.
- :func:`mechanism_figure`: the mechanism table (``tables/mechanism.csv``,
  ``gc2po.reporting.mechanism``) as one point per model: how often it copies the bet where the
  bet is mostly right (``test_id``'s copy share) against its pass@1 where the bet is always wrong
  (``test_wrongbet``), each with its 95% interval over seeds; one panel per base model.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from gc2po.reporting.family import COLUMNS as FAMILY_COLUMNS  # noqa: E402
from gc2po.reporting.family import Family  # noqa: E402
from gc2po.reporting.mechanism import CSV_COLUMNS as MECHANISM_COLUMNS  # noqa: E402
from gc2po.reporting.names import (  # noqa: E402
    RunNames,
    benchmark_name,
    method_colour,
    method_name,
)
from gc2po.reporting.plotting import save_figure  # noqa: E402

# the mechanism figure's axes: (split, measure) of the CSV
COPY_SHARE = ("test_id", "copy_share")
WRONG_BET = ("test_wrongbet", "pass@1")


def read_table(path: str | Path, columns: list[str]) -> pd.DataFrame:
    """A table's CSV, refused in one line naming the file when it lacks a column or a row."""
    rows = pd.read_csv(path)
    missing = [column for column in columns if column not in rows.columns]
    if missing:
        raise ValueError(f"{path}: no column(s) {missing} (is it the right table?)")
    if rows.empty:
        raise ValueError(f"{path}: no rows")
    return rows


def _panels(blocks: list[str], height: float, width: float = 6.0):
    """One axes per base model, side by side."""
    fig, axes = plt.subplots(1, len(blocks), figsize=(width * len(blocks), height), squeeze=False)
    return fig, list(axes[0])


def _interval_error(row: pd.Series, mean: str, low: str, high: str) -> list[list[float]]:
    """matplotlib's error bar of one point: the distances from its mean down to ``low`` and up
    to ``high`` (0 where there is no interval: one seed gives none)."""
    below, above = row[mean] - row[low], row[high] - row[mean]
    return [
        [0.0 if pd.isna(below) else max(below, 0.0)],
        [0.0 if pd.isna(above) else max(above, 0.0)],
    ]


def family_figure(
    rows: pd.DataFrame, family: Family, out_png: str | Path, names: RunNames = None
) -> None:
    """The family's forest plot, saved (PNG and PDF)."""
    fig, axes = draw_family(rows, family, names)
    save_figure(fig, axes[-1], out_png)


def draw_family(rows: pd.DataFrame, family: Family, names: RunNames = None):
    """(figure, axes) of the family's forest plot (module docstring); ``rows``:
    ``tables/family_<name>.csv``."""
    blocks = list(dict.fromkeys(rows["block"]))
    fig, axes = _panels(blocks, height=0.5 * rows["run"].nunique() + 1.6)
    reference = method_name(family.reference, names)
    for ax, block in zip(axes, blocks):
        mine = rows[rows["block"] == block].iloc[::-1]  # the family's first run on top
        y = list(range(len(mine)))
        if family.margin is not None:
            ax.axvspan(
                -family.margin,
                family.margin,
                color="#dddddd",
                zorder=0,
                label=f"margin +-{family.margin:g}",
            )
        ax.axvline(0, color="black", linewidth=0.8)
        for position, (_, row) in zip(y, mine.iterrows()):
            survives = row["holm_survives"] == "yes"
            colour = method_colour(row["run"])
            ax.errorbar(
                row["diff"],
                position,
                xerr=_interval_error(row, "diff", "diff_ci_low", "diff_ci_high"),
                fmt="o",
                color=colour,
                markerfacecolor=colour if survives else "white",
                markersize=7,
                capsize=3,
            )
        ax.set_yticks(y, [method_name(run, names) for run in mine["run"]])
        ax.set_ylim(-0.6, len(mine) - 0.4)
        ax.set_xlabel(f"run - {reference}, pass@1 (points), 95% interval")
        ax.set_title(block if len(blocks) > 1 else "", fontsize=9)
    # a legend entry for each marker fill, drawn once
    axes[-1].plot([], [], "o", color="black", label="survives Holm")
    axes[-1].plot([], [], "o", color="black", markerfacecolor="white", label="does not")
    fig.suptitle(
        f"{family.name}: each run - {reference} on {benchmark_name(family.benchmark)}",
        fontsize=10,
    )
    return fig, axes


def mechanism_points(rows: pd.DataFrame, path: str | Path = "mechanism.csv") -> pd.DataFrame:
    """One row per (block, model): copy share and wrong-bet pass@1 with their intervals.
    ValueError naming the file when the table lacks either measure."""
    rows = rows.assign(key=list(zip(rows["split"], rows["measure"])))
    for key in (COPY_SHARE, WRONG_BET):
        if key not in set(rows["key"]):
            raise ValueError(
                f"{path}: no {key[1]} on {key[0]} (the config evaluates neither split, or the "
                "table is not the mechanism table)"
            )
    kept = rows[rows["key"].isin([COPY_SHARE, WRONG_BET])]
    wide = kept.pivot_table(
        index=["block", "model"],
        columns="measure",
        values=["mean", "ci_low", "ci_high"],
        sort=False,
        dropna=False,
    )
    wide.columns = [f"{measure}_{stat}" for stat, measure in wide.columns]
    return wide.reset_index()


def mechanism_figure(
    rows: pd.DataFrame,
    out_png: str | Path,
    names: RunNames = None,
    path: str = "mechanism.csv",
    greedy: bool = False,
) -> None:
    """Copy share against wrong-bet pass@1, per model, saved (PNG and PDF)."""
    fig, axes = draw_mechanism(rows, names, path, greedy)
    save_figure(fig, axes[-1], out_png)


def draw_mechanism(
    rows: pd.DataFrame, names: RunNames = None, path: str = "mechanism.csv", greedy: bool = False
):
    """(figure, axes) of copy share against wrong-bet pass@1 (module docstring); ``greedy``:
    the table of greedy evaluations, said in the title."""
    points = mechanism_points(rows, path)
    blocks = list(dict.fromkeys(points["block"]))
    fig, axes = _panels(blocks, height=4.2, width=5.2)
    for ax, block in zip(axes, blocks):
        for _, row in points[points["block"] == block].iterrows():
            ax.errorbar(
                row["copy_share_mean"],
                row["pass@1_mean"],
                xerr=_interval_error(
                    row, "copy_share_mean", "copy_share_ci_low", "copy_share_ci_high"
                ),
                yerr=_interval_error(row, "pass@1_mean", "pass@1_ci_low", "pass@1_ci_high"),
                fmt="o",
                color=method_colour(row["model"]),
                capsize=3,
                label=method_name(row["model"], names),
            )
        ax.set_xlim(-3, 103)
        ax.set_ylim(-3, 103)
        ax.set_xlabel(f"copy share on {benchmark_name(COPY_SHARE[0])} (%), cued problems")
        ax.set_ylabel(f"pass@1 on {benchmark_name(WRONG_BET[0])} (%)")
        ax.set_title(block if len(blocks) > 1 else "", fontsize=9)
        ax.grid(alpha=0.3)
    decoding = "greedy decoding, " if greedy else ""
    fig.suptitle(
        f"Copying the bet and answering when it is wrong ({decoding}95% intervals over seeds)",
        fontsize=10,
    )
    return fig, axes


def write_family_figure(csv: str | Path, spec: dict, png: str | Path, names: RunNames = None):
    """The workflow's ``family_figure`` rule: the family's CSV -> its forest plot."""
    family_figure(read_table(csv, FAMILY_COLUMNS), Family.from_mapping(spec), png, names)


def write_mechanism_figure(
    csv: str | Path, png: str | Path, names: RunNames = None, greedy: bool = False
):
    """The workflow's ``mechanism_figure`` rule: ``tables/mechanism.csv`` -> the figure."""
    mechanism_figure(read_table(csv, MECHANISM_COLUMNS), png, names, str(csv), greedy)
