"""Time of one testbed training step (16 prompts x 8 completions), where it goes, and the ratio of
the step with ``gc2po.models.sampling`` (``fast_generation: true``, the default) to the step
through TRL's ``generate`` call (``fast_generation: false``), in one run.

Settings are the default's, read from config/config.yaml ``train.trainer`` (max_completion_length
64, temperature 1.0, K = 8, its learning rate and R_cf perturbation), with
per_device_train_batch_size 128 (16 prompts x 8), on CPU with ``--threads`` torch threads (the
workflow's train rule uses 1). Each measurement trains a fresh trainer from the same weights and
seed for ``--steps`` steps; the first step of each is not timed. Paths alternate (which goes
first alternates too), so machine load hits both alike. Both paths must log identical losses,
rewards and gradient norms; the script checks it.

The model is ``--model`` (a saved testbed model, e.g. a warm start) or, by default, a random
model of the testbed shape (Llama, hidden 128, 3 layers, 4 heads, vocab 400, ~0.85M parameters)
with a tokenizer trained on testbed problems: it writes full-length completions, a worst case.

    OMP_NUM_THREADS=1 python benchmarks/step_time.py [--model DIR] [--methods grpo,gc2po]
        [--repeats 3] [--steps 3]
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import statistics
import tempfile
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
PATHS = {"old": False, "new": True}  # fast_generation
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", type=Path, help="a saved testbed model (default: random weights)"
    )
    parser.add_argument("--methods", default="grpo,gc2po")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--steps", type=int, default=3, help="steps per trainer (the first is not timed)"
    )
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    phases = PhaseTimer()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        model_dir = args.model or random_testbed_model(workdir)
        data = train_file(workdir)
        print(
            f"model={args.model or 'random testbed shape'} threads={args.threads} "
            f"torch={torch.__version__} 16 prompts x 8, max_completion_length 64, "
            f"repeats={args.repeats}"
        )
        times = collections.defaultdict(list)
        logs = {}
        for repeat in range(args.repeats):
            for method in args.methods.split(","):
                order = list(PATHS) if repeat % 2 == 0 else list(PATHS)[::-1]
                for path in order:
                    label = (method, path)
                    step_times, logged = run(
                        model_dir, data, method, PATHS[path], args.steps, workdir, phases, label
                    )
                    times[label] += step_times
                    logs.setdefault(label, logged)
    for method in args.methods.split(","):
        same = logs[(method, "old")] == logs[(method, "new")]
        print(
            f"\n{method}: identical losses, rewards, grad norms and lengths on both paths: {same}"
        )
        for path in PATHS:
            values = times[(method, path)]
            print(
                f"  {path} ({'fast_generation' if PATHS[path] else 'TRL generate'}): "
                f"step min {min(values):.2f} median {statistics.median(values):.2f} "
                f"max {max(values):.2f} s over {len(values)} steps"
            )
        ratio = statistics.median(times[(method, "new")]) / statistics.median(
            times[(method, "old")]
        )
        fastest = min(times[(method, "new")]) / min(times[(method, "old")])
        print(f"  ratio new/old: medians {ratio:.2f}, minima {fastest:.2f}")
        generation = [phases.seconds[((method, path), "generation")] for path in PATHS]
        print(f"  generation time new/old (timed steps): {generation[1] / generation[0]:.2f}")
        print("  phase shares of the step (mean s/step, share of the mean step):")
        for path in PATHS:
            mean = statistics.mean(times[(method, path)])
            count = len(times[(method, path)])
            parts = {k[1]: v / count for k, v in phases.seconds.items() if k[0] == (method, path)}
            inside = sum(
                v for k, v in parts.items() if k != NESTED
            )  # R_cf runs inside the loss forward
            parts["rest (TRL bookkeeping, data, logging)"] = mean - inside
            text = ", ".join(
                f"{name} {sec:.2f} ({100 * sec / mean:.0f}%)"
                for name, sec in sorted(parts.items(), key=lambda kv: -kv[1])
            )
            print(f"    {path}: {mean:.2f} s = {text}")


if __name__ == "__main__":
    main()
