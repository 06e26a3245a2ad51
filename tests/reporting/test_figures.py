"""Figures: one colour per method everywhere, seed bands and error bars, legends clear of the
data, benchmarks in the tables' order, display names."""

from __future__ import annotations

import json

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import pytest

from gc2po.reporting import figures, plotting, training_figures
from gc2po.reporting.names import method_colour, method_name


@pytest.fixture
def drawn(monkeypatch):
    """Keep each figure's axes (the functions save and close their figures)."""
    kept = []
    original = plotting.save_figure

    def keep(fig, ax, out_png):
        kept.append(ax)
        original(fig, ax, out_png)

    for module in (figures, training_figures):
        monkeypatch.setattr(module, "save_figure", keep)
    return kept


def write_metrics(path, values, key="grad_norm"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({"step": i + 1, "loss": 0.1, key: v, "step_time": 1.0 + v}) + "\n"
            for i, v in enumerate(values)
        )
    )
    return path


def write_summary(path, accuracy, tokens):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "pass@1": accuracy,
                "mean_tokens": tokens,
                "budget_curve": [{"budget": b, "accuracy": accuracy * b / 8} for b in (2, 4, 8)],
            }
        )
    )
    return path


def line_colour(ax, label):
    line = next(line for line in ax.get_lines() if line.get_label() == label)
    return mcolors.to_hex(line.get_color())


def test_curves_have_seed_bands_method_colours_and_outside_legends(tmp_path, drawn):
    runs = {
        ("tb", run): [
            write_metrics(tmp_path / run / f"s{s}.jsonl", [1.0 + s + k, 2.0 + s, 3.0 - s])
            for s in range(3)
        ]
        for k, run in enumerate(["grpo", "gc2po"])
    }
    steps = training_figures.metric_over_steps(
        runs, "grad_norm", "gradient norm", tmp_path / "g.png", "Gradient norm"
    )
    assert steps == {"tb/grpo": 3, "tb/gc2po": 3}
    summaries = {
        ("tb", m): [
            write_summary(tmp_path / m / f"e{s}.json", 0.2 + 0.1 * s, 10 + s) for s in range(3)
        ]
        for m in ("base", "gc2po")
    }
    figures.budget_curves(summaries, tmp_path / "b.png", "Budget")
    grad_ax, budget_ax = drawn
    # the same method, the same colour, in both figures, under its display name
    assert (
        line_colour(grad_ax, "GC2PO (paper)")
        == line_colour(budget_ax, "GC2PO (paper)")
        == method_colour("gc2po")
    )
    assert line_colour(budget_ax, "Base model") == method_colour("base")
    # one band (a filled polygon) per curve: 3 seeds give a 95% interval
    assert len(grad_ax.collections) == 2 and len(budget_ax.collections) == 2
    for ax in drawn:
        assert not plotting.legend_overlaps_axes(ax.figure, ax)
    assert (tmp_path / "g.png").stat().st_size > 1000 and (tmp_path / "g.pdf").exists()
    assert [t.get_text() for t in budget_ax.get_xticklabels()] == ["2", "4", "8"]


def test_a_single_seed_draws_no_band(tmp_path, drawn):
    runs = {("tb", "grpo"): [write_metrics(tmp_path / "s0.jsonl", [1.0, 2.0])]}
    training_figures.metric_over_steps(
        runs, "grad_norm", "gradient norm", tmp_path / "g.png", "Gradient norm"
    )
    assert len(drawn[0].collections) == 0 and len(drawn[0].get_lines()) == 1


def test_an_unlogged_metric_says_so(tmp_path, drawn):
    runs = {("tb", "grpo"): [write_metrics(tmp_path / "s0.jsonl", [1.0, 2.0])]}
    assert (
        training_figures.metric_over_steps(
            runs, "sampling_ratio/mean", "ratio", tmp_path / "r.png", "Sampling ratio"
        )
        == {}
    )
    assert "no run logged sampling_ratio/mean" in drawn[0].texts[0].get_text()


def test_bars_carry_error_bars_and_keep_the_tables_order(tmp_path, drawn):
    runs = {
        run: [write_metrics(tmp_path / run / f"s{s}.jsonl", [0.5 + 0.1 * s + k]) for s in range(3)]
        for k, run in enumerate(["grpo", "gc2po", "dr_grpo"])
    }
    ratios = training_figures.training_cost(
        runs, "grpo", tmp_path / "cost.png", "Training cost (tb)"
    )
    assert ratios["grpo"][0] == pytest.approx(1.0) and ratios["gc2po"][0] > 1
    cost_ax = drawn[0]
    assert [t.get_text() for t in cost_ax.get_xticklabels()] == [method_name(r) for r in runs]
    assert [mcolors.to_hex(p.get_facecolor()) for p in cost_ax.patches] == [
        method_colour(r) for r in runs
    ]
    assert len(cost_ax.lines) >= 3  # error-bar segments (one per bar) plus the reference line
    benchmarks = ["test_longer", "test_id"]  # deliberately not alphabetical
    summaries = {
        ("tb", m, b): [write_summary(tmp_path / m / b / f"{s}.json", 0.3, 10 + s) for s in range(3)]
        for m in ("base", "gc2po")
        for b in benchmarks
    }
    figures.token_usage(summaries, benchmarks, tmp_path / "tokens.png")
    assert [t.get_text() for t in drawn[1].get_xticklabels()] == ["Longer chains", "Test (ID)"]
    assert not plotting.legend_overlaps_axes(drawn[1].figure, drawn[1])


def test_the_legend_check_sees_a_legend_on_the_data():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="x")
    ax.legend(loc="center")
    assert plotting.legend_overlaps_axes(fig, ax)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    assert not plotting.legend_overlaps_axes(fig, ax)
    plt.close(fig)


def test_interval_within_clips_to_the_quantitys_range():
    # seeds 0.01, 0.02, 5: mean 1.6767, t(2) half-width 4.3027 * 2.8785 / sqrt(3) = 7.150
    mean, low, high = plotting.interval_within([0.01, 0.02, 5.0], plotting.NON_NEGATIVE)
    assert (
        mean == pytest.approx(1.676667) and low == 0.0 and high == pytest.approx(8.8266, abs=1e-3)
    )
    unbounded = plotting.interval_within([0.01, 0.02, 5.0], plotting.UNBOUNDED)
    assert unbounded[1] == pytest.approx(-5.4733, abs=1e-3)
    assert plotting.interval_within([90.0, 99.0, 100.0], plotting.PERCENT)[2] == 100.0
    mean, low, high = plotting.interval_within(
        [3.0], plotting.NON_NEGATIVE
    )  # one seed: no interval
    assert mean == 3.0 and low != low and high != high


def test_bands_and_error_bars_of_non_negative_quantities_stay_above_zero(tmp_path, drawn):
    # gradient norms of 3 seeds whose t interval reaches far below 0 at every step
    seeds = enumerate([0.01, 0.02, 5.0])
    runs = {("tb", "grpo"): [write_metrics(tmp_path / f"s{s}.jsonl", [v, v]) for s, v in seeds]}
    training_figures.metric_over_steps(
        runs,
        "grad_norm",
        "gradient norm",
        tmp_path / "g.png",
        "Gradient norm",
        plotting.NON_NEGATIVE,
    )
    band = drawn[0].collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == 0.0 and band.max() == pytest.approx(8.8266, abs=1e-3)
    seeds = enumerate([(0.0, 1.0), (0.0, 2.0), (0.9, 300.0)])  # (accuracy, mean tokens)
    summaries = {
        ("tb", "base", "test_id"): [
            write_summary(tmp_path / f"e{s}.json", a, t) for s, (a, t) in seeds
        ]
    }
    figures.token_usage(summaries, ["test_id"], tmp_path / "tokens.png")
    budgets = {key[:2]: paths for key, paths in summaries.items()}
    figures.budget_curves(budgets, tmp_path / "b.png", "Budget")
    for ax in drawn[1:]:
        lows = [path.vertices[:, 1].min() for c in ax.collections for path in c.get_paths()]
        assert lows and min(lows) == 0.0  # the token bar's error bar and the accuracy band end at 0


def write_length_metrics(path, lengths, counts):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps(
                {"step": i + 1, "loss": 0.1, "completions/mean_length": n, "episodes/mean_count": c}
            )
            + "\n"
            for i, (n, c) in enumerate(zip(lengths, counts))
        )
    )
    return path


def test_length_and_episodes_per_run_with_the_base_from_step_one(tmp_path, drawn):
    # GRPO keeps its length, the paper form shortens and packs episodes, over 2 seeds each
    runs = {
        ("tb", "grpo"): [
            write_length_metrics(tmp_path / f"g{s}.jsonl", [30 + s, 30, 31], [3, 3, 3])
            for s in range(2)
        ],
        ("tb", "gc2po"): [
            write_length_metrics(tmp_path / f"p{s}.jsonl", [29 + s, 22, 15], [3, 3.5, 4])
            for s in range(2)
        ],
        ("tb", "gc2po_add"): [write_length_metrics(tmp_path / "a0.jsonl", [30, 30, 30], [3, 3, 3])],
    }
    result = training_figures.length_and_episodes(runs, tmp_path / "length.png")
    assert result["plotted"]["tb/gc2po"] == {"completions/mean_length": 3, "episodes/mean_count": 3}
    # the base model: the mean of every run's first step (sampled before any update)
    assert result["base"]["completions/mean_length"] == pytest.approx((30 + 31 + 29 + 30 + 30) / 5)
    length_ax = drawn[0].figure.axes[0]
    paper = next(
        line
        for line in length_ax.get_lines()
        if mcolors.to_hex(line.get_color()) == method_colour("gc2po")
    )
    assert list(paper.get_ydata()) == pytest.approx([29.5, 22, 15])
    labels = [t.get_text() for t in drawn[0].get_legend().get_texts()]
    assert labels == [
        "GRPO",
        "GC2PO (paper)",
        "GC2PO (corrected, additive)",
        "Base model (step-1 samples)",
    ]
    assert not plotting.legend_overlaps_axes(drawn[0].figure, drawn[0])
    assert (tmp_path / "length.png").stat().st_size > 1000


def test_lambda_figure_shows_the_paper_and_the_corrected_form_apart(tmp_path, drawn):
    def seeds(run, accuracy):
        return [
            write_summary(tmp_path / run / f"{s}.json", accuracy + 0.01 * s, 10) for s in range(2)
        ]

    points = {
        ("tb", "gc2po", "lambda_cf"): {0.0: seeds("gc2po_no_rcf", 0.2), 0.8: seeds("gc2po", 0.25)},
        ("tb", "gc2po_add", "lambda_cf"): {
            0.0: seeds("gc2po_add_no_rcf", 0.3),
            0.8: seeds("gc2po_add", 0.35),
        },
    }
    figures.lambda_ablation(points, "test_id", tmp_path / "lambda.png")
    labels = [t.get_text() for t in drawn[0].get_legend().get_texts()]
    assert labels == ["GC2PO (paper): lambda_cf", "GC2PO (corrected, additive): lambda_cf"]
    lines = [line for line in drawn[0].get_lines() if line.get_marker() in ("o", "s")]
    assert [mcolors.to_hex(line.get_color()) for line in lines] == [
        method_colour("gc2po_no_rcf"),
        method_colour("gc2po_add_no_rcf"),
    ]
    assert list(lines[1].get_ydata()) == pytest.approx([30.5, 35.5])


def test_lambda_figure_of_a_config_without_the_paper_form_draws_what_it_has(tmp_path, drawn):
    # a config without gc2po (config/testbed_signals.yaml) hands over an empty series for it
    runs = [write_summary(tmp_path / f"{s}.json", 0.3, 10) for s in range(2)]
    points = {("tb", "gc2po", "lambda_cf"): {}, ("tb", "gc2po_add", "lambda_cf"): {0.8: runs}}
    figures.lambda_ablation(points, "test_id", tmp_path / "lambda.png")
    assert [t.get_text() for t in drawn[0].get_legend().get_texts()] == [
        "GC2PO (corrected, additive): lambda_cf"
    ]
    figures.lambda_ablation({("tb", "gc2po", "lambda_cf"): {}}, "test_id", tmp_path / "none.png")
    assert "no lambda sweep" in " ".join(t.get_text() for t in drawn[1].texts)
    assert (tmp_path / "none.png").stat().st_size > 1000
