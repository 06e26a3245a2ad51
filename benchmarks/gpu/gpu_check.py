"""GPU check in one command: the real ``gc2po train`` and ``gc2po eval`` CLIs on a random model of
a paper shape, each run's peak memory against ``gc2po.workflow.memory``'s plan, and the GC2PO /
GRPO step ratio at matched settings (beta 0 for both: GRPO fixes it).

Stages, each a subprocess under its own ``timeout`` so one slow stage cannot eat the rest:

1. build: a random-initialised model of ``--shape`` with the project's synthetic tokenizer and a
   prompt file (``benchmarks/_training.build``; nothing downloaded);
2. train ``grpo`` and ``gc2po`` (beta 0 both), ``--completions`` x ``--completion-length`` tokens
   in one micro-batch, ``--steps`` steps each (the first is warm-up and not in the ratio);
3. train ``gc2po`` in the paper's layout (1 sequence a micro-batch, ``--completions``
   micro-batches a generation batch, ``sampling_ratio_pass``, beta 0.04: a reference model),
   ``--paper-length`` tokens, 1 step;
4. ``gc2po eval`` with the transformers backend on ``--eval-problems`` GSM8K problems x 4 samples
   x ``--eval-tokens`` tokens.

Memory of a training run, by meter: on a GPU, the peak of ``nvidia-smi --query-gpu=memory.used``
sampled every 100 ms (what the plan is checked against: it counts the CUDA context and the
caching allocator's reserve) and, from inside the process, ``torch.cuda.max_memory_allocated``
and ``max_memory_reserved``; on CPU, the peak resident set size of the training process (sampled
every 50 ms; not comparable with the plan, which is per GPU). Two files go to ``--out``: every
log, config and metrics file in one tar file, and the summary as JSON (the model and the runs are
built in a temporary folder, removed at the end); a ``sitecustomize.py`` on the children's path
prints where a timed-out process was.

    python benchmarks/gpu/gpu_check.py --shape deepscaler-1.5b --out DIR     # a lent GPU, ~8 min
    python benchmarks/gpu/gpu_check.py --shape tiny --out DIR --steps 2 --completion-length 8 \\
        --paper-length 8 --eval-problems 2 --eval-tokens 8                 # CPU (the suite's test)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _training import SHAPES  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20
SITECUSTOMIZE = """\
import atexit, faulthandler, json, os, signal
faulthandler.register(signal.SIGTERM, chain=True)
def _cuda_peaks():
    import sys
    torch = sys.modules.get("torch")
    path = os.environ.get("GC2PO_CHECK_CUDA_PEAKS")
    if torch is None or not path or not torch.cuda.is_initialized():
        return
    with open(path, "w") as f:
        json.dump({"allocated_mib": torch.cuda.max_memory_allocated() / 2**20,
                   "reserved_mib": torch.cuda.max_memory_reserved() / 2**20}, f)
atexit.register(_cuda_peaks)
"""


def model_shape(name: str):
    """The plan's ModelShape of a benchmark shape (gc2po.workflow.job_shape)."""
    from gc2po.workflow.job_shape import ModelShape

    architecture, hidden, layers, heads, kv_heads, intermediate, vocab, tied = SHAPES[name]
    return ModelShape(
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        intermediate=intermediate,
        vocab=vocab,
        tied_embeddings=tied,
        qkv_bias=architecture == "qwen2",
    )


class MemorySampler:
    """Peak memory while a child runs: nvidia-smi's memory in use (GPU) or the child's resident
    set size (CPU), sampled from a thread."""

    def __init__(self, gpu: bool):
        self.gpu, self.peak_mib, self.pid = gpu, 0.0, None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def meter(self) -> str:
        return "nvidia-smi memory.used" if self.gpu else "peak RSS of the training process (CPU)"

    def _sample(self) -> float:
        if self.gpu:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.split()
            return float(out[0]) if out else 0.0
        import psutil

        try:
            process = psutil.Process(self.pid)
            return (
                sum(p.memory_info().rss for p in [process, *process.children(recursive=True)]) / MIB
            )
        except (psutil.Error, TypeError):
            return 0.0

    def _run(self):
        while not self._done.is_set():
            self.peak_mib = max(self.peak_mib, self._sample())
            time.sleep(0.1 if self.gpu else 0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()


def run_stage(name: str, cmd: list[str], timeout_s: int, logs: Path, env: dict, gpu: bool):
    """Run ``cmd`` under ``timeout``; returns (exit status, seconds, peak MiB, meter)."""
    log = logs / f"{name}.log"
    sampler = MemorySampler(gpu)
    start = time.perf_counter()
    with open(log, "w") as out, sampler:
        child = subprocess.Popen(
            ["timeout", "--signal=TERM", "--kill-after=15", str(timeout_s), *cmd],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
        )
        sampler.pid = child.pid
        status = child.wait()
    seconds = time.perf_counter() - start
    print(f"[{name}] exit {status} in {seconds:.0f} s (log {log.name})", flush=True)
    return status, seconds, sampler.peak_mib, sampler.meter


def step_times(metrics: Path) -> list[float]:
    if not metrics.exists():
        return []
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return [float(r["step_time"]) for r in rows if "step_time" in r]


def plan_gib(shape, trainer: dict, prompt_length: int, keeps_states: bool) -> float:
    from gc2po.workflow.job_shape import MODEL_SHAPES
    from gc2po.workflow.memory import estimate_memory, job_from_trainer

    stand_in = next(iter(MODEL_SHAPES))  # any known id; its shape is replaced below
    job = job_from_trainer(
        stand_in,
        trainer,
        num_processes=1,
        zero_stage=0,
        prompt_length=prompt_length,
        keeps_episode_states=keeps_states,
    )
    return estimate_memory(dataclasses.replace(job, shape=shape)).peak


def longest_prompt(model_dir: Path, data: Path) -> int:
    """Tokens of the longest chat-formatted prompt, as the trainer encodes it."""
    from transformers import AutoTokenizer

    from gc2po.data.jsonl import read_jsonl
    from gc2po.data.prompts import record_messages

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    return max(
        len(
            tokenizer.apply_chat_template(
                record_messages(record, "benchmark"), add_generation_prompt=True, tokenize=True
            )["input_ids"]
        )
        for record in read_jsonl(data)
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="deepscaler-1.5b", choices=sorted(SHAPES))
    parser.add_argument(
        "--out", type=Path, required=True, help="folder for the logs' tar file and the summary"
    )
    parser.add_argument("--steps", type=int, default=3, help="steps per run; the first is warm-up")
    parser.add_argument("--completions", type=int, default=8, help="K, and sequences a step")
    parser.add_argument("--completion-length", type=int, default=512)
    parser.add_argument("--paper-length", type=int, default=1024)
    parser.add_argument("--eval-problems", type=int, default=32)
    parser.add_argument("--eval-tokens", type=int, default=256)
    parser.add_argument("--stage-timeout", type=int, default=150, help="seconds per stage")
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error("--steps must be >= 2 (one warm-up step and at least one timed step)")
    import torch

    gpu = torch.cuda.is_available()
    args.out.mkdir(parents=True, exist_ok=True)
    # the model and the runs stay out of --out: a lent machine sends back only a few small files
    work = Path(tempfile.mkdtemp(prefix="gpu_check_"))
    try:
        return check(args, work, gpu)
    finally:  # the logs come back even when a stage failed
        archive(work, args.out / "gpu_check_logs.tar.gz")
        shutil.rmtree(work, ignore_errors=True)


def archive(work: Path, path: Path) -> None:
    with tarfile.open(path, "w:gz") as tar:
        if (work / "logs").exists():
            tar.add(work / "logs", arcname="logs")
        for config in work.glob("*.yaml"):
            tar.add(config, arcname=f"configs/{config.name}")
        for metrics in (work / "runs").glob("*/metrics.jsonl"):
            tar.add(metrics, arcname=f"metrics/{metrics.parent.name}.jsonl")
    print(f"logs: {path}")


def check(args, work: Path, gpu: bool) -> dict:
    import torch

    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    hooks = work / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(hooks), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
        "PYTHONUNBUFFERED": "1",
    }
    print(
        f"gpu_check shape={args.shape} device="
        f"{torch.cuda.get_device_name() if gpu else 'cpu'} torch={torch.__version__} "
        f"steps={args.steps} K={args.completions} completion_length={args.completion_length} "
        f"paper_length={args.paper_length}",
        flush=True,
    )
    python = sys.executable
    status, build_s, _, _ = run_stage(
        "build",
        [
            python,
            "-c",
            "import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path; "
            f"from _training import build; build({args.shape!r}, Path({str(work)!r}))",
        ],
        max(args.stage_timeout, 120),
        logs,
        env,
        gpu,
    )
    if status != 0:
        raise SystemExit(f"gpu_check: the model build failed (exit {status}); see build.log")
    model_dir, data = work / "model", work / "train.jsonl"
    prompt_length = longest_prompt(model_dir, data)
    shape = model_shape(args.shape)
    precision = "bf16-mixed" if gpu else "fp32"
    k = args.completions
    loose = {
        "num_generations": k,
        "per_device_train_batch_size": k,
        "gradient_accumulation_steps": 1,
        "max_completion_length": args.completion_length,
        "max_steps": args.steps,
        "gradient_checkpointing": True,
        "learning_rate": 1e-6,
        "save_strategy": "no",
        "logging_steps": 1,
        "beta": 0.0,
    }
    runs = {
        "grpo": ("grpo", loose, False),
        "gc2po": ("gc2po", loose, True),
        "gc2po_paper_layout": (
            "gc2po",
            {
                **loose,
                "per_device_train_batch_size": 1,
                "gradient_accumulation_steps": k,
                "steps_per_generation": k,
                "max_completion_length": args.paper_length,
                "max_steps": 1,
                "sampling_ratio_pass": True,
                "beta": 0.04,
            },
            True,
        ),
    }
    results = {}
    for name, (method, trainer, keeps_states) in runs.items():
        out_dir = work / "runs" / name
        config = {
            "model": str(model_dir),
            "train_data": str(data),
            "task": "benchmark",
            "method": method,
            "seed": 0,
            "precision": precision,
            "output_dir": str(out_dir),
            "overwrite": True,
            "trainer": trainer,
        }
        config_path = work / f"{name}.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        peaks_path = work / f"{name}.cuda_peaks.json"
        status, seconds, peak_mib, meter = run_stage(
            name,
            [python, "-m", "gc2po.cli", "train", "--config", str(config_path)],
            args.stage_timeout,
            logs,
            {**env, "GC2PO_CHECK_CUDA_PEAKS": str(peaks_path)},
            gpu,
        )
        cuda = json.loads(peaks_path.read_text()) if peaks_path.exists() else {}
        tokens = trainer["per_device_train_batch_size"] * (
            prompt_length + trainer["max_completion_length"]
        )
        results[name] = {
            "status": status,
            "seconds": seconds,
            "tokens_per_micro_batch": tokens,
            "peak_mib": peak_mib,
            "meter": meter,
            "cuda_peaks_mib": cuda,
            "plan_gib": plan_gib(shape, trainer, prompt_length, keeps_states),
            "step_times": step_times(out_dir / "metrics.jsonl"),
        }
    eval_dir = work / "eval"
    eval_config = {
        "task": "benchmark",
        "backend": "transformers",
        "sampling": {
            "n": 4,
            "temperature": 0.6,
            "top_p": 0.95,
            "max_new_tokens": args.eval_tokens,
            "seed": 0,
        },
        "batch_size": 32,
        "output_dir": str(eval_dir),
        "benchmarks": {
            "gsm8k": {
                "path": str(ROOT / "data" / "benchmarks" / "gsm8k_test.json"),
                "limit": args.eval_problems,
                "seed": 0,
            }
        },
    }
    eval_path = work / "eval.yaml"
    eval_path.write_text(yaml.safe_dump(eval_config, sort_keys=False))
    eval_status, eval_s, _, _ = run_stage(
        "eval",
        [
            python,
            "-m",
            "gc2po.cli",
            "eval",
            "--config",
            str(eval_path),
            "--model",
            str(model_dir),
            "--benchmark",
            "gsm8k",
        ],
        args.stage_timeout,
        logs,
        env,
        gpu,
    )
    summary = report(results, build_s, eval_status, eval_s, args, gpu)
    (logs / "summary.json").write_text(json.dumps(summary, indent=2))
    (args.out / "gpu_check_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def report(results: dict, build_s: float, eval_status: int, eval_s: float, args, gpu) -> dict:
    print(f"\nmodel build: {build_s:.0f} s")
    print(
        "| run | exit | tokens per micro-batch | measured peak | meter | plan | plan - measured "
        "| cuda allocated / reserved |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        measured_gib = r["peak_mib"] / 1024
        cuda = r["cuda_peaks_mib"]
        inside = (
            f"{cuda['allocated_mib'] / 1024:.1f} / {cuda['reserved_mib'] / 1024:.1f} GiB"
            if cuda
            else "n/a"
        )
        difference = (
            f"{r['plan_gib'] - measured_gib:+.1f} GiB ({r['plan_gib'] / measured_gib - 1:+.0%})"
            if gpu and measured_gib
            else "n/a (CPU: the plan is per GPU)"
        )
        print(
            f"| {name} | {r['status']} | {r['tokens_per_micro_batch']} | "
            f"{r['peak_mib']:,.0f} MiB ({measured_gib:.1f} GiB) | {r['meter']} | "
            f"{r['plan_gib']:.1f} GiB | {difference} | {inside} |"
        )
    for name, r in results.items():
        times = ", ".join(f"{t:.1f}" for t in r["step_times"])
        print(f"{name}: step times (s, the first with warm-up) {times or 'none logged'}")
    timed = {name: results[name]["step_times"][1:] for name in ("grpo", "gc2po")}
    ratio = (
        statistics.median(timed["gc2po"]) / statistics.median(timed["grpo"])
        if all(timed.values())
        else None
    )
    print(
        "GC2PO / GRPO step ratio at beta 0 (medians of steps 2..): "
        + (f"{ratio:.3f}" if ratio is not None else "n/a (a run logged no timed step)")
    )
    samples = args.eval_problems * 4
    print(
        f"gc2po eval (transformers backend): {args.eval_problems} GSM8K problems x 4 samples x "
        f"{args.eval_tokens} tokens: exit {eval_status} in {eval_s:.0f} s "
        f"({samples / eval_s:.2f} samples/s, process start included)"
    )
    return {
        "runs": results,
        "build_s": build_s,
        "eval": {"status": eval_status, "seconds": eval_s, "samples": samples},
        "step_ratio": ratio,
    }


if __name__ == "__main__":
    main()
