"""Tables: CIs and paired differences in every format, names, bold rule, escaping, protocol."""

from __future__ import annotations

import subprocess

import numpy as np
import pandas as pd
import pytest

from gc2po.reporting.stats import t_interval
from gc2po.reporting.tables import EvalFile, write_table
from tests.reporting.conftest import write_eval

BENCHMARKS = ["test_id", "test_longer"]
P = 20


def outcome(rate: float, seed: int) -> list[int]:
    """``P`` deterministic 0/1 outcomes with about ``rate`` correct."""
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.uniform(size=P) < rate]


def make_files(root, models: dict[str, dict[str, list[list[int]]]]) -> list[EvalFile]:
    """models: name -> benchmark -> one outcome list per seed."""
    files = []
    for model, by_benchmark in models.items():
        for benchmark, per_seed in by_benchmark.items():
            for seed, correct in enumerate(per_seed):
                files.append(
                    EvalFile.from_path(write_eval(root, "testbed", model, seed, benchmark, correct))
                )
    return files


def standard_models():
    base = {b: [outcome(0.4, 10 * s + i) for s in range(3)] for i, b in enumerate(BENCHMARKS)}
    better = {
        b: [[1 if k < 14 else c for k, c in enumerate(seed)] for seed in runs]
        for b, runs in base.items()
    }
    return {"base": base, "grpo": base, "dr_grpo": base, "gc2po": better}


def write(root, files, **kwargs):
    out = {ext: root / f"table1.{ext}" for ext in ("md", "tex", "csv", "html")}
    write_table(
        files,
        ["gc2po", "grpo", "dr_grpo"],
        BENCHMARKS,
        "Pass@1 (%) per benchmark",
        md=out["md"],
        tex=out["tex"],
        csv=out["csv"],
        html=out["html"],
        label="table1",
        **kwargs,
    )
    return out


def test_markdown_holds_cis_paired_differences_and_display_names(eval_root):
    out = write(eval_root, make_files(eval_root, standard_models()))
    md = out["md"].read_text()
    # rows in the paper's order under its names; benchmarks under display names, in order
    assert md.index("+ GRPO") < md.index("+ Dr.GRPO") < md.index("+ GC2PO")
    assert "| Model | Test (ID) | Longer chains | Average |" in md
    base_row = next(line for line in md.splitlines() if line.startswith("| testbed (base) |"))
    grpo_row = next(line for line in md.splitlines() if line.startswith("| + GRPO |"))
    # GRPO's outcomes equal the base's: difference 0.0 with CI [0.0, 0.0], never -0.0
    assert "(0.0 [0.0, 0.0])" in grpo_row and "-0.0" not in md
    cells = pd.read_csv(out["csv"])
    base_id = cells[(cells.model == "base") & (cells.benchmark == "test_id")].iloc[0]
    assert f"{base_id['mean']:.1f} [{base_id.ci_low:.1f}, {base_id.ci_high:.1f}]" in base_row
    gc2po_row = next(line for line in md.splitlines() if line.startswith("| + GC2PO (paper) |"))
    gc2po_id = cells[(cells.model == "gc2po") & (cells.benchmark == "test_id")].iloc[0]
    assert (
        f"(+{gc2po_id['diff']:.1f} [+{gc2po_id.diff_ci_low:.1f}, +{gc2po_id.diff_ci_high:.1f}])"
        in gc2po_row
    )
    assert "temperature 0.6, top-p 0.95, at most 96 new tokens" in md and "testbed oracle" in md


def test_csv_cells_are_t_intervals_over_the_per_seed_values(eval_root):
    models = standard_models()
    out = write(eval_root, make_files(eval_root, models))
    cells = pd.read_csv(out["csv"])
    row = cells[(cells.model == "gc2po") & (cells.benchmark == "test_id")].iloc[0]
    mine, base = (np.array(models[m]["test_id"], float) for m in ("gc2po", "base"))
    # per seed: the mean over problems, then the t-interval over the 3 seeds
    assert (row["mean"], row.ci_low, row.ci_high) == pytest.approx(
        100 * np.array(t_interval(mine.mean(axis=1))), abs=1e-3
    )
    assert (row["diff"], row.diff_ci_low, row.diff_ci_high) == pytest.approx(
        100 * np.array(t_interval((mine - base).mean(axis=1))), abs=1e-3
    )
    assert row.diff_ci_low > 0  # 14 of 20 problems forced correct
    assert row.seeds == "0,1,2" and row.paired_seeds == "0,1,2" and row.problems == P
    assert (
        row.diff_sign_flip_p == 0.25
    )  # three positive per-seed differences: the smallest p for 3 seeds
    average = cells[(cells.model == "gc2po") & (cells.benchmark == "Average")].iloc[0]
    per_seed = np.mean([np.mean(models["gc2po"][b], axis=1) for b in BENCHMARKS], axis=0)
    assert (average["mean"], average.ci_low, average.ci_high) == pytest.approx(
        100 * np.array(t_interval(per_seed)), abs=1e-3
    )
    assert row.interval == "95% t-interval over 3 seeds, for these problems"
    assert row.diff_interval == row.interval and "Average excluded" in row.holm_family


def test_bold_marks_a_unique_best_and_no_tie(eval_root):
    out = write(eval_root, make_files(eval_root, standard_models()))
    md = out["md"].read_text().splitlines()
    rows = {line.split(" |")[0]: line for line in md if line.startswith("| +")}
    assert rows["| + GC2PO (paper)"].count("**") == 2 * 3  # best in both benchmarks and the Average
    assert "**" not in rows["| + GRPO"] + rows["| + Dr.GRPO"]
    # now GRPO and Dr.GRPO tie at the top of test_longer: nobody is bold there
    models = standard_models()
    models["gc2po"]["test_longer"] = models["base"]["test_longer"]
    models["grpo"] = {**models["grpo"], "test_longer": [[1] * P] * 3}
    models["dr_grpo"] = {**models["dr_grpo"], "test_longer": [[1] * P] * 3}
    root = eval_root / "tie"
    out = write(root, make_files(root, models))
    md = out["md"].read_text().splitlines()
    longer = [line.split(" | ")[2] for line in md if line.startswith("| +")]
    assert not any("**" in cell for cell in longer), longer


def test_a_method_with_fewer_seeds_says_so(eval_root):
    models = standard_models()
    models["grpo"] = {b: runs[:1] for b, runs in models["grpo"].items()}
    out = write(eval_root, make_files(eval_root, models))
    md = out["md"].read_text()
    grpo_row = next(line for line in md.splitlines() if line.startswith("| + GRPO (1 seed: 0) |"))
    # one seed: no interval, so no brackets, for its pass@1 and for its difference
    assert "[" not in grpo_row and "(0.0)" in grpo_row
    assert "1 seed: no CI." in md and "in brackets its 95% t-interval over 3 seeds" in md
    row = pd.read_csv(out["csv"]).query("model == 'grpo' and benchmark == 'test_id'").iloc[0]
    assert str(row.paired_seeds) == "0" and row.interval == "1 seed: no CI"
    assert pd.isna(row.ci_low) and pd.isna(row.diff_ci_low) and pd.isna(row.diff_holm_p)


def test_one_seed_everywhere_prints_no_brackets_and_no_holm_marks(eval_root):
    models = {m: {b: runs[:1] for b, runs in v.items()} for m, v in standard_models().items()}
    md = write(eval_root, make_files(eval_root, models))["md"].read_text()
    rows = [line for line in md.splitlines() if line.startswith("| testbed") or "| +" in line]
    assert len(rows) == 4 and not any("[" in r or "\\*" in r for r in rows), rows
    assert "1 seed: no CI." in md and "t-interval" not in md and "Holm" not in md


def test_holm_marks_a_difference_that_survives_over_the_rows_benchmarks(eval_root):
    out = write(eval_root, make_files(eval_root, standard_models()))
    cells = pd.read_csv(out["csv"]).set_index(["model", "benchmark"])
    # GC2PO: 14 of 20 problems forced correct on all 3 seeds; GRPO equals the base (p = 1)
    assert cells.loc[("gc2po", "test_id"), "diff_holm_survives"] == "yes"
    # test_longer is labelled not learnable from the train split: shown, tested, not in the
    # family, so test_id's family is itself (m = 1: its adjusted p is its own p)
    assert cells.loc[("gc2po", "test_longer"), "diff_holm_survives"] == "not in family"
    assert pd.isna(cells.loc[("gc2po", "test_longer"), "diff_holm_p"])
    assert cells.loc[("gc2po", "test_longer"), "diff_t_p"] < 0.05
    assert cells.loc[("grpo", "test_id"), "diff_holm_survives"] == "no"
    assert pd.isna(cells.loc[("gc2po", "Average"), "diff_holm_p"])  # not in the family
    own = cells.loc[("gc2po", "test_id"), "diff_t_p"]
    assert cells.loc[("gc2po", "test_id"), "diff_holm_p"] == pytest.approx(own)
    md = out["md"].read_text()
    gc2po_row = next(line for line in md.splitlines() if line.startswith("| + GC2PO (paper) |"))
    assert gc2po_row.count(")\\*") == 1  # test_id only: not Longer chains, not the Average
    assert (
        "survives Holm's correction at 5% over the 1 benchmark split of a base model that the "
        "train split can teach (Test (ID); not in the family, not learnable from the train "
        "split: Longer chains; the Average excluded: it is their mean)" in " ".join(md.split())
    )
    assert "the Average excluded" in md
    assert ")$^*$" in out["tex"].read_text() and ")*" in out["html"].read_text()
    for text in (out["tex"].read_text(), out["html"].read_text()):
        assert "95% t-interval over 3 seeds, for these problems" in text.replace("\\%", "%")


def test_protocols_that_disagree_fail_naming_both_files(eval_root):
    files = make_files(eval_root, standard_models())
    write_eval(
        eval_root, "testbed", "grpo", 1, "test_id", outcome(0.4, 1), protocol={"temperature": 1.0}
    )
    with pytest.raises(ValueError, match=r"temperature.*grpo/seed1/test_id"):
        write(eval_root, files)


def test_a_bad_record_fails_naming_file_and_row(eval_root):
    files = make_files(eval_root, standard_models())
    path = eval_root / "eval" / "testbed" / "grpo" / "seed2" / "test_id.jsonl"
    path.write_text(path.read_text() + '{"problem_id": "p99", "correct": "yes"}\n')
    with pytest.raises(ValueError, match=rf"{path}: row {P + 1}: 'correct'"):
        write(eval_root, files)
    with pytest.raises(ValueError, match="not an evaluation file"):
        EvalFile.from_path(eval_root / "table1.jsonl")


def test_html_renders_the_table_with_caption_and_bold(eval_root):
    html = write(eval_root, make_files(eval_root, standard_models()))["html"].read_text()
    assert "<table" in html and "Pass@1 (%) per benchmark" in html and "+ GC2PO" in html
    assert "<b>83.3</b>" in html and "Evaluation protocol" in html  # GC2PO, best in every column


# pdflatex, and booktabs (the tables' rules)
LATEX = pytest.mark.system("texlive-latex-base", "texlive-latex-recommended")


def compile_latex(tmp_path, table_tex: str) -> subprocess.CompletedProcess:
    doc = tmp_path / "doc.tex"
    doc.write_text(
        "\\documentclass{article}\n\\usepackage{booktabs,graphicx}\n\\begin{document}\n"
        + table_tex
        + "\n\\end{document}\n"
    )
    return subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


@LATEX
def test_latex_compiles(eval_root):
    tex = write(eval_root, make_files(eval_root, standard_models()))["tex"].read_text()
    assert "Pass@1 (\\%) per benchmark" in tex
    result = compile_latex(eval_root, tex)
    assert result.returncode == 0, result.stdout[-3000:]
    assert (eval_root / "doc.pdf").stat().st_size > 1000


@LATEX
def test_the_latex_check_rejects_an_unescaped_percent(eval_root):
    # the previous table writer put "Pass@1 (%)" raw into \caption{...}:
    # the % comments out the brace
    tex = write(eval_root, make_files(eval_root, standard_models()))["tex"].read_text()
    result = compile_latex(eval_root, tex.replace("(\\%)", "(%)"))
    assert result.returncode != 0


def test_base_and_method_on_different_problems_fail(eval_root):
    files = make_files(eval_root, standard_models())
    path = eval_root / "eval" / "testbed" / "gc2po" / "seed2" / "test_id.jsonl"
    path.write_text(path.read_text().replace('"p3"', '"q3"'))
    with pytest.raises(
        ValueError, match=rf"testbed/gc2po seed 2 was evaluated on other test_id problems.*{path}"
    ):
        write(eval_root, files)
