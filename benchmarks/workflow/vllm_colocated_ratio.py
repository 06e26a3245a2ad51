"""The mean importance ratio trainer/vLLM per step of colocated training on vLLM's CPU build,
per method (what tests/vllm_cpu/test_vllm_cpu.py asserts lies in [0.95, 1.05]).

    OMP_NUM_THREADS=1 VLLM_CPU_OMP_THREADS_BIND=nobind VLLM_CPU_KVCACHE_SPACE=1 \
        .venv-vllm/bin/python benchmarks/workflow/vllm_colocated_ratio.py [--methods gc2po grpo mrt]

The test's run: a random 2-layer Llama (hidden 64, head_dim 32, the least vLLM's CPU attention
takes; float32), 16 generated testbed problems, a reward with variance inside most groups (the
parity of the completion text's length, so the steps change the weights), 4 completions per step
in groups of 2, learning rate 1e-2, 3 steps; vLLM generates in the training process
(``vllm_mode: colocate``) and TRL's importance-sampling correction logs
``sampling/importance_sampling_ratio/mean`` each step. Prints one line per method.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch

RATIO = "sampling/importance_sampling_ratio/mean"
CORPUS = "Tom has 5 apples and buys 3 more. <episode_1> 3 + 4 = 7 </episode_1> \\boxed{7}\n"
TRAINER = {
    "use_vllm": True,
    "vllm_mode": "colocate",
    "max_steps": 3,
    "logging_steps": 1,
    "save_steps": 10,
    "num_generations": 2,
    "per_device_train_batch_size": 4,
    "max_completion_length": 12,
    "learning_rate": 1e-2,
    "weight_decay": 0.0,
    "num_perturbations": 2,
    "answer_topk": 8,
}


def parity_reward(prompts, completions, **kwargs):
    """The parity of the completion text's length (tests/training/conftest.py's reward)."""
    return [float(len(c[-1]["content"]) % 2) for c in completions]


parity_reward.__name__ = "outcome"
parity_reward.reward_range = (0.0, 1.0)


def build_inputs(workdir: Path) -> tuple[Path, Path]:
    from gc2po.models.build import build_causal_lm, train_tokenizer
    from gc2po.testbed.generator import generate_splits

    tokenizer = train_tokenizer([CORPUS] * 80, vocab_size=300)
    model = build_causal_lm(tokenizer, hidden_size=64, num_layers=2, num_heads=2, seed=0)
    model_dir = workdir / "model"
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    data = workdir / "train.jsonl"
    problems = generate_splits({"train": 16}, seed=0)["train"]
    data.write_text("".join(json.dumps(p.record()) + "\n" for p in problems))
    return model_dir, data


def ratios(method: str, model_dir: Path, data: Path, out_dir: Path) -> list[float]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.data.jsonl import read_jsonl
    from gc2po.training.output_dir import prepare_output_dir
    from gc2po.training.run_config import build_args
    from gc2po.training.train import build_dataset
    from gc2po.training.trainer import GC2POTrainer

    run = {
        "model": str(model_dir),
        "train_data": str(data),
        "output_dir": str(out_dir),
        "task": "testbed",
        "method": method,
        "seed": 0,
        "overwrite": True,
        "trainer": TRAINER,
    }
    args = build_args(run)
    prepare_output_dir(run, args, log=lambda *a: None)
    torch.manual_seed(0)
    trainer = GC2POTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        args=args,
        train_dataset=build_dataset(read_jsonl(data), "testbed"),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        reward_funcs=[parity_reward],
    )
    trainer.train()
    return [entry[RATIO] for entry in trainer.state.log_history if RATIO in entry]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=["gc2po", "grpo", "mrt"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir, data = build_inputs(Path(tmp))
        found = {m: ratios(m, model_dir, data, Path(tmp) / m) for m in args.methods}
    for method, values in found.items():
        print(f"{method}: mean importance ratio per step {', '.join(f'{v:.3f}' for v in values)}")


if __name__ == "__main__":
    main()
