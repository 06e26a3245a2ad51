"""The reasoning table (gc2po.reporting.reasoning) from the per-sample files of the sampled and
greedy reasoning evaluations and the splits' problems."""

from gc2po.data.jsonl import read_jsonl
from gc2po.reporting.reasoning import write_reasoning
from gc2po.testbed.data import read_split
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    problems = {
        split: {problem.id: problem for problem in read_split(path)}
        for split, path in zip(sm.params.splits, sm.input.data)
    }
    rows = write_reasoning(
        list(sm.input.sampled),
        list(sm.input.greedy),
        problems,
        read_jsonl(sm.input.train),
        ks=sm.params.ks,
        n=sm.params.n,
        md=sm.output.md,
        csv=sm.output.csv,
        names=sm.params.names,
    )
    log(rows.to_string())
