"""What a workflow config's jobs cost in GPU time before the first one runs: per job kind, what
each job asks SLURM for (``gc2po.workflow.resources``), how many there are and their GPU-hours,
with the basis of the figure named; ``gc2po plan`` prints it (:func:`lines`).

- An estimate, for training where ``train.tokens_per_gpu_second`` states a throughput: per job,
  optimizer steps x tokens per step / throughput (``gc2po.workflow.run_length``: every sequence
  at full length, an upper bound on the tokens).
- An upper bound otherwise, and for every evaluation: jobs x GPUs x the runtime cap.

The disk each run leaves is ``gc2po.workflow.run_disk``'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from gc2po.workflow import resources as job_resources
from gc2po.workflow.base_models import base_models
from gc2po.workflow.plan import runs, training_jobs
from gc2po.workflow.reasoning_plan import reasoning_settings
from gc2po.workflow.run_length import optimizer_steps, tokens_per_step, training_set_size

THROUGHPUT_KEY = "train.tokens_per_gpu_second"


@dataclass(frozen=True)
class KindBudget:
    """One job kind (a rule): its job count, what each job asks for and their GPU-hours, with
    the basis of the figure (``estimate``: from the plan's tokens and a stated throughput)."""

    kind: str
    jobs: int
    resources: job_resources.JobResources
    gpu_hours: float
    estimate: bool
    basis: str


def cap_hours(jobs: int, resources: job_resources.JobResources) -> float:
    """GPU-hours of ``jobs`` jobs that each run to the runtime cap: the upper bound."""
    return jobs * resources.gpus * resources.runtime / 60


def training_budget(config: dict, rows: list[dict]) -> KindBudget:
    """The training jobs' budget from the plan's rows (one per base model and run, with its
    seeds): estimated where a throughput is stated and a run's steps are known."""
    res = job_resources.training(config)
    throughput = config["train"].get("tokens_per_gpu_second")
    jobs = sum(row["seeds"] for row in rows)
    if not res.gpus:
        return KindBudget("train", jobs, res, 0.0, False, "CPU jobs, no GPU")
    if throughput is None:
        return KindBudget(
            "train",
            jobs,
            res,
            cap_hours(jobs, res),
            False,
            f"upper bound: the runtime cap ({THROUGHPUT_KEY} not stated)",
        )
    hours, capped = 0.0, 0
    for row in rows:
        steps = optimizer_steps(config, row)
        if steps is None:
            hours += cap_hours(row["seeds"], res)
            capped += row["seeds"]
        else:
            hours += row["seeds"] * steps * tokens_per_step(config, row) / throughput / 3600
    basis = (
        f"estimate: the plan's tokens per step x steps at {throughput:g} tokens per "
        f"GPU-second ({THROUGHPUT_KEY})"
    )
    if capped:
        basis += f"; the runtime cap for {capped} jobs whose steps are not known"
    return KindBudget("train", jobs, res, hours, capped < jobs, basis)


def steps_lines(config: dict, rows: list[dict]) -> list[str]:
    """One line: each base model's optimizer steps per run and where its problem count comes
    from (``gc2po.workflow.run_length``)."""
    parts = []
    for base in base_models(config):
        steps = sorted({optimizer_steps(config, row) or 0 for row in rows if row["base"] == base})
        if not steps:
            continue
        if all(row["args"].max_steps > 0 for row in rows if row["base"] == base):
            counted = "trainer.max_steps"
        else:
            problems, source = training_set_size(config, base)
            counted = f"{problems} problems, {source}" if problems is not None else source
        known = ", ".join(str(n) for n in steps if n) or "not known"
        parts.append(f"{base} {known} ({counted})")
    return [f"  optimizer steps per run: {'; '.join(parts)}"]


def over_cap(config: dict, rows: list[dict]) -> list[str]:
    """One warning per run whose estimated wall time (stated throughput) passes the training
    job's runtime cap: the job would be stopped and resubmitted (``retries``) or fail."""
    res, throughput = job_resources.training(config), config["train"].get("tokens_per_gpu_second")
    if throughput is None or not res.gpus:
        return []
    out = []
    for row in rows:
        steps = optimizer_steps(config, row)
        if steps is None:
            continue
        hours = steps * tokens_per_step(config, row) / throughput / 3600 / res.gpus
        if hours > res.runtime / 60:
            out.append(
                f"  warning: {row['base']}/{row['run']}: about {hours:,.1f} h per job at the "
                f"stated throughput, over its runtime cap of {res.runtime / 60:g} h "
                "(resources.train.runtime)"
            )
    return out


def evaluation_counts(config: dict) -> dict[str, int]:
    """Rule -> jobs of the evaluation rules the config plans: one per (base model, model, seed),
    the model the base itself (once per seed of ``seeds``) or a run trained on it (per its
    seeds); learning curves per (run, seed) of ``evaluate.learning_curve.runs``."""
    evaluate = config["evaluate"]
    bases = list(base_models(config))
    per_model = len(bases) * len(config["seeds"]) + sum(
        len(run.seeds) * sum(base in run.bases for base in bases) for run in runs(config).values()
    )
    counts = {"evaluate": per_model}
    if evaluate.get("greedy", False):
        counts["evaluate_greedy"] = per_model
    curve = evaluate.get("learning_curve")
    if curve:
        counts["learning_curve"] = sum(job.run in curve["runs"] for job in training_jobs(config))
    if reasoning_settings(config):
        counts["evaluate_reasoning"] = per_model
    return counts


def budgets(config: dict, rows: list[dict]) -> list[KindBudget]:
    """Every job kind that may hold a GPU: the training jobs, then the evaluations (each at its
    runtime cap: an upper bound)."""
    res = job_resources.evaluation(config)
    basis = "upper bound: the runtime cap" if res.gpus else "CPU jobs, no GPU"
    evaluations = [
        KindBudget(kind, jobs, res, cap_hours(jobs, res), False, basis)
        for kind, jobs in evaluation_counts(config).items()
    ]
    return [training_budget(config, rows), *evaluations]


def _number(value: float) -> str:
    """1,404 for large figures, 7.2 for small ones."""
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def lines(config: dict, rows: list[dict]) -> list[str]:
    """The budget ``gc2po plan`` prints: per job kind and in total, then the disk per run."""
    kinds = budgets(config, rows)
    out = ["budget (per job kind: what one job asks SLURM for x how many, their GPU-hours):"]
    width = max(len(k.kind) for k in kinds)
    for k in kinds:
        out.append(
            f"  {k.kind:<{width}}  ({k.resources.describe()}) x {k.jobs}: "
            f"{_number(k.gpu_hours)} GPU-hours, {k.basis}"
        )
    total = sum(k.gpu_hours for k in kinds)
    exact = "an upper bound" if not any(k.estimate for k in kinds) else "estimates and bounds"
    out.append(
        f"  {'total':<{width}}  {sum(k.jobs for k in kinds)} of them: {_number(total)} GPU-hours "
        f"({exact}, as above)"
    )
    prompt = int(config["train"].get("max_prompt_tokens", 1024))
    layouts = sorted(
        {(row["sequences_per_step"], row["args"].max_completion_length) for row in rows}
    )
    steps = ", ".join(
        f"{n} sequences x ({prompt} + {completion}) = {n * (prompt + completion):,}"
        for n, completion in layouts
    )
    out.append(
        "  training tokens per optimizer step, every sequence at full length (sequences x "
        f"(train.max_prompt_tokens + trainer.max_completion_length)): {steps}"
    )
    return out + steps_lines(config, rows) + over_cap(config, rows)
