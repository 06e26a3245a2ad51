"""``gc2po eval``: evaluate one model on one benchmark from an eval config.

Eval config (YAML)::

    backend: transformers            # transformers | vllm | auto
    sampling: {n: 4, temperature: 0.6, top_p: 0.95, max_new_tokens: 1024, seed: 0}
    n_per_benchmark: {aime2024: 16}  # optional overrides of sampling.n
    budgets: [256, 512, 1024]        # optional token-budget curve
    batch_size: 32
    output_dir: results/eval
    benchmarks:                      # per benchmark: local mirror (path) or Hub (no path)
      gsm8k: {path: data/benchmarks/gsm8k_test.json, limit: 200, seed: 0}
"""

from __future__ import annotations

from pathlib import Path

from tqdm import tqdm

from gc2po.data import BENCHMARKS, load_benchmark
from gc2po.evaluation.backends import SamplingConfig, load_backend
from gc2po.evaluation.run import evaluate

EVAL_KEYS = {"backend", "sampling", "n_per_benchmark", "budgets", "batch_size", "output_dir", "benchmarks", "task"}


def run_eval(config: dict, model: str, benchmark: str, config_path: str = "<config>") -> dict:
    unknown = sorted(set(config) - EVAL_KEYS)
    if unknown:
        raise ValueError(f"{config_path}: unknown key(s) {unknown}; valid: {sorted(EVAL_KEYS)}")
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r}; valid: {sorted(BENCHMARKS)}")
    spec = (config.get("benchmarks") or {}).get(benchmark, {})
    path = spec.get("path")
    if path is not None and not Path(path).is_absolute():
        path = str((Path(config_path).parent / path).resolve()) if config_path != "<config>" else path
    records = load_benchmark(benchmark, path, limit=spec.get("limit"), seed=spec.get("seed", 0))
    sampling_cfg = dict(config.get("sampling") or {})
    sampling_cfg["n"] = (config.get("n_per_benchmark") or {}).get(benchmark, sampling_cfg.get("n", 1))
    sampling = SamplingConfig(**sampling_cfg)
    backend_name = config.get("backend", "auto")
    kwargs = {"batch_size": config.get("batch_size", 32)} if backend_name != "vllm" else {}
    backend = load_backend(backend_name, model, **kwargs)
    out = Path(config.get("output_dir", "results/eval")) / Path(model).name / f"{benchmark}.jsonl"
    with tqdm(total=len(records) * sampling.n, desc=f"{benchmark}", unit="sample") as bar:
        return evaluate(backend, records, "benchmark", sampling, out, budgets=config.get("budgets"),
                        progress=bar.update)
