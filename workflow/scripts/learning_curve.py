"""Accuracy along training of one run: base model, kept checkpoints, final model."""

from pathlib import Path

import torch

from gc2po.data.jsonl import read_jsonl
from gc2po.evaluation.backends import SamplingConfig
from gc2po.evaluation.learning_curve import curve_points, learning_curve
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
p = sm.params
with logged(sm) as log:
    torch.set_num_threads(sm.threads)
    points = curve_points(Path(sm.input.model).parent, p.max_steps)  # the run's folder
    benchmarks = {
        name: read_jsonl(path)[: p.problems] for name, path in zip(p.benchmarks, sm.input.data)
    }
    sampling = SamplingConfig(**{**p.sampling, "seed": int(sm.wildcards.seed)})
    ends = {
        0: (p.base_model, dict(zip(p.benchmarks, sm.input.base_samples))),
        p.max_steps: (sm.input.model, dict(zip(p.benchmarks, sm.input.final_samples))),
    }
    curve = learning_curve(
        points,
        benchmarks,
        task=p.task,
        sampling=sampling,
        ends=ends,
        backend=p.backend,
        batch_size=p.batch_size,
    )
    curve.to_csv(sm.output[0], index=False)
    log(curve.to_string())
