"""The words around a table's numbers: what its cells and intervals are
(``caption_notes``, the "Cells:" paragraph under every table), the family its Holm marks are
corrected over, and the evaluation protocol read from the evaluation summaries
(``protocol_text``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gc2po.reporting.names import benchmark_name
from gc2po.reporting.stats import holm_adjusted
from gc2po.testbed.chance import NOT_LEARNABLE, UNREACHABLE

AVERAGE = "Average"
PROTOCOL_KEYS = ("temperature", "top_p", "max_new_tokens", "backend")  # must agree across a table
PER_BENCHMARK_KEYS = ("n", "grader")  # may differ between benchmarks, not within one
HOLM_ALPHA = 0.05  # family-wise level of the Holm marks


def interval_text(seeds: int) -> str:
    """What a cell's brackets hold (``gc2po.reporting.stats.t_interval``)."""
    if seeds == 1:
        return "1 seed: no CI"
    return f"95% t-interval over {seeds} seeds, for these problems"


def holm_family(benchmarks: list[str]) -> list[str]:
    """The benchmarks a row's Holm correction is over: every one but the testbed splits the train
    split cannot teach (``gc2po.testbed.chance.UNREACHABLE``; a benchmark that is not a testbed
    split is in). Nothing trained is expected to move those, so a test there would only spend the
    family's error rate; their differences are still shown, with no Holm mark."""
    return [b for b in benchmarks if UNREACHABLE.get(b) is None]


def holm_family_text(benchmarks: list[str]) -> str:
    """The family a Holm mark is corrected over, named (``benchmarks``: those a row shows)."""
    family = holm_family(benchmarks)
    left = [benchmark_name(b) for b in benchmarks if b not in family]
    named = ", ".join(benchmark_name(b) for b in family)
    count = len(family)
    return (
        f"the {count} benchmark split{'s' if count != 1 else ''} of a base model"
        + (" that the train split can teach" if left else "")
        + f" ({named}{'; ' if named else ''}"
        + (f"not in the family, {NOT_LEARNABLE}: {', '.join(left)}; " if left else "")
        + "the Average excluded: it is their mean)"
    )


def family_holm(p_values, benchmarks: list[str]) -> tuple[np.ndarray, list[str]]:
    """:func:`holm_verdicts` over the family of ``benchmarks`` (p_values [m], one per benchmark,
    in order): adjusted p [m] (NaN outside the family) and verdicts ("not in family" there)."""
    family = holm_family(benchmarks)
    inside = [i for i, b in enumerate(benchmarks) if b in family]
    adjusted, verdicts = holm_verdicts([p_values[i] for i in inside])
    out_p = np.full(len(benchmarks), np.nan)
    out_v = ["not in family"] * len(benchmarks)
    for i, p, verdict in zip(inside, adjusted, verdicts):
        out_p[i], out_v[i] = p, verdict
    return out_p, out_v


def holm_verdicts(p_values) -> tuple[np.ndarray, list[str]]:
    """Holm-adjusted p-values of a family ``[m]`` and, for each, whether it survives at
    HOLM_ALPHA: "yes", "no", or "" where its test had one seed (no p)."""
    adjusted = holm_adjusted(p_values)
    verdicts = ["" if np.isnan(p) else "yes" if p <= HOLM_ALPHA else "no" for p in adjusted]
    return adjusted, verdicts


def protocol_text(protocols: list[dict], benchmarks: list[str]) -> str:
    """One sentence naming the protocol of every evaluation in a table (n, temperature, top-p,
    max tokens, backend, grader and versions); disagreeing files fail, naming both."""
    first = protocols[0]
    for p in protocols[1:]:
        for key in PROTOCOL_KEYS:
            if p.get(key) != first.get(key):
                raise ValueError(
                    f"table: evaluation protocols differ in {key!r}: {first['file']} has "
                    f"{first.get(key)!r}, "
                    f"{p['file']} has {p.get(key)!r}"
                )
    per_benchmark: dict[str, dict] = {}
    for p in protocols:
        seen = per_benchmark.setdefault(p["benchmark"], p)
        for key in PER_BENCHMARK_KEYS:
            if p.get(key) != seen.get(key):
                raise ValueError(
                    f"table: {p['benchmark']}: evaluations differ in {key!r}: {seen['file']} has "
                    f"{seen.get(key)!r}, {p['file']} has {p.get(key)!r}"
                )
    ns = {b: per_benchmark[b]["n"] for b in benchmarks if b in per_benchmark}
    usual_n = max(set(ns.values()), key=list(ns.values()).count)
    exceptions = ", ".join(f"{benchmark_name(b)}: {n}" for b, n in ns.items() if n != usual_n)
    graders = dict.fromkeys(per_benchmark[b]["grader"] for b in benchmarks if b in per_benchmark)
    versions = dict(
        sorted(
            {
                k: v
                for b in benchmarks
                if b in per_benchmark
                for k, v in per_benchmark[b].get("grader_versions", {}).items()
            }.items()
        )
    )
    return (
        f"n = {usual_n} sample{'s' if usual_n != 1 else ''} per problem"
        + (f" ({exceptions})" if exceptions else "")
        + f", temperature {first['temperature']}, top-p {first['top_p']}, at most "
        f"{first['max_new_tokens']} new tokens,"
        + f" {first['backend']} backend; grader: {', '.join(graders)}"
        + (f" ({', '.join(f'{k} {v}' for k, v in versions.items())})" if versions else "")
    )


def caption_notes(cells: pd.DataFrame, protocol: str) -> str:
    """The "Cells:" paragraph of a table (``gc2po.reporting.tables.cell_table``): what a cell,
    its brackets, its difference, a ``*`` and the Average are, the seeds, the protocol."""
    base_seeds = cells.loc[cells.model == "base", "seeds"].iloc[0].split(",")
    count = len(base_seeds)
    benchmarks = list(dict.fromkeys(cells.benchmark[cells.benchmark != AVERAGE]))
    seeds = cells.seeds.map(lambda s: len(s.split(",")))
    paired = cells.paired_seeds.dropna().map(lambda s: len(s.split(",")))
    parts = [
        "Cells: mean pass@1 (%) over the problems of each benchmark and "
        f"{count} seed{'s' if count != 1 else ''} ({', '.join(base_seeds)})"
    ]
    if (seeds > 1).any():
        shown = interval_text(count) if count > 1 else "95% t-interval over its seeds"
        parts.append(
            f", in brackets its {shown} (Student t with S - 1 degrees of freedom over the S "
            "per-seed means: it holds the spread of training and sampling seeds, not of other "
            "problems)"
        )
    parts.append(
        "; for a trained model, in parentheses, the paired difference to its base model (per "
        "seed: the run's seed s minus the base model evaluated with sampling seed s)"
    )
    if (paired > 1).any():
        parts.append(
            " with the same interval over the per-seed differences; * after it: its paired "
            f"t-test survives Holm's correction at {HOLM_ALPHA:.0%} over "
            f"{holm_family_text(benchmarks)}"
        )
    parts.append(". Average: the mean of the benchmark means")
    if (seeds > 1).any():
        parts.append(" (its interval: over each seed's mean over the benchmarks)")
    parts.append(".")
    if (seeds == 1).any() or (paired == 1).any():
        parts.append(" 1 seed: no CI.")
    parts.append(
        " Bold: the highest trained value of a column when no other trained row shows the "
        f"same value. Evaluation protocol: {protocol}."
    )
    return "".join(parts)
