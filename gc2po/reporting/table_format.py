"""Render a table's cells (``gc2po.reporting.tables.cell_table``) as Markdown, LaTeX and HTML.

A base row's cell reads ``30.0 [22.0, 38.0]`` (mean pass@1 in %, its 95% t-interval over the
seeds); a trained row's ``29.0 [21.7, 37.0] (-1.0 [-4.3, +2.0])`` adds the paired difference to
the base with its interval, and a trailing ``*`` when that difference's paired t-test survives
Holm's correction over the row's benchmarks. A row of one seed has no interval and prints no
brackets. A difference that rounds to zero prints as ``0.0`` (never ``-0.0``). Bold marks the
highest trained value of a column within a block when no other trained row shows the same value
at the precision printed; a tie bolds nothing. The caption (``gc2po.reporting.captions``) states
how cells are computed and the evaluation protocol read from the evaluation summaries.
"""

from __future__ import annotations

import html
from decimal import ROUND_HALF_UP, Decimal

import pandas as pd

from gc2po.reporting.captions import caption_notes
from gc2po.reporting.names import RunNames, benchmark_name, method_name

AVERAGE = "Average"


def one_decimal(x: float) -> float:
    """``x`` rounded to one decimal, half away from zero, after dropping float noise below 1e-9:
    every table prints a number the same way whatever order its sum was taken in (a mean of
    2.55 computed as 2.5500000000000003 in one table and 2.5499999999999998 in another printed
    2.6 and 2.5)."""
    cleaned = Decimal(repr(round(float(x), 9)))
    return float(cleaned.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def value(x: float) -> str:
    return f"{one_decimal(x):.1f}"


def signed(x: float) -> str:
    """One decimal with a sign; anything that rounds to zero is ``0.0``."""
    rounded = one_decimal(x)
    return "0.0" if rounded == 0 else f"{rounded:+.1f}"


def _rows(cells: pd.DataFrame, benchmarks: list[str], names: RunNames):
    """(block, model, label, [(cell, bold)]) per table row, blocks and models in cell order."""
    columns = benchmarks + [AVERAGE]
    for block, block_cells in cells.groupby("block", sort=False):
        wide = block_cells.set_index(["model", "benchmark"])
        models = list(dict.fromkeys(block_cells.model))
        trained = [m for m in models if m != "base"]
        best = {}
        for column in columns:
            shown = {m: value(wide.loc[(m, column), "mean"]) for m in trained}
            top = max(shown.values(), key=float, default=None)
            winners = [m for m, v in shown.items() if v == top]
            best[column] = winners[0] if len(winners) == 1 else None
        base_seeds = wide.loc[("base", columns[0]), "seeds"]
        for model in models:
            label = f"{block} (base)" if model == "base" else f"+ {method_name(model, names)}"
            seeds = wide.loc[(model, columns[0]), "seeds"]
            if model != "base" and seeds != base_seeds:
                count = len(seeds.split(","))
                label += f" ({count} seed{'s' if count != 1 else ''}: {seeds})"
            yield block, model, label, [(wide.loc[(model, c)], best[c] == model) for c in columns]


def _cell_text(cell, bold: bool, *, strong, small, number, star, before_difference=" ") -> str:
    text = strong(value(cell["mean"])) if bold else value(cell["mean"])
    if pd.notna(cell["ci_low"]):
        text += " " + small(f"[{value(cell['ci_low'])}, {value(cell['ci_high'])}]")
    if pd.notna(cell.get("diff")):
        text += f"{before_difference}({number(signed(cell['diff']))}"
        if pd.notna(cell["diff_ci_low"]):
            low, high = signed(cell["diff_ci_low"]), signed(cell["diff_ci_high"])
            text += " " + small(f"[{number(low)}, {number(high)}]")
        text += ")" + (star if cell.get("diff_holm_survives") == "yes" else "")
    return text


def markdown_escape(text: str) -> str:
    return "".join(
        "\\" + c if c in "\\`*|" else c for c in text
    )  # "_" inside words is never emphasis


def to_markdown(
    cells: pd.DataFrame, benchmarks: list[str], title: str, protocol: str, names: RunNames = None
) -> str:
    header = ["Model"] + [benchmark_name(b) for b in benchmarks] + [AVERAGE]
    lines = [
        f"### {title}",
        "",
        "| " + " | ".join(map(markdown_escape, header)) + " |",
        "|" + "---|" * len(header),
    ]
    for _, _, label, row in _rows(cells, benchmarks, names):
        texts = [
            _cell_text(c, b, strong=lambda t: f"**{t}**", small=str, number=str, star="\\*")
            for c, b in row
        ]
        lines.append("| " + " | ".join([markdown_escape(label)] + texts) + " |")
    return "\n".join(lines + ["", markdown_escape(caption_notes(cells, protocol)), ""])


LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIAL.get(c, c) for c in str(text))


def to_latex(
    cells: pd.DataFrame,
    benchmarks: list[str],
    title: str,
    protocol: str,
    label: str,
    names: RunNames = None,
) -> str:
    """A ``table`` environment; needs ``\\usepackage{booktabs,graphicx}``."""
    header = ["Model"] + [benchmark_name(b) for b in benchmarks] + [AVERAGE]
    out = [
        "% needs \\usepackage{booktabs,graphicx}",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{latex_escape(title)}. {latex_escape(caption_notes(cells, protocol))}}}",
        f"\\label{{tab:{latex_escape(label)}}}",
        "\\resizebox{\\linewidth}{!}{%",
        "\\begin{tabular}{l" + "c" * (len(header) - 1) + "}",
        "\\toprule",
        " & ".join(latex_escape(h) for h in header) + " \\\\",
    ]
    for _, model, row_label, row in _rows(cells, benchmarks, names):
        if model == "base":
            out.append("\\midrule")
        texts = [
            _cell_text(
                c,
                b,
                strong=lambda t: f"\\textbf{{{t}}}",
                small=lambda t: f"{{\\scriptsize {t}}}",
                number=lambda t: f"${t}$",
                star="$^*$",
            )
            for c, b in row
        ]
        out.append(" & ".join([latex_escape(row_label)] + texts) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}%", "}", "\\end{table}"]
    return "\n".join(out) + "\n"


def to_html(
    cells: pd.DataFrame, benchmarks: list[str], title: str, protocol: str, names: RunNames = None
) -> str:
    """A standalone HTML page (pandas Styler) for the Snakemake report: the paired difference on
    a second line of each cell, one block of rows per base model."""
    header = [benchmark_name(b) for b in benchmarks] + [AVERAGE]
    rows = list(_rows(cells, benchmarks, names))
    index = pd.MultiIndex.from_tuples(
        [(block, label) for block, _, label, _ in rows]
    )  # unique across blocks
    frame = pd.DataFrame(
        [
            [
                _cell_text(
                    c,
                    b,
                    strong=lambda t: f"<b>{t}</b>",
                    small=lambda t: f"<small>{t}</small>",
                    number=str,
                    star="*",
                    before_difference="<br>",
                )
                for c, b in row
            ]
            for *_, row in rows
        ],
        index=index,
        columns=header,
    )
    base_rows = [(block, label) for block, model, label, _ in rows if model == "base"]
    styler = (
        frame.style.format_index(escape="html", axis=0)
        .format_index(escape="html", axis=1)
        .set_caption(
            f"<b>{html.escape(title)}</b><br>{html.escape(caption_notes(cells, protocol))}"
        )
        .set_table_styles(
            [
                {
                    "selector": "",
                    "props": "border-collapse: collapse; font-family: sans-serif; font-size: 13px;",
                },
                {
                    "selector": "caption",
                    "props": "caption-side: top; text-align: left; padding-bottom: 8px;",
                },
                {
                    "selector": "th, td",
                    "props": "padding: 4px 10px; border-bottom: 1px solid #ddd; "
                    "text-align: right; white-space: nowrap;",
                },
                {"selector": "th.row_heading", "props": "text-align: left;"},
            ]
        )
        .set_properties(subset=pd.IndexSlice[base_rows, :], **{"border-top": "2px solid #444"})
        # a fixed element id (Styler's default is random): the same cells, the same bytes
        .set_uuid("gc2po")
    )
    return styler.to_html(doctype_html=True)
