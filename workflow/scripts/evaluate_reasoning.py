"""Evaluate one (base, model, seed) on the problems without a bet of the reasoning splits through
gc2po.evaluation.run.evaluate_model: n samples each (eval_reasoning/), then one greedy
completion each (eval_reasoning_greedy/, the sampling evaluate.greedy uses)."""

from pathlib import Path

import torch

from gc2po.data.jsonl import read_jsonl
from gc2po.evaluation.provenance import data_provenance
from gc2po.evaluation.run import BenchmarkData, EvalKey, evaluate_model
from gc2po.testbed.chance import split_labels
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
p = sm.params
GREEDY = {"n": 1, "temperature": 0.0, "top_p": 1.0}  # as rule evaluate_greedy
with logged(sm) as log:
    torch.set_num_threads(sm.threads)
    key = EvalKey(sm.wildcards.base, sm.wildcards.model, int(sm.wildcards.seed))
    train = read_jsonl(sm.input.train)
    data = []
    for name, path in zip(p.benchmarks, sm.input.data):
        records = [r for r in read_jsonl(path) if r["meta"].get("cue") is None]
        if not records:
            raise ValueError(f"{path}: no problem without a bet (evaluate.reasoning)")
        data.append((name, path, records))
    for outputs, sampling in (
        (sm.output.sampled, p.sampling),
        (sm.output.greedy, {**p.sampling, **GREEDY}),
    ):
        benchmarks = [
            BenchmarkData(
                name,
                records,
                data_provenance(path, records),
                Path(out),
                split_labels(records, train, where=path),
            )
            for (name, path, records), out in zip(data, outputs)
        ]
        evaluate_model(
            p.model,
            benchmarks,
            task=p.task,
            key=key,
            backend=p.backend,
            sampling=sampling,
            batch_size=p.batch_size,
            log=log,
            max_grader_errors=p.max_grader_errors,
        )
