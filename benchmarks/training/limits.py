"""Where the default's time goes, against the machine's limit: one warm-start SFT step, one RL
step and one evaluation batch at the default's shapes (``config/config.yaml``), each with the
FLOPs its work needs, its wall time, the GFLOP/s it achieves, and the GFLOP/s that torch's fp32
matmul reaches on the same matrix shapes at the same thread count, measured in the same run. A
large square matmul gives the machine's general peak.

The work, each at the thread count the workflow gives it:

- the warm start's SFT step (``gc2po.testbed.warmstart.warm_start``: transformers' ``Trainer``,
  a batch of ``testbed.warm_start.batch_size`` examples of the SFT data, forward, backward and
  AdamW; ``num_threads`` threads), on the default's train split;
- the RL step of GRPO at the default's trainer settings (8 prompts x 8 completions, up to 64
  new tokens, ``gc2po.models.sampling``; ``benchmarks/_rl_step.py``, as
  ``benchmarks/training/step_time.py`` runs it; 1 thread, the train rule's), with its generation
  and its scoring (the forwards of the policy's log-probabilities and the backward) apart;
- one evaluation batch (``gc2po.evaluation.run.generate_and_grade`` on ``test_id``: the first
  ``batch_size / n`` problems, n samples each, the default's sampling; 1 thread, the evaluate
  rule's).

What is counted: ``benchmarks/_flops.py`` (the projections, attention and the LM head where a
logit is used, from the real token counts; a backward as twice its forward).

The peak at a work's shapes is its linear layers' matmuls (the rows the model really
computes: padded batches, the rows still decoding; and for training the two backward matmuls of
each), each timed alone, their FLOPs over the summed time. The achieved rate divided by it is
the share of matmul speed the work keeps through small ops, Python, padding and attention.

The model is ``--model`` (a saved testbed model: completions of its real lengths) or, by
default, the warm start's model after the timed SFT steps: nearly random, it writes
full-length completions, a worst case for the RL step and the evaluation.

    python benchmarks/training/limits.py [--model DIR] [--configfile config/config.yaml ...]
        [--sft-steps 12] [--rl-steps 4] [--eval-repeats 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import platform
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _flops import (  # noqa: E402
    generation_flops,
    linear_matmuls,
    matmul_flops,
    sequence_flops,
    shape_of,
)
from _rl_step import PhaseTimer, run  # noqa: E402

from gc2po.workflow.job_shape import ModelShape  # noqa: E402

# _rl_step.PhaseTimer's phases of the RL step's forwards (R_cf's pass runs inside the loss's)
SCORING_PHASES = (
    "loss forward (incl. advantages, R_cf)",
    "other forward",
    "reference forward",
    "backward",
)


class MatmulClock:
    """Seconds of one fp32 matmul of a shape and kind at the current thread count (best of
    ``repeats`` means over at least ``min_s`` seconds), cached."""

    def __init__(self, min_s: float = 0.004, repeats: int = 3):
        self.min_s, self.repeats, self.cache = min_s, repeats, {}

    def seconds(self, kind: str, m: int, k: int, n: int) -> float:
        key = (kind, m, k, n, torch.get_num_threads())
        if key not in self.cache:
            self.cache[key] = self._measure(kind, m, k, n)
        return self.cache[key]

    def _measure(self, kind: str, m: int, k: int, n: int) -> float:
        generator = torch.Generator().manual_seed(0)
        x, w = torch.randn(m, k, generator=generator), torch.randn(n, k, generator=generator)
        g = torch.randn(m, n, generator=generator)
        call = {
            "fwd": lambda: F.linear(x, w),  # as nn.Linear computes x @ w.T
            "dgrad": lambda: g @ w,
            "wgrad": lambda: g.t() @ x,
        }[kind]
        call()
        best = math.inf
        for _ in range(self.repeats):
            calls, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < self.min_s or calls == 0:
                call()
                calls += 1
            best = min(best, elapsed / calls)
        return best

    def rate(self, matmuls: Counter) -> float:
        """GFLOP/s over the matmuls, each at its own measured speed."""
        seconds = sum(self.seconds(*key) * count for key, count in matmuls.items())
        return matmul_flops(matmuls) / seconds / 1e9


def square_peak(size: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of a [size x size] fp32 matmul, best of ``repeats``."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


# ---------------------------------------------------------------------------------------------
# recording the real token counts of the project's own code paths


@dataclasses.dataclass
class Work:
    """One row of the table: the FLOPs counted, the matmuls run, the seconds, per unit."""

    name: str
    threads: int
    flops: float
    matmuls: Counter
    seconds: float
    counted: str  # what the tokens were


class SamplerRecorder:
    """Wraps ``gc2po.models.sampling.sample_completions`` (the testbed's RL generation and the
    evaluation's sampling call it by module attribute) and keeps, per call while ``on()``, the
    needed FLOPs, the matmuls run and the token counts."""

    def __init__(self, shape: ModelShape, on):
        import gc2po.models.sampling as sampling

        self.shape, self.calls = shape, []
        original = sampling.sample_completions

        def recorded(model, input_ids, attention_mask, **kwargs):
            tokens = original(model, input_ids, attention_mask, **kwargs)
            if on():
                self.calls.append(self._count(input_ids, attention_mask, tokens, kwargs))
            return tokens

        sampling.sample_completions = recorded

    def _count(self, input_ids, attention_mask, tokens, kwargs) -> tuple[int, Counter, dict]:
        eos = torch.isin(tokens, torch.tensor(kwargs["eos_token_ids"]))
        lengths = torch.where(eos.any(1), eos.int().argmax(1) + 1, tokens.shape[1]).tolist()
        prompt_lengths = attention_mask.sum(1).tolist()
        first = [0] + [
            i
            for i in range(1, len(input_ids))
            if not (
                torch.equal(input_ids[i], input_ids[i - 1])
                and torch.equal(attention_mask[i], attention_mask[i - 1])
            )
        ]
        prompts = [prompt_lengths[i] for i in first]
        flops = generation_flops(self.shape, prompts, list(zip(prompt_lengths, lengths)))
        matmuls = linear_matmuls(self.shape, len(first) * input_ids.shape[1], len(first), False)
        for step in range(1, max(lengths)):  # the rows still decoding after token `step`
            active = sum(c > step for c in lengths)
            matmuls += linear_matmuls(self.shape, active, active, False)
        counts = {
            "rows": len(lengths),
            "prompts": len(prompts),
            "completion_tokens": sum(lengths),
            "prompt_tokens": sum(prompts),
        }
        return flops, matmuls, counts


def record_scoring(shape: ModelShape, calls: list, on) -> None:
    """Wraps TRL's ``GRPOTrainer._get_per_token_logps_and_entropies`` (every forward of the RL
    loss and of any no-grad scoring) and appends (FLOPs, matmuls, whether a backward follows)
    per call while ``on()``."""
    from trl import GRPOTrainer

    original = GRPOTrainer._get_per_token_logps_and_entropies

    def recorded(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, **kw):
        if on():
            backward = torch.is_grad_enabled()
            completion = attention_mask[:, -logits_to_keep:].sum(1).tolist()
            rows = list(zip(attention_mask.sum(1).tolist(), completion))
            matmuls = Counter()
            chunk = batch_size or input_ids.shape[0]
            for start in range(0, input_ids.shape[0], chunk):
                b = min(chunk, input_ids.shape[0] - start)
                # TRL asks for logits_to_keep + 1 positions and drops the last
                matmuls += linear_matmuls(
                    shape, b * input_ids.shape[1], b * (logits_to_keep + 1), backward
                )
            calls.append((sequence_flops(shape, rows, backward), matmuls, backward))
        return original(self, model, input_ids, attention_mask, logits_to_keep, batch_size, **kw)

    GRPOTrainer._get_per_token_logps_and_entropies = recorded


# ---------------------------------------------------------------------------------------------
# the three works


def sft_step(problems, settings: dict, steps: int, out: Path) -> tuple[Work, Path]:
    """``steps`` steps of the warm start (the first two not timed); each step's time runs from
    one ``training_step`` call to the next (data, forward, backward, clipping, AdamW,
    scheduler). Returns the work per step and the saved model."""
    from transformers import Trainer

    from gc2po.testbed.warmstart import WarmStartConfig, warm_start

    config = WarmStartConfig.from_mapping(settings, "testbed.warm_start")
    config.epochs = (steps + 0.5) / math.ceil(len(problems) / config.batch_size)
    starts, batches = [], []
    original = Trainer.training_step

    def timed(self, model, inputs, *args, **kwargs):
        starts.append(time.perf_counter())
        batches.append((inputs["attention_mask"].clone(), inputs["labels"].clone()))
        return original(self, model, inputs, *args, **kwargs)

    Trainer.training_step = timed
    try:
        stats = warm_start(problems, out, config, log=lambda *a: None)
    finally:
        Trainer.training_step = original
    if stats["steps"] != steps or len(starts) != steps:
        raise SystemExit(f"limits: the warm start ran {stats['steps']} steps, not {steps}")
    from transformers import AutoConfig

    shape = shape_of(AutoConfig.from_pretrained(out))
    timed_steps = range(2, steps - 1)  # step i lasts from its call to the next one's
    flops, matmuls, tokens = 0, Counter(), 0
    for i in timed_steps:
        mask, labels = batches[i]
        # a label at position t + 1 is read from the logit at t: the loss's positions
        rows = list(zip(mask.sum(1).tolist(), (labels[:, 1:] != -100).sum(1).tolist()))
        flops += sequence_flops(shape, rows, backward=True)
        matmuls += linear_matmuls(shape, mask.numel(), mask.numel(), backward=True)
        tokens += sum(n for n, _ in rows)
    count = len(timed_steps)
    seconds = statistics.median(starts[i + 1] - starts[i] for i in timed_steps)
    batch = config.batch_size
    work = Work(
        f"warm-start SFT step (batch {batch})",
        config.num_threads,
        flops / count,
        Counter({k: v / count for k, v in matmuls.items()}),
        seconds,
        f"{tokens / count:,.0f} real tokens a step (median of {count} steps' times)",
    )
    return work, out


def rl_step(
    model: Path, data: Path, trainer: dict, shape: ModelShape, steps: int, workdir: Path
) -> list[Work]:
    """GRPO with the config's trainer settings (``_rl_step.run``; the default: 8 prompts x 8),
    ``steps`` steps (the first not timed): the step, its generation and its scoring forwards and
    backward."""
    phases, scoring = PhaseTimer(), []
    timed = lambda: phases.label is not None  # noqa: E731 - set in the timed steps only
    sampler = SamplerRecorder(shape, timed)
    record_scoring(shape, scoring, timed)
    label = ("grpo", "limits")
    times, _ = run(
        model,
        data,
        "grpo",
        True,
        steps,
        workdir,
        phases,
        label,
        settings=trainer,
    )
    generation, count = sampler.calls, len(times)
    if len(generation) != count or not scoring:
        raise SystemExit(f"limits: {len(generation)} generations for {count} timed RL steps")
    gen_flops = sum(f for f, _, _ in generation) / count
    gen_matmuls = Counter()
    for _, m, _ in generation:
        gen_matmuls += m
    loss_flops = sum(f for f, _, _ in scoring) / count
    backward = sum(b for _, _, b in scoring) // count
    loss_matmuls = Counter()
    for _, m, _ in scoring:
        loss_matmuls += m
    per_step = lambda c: Counter({k: v / count for k, v in c.items()})  # noqa: E731
    counts = generation[0][2]
    seconds = {k[1]: v / count for k, v in phases.seconds.items() if k[0] == label}
    mean_completion = counts["completion_tokens"] / counts["rows"]
    tokens = f"{counts['rows']} completions of {mean_completion:.1f} tokens on average"
    return [
        Work(
            f"RL step (GRPO, {counts['prompts']} prompts x {counts['rows'] // counts['prompts']})",
            torch.get_num_threads(),
            gen_flops + loss_flops,
            per_step(gen_matmuls + loss_matmuls),
            statistics.mean(times),
            f"{tokens} (mean of {count} steps)",
        ),
        Work(
            "  its generation",
            torch.get_num_threads(),
            gen_flops,
            per_step(gen_matmuls),
            seconds["generation"],
            tokens,
        ),
        Work(
            "  its scoring forwards + backward",
            torch.get_num_threads(),
            loss_flops,
            per_step(loss_matmuls),
            sum(s for phase, s in seconds.items() if phase in SCORING_PHASES),
            f"{len(scoring) // count} forwards a step ({backward} with a backward: x 3)",
        ),
    ]


def evaluation_batch(
    model: Path,
    records: list[dict],
    sampling: dict,
    batch_size: int,
    shape: ModelShape,
    repeats: int,
) -> Work:
    """One batch of the evaluation: ``batch_size / n`` problems, n samples each (one
    untimed run first; every run samples the same tokens)."""
    from gc2po.evaluation.backends import SamplingConfig, TransformersBackend
    from gc2po.evaluation.run import generate_and_grade

    config = SamplingConfig(**sampling)
    problems = records[: batch_size // config.n]
    backend = TransformersBackend.from_pretrained(str(model), batch_size=batch_size)
    recording = [False]
    sampler = SamplerRecorder(shape, lambda: recording[0])
    generate_and_grade(backend, problems, "testbed", config)
    times = []
    for _ in range(repeats):
        sampler.calls.clear()
        recording[0] = True
        start = time.perf_counter()
        generate_and_grade(backend, problems, "testbed", config)
        times.append(time.perf_counter() - start)
        recording[0] = False
    ((flops, matmuls, counts),) = sampler.calls
    mean_completion = counts["completion_tokens"] / counts["rows"]
    return Work(
        f"evaluation batch ({len(problems)} problems x {config.n})",
        torch.get_num_threads(),
        flops,
        matmuls,
        statistics.median(times),
        f"{counts['rows']} completions of {mean_completion:.1f} tokens on average "
        f"(median of {repeats} runs)",
    )


# ---------------------------------------------------------------------------------------------


def cpu_description() -> str:
    """The CPU's model name and whether it has the AVX-512 and AMX instruction sets."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    name = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    flags = re.search(r"^flags\s*:\s*(.+)$", text, re.MULTILINE)
    present = set(flags[1].split()) if flags else set()
    wanted = ["avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"]
    listed = ", ".join(f"{f} {'yes' if f in present else 'no'}" for f in wanted)
    return f"{name[1] if name else platform.processor() or 'unknown'} ({listed})"


def table(works: list[Work], clock: MatmulClock, peaks: dict[int, float]) -> str:
    lines = [
        "| work | threads | GFLOP | time (s) | achieved GFLOP/s | matmul peak at its shapes "
        "(GFLOP/s) | achieved / shape peak | achieved / machine peak |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for work in works:
        torch.set_num_threads(work.threads)
        achieved = work.flops / work.seconds / 1e9
        at_shapes = clock.rate(work.matmuls)
        lines.append(
            f"| {work.name} | {work.threads} | {work.flops / 1e9:.2f} | {work.seconds:.3f} | "
            f"{achieved:.1f} | {at_shapes:.1f} | {achieved / at_shapes:.2f} | "
            f"{achieved / peaks[work.threads]:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        type=Path,
        help="a saved testbed model for the RL step and the evaluation "
        "(default: the warm start's model after the SFT steps)",
    )
    parser.add_argument("--configfile", nargs="+", default=None, help="workflow config(s)")
    parser.add_argument("--sft-steps", type=int, default=12, help="SFT steps (2 not timed)")
    parser.add_argument("--rl-steps", type=int, default=4, help="RL steps (1 not timed)")
    parser.add_argument("--eval-repeats", type=int, default=3)
    args = parser.parse_args()
    if args.sft_steps < 4 or args.rl_steps < 2 or args.eval_repeats < 1:
        parser.error("needs --sft-steps >= 4, --rl-steps >= 2 and --eval-repeats >= 1")

    from transformers import AutoConfig

    from gc2po.data.jsonl import read_jsonl
    from gc2po.testbed.data import read_split, write_splits
    from gc2po.workflow.plan import load_config

    config = load_config(args.configfile)
    testbed, evaluate = config["testbed"], config["evaluate"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_splits(
            testbed["sizes"],
            testbed["seed"],
            work / "data",
            testbed.get("cue"),
            testbed.get("rl_cued_share"),
        )
        rl_data = (
            work / "data" / ("train_rl.jsonl" if testbed.get("rl_cued_share") else "train.jsonl")
        )
        sft, sft_model = sft_step(
            read_split(work / "data" / "train.jsonl"),
            testbed.get("warm_start") or {},
            args.sft_steps,
            work / "sft_model",
        )
        model = args.model or sft_model
        shape = shape_of(AutoConfig.from_pretrained(model))
        torch.set_num_threads(1)  # the train and evaluate rules' thread count
        rl = rl_step(model, rl_data, config["train"]["trainer"], shape, args.rl_steps, work)
        n = (evaluate.get("n_per_benchmark") or {}).get("test_id", evaluate["sampling"]["n"])
        sampling = {**evaluate["sampling"], "n": n}
        evaluation = evaluation_batch(
            model,
            read_jsonl(work / "data" / "test_id.jsonl"),
            sampling,
            evaluate["batch_size"],
            shape,
            args.eval_repeats,
        )
    works = [sft, *rl, evaluation]
    peaks = {}
    for threads in sorted({w.threads for w in works}):
        torch.set_num_threads(threads)
        peaks[threads] = square_peak()
    clock = MatmulClock()
    print(f"CPU: {cpu_description()}; torch {torch.__version__}, fp32")
    print(
        f"model: {model if args.model else 'the warm start after the SFT steps'}; "
        f"hidden {shape.hidden}, {shape.layers} layers, {shape.heads} heads, vocab {shape.vocab}"
    )
    print(
        "machine peak (2048 x 2048 fp32 matmul): "
        + ", ".join(f"{t} thread(s) {p:.1f} GFLOP/s" for t, p in peaks.items())
    )
    print()
    print(table(works, clock, peaks))
    print()
    for w in works:
        linear = matmul_flops(w.matmuls)
        print(f"- {w.name.strip()}: {w.counted}; linear matmuls run {linear / 1e9:.2f} GFLOP")


if __name__ == "__main__":
    main()
