"""Tokenizer, tiny causal LM and SFT warm start for the testbed.

The SFT data mixes correct solutions with imperfect ones (arithmetic slips, shortcut steps
with a right answer) so the warm-started model makes every kind of mistake the reward audit
looks for and RL has room to improve.

The SFT loop is transformers' ``Trainer`` with a fixed step budget (``epochs`` x batches per
epoch): what is computed depends on the config only, never on the clock. With a fixed
``num_threads`` the saved model and tokenizer are byte-identical from run to run, on an idle
or a loaded machine (``tests/testbed/test_warmstart.py``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from gc2po.data.prompts import TESTBED_INSTRUCTION, build_messages
from gc2po.models.build import build_causal_lm, train_tokenizer
from gc2po.testbed.generator import COPY_KINDS, Problem, solution_text

LOG_EVERY = 50  # steps between logged mean losses
BUCKET_BATCHES = 16  # batches per length-sorted chunk (length_buckets)


def _field(default, meaning: str):
    """A settings field with its meaning (``metadata["help"]``, as transformers' fields)."""
    return dataclasses.field(default=default, metadata={"help": meaning})


@dataclass
class WarmStartConfig:
    """The warm start's settings (``testbed.warm_start`` in a workflow config); each field's
    ``help`` is its row in docs/config-reference.md."""

    vocab_size: int = _field(400, "tokenizer vocabulary size")
    architecture: str = _field("llama", "the transformers architecture of the model")
    hidden_size: int = _field(128, "model width")
    num_layers: int = _field(3, "transformer layers")
    num_heads: int = _field(4, "attention heads")
    slip_frac: float = _field(0.2, "SFT targets with one arithmetic slip (near misses)")
    shortcut_frac: float = _field(
        0.1, "SFT targets with wrong steps but the right answer (lucky guesses)"
    )
    copy_frac: float = _field(
        0.0, "SFT targets of cued problems that copy the bet (the spurious shortcut RL can learn)"
    )
    copy_form: str = _field(
        "bet",
        "how a copy target is written: bet (<episode_1>bet=G</episode_1>, no equation) or "
        "equation (the first step with the bet as its result: a copy a format check cannot see)",
    )
    epochs: float = _field(
        8.0, "the step budget: int(epochs x ceil(examples / batch_size)) steps, no clock"
    )
    batch_size: int = _field(32, "SFT batch size")
    lr: float = _field(3e-3, "SFT learning rate")
    warmup_frac: float = _field(0.05, "share of the steps spent warming the learning rate up")
    weight_decay: float = _field(0.01, "AdamW weight decay")
    num_threads: int = _field(
        2, "torch CPU threads: part of the result (float sums depend on the thread split)"
    )
    # batches of similar lengths (length_buckets): each epoch's shuffled examples are cut into
    # chunks of BUCKET_BATCHES batches and sorted by length within a chunk, the epoch's batches
    # then shuffled. The same examples per epoch, about a third fewer padded tokens per step
    # (docs/measurements.md, "Testbed warm start"); false keeps the Trainer's random batches
    length_buckets: bool = _field(
        False, "batches of similar lengths (the same examples per epoch, fewer padded tokens)"
    )
    seed: int = _field(0, "the model's initialisation and the data order")

    @classmethod
    def from_mapping(cls, values: dict, where: str = "warm_start") -> WarmStartConfig:
        """Build from a config mapping; an unknown key or a value of the wrong type fails
        naming it."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for key, value in (values or {}).items():
            if key not in fields:
                raise ValueError(f"{where}: unknown key {key!r}; valid: {sorted(fields)}")
            expected = type(fields[key].default)
            if expected is bool:  # a bool field takes true/false only, no 0/1
                ok = isinstance(value, bool)
            else:  # and no other field takes a bool (bool is an int in Python)
                numeric = (int, float) if expected is float else expected
                ok = isinstance(value, numeric) and not isinstance(value, bool)
            if not ok:
                raise ValueError(f"{where}.{key}: must be {expected.__name__}, got {value!r}")
        return cls(**(values or {}))

    def __post_init__(self):
        if not 0 <= self.slip_frac + self.shortcut_frac <= 1:
            raise ValueError("warm_start: slip_frac + shortcut_frac must lie in [0, 1]")
        if self.copy_form not in COPY_KINDS:
            raise ValueError(
                f"warm_start.copy_form: must be one of {sorted(COPY_KINDS)}, got {self.copy_form!r}"
            )
        if not 0 <= self.copy_frac <= 1:
            raise ValueError(f"warm_start.copy_frac: must lie in [0, 1], got {self.copy_frac!r}")
        if self.epochs <= 0 or self.batch_size < 1 or self.lr <= 0 or self.num_threads < 1:
            raise ValueError("warm_start: epochs, batch_size, lr and num_threads must be positive")


def prompt_messages(problem_or_question) -> list[dict]:
    question = (
        problem_or_question.question
        if isinstance(problem_or_question, Problem)
        else problem_or_question
    )
    return build_messages(question, instruction=TESTBED_INSTRUCTION)


def sft_pairs(problems: list[Problem], config: WarmStartConfig) -> list[tuple[list[dict], str]]:
    """(messages, solution) pairs with the configured mix of imperfect solutions."""
    rng = random.Random(config.seed)
    pairs = []
    for problem in problems:
        draw = rng.random()
        kind = (
            "slip"
            if draw < config.slip_frac
            else "shortcut"
            if draw < config.slip_frac + config.shortcut_frac
            else "correct"
        )
        if problem.cue is not None and rng.random() < config.copy_frac:  # drawn only where a cue is
            kind = COPY_KINDS[config.copy_form]
        pairs.append((prompt_messages(problem), solution_text(problem, kind, rng)))
    return pairs


def sft_tokenizer(pairs, config: WarmStartConfig):
    """The warm start's tokenizer, trained on the SFT mix's questions and solutions."""
    return train_tokenizer(
        [m[0]["content"] + " " + s for m, s in pairs], vocab_size=config.vocab_size
    )


def encode_pairs(tokenizer, pairs) -> list[tuple[list[int], int]]:
    """Token ids of prompt + solution + EOS, and the prompt length (loss is on the rest)."""
    out = []
    for messages, solution in pairs:
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        completion_ids = tokenizer(solution, add_special_tokens=False)["input_ids"] + [
            tokenizer.eos_token_id
        ]
        out.append((prompt_ids + completion_ids, len(prompt_ids)))
    return out


def collate(examples: list[tuple[list[int], int]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded batch [B, T]; labels are -100 on the prompt and the padding."""
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad_id)
    labels = torch.full((len(examples), width), -100)
    attention = torch.zeros((len(examples), width), dtype=torch.long)
    for row, (ids, prompt_len) in enumerate(examples):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, prompt_len : len(ids)] = torch.tensor(ids[prompt_len:])
        attention[row, : len(ids)] = 1
    return {"input_ids": input_ids, "attention_mask": attention, "labels": labels}


def step_budget(num_examples: int, config: WarmStartConfig) -> int:
    return max(1, int(config.epochs * math.ceil(num_examples / config.batch_size)))


def length_bucketed_batches(
    lengths: list[int], batch_size: int, num_batches: int, seed: int
) -> list[list[int]]:
    """``num_batches`` batches of example indices, each of similar lengths.

    Epoch by epoch: a fresh permutation of all examples, cut into chunks of
    ``BUCKET_BATCHES * batch_size``, each chunk sorted by length and cut into batches (the
    epoch's last batch may be short, as in the Trainer's own epochs), then the epoch's batches
    shuffled so that the step order carries no length trend. Every example appears once per
    epoch; the last epoch is cut at ``num_batches``. A pure function of its arguments.
    """
    if batch_size < 1 or num_batches < 1 or not lengths:
        raise ValueError(
            "length_bucketed_batches: needs examples, batch_size >= 1 and num_batches >= 1"
        )
    rng = random.Random(seed)
    chunk = BUCKET_BATCHES * batch_size
    batches: list[list[int]] = []
    while len(batches) < num_batches:
        order = list(range(len(lengths)))
        rng.shuffle(order)
        epoch = []
        for start in range(0, len(order), chunk):
            part = sorted(order[start : start + chunk], key=lambda i: (lengths[i], i))
            epoch += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
        rng.shuffle(epoch)
        batches += epoch
    return batches[:num_batches]


def _training_args(scratch_dir: Path, total_steps: int, config: WarmStartConfig):
    from transformers import TrainingArguments

    # length_buckets: each dataset item is one prebuilt batch, read in order
    bucketed = {"train_sampling_strategy": "sequential"} if config.length_buckets else {}
    return TrainingArguments(
        output_dir=str(scratch_dir),
        max_steps=total_steps,
        per_device_train_batch_size=1 if config.length_buckets else config.batch_size,
        **bucketed,
        learning_rate=config.lr,
        weight_decay=config.weight_decay,
        lr_scheduler_type="cosine",
        warmup_steps=max(1, int(config.warmup_frac * total_steps)),
        max_grad_norm=1.0,
        optim="adamw_torch",
        seed=config.seed,
        data_seed=config.seed,
        use_cpu=True,
        save_strategy="no",
        report_to="none",
        logging_steps=LOG_EVERY,
        disable_tqdm=True,
        remove_unused_columns=False,
        dataloader_num_workers=0,
    )


def _loss_logger(log, history: list[dict]):
    from transformers import TrainerCallback

    class LossLogger(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                history.append({"step": state.global_step, "loss": round(float(logs["loss"]), 6)})
                log(
                    f"warm start step {state.global_step}/{state.max_steps} loss {logs['loss']:.4f}"
                )

    return LossLogger()


def warm_start(
    problems: list[Problem],
    output_dir: str | Path,
    config: WarmStartConfig | None = None,
    log=print,
) -> dict:
    """Train the tokenizer and the tiny model on ``problems``; save both to ``output_dir``.

    Returns (and writes to ``warmstart.json``) the run's statistics: a pure function of the
    problems and the config (no timings; the caller logs those).
    """
    from transformers import PrinterCallback, Trainer

    config = config or WarmStartConfig()
    torch.set_num_threads(config.num_threads)
    pairs = sft_pairs(problems, config)
    tokenizer = sft_tokenizer(pairs, config)
    examples = encode_pairs(tokenizer, pairs)
    model = build_causal_lm(
        tokenizer,
        architecture=config.architecture,
        hidden_size=config.hidden_size,
        num_layers=config.num_layers,
        num_heads=config.num_heads,
        max_position_embeddings=max(len(ids) for ids, _ in examples) * 2 + 64,
        seed=config.seed,
    )
    output_dir = Path(output_dir)
    total_steps = step_budget(len(examples), config)
    history: list[dict] = []
    with (
        tempfile.TemporaryDirectory() as scratch
    ):  # the Trainer's own folder; nothing of it is kept
        if config.length_buckets:
            order = length_bucketed_batches(
                [len(ids) for ids, _ in examples], config.batch_size, total_steps, config.seed
            )
            dataset = [[examples[i] for i in batch] for batch in order]
            collator = lambda items: collate(items[0], tokenizer.pad_token_id)  # noqa: E731
        else:
            dataset = examples
            collator = lambda batch: collate(batch, tokenizer.pad_token_id)  # noqa: E731
        trainer = Trainer(
            model=model,
            args=_training_args(Path(scratch), total_steps, config),
            train_dataset=dataset,
            data_collator=collator,
            callbacks=[_loss_logger(log, history)],
        )
        trainer.remove_callback(PrinterCallback)  # the loss logger above reports progress
        result = trainer.train()
    model.eval()
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(
        output_dir
    )  # not trainer.save_model: that adds a pickled training_args.bin
    tokenizer.save_pretrained(output_dir)
    stats = {
        "config": asdict(config),
        "num_examples": len(examples),
        "steps": result.global_step,
        "total_steps": total_steps,
        "final_loss": history[-1]["loss"] if history else float(result.training_loss),
        "loss_history": history,
        "num_parameters": sum(p.numel() for p in model.parameters()),
    }
    (output_dir / "warmstart.json").write_text(json.dumps(stats, indent=2))
    return stats
