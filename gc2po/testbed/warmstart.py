"""Tokenizer, tiny causal LM and SFT warm start for the testbed.

The SFT data mixes correct solutions with imperfect ones (arithmetic slips, shortcut steps
with a right answer) so the warm-started model makes every kind of mistake the reward audit
looks for and RL has room to improve.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from gc2po.models import build_causal_lm, train_tokenizer
from gc2po.prompts import TESTBED_INSTRUCTION, build_messages
from gc2po.testbed.generator import Problem, solution_text


@dataclass
class WarmStartConfig:
    vocab_size: int = 400
    architecture: str = "llama"
    hidden_size: int = 128
    num_layers: int = 3
    num_heads: int = 4
    slip_frac: float = 0.2  # solutions with one arithmetic slip (near misses)
    shortcut_frac: float = 0.1  # solutions with wrong steps but the right answer (lucky guesses)
    epochs: float = 8.0
    batch_size: int = 32
    lr: float = 3e-3
    warmup_frac: float = 0.05
    weight_decay: float = 0.01
    max_seconds: float = 230.0  # hard wall-clock cap for the SFT loop
    seed: int = 0

    def __post_init__(self):
        if not 0 <= self.slip_frac + self.shortcut_frac <= 1:
            raise ValueError("slip_frac + shortcut_frac must lie in [0, 1]")
        if self.epochs <= 0 or self.batch_size < 1 or self.lr <= 0:
            raise ValueError("epochs, batch_size and lr must be positive")


def prompt_messages(problem_or_question) -> list[dict]:
    question = problem_or_question.question if isinstance(problem_or_question, Problem) else problem_or_question
    return build_messages(question, instruction=TESTBED_INSTRUCTION)


def sft_pairs(problems: list[Problem], config: WarmStartConfig) -> list[tuple[list[dict], str]]:
    """(messages, solution) pairs with the configured mix of imperfect solutions."""
    rng = random.Random(config.seed)
    pairs = []
    for problem in problems:
        draw = rng.random()
        kind = "slip" if draw < config.slip_frac else "shortcut" if draw < config.slip_frac + config.shortcut_frac else "correct"
        pairs.append((prompt_messages(problem), solution_text(problem, kind, rng)))
    return pairs


def encode_pairs(tokenizer, pairs) -> list[tuple[list[int], int]]:
    """Token ids of prompt + solution + EOS, and the prompt length (loss is on the rest)."""
    out = []
    for messages, solution in pairs:
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        completion_ids = tokenizer(solution, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        out.append((prompt_ids + completion_ids, len(prompt_ids)))
    return out


def _batches(examples, batch_size, pad_id, rng):
    order = list(range(len(examples)))
    rng.shuffle(order)
    for i in range(0, len(order), batch_size):
        chunk = [examples[j] for j in order[i:i + batch_size]]
        width = max(len(ids) for ids, _ in chunk)
        input_ids = torch.full((len(chunk), width), pad_id)
        labels = torch.full((len(chunk), width), -100)
        attention = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, (ids, prompt_len) in enumerate(chunk):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            labels[row, prompt_len: len(ids)] = torch.tensor(ids[prompt_len:])
            attention[row, : len(ids)] = 1
        yield input_ids, attention, labels


def warm_start(problems: list[Problem], output_dir: str | Path, config: WarmStartConfig | None = None, log=print) -> dict:
    """Train the tokenizer and the tiny model on ``problems``; save both to ``output_dir``.

    Returns (and writes to ``warmstart.json``) the run's statistics.
    """
    config = config or WarmStartConfig()
    start_time = time.perf_counter()
    torch.manual_seed(config.seed)
    pairs = sft_pairs(problems, config)
    corpus = [m[0]["content"] + " " + s for m, s in pairs]
    tokenizer = train_tokenizer(corpus, vocab_size=config.vocab_size)
    examples = encode_pairs(tokenizer, pairs)
    model = build_causal_lm(
        tokenizer, architecture=config.architecture, hidden_size=config.hidden_size,
        num_layers=config.num_layers, num_heads=config.num_heads,
        max_position_embeddings=max(len(ids) for ids, _ in examples) * 2 + 64, seed=config.seed,
    )
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = math.ceil(len(examples) / config.batch_size)
    total_steps = max(1, int(config.epochs * steps_per_epoch))
    warmup = max(1, int(config.warmup_frac * total_steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, total_steps) / total_steps))
    )
    rng = random.Random(config.seed)
    step, losses, stopped_early = 0, [], False
    while step < total_steps and not stopped_early:
        for input_ids, attention, labels in _batches(examples, config.batch_size, tokenizer.pad_token_id, rng):
            loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
            step += 1
            if step % 50 == 0:
                log(f"warm start step {step}/{total_steps} loss {sum(losses[-50:]) / 50:.4f}")
            if step >= total_steps:
                break
            if time.perf_counter() - start_time > config.max_seconds:
                stopped_early = True
                break
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    stats = {
        "config": asdict(config),
        "num_examples": len(examples),
        "steps": step,
        "total_steps": total_steps,
        "stopped_at_time_cap": stopped_early,
        "final_loss": sum(losses[-20:]) / max(1, len(losses[-20:])),
        "seconds": time.perf_counter() - start_time,
        "num_parameters": sum(p.numel() for p in model.parameters()),
    }
    (output_dir / "warmstart.json").write_text(json.dumps(stats, indent=2))
    return stats
