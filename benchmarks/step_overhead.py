"""GC2PO vs GRPO training-step time on the same random-initialised model and the same batch.

Model shape: SmolLM2-135M (Llama, hidden 576, 30 layers, 9 heads / 3 KV heads, intermediate
1536, vocab 49,152) by default; ``--shape qwen2.5-1.5b`` for Qwen2.5-1.5B (GPU). Each
measurement is one full optimizer step (generation, rewards, advantages, forward/backward)
of a fresh trainer from the same initial weights and seed, so every method sees the identical
batch. Methods are measured alternately, ``--repeats`` times, and the median is reported.

    python benchmarks/step_overhead.py [--methods gc2po,grpo] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

SHAPES = {
    "smollm2-135m": dict(architecture="llama", hidden_size=576, num_layers=30, num_heads=9, num_kv_heads=3,
                         intermediate_size=1536, vocab=49_152),
    "qwen2.5-1.5b": dict(architecture="qwen2", hidden_size=1536, num_layers=28, num_heads=12, num_kv_heads=2,
                         intermediate_size=8960, vocab=151_936),
}


def build(shape: str, workdir: Path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from gc2po.models import CHAT_TEMPLATE, SPECIAL_TOKENS, build_causal_lm

    spec = dict(SHAPES[shape])
    vocab_size = spec.pop("vocab")
    # a word-level tokenizer with the model's vocabulary size: every id is a real token
    words = SPECIAL_TOKENS + [f"<episode_{i}>" for i in range(1, 9)] + [f"</episode_{i}>" for i in range(1, 9)]
    words += [f"w{i}" for i in range(vocab_size - len(words))]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<|pad|>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|pad|>", bos_token="<|bos|>", eos_token="<|eos|>")
    tokenizer.chat_template = CHAT_TEMPLATE
    model = build_causal_lm(tokenizer, max_position_embeddings=2048, seed=0, **spec)
    model.save_pretrained(workdir / "model")
    tokenizer.save_pretrained(workdir / "model")
    data = workdir / "train.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "question": " ".join(f"w{(7 * i + j) % 5000}" for j in range(48)),
                                        "answer": "0", "meta": {}}) + "\n" for i in range(64)))
    return workdir / "model", data


def length_reward(prompts, completions, **kwargs):
    return [float(len(c[-1]["content"]) % 3 == 0) for c in completions]


length_reward.__name__ = "outcome"


def one_step(model_dir, data, method, args, workdir, extra=None, task="math"):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.train import build_args, build_dataset, read_jsonl
    from gc2po.trl_adapter import GC2POTrainer

    trainer_cfg = {"num_generations": args.k, "per_device_train_batch_size": args.batch, "max_steps": 1,
                   "max_completion_length": args.completion_length, "save_strategy": "no", "learning_rate": 1e-6,
                   "bf16": torch.cuda.is_available(), **(extra or {})}
    run = {"model": str(model_dir), "train_data": str(data), "output_dir": str(workdir / f"out_{method}"),
           "task": task, "method": method, "seed": 0, "trainer": trainer_cfg}
    targs = build_args(run)
    targs.metrics_path = None
    dtype = torch.bfloat16 if targs.bf16 else torch.float32
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    from gc2po.rewards import REWARDS

    reward = length_reward if task == "math" else REWARDS[task]
    trainer = GC2POTrainer(model=model, args=targs, train_dataset=build_dataset(read_jsonl(data), task),
                           processing_class=tokenizer, reward_funcs=[reward])
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    trainer.train()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="smollm2-135m", choices=sorted(SHAPES))
    parser.add_argument("--methods", default="gc2po,grpo,grpo_trl")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--completion-length", type=int, default=64)
    parser.add_argument("--model-dir", default=None, help="use this model instead of a random one (e.g. the testbed's)")
    parser.add_argument("--data", default=None, help="training JSONL for --model-dir")
    parser.add_argument("--task", default="math", choices=["math", "testbed"])
    args = parser.parse_args()
    torch.set_num_threads(torch.get_num_threads())
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"shape={args.shape} device={device} torch={torch.__version__} K={args.k} batch={args.batch} "
          f"completion_length={args.completion_length}")
    methods = args.methods.split(",")
    # grpo_trl = GRPO exactly as TRL runs it (no extra pass for old log-probs when aligned)
    variants = {m: ("grpo", {"compute_old_logps": False}) if m == "grpo_trl" else (m, {}) for m in methods}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if args.model_dir:
            model_dir, data = Path(args.model_dir), Path(args.data)
            print(f"model={model_dir} data={data} task={args.task}")
        else:
            model_dir, data = build(args.shape, workdir)
        times = {m: [] for m in methods}
        one_step(model_dir, data, "grpo", args, workdir, task=args.task)  # warm-up (imports, allocator)
        for _ in range(args.repeats):
            for m in methods:
                method, extra = variants[m]
                times[m].append(one_step(model_dir, data, method, args, workdir, extra, task=args.task))
        median = {m: statistics.median(t) for m, t in times.items()}
        for m in methods:
            print(f"{m:16s} step {median[m]:.2f} s (runs: {', '.join(f'{t:.2f}' for t in times[m])})")
        for ref in ("grpo", "grpo_trl"):
            if ref in median:
                for m in methods:
                    if m not in ("grpo", "grpo_trl"):
                        print(f"ratio {m} / {ref}: {median[m] / median[ref]:.3f}")


if __name__ == "__main__":
    main()
