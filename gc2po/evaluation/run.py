"""Evaluate a model on a set of problems: per-sample records, pass@1 with its CI, token usage,
token-budget curves, and a summary that carries the protocol and provenance of every number.

This is the one evaluation path: the workflow's ``evaluate`` rule and ``gc2po eval`` both call
:func:`evaluate_model`. Per-sample files are what tables and figures read, so nothing has to
be generated twice. Outputs are keyed by ``gc2po.layout.EvalFile`` below an evaluation
root (``<root>/<base>/<run>/seed<k>/<benchmark>.jsonl``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gc2po.data.prompts import record_messages
from gc2po.data.tasks import BENCHMARK, TESTBED
from gc2po.evaluation import grading_errors as errors
from gc2po.evaluation import provenance
from gc2po.evaluation.graders import check_graders_run
from gc2po.layout import EvalFile, summary_path
from gc2po.reporting.stats import evaluation_interval

if TYPE_CHECKING:  # the backends import torch; `gc2po eval` validates its inputs before that
    from gc2po.evaluation.backends import Generation, SamplingConfig

# What is appended to a truncated trajectory to force a final answer (as MRT does).
FORCE_ANSWER = {TESTBED: "\\boxed{", BENCHMARK: "\n\nTime is up. The final answer is \\boxed{"}


@dataclass(frozen=True)
class EvalKey:
    """Whose evaluation it is (written into each summary); its files go where the layout's
    ``EvalFile`` puts them."""

    base: str
    run: str
    seed: int

    def out_path(self, out_dir: str | Path, benchmark: str) -> Path:
        return Path(EvalFile(self.base, self.run, self.seed, benchmark).path(out_dir))


@dataclass
class BenchmarkData:
    name: str
    records: list[dict]
    data: dict  # provenance.data_provenance: path and sha256
    out_path: Path
    # what the summary records about the data (a testbed split: gc2po.testbed.chance.split_labels)
    labels: dict = field(default_factory=dict)


def prompts_for(records: list[dict], task: str) -> list[list[dict]]:
    return [record_messages(record, task) for record in records]


def grader_for(task: str, p_threshold: float = 0.5) -> Callable[[dict, str], dict]:
    """(record, completion) -> {"correct": bool, ...extra fields} (or a grader error's fields)."""
    if task == TESTBED:
        from gc2po.testbed.generator import Problem
        from gc2po.testbed.metrics import graded_sample

        return lambda record, completion: graded_sample(
            Problem.from_record(record), completion, p_threshold
        )
    from gc2po.evaluation.graders import grade_fields

    return grade_fields


def sample_records(records, generations: list[Generation], grade) -> list[dict]:
    return [
        {
            "problem_id": records[g.prompt_index]["id"],
            "sample_index": g.sample_index,
            "completion": g.text,
            "tokens": g.num_tokens,
            "finished": g.finished,
            **grade(records[g.prompt_index], g.text),
        }
        for g in generations
    ]


def generate_and_grade(
    backend,
    records: list[dict],
    task: str,
    sampling: SamplingConfig,
    progress=None,
    p_threshold: float = 0.5,
) -> tuple[list[Generation], list[dict]]:
    """Sample ``sampling.n`` completions per record and grade each: (generations,
    sample records)."""
    if task != TESTBED:  # a grader that cannot run here fails before any generation
        check_graders_run(records)
    generations = backend.generate(prompts_for(records, task), sampling, progress=progress)
    return generations, sample_records(records, generations, grader_for(task, p_threshold))


def evaluate_split(backend, problems: list, sampling, p_threshold: float = 0.5) -> dict:
    """Sample ``sampling.n`` completions per testbed problem (``gc2po.testbed.generator.Problem``)
    and grade them with the oracle, in memory (the workflow and ``gc2po eval`` write files
    through :func:`evaluate`)."""
    from gc2po.testbed.metrics import testbed_metrics

    _, samples = generate_and_grade(
        backend, [p.record() for p in problems], TESTBED, sampling, p_threshold=p_threshold
    )
    n = max(1, len(samples))
    return {
        "problems": len(problems),
        "samples": len(samples),
        "accuracy": sum(s["correct"] for s in samples) / n,
        "mean_tokens": sum(s["tokens"] for s in samples) / n,
        **testbed_metrics(samples),
    }


def budget_curve(
    backend, records, generations: list[Generation], budgets: list[int], task: str, answer_tokens=12
) -> list[dict]:
    """Accuracy (of the graded completions) when every trajectory is cut at B tokens and an
    answer is forced (greedy)."""
    from gc2po.evaluation.backends import SamplingConfig, render_prompts

    tokenizer, grade = backend.tokenizer, grader_for(task)
    texts = render_prompts(tokenizer, prompts_for(records, task))
    rows = []
    for budget in budgets:
        forced_prompts, heads = [], []
        for g in generations:
            head = tokenizer.decode(g.token_ids[:budget], skip_special_tokens=True)
            if g.num_tokens <= budget and g.finished:
                heads.append((head, None))  # already answered within the budget
                continue
            heads.append((head, len(forced_prompts)))
            forced_prompts.append(texts[g.prompt_index] + head + FORCE_ANSWER[task])
        forced = (
            backend.generate(
                forced_prompts, SamplingConfig(n=1, temperature=0.0, max_new_tokens=answer_tokens)
            )
            if forced_prompts
            else []
        )
        grades = []
        for g, (head, slot) in zip(generations, heads):
            completion = g.text if slot is None else head + FORCE_ANSWER[task] + forced[slot].text
            grades.append(grade(records[g.prompt_index], completion))
        graded = [fields["correct"] for fields in grades if not errors.is_error(fields)]
        rows.append(
            {
                "budget": budget,
                "accuracy": sum(graded) / max(1, len(graded)),
                "samples": len(generations),
                "grader_errors": errors.error_summary(grades),
            }
        )
    return rows


def pass_at_1_ci(samples: list[dict]) -> list[float] | None:
    """95% interval of pass@1 over sampling, for this model and these problems: this file is one
    seed, so it has no interval over seeds (``gc2po.reporting.stats.evaluation_interval``).
    None where a problem has a single sample (nothing measures the sampling spread)."""
    _, low, high = evaluation_interval(samples)
    return None if math.isnan(low) else [low, high]


def protocol_of(
    sampling: SamplingConfig, backend_name: str, task: str, records: list[dict]
) -> dict:
    """How the numbers were produced: sampling, backend, prompt style, graders and versions."""
    grader, versions = provenance.grader_provenance(task, records)
    return {
        **asdict(sampling),
        "stop": list(sampling.stop),
        "backend": backend_name,
        "prompt": task,
        "grader": grader,
        "grader_versions": versions,
    }


def evaluate(
    backend,
    records: list[dict],
    task: str,
    sampling: SamplingConfig,
    out_path: str | Path,
    budgets: list[int] | None = None,
    progress=None,
    provenance_fields: dict | None = None,
    max_grader_errors: int = 0,
) -> dict:
    """Generate, grade and write ``out_path`` (per-sample JSONL) and ``out_path``.summary.json;
    then fail if the samples, or a budget curve's completions, hold more than
    ``max_grader_errors`` grader errors (``grading_errors``; pass@1 is over the graded ones)."""
    generations, samples = generate_and_grade(backend, records, task, sampling, progress=progress)
    n = max(1, len(samples))
    graded = [s for s in samples if not errors.is_error(s)]
    summary = {
        "problems": len(records),
        "samples": len(samples),
        "n": sampling.n,
        "pass@1": sum(s["correct"] for s in graded) / len(graded) if graded else None,
        "pass@1_ci95": pass_at_1_ci(graded) if graded else None,
        "grader_errors": errors.error_summary(samples),
        "mean_tokens": sum(s["tokens"] for s in samples) / n,
        "protocol": protocol_of(
            sampling, getattr(backend, "name", type(backend).__name__), task, records
        ),
        **(provenance_fields or {}),
    }
    if task == TESTBED:
        from gc2po.testbed.metrics import testbed_metrics  # the oracle imports torch

        summary.update(testbed_metrics(samples))
    if budgets:
        summary["budget_curve"] = budget_curve(backend, records, generations, budgets, task)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(out_path.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(s) + "\n" for s in samples))
    tmp.replace(out_path)
    summary_path(out_path).write_text(json.dumps(summary, indent=2))
    for part in [summary, *summary.get("budget_curve", [])]:
        errors.check_error_budget(part["grader_errors"], max_grader_errors, str(out_path))
    return summary


def evaluate_model(
    model: str,
    benchmarks: list[BenchmarkData],
    *,
    task: str,
    key: EvalKey,
    backend: str = "auto",
    sampling: dict | None = None,
    n_per_benchmark: dict | None = None,
    budgets: list[int] | None = None,
    batch_size: int = 32,
    progress_factory=None,
    log=print,
    max_grader_errors: int = 0,
) -> list[dict]:
    """Load ``model`` once and evaluate it on every benchmark (the token-budget curve on the
    first); each summary records the key, the model path, the data's sha256, the code and the
    machine (provenance.machine_fingerprint; tables never read it)."""
    from gc2po.evaluation.backends import SamplingConfig, load_backend

    engine = load_backend(backend, model, batch_size=batch_size)
    base_fields = {
        "key": asdict(key),
        "model": {
            "path": model,
            "resolved": str(Path(model).resolve()) if Path(model).exists() else None,
        },
        "code": provenance.code_provenance(),
        "machine": provenance.machine_fingerprint(),
    }
    summaries = []
    for i, bench in enumerate(benchmarks):
        settings = {**(sampling or {}), "seed": key.seed}
        settings["n"] = (n_per_benchmark or {}).get(bench.name, settings.get("n", 1))
        config = SamplingConfig(**{k: tuple(v) if k == "stop" else v for k, v in settings.items()})
        progress = (
            progress_factory(bench.name, len(bench.records) * config.n)
            if progress_factory
            else None
        )
        summary = evaluate(
            engine,
            bench.records,
            task,
            config,
            bench.out_path,
            budgets=budgets if i == 0 else None,
            progress=progress,
            provenance_fields={
                **base_fields,
                "benchmark": bench.name,
                "data": bench.data,
                **bench.labels,
            },
            max_grader_errors=max_grader_errors,
        )
        log(
            f"{bench.name}: pass@1 {summary['pass@1']} {summary['pass@1_ci95']}, "
            f"{summary['grader_errors']['count']} grader errors -> {bench.out_path}"
        )
        summaries.append(summary)
    return summaries
