"""Evaluate one (model, seed) on every benchmark: per-sample records and summaries."""

import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import torch  # noqa: E402
from _common import logged  # noqa: E402

from gc2po.evaluation.backends import SamplingConfig, load_backend  # noqa: E402
from gc2po.evaluation.run import evaluate  # noqa: E402
from gc2po.train import read_jsonl  # noqa: E402

sm = snakemake  # noqa: F821
p = sm.params
with logged(sm) as log:
    torch.set_num_threads(sm.threads)
    kwargs = {"batch_size": p.batch_size} if p.backend != "vllm" else {}
    backend = load_backend(p.backend, p.model, **kwargs)
    for i, (bench, data, out) in enumerate(zip(p.benchmarks, sm.input.data, sm.output.samples)):
        n = p.n_per_benchmark.get(bench, p.sampling.get("n", 1))
        sampling = SamplingConfig(**{**p.sampling, "n": n, "seed": int(sm.wildcards.seed)})
        summary = evaluate(backend, read_jsonl(data), p.task, sampling, out, budgets=p.budgets if i == 0 else None)
        log(bench, summary)
