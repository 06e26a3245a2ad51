"""``gc2po eval``: evaluate one model on one benchmark or testbed split from an eval config.

Eval config (YAML; see ``config/examples/eval_*.yaml``)::

    task: benchmark                  # benchmark (graded per record) | testbed (the oracle)
    backend: transformers            # transformers | vllm | auto
    sampling: {n: 4, temperature: 0.6, top_p: 0.95, max_new_tokens: 1024, seed: 0}
    n_per_benchmark: {aime2024: 16}  # optional overrides of sampling.n
    budgets: [256, 512, 1024]        # optional token-budget curve
    batch_size: 32
    max_grader_errors: 0             # samples the grader may fail to grade (optional, default 0)
    output_dir: results/eval         # relative to the working directory
    benchmarks:                      # per benchmark: a local file (path, relative to this config)
                                     # or the Hub
      gsm8k: {path: ../../data/benchmarks/gsm8k_test.json, limit: 200, seed: 0}

For ``task: testbed`` the benchmark names are testbed splits and ``path`` is a split's JSONL
(the workflow's ``resources/<name>/data/<split>.jsonl``); the summary's chance level is computed
from the train split, ``benchmarks.train.path`` or else ``train.jsonl`` beside the split's file.
Everything, the model included, is checked before torch is imported, and a bad value fails
naming its key.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from gc2po.data import BENCHMARKS
from gc2po.data.tasks import BENCHMARK, TASKS, TESTBED, check_task
from gc2po.errors import did_you_mean
from gc2po.layout import RunDir, summary_path

BACKENDS = ("transformers", "vllm", "auto")
# gc2po.testbed.generator.SPLITS (a test keeps them equal; importing the testbed imports torch)
TESTBED_SPLITS = tuple(
    "train test_id test_rephrase test_distractor test_longer test_wrongbet test_newstart "
    "test_compose".split()
)
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def _positive_int(value, minimum=1):
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


SAMPLING_CHECKS = {
    "n": (lambda v: _positive_int(v), "an integer >= 1"),
    "temperature": (lambda v: _number(v) and v >= 0, "a number >= 0"),
    "top_p": (lambda v: _number(v) and 0 < v <= 1, "a number in (0, 1]"),
    "max_new_tokens": (lambda v: _positive_int(v), "an integer >= 1"),
    "seed": (lambda v: _positive_int(v, 0), "an integer >= 0"),
    "stop": (
        lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v),
        "a list of strings",
    ),
}
TOP_LEVEL_CHECKS = {
    "task": (lambda v: v in TASKS, f"one of {list(TASKS)}"),  # check_task names old spellings
    "backend": (lambda v: v in BACKENDS, f"one of {list(BACKENDS)}"),
    "sampling": (lambda v: isinstance(v, dict), "a mapping"),
    "n_per_benchmark": (
        lambda v: isinstance(v, dict) and all(_positive_int(n) for n in v.values()),
        "a mapping of benchmark -> integer >= 1",
    ),
    "budgets": (
        lambda v: v is None or isinstance(v, list) and all(_positive_int(b) for b in v),
        "a list of integers >= 1 (or null: no budget curve)",
    ),
    "batch_size": (lambda v: _positive_int(v), "an integer >= 1"),
    "max_grader_errors": (lambda v: _positive_int(v, 0), "an integer >= 0"),
    "output_dir": (lambda v: isinstance(v, str) and v.strip() != "", "a folder path"),
    "benchmarks": (lambda v: isinstance(v, dict), "a mapping of benchmark -> {path, limit, seed}"),
}
BENCHMARK_CHECKS = {
    "path": (
        lambda v: v is None or isinstance(v, str),
        "a file path (relative to the config) or null for the Hub",
    ),
    "limit": (lambda v: v is None or _positive_int(v), "an integer >= 1 or null"),
    "seed": (lambda v: _positive_int(v, 0), "an integer >= 0"),
}


# every key of an eval config (gc2po eval) -> what it means (docs/config-reference.md shows it;
# a test keeps these keys equal to the checks above)
EVAL_KEYS = {
    "task": "benchmark (each record graded by its meta.grader) or testbed (the oracle); "
    "default benchmark",
    "backend": "transformers, vllm or auto (vLLM where installed; default auto)",
    "sampling": "the sampling protocol, keys below",
    "sampling.n": "samples per problem (pass@1 is their mean)",
    "sampling.temperature": "sampling temperature (0: greedy)",
    "sampling.top_p": "nucleus sampling's top-p",
    "sampling.max_new_tokens": "the longest completion, in tokens",
    "sampling.seed": "sampling seed (default 0), also the output key's seed",
    "sampling.stop": "strings that end a completion",
    "n_per_benchmark": "benchmark -> n, replacing sampling.n for that benchmark",
    "budgets": "token budgets of the budget curve (null: none)",
    "batch_size": "prompts per generation batch (default 32)",
    "max_grader_errors": "samples the grader may fail to grade before the evaluation fails "
    "(default 0)",
    "output_dir": "where <base>/<run>/seed<k>/<benchmark>.jsonl go (default results/eval)",
    "benchmarks": "benchmark (or testbed split) -> where its data is, keys below",
    "benchmarks.<label>.path": "a local file, relative to the config (null: the Hub)",
    "benchmarks.<label>.limit": "a seeded subset of this many records (null: all)",
    "benchmarks.<label>.seed": "seed of the subset drawn by limit (default 0)",
}


def _check(mapping: dict, checks: dict, where: str):
    unknown = sorted(set(mapping) - set(checks))
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {unknown}{did_you_mean(unknown[0], checks)}; "
            f"valid: {sorted(checks)}"
        )
    for key, value in mapping.items():
        ok, expected = checks[key]
        if not ok(value):
            raise ValueError(f"{where}{key}: must be {expected}, got {value!r}")


def validate_config(config, config_path: str) -> dict:
    """Check every key and value of an eval config; returns it with defaults filled in."""
    if not isinstance(config, dict):
        raise ValueError(f"{config_path}: an eval config must be a mapping")
    check_task(config.get("task", BENCHMARK), f"{config_path}: task")
    _check(config, TOP_LEVEL_CHECKS, f"{config_path}: ")
    _check(config.get("sampling") or {}, SAMPLING_CHECKS, f"{config_path}: sampling.")
    for name, spec in (config.get("benchmarks") or {}).items():
        if not isinstance(spec, dict):
            raise ValueError(
                f"{config_path}: benchmarks.{name}: must be a mapping {{path, limit, seed}}, got "
                f"{spec!r}"
            )
        _check(spec, BENCHMARK_CHECKS, f"{config_path}: benchmarks.{name}.")
    if config.get("backend") == "vllm":
        import importlib.util

        if importlib.util.find_spec("vllm") is None:
            raise ValueError(
                f"{config_path}: backend: 'vllm' needs the gpu extra (pip install -e '.[gpu]')"
            )
    return {
        "task": BENCHMARK,
        "backend": "auto",
        "sampling": {},
        "n_per_benchmark": {},
        "budgets": None,
        "batch_size": 32,
        "max_grader_errors": 0,
        "output_dir": "results/eval",
        "benchmarks": {},
        **config,
    }


def check_model(model: str):
    """A local folder with a config.json, or a Hub id (cached when HF_HUB_OFFLINE is set)."""
    path = Path(model).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ValueError(f"--model: {model} has no config.json (not a saved model folder)")
        return
    if model.startswith(("/", ".", "~")) or not HUB_ID.match(model):
        raise ValueError(f"--model: {model} does not exist")
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(model, "config.json"), str):
            raise ValueError(
                f"--model: {model!r} is not a local folder, and as a Hub id it is not in the local "
                "cache while HF_HUB_OFFLINE is set"
            )


def default_key(model: str, base: str | None, run: str | None, seed: int | None, config_seed: int):
    """``--base/--run/--seed`` where given; else a workflow checkpoint
    ``runs/<base>/<run>/seed<k>/final`` keys itself (its training seed is the sampling seed, as in
    the workflow), and any other model is its own base (``run = base``, the config's sampling
    seed)."""
    from gc2po.evaluation.run import EvalKey

    found = RunDir.of_member(model, RunDir.FINAL)
    if found:
        return EvalKey(
            base or found.base, run or found.run, seed if seed is not None else found.seed
        )
    label = re.sub(
        r"[^\w.-]+", "--", model.rstrip("/").split("/")[-1] if Path(model).exists() else model
    )
    return EvalKey(base or label, run or "base", seed if seed is not None else config_seed)


def _resolve(path: str | None, config_path: str) -> str | None:
    if path is None or Path(path).is_absolute():
        return path
    return str((Path(config_path).parent / path).resolve())


def load_benchmark_data(config: dict, benchmark: str, config_path: str, out_path: Path):
    """The records of ``benchmark`` (a registered benchmark or a testbed split) with provenance."""
    from gc2po.evaluation.provenance import data_provenance
    from gc2po.evaluation.run import BenchmarkData

    spec = config["benchmarks"].get(benchmark, {})
    path = _resolve(spec.get("path"), config_path)
    if path is not None and not Path(path).exists():
        raise ValueError(f"{config_path}: benchmarks.{benchmark}.path: {path} does not exist")
    if config["task"] == TESTBED:
        if benchmark not in TESTBED_SPLITS:
            raise ValueError(
                f"--benchmark: {benchmark!r} is not a testbed split"
                f"{did_you_mean(benchmark, TESTBED_SPLITS)}; valid: {list(TESTBED_SPLITS)}"
            )
        if path is None:
            raise ValueError(
                f"{config_path}: benchmarks.{benchmark}.path: a testbed split needs its JSONL file"
            )
        from gc2po.data.jsonl import read_jsonl

        records = read_jsonl(path)[: spec.get("limit")]
        testbed_train_path(config, path, config_path)  # exists, for the chance level
    else:
        if benchmark not in BENCHMARKS:
            raise ValueError(
                f"--benchmark: unknown benchmark {benchmark!r}"
                f"{did_you_mean(benchmark, BENCHMARKS)}; valid: {sorted(BENCHMARKS)}"
            )
        from gc2po.data import load_benchmark

        records = load_benchmark(benchmark, path, limit=spec.get("limit"), seed=spec.get("seed", 0))
    if not records:
        raise ValueError(f"{config_path}: benchmarks.{benchmark}: no records")
    return BenchmarkData(
        benchmark, records, data_provenance(path, records, source=f"hub:{benchmark}"), out_path
    )


def testbed_train_path(config: dict, split_path: str, config_path: str) -> str:
    """The train split a testbed split's chance level is computed from: ``benchmarks.train.path``,
    else ``train.jsonl`` beside the split's file (where the workflow writes every split)."""
    given = _resolve((config["benchmarks"].get("train") or {}).get("path"), config_path)
    path = given or str(Path(split_path).parent / "train.jsonl")
    if not Path(path).is_file():
        where = "benchmarks.train.path" if given else "no benchmarks.train.path, and"
        raise ValueError(
            f"{config_path}: {where} {path} does not exist (a testbed evaluation computes its "
            "chance level from the train split)"
        )
    return path


def refuse_foreign_output(out_path: Path, model: str):
    """Never overwrite another model's evaluation under the same key (re-evaluating the same
    model, e.g. with another protocol, replaces its own files)."""
    import json

    summary = summary_path(out_path)
    if not summary.exists():
        return
    try:
        previous = json.loads(summary.read_text()).get("model", {})
    except (OSError, ValueError) as err:
        raise ValueError(
            f"{summary}: unreadable, so it is unclear whose evaluation {out_path} is; remove it"
        ) from err
    mine = str(Path(model).resolve()) if Path(model).exists() else model
    theirs = previous.get("resolved") or previous.get("path")
    if theirs != mine:
        raise ValueError(
            f"{out_path} holds the evaluation of model {previous.get('path')!r}; pass "
            "--base/--run to "
            f"key {model!r} elsewhere, or remove that file"
        )


def run_eval(
    config: dict,
    model: str,
    benchmark: str,
    config_path: str = "<config>",
    *,
    base: str | None = None,
    run: str | None = None,
    seed: int | None = None,
) -> dict:
    """Validate everything, then evaluate; returns the summary."""
    config = validate_config(config, config_path)
    check_model(model)
    key = default_key(model, base, run, seed, config["sampling"].get("seed", 0))
    out_path = key.out_path(config["output_dir"], benchmark)
    data = load_benchmark_data(config, benchmark, config_path, out_path)
    refuse_foreign_output(out_path, model)
    if config["task"] == TESTBED:
        from gc2po.data.jsonl import read_jsonl
        from gc2po.testbed.chance import split_labels

        train = read_jsonl(testbed_train_path(config, data.data["path"], config_path))
        data.labels = split_labels(data.records, train, where=data.data["path"])

    from tqdm import tqdm

    from gc2po.evaluation.run import evaluate_model

    def progress(name, total):
        return tqdm(total=total, desc=name, unit="sample").update

    try:
        summaries = evaluate_model(
            model,
            [data],
            task=config["task"],
            key=key,
            backend=config["backend"],
            sampling=config["sampling"],
            n_per_benchmark=config["n_per_benchmark"],
            budgets=config["budgets"],
            batch_size=config["batch_size"],
            progress_factory=progress,
            log=lambda *a: None,
            max_grader_errors=config["max_grader_errors"],
        )
    except OSError as err:  # a model folder or Hub id that loads with an error
        raise ValueError(f"--model: cannot load {model!r}: {err}") from err
    return {**summaries[0], "output": str(out_path)}
