"""Evaluate a model on a set of problems: per-sample records, pass@1, token usage and
token-budget curves. Per-sample files are what tables and figures read, so nothing has to be
generated twice."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gc2po.evaluation.backends import Generation, SamplingConfig, render_prompts
from gc2po.prompts import TESTBED_INSTRUCTION, build_messages

# What is appended to a truncated trajectory to force a final answer (as MRT does).
FORCE_ANSWER = {"testbed": "\\boxed{", "math": "\n\nTime is up. The final answer is \\boxed{",
                "benchmark": "\n\nTime is up. The final answer is \\boxed{"}


def prompts_for(records: list[dict], task: str) -> list[list[dict]]:
    if task == "testbed":
        return [build_messages(r["question"], instruction=TESTBED_INSTRUCTION) for r in records]
    return [build_messages(r["question"], r.get("meta", {}).get("answer_format", "math")) for r in records]


def grader_for(task: str) -> Callable[[dict, str], dict]:
    """(record, completion) -> {"correct": bool, ...extra fields}."""
    if task == "testbed":
        from gc2po.testbed.generator import Problem
        from gc2po.testbed.oracle import grade

        def grade_testbed(record, completion):
            result = grade(Problem.from_record(record), completion)
            return {"correct": bool(result.f), "process_validity": result.p, "group": result.group,
                    "formatted": result.formatted}

        return grade_testbed
    from gc2po.evaluation.graders import GRADERS
    from gc2po.evaluation.sandbox import grade_code

    def grade_benchmark(record, completion):
        kind = record.get("meta", {}).get("grader", "math")
        if kind == "code":
            return {"correct": grade_code(completion, record["meta"])}
        return {"correct": GRADERS[kind](completion, record["answer"])}

    return grade_benchmark


def sample_records(records, generations: list[Generation], grade) -> list[dict]:
    out = []
    for g in generations:
        record = records[g.prompt_index]
        out.append({"problem_id": record["id"], "sample_index": g.sample_index, "completion": g.text,
                    "tokens": g.num_tokens, "finished": g.finished, **grade(record, g.text)})
    return out


def budget_curve(backend, records, prompts, generations: list[Generation], budgets: list[int], task: str, grade,
                 answer_tokens: int = 12) -> list[dict]:
    """Accuracy when every trajectory is cut at B tokens and an answer is forced (greedy)."""
    tokenizer = backend.tokenizer
    texts = render_prompts(tokenizer, prompts)
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
        forced = backend.generate(forced_prompts, SamplingConfig(n=1, temperature=0.0, max_new_tokens=answer_tokens)) if forced_prompts else []
        correct = 0
        for g, (head, slot) in zip(generations, heads):
            completion = g.text if slot is None else head + FORCE_ANSWER[task] + forced[slot].text
            correct += grade(records[g.prompt_index], completion)["correct"]
        rows.append({"budget": budget, "accuracy": correct / max(1, len(generations)), "samples": len(generations)})
    return rows


def evaluate(backend, records: list[dict], task: str, sampling: SamplingConfig, out_path: str | Path,
             budgets: list[int] | None = None, progress=None) -> dict:
    """Generate, grade and write ``out_path`` (per-sample JSONL) and ``out_path``.summary.json."""
    prompts = prompts_for(records, task)
    generations = backend.generate(prompts, sampling, progress=progress)
    grade = grader_for(task)
    samples = sample_records(records, generations, grade)
    n = max(1, len(samples))
    summary = {
        "problems": len(records), "samples": len(samples), "n": sampling.n,
        "pass@1": sum(s["correct"] for s in samples) / n,
        "mean_tokens": sum(s["tokens"] for s in samples) / n,
        "sampling": {k: v for k, v in vars(replace(sampling)).items()},
    }
    if task == "testbed":
        summary["process_validity"] = sum(s["process_validity"] for s in samples) / n
    if budgets:
        summary["budget_curve"] = budget_curve(backend, records, prompts, generations, budgets, task, grade)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(out_path.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(s) + "\n" for s in samples))
    tmp.replace(out_path)
    Path(str(out_path) + ".summary.json").write_text(json.dumps(summary, indent=2))
    return summary
