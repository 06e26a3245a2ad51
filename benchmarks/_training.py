"""Shared by the training benchmarks: a random model of a real shape with a tokenizer that
reloads as itself, a prompt set, and one timed training run of a method (GC2PO's trainer or
TRL's own GRPOTrainer) from the same weights and batch."""

from __future__ import annotations

import gc
import json
import random
import statistics
import time
from pathlib import Path

import torch
from transformers import TrainerCallback

SHAPES = {  # (architecture, hidden, layers, heads, kv heads, intermediate, vocab, tied embeddings)
    "smollm2-135m": ("llama", 576, 30, 9, 3, 1536, 49_152, True),
    "qwen2.5-1.5b": ("qwen2", 1536, 28, 12, 2, 8960, 151_936, True),
    # DeepScaleR-1.5B-Preview / R1-Distill-Qwen-1.5B: Qwen2.5-Math-1.5B's shape, untied head
    "deepscaler-1.5b": ("qwen2", 1536, 28, 12, 2, 8960, 151_936, False),
    "tiny": ("qwen2", 64, 2, 4, 2, 128, 2_048, True),  # for the benchmarks' own test
}


def build(
    shape: str, workdir: Path, problems: int = 64, words: int = 48, layers: int | None = None
) -> tuple[Path, Path]:
    """Save a random-initialised model of ``shape`` (``layers`` of them when given) with a
    synthetic BPE tokenizer of its vocabulary (checked to reload through AutoTokenizer to the same
    ids) and a prompt file; nothing downloaded."""
    from gc2po.models.build import build_causal_lm, check_reload, synthetic_tokenizer

    architecture, hidden, shape_layers, heads, kv_heads, intermediate, vocab, tied = SHAPES[shape]
    layers = layers or shape_layers
    tokenizer = synthetic_tokenizer(vocab)
    model = build_causal_lm(
        tokenizer,
        architecture=architecture,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        intermediate_size=intermediate,
        max_position_embeddings=4096,
        tie_word_embeddings=tied,
        seed=0,
    )
    model_dir = workdir / "model"
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    check_reload(tokenizer, model_dir)
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    data = workdir / "train.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"p{i}",
                    "question": " ".join(
                        "".join(rng.choice(letters) for _ in range(3)) for _ in range(words)
                    ),
                    "answer": "0",
                    "meta": {},
                }
            )
            + "\n"
            for i in range(problems)
        )
    )
    return model_dir, data


def varying_reward(prompts, completions, **kwargs):
    """Varies inside a group, so advantages and gradients are non-zero."""
    return [float(len(c[-1]["content"]) % 3 == 0) for c in completions]


varying_reward.__name__ = "outcome"
varying_reward.reward_range = (0.0, 1.0)  # GC2PO checks that R_out cannot go below 0


class StepTimer(TrainerCallback):
    """Wall time of each optimizer step (generation, rewards, advantages, loss, update)."""

    def __init__(self):
        self.times: list[float] = []
        self._start = 0.0

    def _sync(self):
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    def on_step_begin(self, args, state, control, **kwargs):
        self._sync()
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self._sync()
        self.times.append(time.perf_counter() - self._start)


def run_steps(
    model_dir: Path,
    data: Path,
    variant: str,
    *,
    steps: int,
    k: int,
    batch: int,
    completion_length: int,
    workdir: Path,
    precision: str | None = None,
    beta: float | None = None,
) -> dict:
    """Train ``steps`` steps of ``variant`` (a method name, or "trl_grpo" for TRL's own
    GRPOTrainer with the GRPO settings) from the saved weights; returns per-step times, grad
    norms, skipped steps and peak GPU memory. ``beta``: the KL weight (None: the method's own;
    GRPO fixes 0, so a GC2PO / GRPO step ratio at matched settings sets 0 for both)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    from gc2po.data.jsonl import read_jsonl
    from gc2po.training.run_config import build_args
    from gc2po.training.train import build_dataset
    from gc2po.training.trainer import GC2POTrainer

    method = "grpo" if variant == "trl_grpo" else variant
    run = {
        "model": str(model_dir),
        "train_data": str(data),
        "output_dir": str(workdir / f"out_{variant}"),
        "task": "benchmark",
        "method": method,
        "seed": 0,
        "overwrite": True,
        "trainer": {
            "num_generations": k,
            "per_device_train_batch_size": batch,
            "max_steps": steps,
            "max_completion_length": completion_length,
            "save_strategy": "no",
            "learning_rate": 1e-6,
        },
    }
    if precision:
        run["precision"] = precision
    if beta is not None:
        run["trainer"]["beta"] = beta
    args = build_args(run)
    args.metrics_path = None
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    trainer_class = GRPOTrainer if variant == "trl_grpo" else GC2POTrainer
    torch.manual_seed(0)
    trainer = trainer_class(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype),
        args=args,
        train_dataset=build_dataset(read_jsonl(data), "benchmark"),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        reward_funcs=[varying_reward],
    )
    timer = StepTimer()
    trainer.add_callback(timer)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    trainer.train()
    logs = [r for r in trainer.state.log_history if "grad_norm" in r]
    result = {
        "times": timer.times,
        "grad_norms": [r["grad_norm"] for r in logs],
        "skipped": int(logs[-1].get("nonfinite/skipped_steps", 0)) if logs else 0,
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30
        if torch.cuda.is_available()
        else None,
    }
    del trainer
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return result


def alternate(
    model_dir, data, variants: list[str], *, repeats: int, steps: int, warmup: int, **kwargs
) -> dict:
    """Each repeat trains every variant in turn from the same weights and batch; the first
    ``warmup`` steps of each run are not timed. One untimed run first warms up imports
    and caches."""
    run_steps(model_dir, data, variants[0], steps=1, **kwargs)
    results = {v: {"times": [], "grad_norms": [], "skipped": 0, "peak_gib": None} for v in variants}
    for _ in range(repeats):
        for variant in variants:
            out = run_steps(model_dir, data, variant, steps=steps, **kwargs)
            results[variant]["times"] += out["times"][warmup:]
            results[variant]["grad_norms"] += out["grad_norms"]
            results[variant]["skipped"] += out["skipped"]
            if out["peak_gib"] is not None:
                results[variant]["peak_gib"] = max(
                    results[variant]["peak_gib"] or 0.0, out["peak_gib"]
                )
    for result in results.values():
        result["median"] = statistics.median(result["times"])
    return results
