"""The testbed's RL training step as the benchmarks run and time it (``training/step_time.py``,
``method/signal_cost.py``, ``training/limits.py``): the default's trainer settings, a random model
of the warm start's shape, a train split, and a timer of the trainer's phases."""

from __future__ import annotations

import collections
import functools
import json
import time
from pathlib import Path

import torch

from gc2po.workflow.config_files import load_config

# the default's trainer settings; 16 prompts x 8 completions per step, nothing saved
TRAINER = {
    **load_config()["train"]["trainer"],
    "per_device_train_batch_size": 128,
    "save_strategy": "no",
}
NESTED = "R_cf (counterfactual pass)"  # timed inside the loss forward on-policy


def random_testbed_model(workdir: Path) -> Path:
    """A random-weight model of the warm start's shape with a tokenizer trained on testbed text."""
    from gc2po.models.build import build_causal_lm, train_tokenizer
    from gc2po.testbed.generator import generate_splits
    from gc2po.testbed.warmstart import WarmStartConfig, encode_pairs, sft_pairs

    config = WarmStartConfig()
    problems = generate_splits({"train": 1000}, seed=0)["train"]
    pairs = sft_pairs(problems, config)
    tokenizer = train_tokenizer(
        [m[0]["content"] + " " + s for m, s in pairs], vocab_size=config.vocab_size
    )
    longest = max(len(ids) for ids, _ in encode_pairs(tokenizer, pairs))
    model = build_causal_lm(
        tokenizer,
        architecture=config.architecture,
        hidden_size=config.hidden_size,
        num_layers=config.num_layers,
        num_heads=config.num_heads,
        max_position_embeddings=longest * 2 + 64,
        seed=0,
    )
    path = workdir / "model"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def train_file(workdir: Path) -> Path:
    from gc2po.testbed.generator import generate_splits

    path = workdir / "train.jsonl"
    path.write_text(
        "".join(
            json.dumps(p.record()) + "\n" for p in generate_splits({"train": 400}, seed=0)["train"]
        )
    )
    return path


class PhaseTimer:
    """Wall time inside the trainer's phases, accumulated under a label while ``label`` is set."""

    def __init__(self):
        from accelerate import Accelerator
        from trl import GRPOTrainer

        from gc2po.training.batch_scoring import BatchScoringMixin
        from gc2po.training.trainer import GC2POTrainer

        self.label, self.seconds = None, collections.defaultdict(float)

        def forward_phase(args):
            trainer, model = args[0], args[1]
            if model is trainer.ref_model:
                return "reference forward"
            return (
                "loss forward (incl. advantages, R_cf)"
                if torch.is_grad_enabled()
                else "other forward"
            )

        # the subclass: its override reaches TRL's generate only on the old path
        self._wrap(GC2POTrainer, "_generate_single_turn", "generation")
        self._wrap(GRPOTrainer, "_calculate_rewards", "reward")
        self._wrap(GRPOTrainer, "_get_per_token_logps_and_entropies", forward_phase)
        self._wrap(BatchScoringMixin, "_segment", "episode segmentation")
        self._wrap(BatchScoringMixin, "_counterfactual", NESTED)
        self._wrap(Accelerator, "backward", "backward")
        self._wrap(torch.optim.AdamW, "step", "optimizer")

    def _wrap(self, owner, name, phase):
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                if self.label is not None:
                    key = phase(args) if callable(phase) else phase
                    self.seconds[(self.label, key)] += time.perf_counter() - start

        setattr(owner, name, timed)


def run(
    model_dir: Path,
    data: Path,
    method: str,
    fast: bool,
    steps: int,
    workdir: Path,
    phases: PhaseTimer,
    label,
    settings: dict | None = None,
) -> tuple[list[float], list[dict]]:
    """Train ``steps`` steps (``settings``: the method's own trainer settings, as a config's
    variant sets them); returns the times of steps 2.. and the logged rows."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

    from gc2po.data.jsonl import read_jsonl
    from gc2po.training.rewards import REWARDS
    from gc2po.training.run_config import build_args
    from gc2po.training.train import build_dataset
    from gc2po.training.trainer import GC2POTrainer

    run_config = {
        "model": str(model_dir),
        "train_data": str(data),
        "task": "testbed",
        "method": method,
        "seed": 0,
        "output_dir": str(workdir / "out"),
        "overwrite": True,
        "trainer": {**TRAINER, **(settings or {}), "max_steps": steps, "fast_generation": fast},
    }
    args = build_args(run_config)
    args.metrics_path, args.disable_tqdm = None, True
    torch.manual_seed(0)
    trainer = GC2POTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        args=args,
        train_dataset=build_dataset(read_jsonl(data), "testbed"),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        reward_funcs=[REWARDS["testbed"]],
    )
    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            phases.label = label if state.global_step >= 1 else None  # the first step warms caches
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if phases.label is not None:
                times.append(time.perf_counter() - self.start)
            phases.label = None

    trainer.add_callback(Timer())
    trainer.train()
    logs = [
        {
            k: v
            for k, v in row.items()
            if k in ("loss", "grad_norm", "reward", "completions/mean_length")
        }
        for row in trainer.state.log_history
        if "loss" in row
    ]
    return times, logs
