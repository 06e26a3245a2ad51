"""What a training run logs: metrics reduced over processes, and the JSONL file of every step."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import TrainerCallback


def reduce_over_processes(metrics: dict[str, float], accelerator) -> dict[str, float]:
    """Every process's value of each metric reduced to one: max for names ending in '/max', min
    for '/min', else the mean. All processes must call it with the same names."""
    names = sorted(metrics)
    if accelerator.num_processes == 1 or not names:
        return {n: float(metrics[n]) for n in names}
    values = torch.tensor([[float(metrics[n]) for n in names]], device=accelerator.device)
    gathered = accelerator.gather(values)
    return {
        n: (
            gathered[:, i].max()
            if n.endswith("/max")
            else gathered[:, i].min()
            if n.endswith("/min")
            else gathered[:, i].mean()
        ).item()
        for i, n in enumerate(names)
    }


def sampling_ratios(
    policy_logps: torch.Tensor, old_logps: torch.Tensor, mask: torch.Tensor
) -> dict[str, float]:
    """Mean, max and min of the importance ratio pi/pi_old over the completion tokens.
    policy_logps, old_logps, mask: [B, T]; empty when no token is masked in."""
    ratio = torch.exp(policy_logps - old_logps)[mask.bool()]
    if not ratio.numel():
        return {}
    return {
        "sampling_ratio/mean": ratio.mean().item(),
        "sampling_ratio/max": ratio.max().item(),
        "sampling_ratio/min": ratio.min().item(),
    }


class JsonlMetricsCallback(TrainerCallback):
    """Writes every log record (with its step) to a JSONL file, on rank 0, as training goes; at the
    end the file is rewritten from the trainer's log history, which checkpoints carry, so a run
    resumed after a kill (even one whose file was deleted) ends with every step exactly once."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kept = []
        if state.global_step > 0 and self.path.exists():
            kept = [
                line
                for line in self.path.read_text().splitlines()
                if line.strip() and json.loads(line).get("step", 0) <= state.global_step
            ]
        self.path.write_text("".join(line + "\n" for line in kept))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            with self.path.open("a") as handle:
                handle.write(json.dumps({"step": state.global_step, **logs}) + "\n")

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.path.write_text("".join(json.dumps(record) + "\n" for record in state.log_history))
