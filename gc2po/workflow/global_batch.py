"""The global batch: the sequences of one optimizer step, stated by the workflow config
(``train.sequences_per_step``) and split over the training job's processes.

    sequences_per_step = num_processes x per_device_train_batch_size x gradient_accumulation_steps

``num_processes`` is the launcher's total over all machines (accelerate's meaning; 1 without a
launcher). With the key set, the accumulation is derived from the process count, so changing the
GPU count keeps the batch, and one generation batch is drawn per optimizer step
(``steps_per_generation`` = the accumulation: the paper config's 32 prompts x 8 completions).
Without it a job's trainer settings are used as written. Pure functions, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

KEY = "train.sequences_per_step"
PROCESSES_KEY = "train.launcher.num_processes"


@dataclass(frozen=True)
class BatchSplit:
    """How a job's sequences per optimizer step are split (``machines``: the launcher's
    ``num_machines``, 1 when absent; the processes are the total over them)."""

    processes: int
    machines: int
    per_device: int
    accumulation: int
    num_generations: int

    @property
    def sequences_per_step(self) -> int:
        return self.processes * self.per_device * self.accumulation

    def describe(self) -> str:
        """``256 sequences (32 prompts x 8 completions) = 8 processes on 1 machine x 1 per
        micro-batch x 32 accumulation steps``."""
        prompts = self.sequences_per_step / self.num_generations
        prompts_text = f"{prompts:g}" if prompts != int(prompts) else str(int(prompts))
        machines = f" on {self.machines} machine{'s' if self.machines != 1 else ''}"
        return (
            f"{self.sequences_per_step} sequences ({prompts_text} prompts x "
            f"{self.num_generations} completions) = {self.processes} "
            f"process{'es' if self.processes != 1 else ''}{machines} x {self.per_device} per "
            f"micro-batch x {self.accumulation} accumulation step"
            f"{'s' if self.accumulation != 1 else ''}"
        )


def process_counts(sequences_per_step: int, per_device: int) -> list[int]:
    """The process counts that split ``sequences_per_step`` evenly at ``per_device`` sequences
    a micro-batch (the divisors of sequences_per_step / per_device)."""
    if sequences_per_step % per_device:
        return []
    micro_batches = sequences_per_step // per_device
    return [n for n in range(1, micro_batches + 1) if micro_batches % n == 0]


def accumulation_steps(sequences_per_step: int, processes: int, per_device: int) -> int:
    """Accumulation steps that make ``sequences_per_step`` from ``processes`` x ``per_device``;
    ValueError naming both numbers (and the counts that would work) when they cannot."""
    per_micro_step = processes * per_device
    if sequences_per_step % per_micro_step:
        counts = process_counts(sequences_per_step, per_device)
        hint = (
            f"; process counts that divide it: {', '.join(map(str, counts))}"
            if counts
            else f"; {sequences_per_step} is not a multiple of the micro-batch either"
        )
        raise ValueError(
            f"{KEY}: {sequences_per_step} sequences per optimizer step cannot be split over "
            f"{processes} processes ({PROCESSES_KEY}) x {per_device} per micro-batch "
            f"(trainer.per_device_train_batch_size): {sequences_per_step} is not a multiple of "
            f"{per_micro_step}{hint}"
        )
    return sequences_per_step // per_micro_step


def derived_trainer(
    trainer: dict, sequences_per_step: int, processes: int, sources: dict[str, str]
) -> dict:
    """``trainer`` with ``gradient_accumulation_steps`` and ``steps_per_generation`` derived
    from ``sequences_per_step`` over ``processes``. ``sources``: trainer key -> the config key
    that set it (named in a refusal). A value the config sets that disagrees is refused, as is a
    ``generation_batch_size`` other than one optimizer step's sequences."""
    if "per_device_train_batch_size" not in trainer:
        raise ValueError(
            f"{KEY}: set trainer.per_device_train_batch_size too (the sequences of one "
            f"micro-batch), from which the accumulation steps are derived"
        )
    per_device = trainer["per_device_train_batch_size"]
    if isinstance(per_device, bool) or not isinstance(per_device, int) or per_device < 1:
        raise ValueError(
            f"{sources.get('per_device_train_batch_size', 'trainer.per_device_train_batch_size')}"
            f": must be an int >= 1, got {per_device!r}"
        )
    steps = accumulation_steps(sequences_per_step, processes, per_device)
    split = (
        f"{sequences_per_step} sequences over {processes} processes x {per_device} per micro-batch"
    )
    for key, what in (
        ("gradient_accumulation_steps", "accumulation steps"),
        ("steps_per_generation", "steps per generation (one generation batch per optimizer step)"),
    ):
        if key in trainer and trainer[key] != steps:
            raise ValueError(
                f"{sources.get(key, 'trainer.' + key)}: {trainer[key]!r} disagrees with {KEY} "
                f"({split} need {steps} {what}); remove it: it is derived from {KEY}"
            )
    out = {**trainer, "gradient_accumulation_steps": steps}
    if "generation_batch_size" in trainer:  # TRL takes one of the two
        if trainer["generation_batch_size"] != sequences_per_step:
            raise ValueError(
                f"{sources.get('generation_batch_size', 'trainer.generation_batch_size')}: "
                f"{trainer['generation_batch_size']!r} disagrees with {KEY} "
                f"({sequences_per_step}: one generation batch per optimizer step); remove it"
            )
    else:
        out["steps_per_generation"] = steps
    return out
