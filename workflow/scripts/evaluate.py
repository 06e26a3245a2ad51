"""Evaluate one (base, model, seed) on every benchmark through gc2po.evaluation.run.evaluate_model,
the code `gc2po eval` runs: per-sample records and summaries with protocol and provenance (a
testbed split's summary also its chance level and reachability, from the base's train split)."""

from pathlib import Path

import torch

from gc2po.data.jsonl import read_jsonl
from gc2po.data.tasks import TESTBED
from gc2po.evaluation.provenance import data_provenance
from gc2po.evaluation.run import BenchmarkData, EvalKey, evaluate_model
from gc2po.testbed.chance import split_labels
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
p = sm.params
with logged(sm) as log:
    torch.set_num_threads(sm.threads)
    key = EvalKey(sm.wildcards.base, sm.wildcards.model, int(sm.wildcards.seed))
    train = read_jsonl(sm.input.train) if p.task == TESTBED else None
    benchmarks = []
    for name, data, out in zip(p.benchmarks, sm.input.data, sm.output.samples):
        records = read_jsonl(data)
        labels = split_labels(records, train, where=data) if train is not None else {}
        benchmarks.append(
            BenchmarkData(name, records, data_provenance(data, records), Path(out), labels)
        )
    evaluate_model(
        p.model,
        benchmarks,
        task=p.task,
        key=key,
        backend=p.backend,
        sampling=p.sampling,
        n_per_benchmark=p.n_per_benchmark,
        budgets=p.budgets,
        batch_size=p.batch_size,
        log=log,
        max_grader_errors=p.max_grader_errors,
    )
