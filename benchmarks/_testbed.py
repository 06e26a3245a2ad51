"""The command line the testbed benchmarks share: a model folder, a split file and numeric
options with their defaults."""

from __future__ import annotations

import argparse


def testbed_parser(doc: str, **defaults: int | float) -> argparse.ArgumentParser:
    """``--model`` and ``--data`` (required), then ``--<name>`` for each default (``max_new_tokens``
    becomes ``--max-new-tokens``), typed like its default."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="model folder")
    parser.add_argument("--data", required=True, help="testbed split JSONL")
    for name, default in defaults.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    return parser


def audit_parser(doc: str, seed_help: str = "sampling seed") -> argparse.ArgumentParser:
    """The options of the scripts that sample groups of a run's completions as the audit does:
    ``--model``, ``--data``, ``--problems``, ``--k``, ``--seed``, ``--run``, ``--configfile``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="model folder")
    parser.add_argument("--data", required=True, help="testbed split JSONL")
    parser.add_argument("--problems", type=int, default=300, help="first N problems of the split")
    parser.add_argument("--k", type=int, default=8, help="completions per problem (a group)")
    parser.add_argument("--seed", type=int, default=0, help=seed_help)
    parser.add_argument("--run", default="gc2po_add", help="the run whose settings are used")
    parser.add_argument("--configfile", nargs="+", default=None, help="workflow config(s)")
    return parser


def run_settings(parser: argparse.ArgumentParser, ns: argparse.Namespace):
    """The GC2POConfig of ``--run`` in the workflow config and the audit's sampling choices;
    a run the config does not plan is a usage error naming it."""
    from gc2po.audit import AuditSampling
    from gc2po.training.run_config import build_args
    from gc2po.workflow.config_files import load_config
    from gc2po.workflow.plan import training_jobs

    config = load_config(ns.configfile)
    job = next((j for j in training_jobs(config) if j.run == ns.run), None)
    if job is None:
        parser.error(f"--run {ns.run!r} is not a run of the config")
    return build_args(job.run_config(config)), AuditSampling(k=ns.k, seed=ns.seed)


def sample_groups(model_dir: str, records: list[dict], args, audit, problems: int):
    """k completions per problem at the run's temperature, as the audit samples them ->
    (model, tokenizer, problems, generations, rendered prompts)."""
    from gc2po.evaluation.backends import SamplingConfig, TransformersBackend, render_prompts
    from gc2po.testbed.generator import Problem
    from gc2po.testbed.warmstart import prompt_messages

    chosen = [Problem.from_record(r) for r in records[:problems]]
    backend = TransformersBackend.from_pretrained(model_dir, batch_size=64)
    messages = [prompt_messages(p) for p in chosen]
    sampling = SamplingConfig(
        n=audit.k, temperature=args.temperature, top_p=audit.top_p,
        max_new_tokens=audit.max_new_tokens, seed=audit.seed,
    )  # fmt: skip
    generations = backend.generate(messages, sampling)
    prompts = render_prompts(backend.tokenizer, messages)
    return backend.model, backend.tokenizer, chosen, generations, prompts
