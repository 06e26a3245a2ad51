"""Cost per training step of the corrected GC2PO's per-episode signals: the step time of
``gc2po_add`` (R_cf, computed inside the loss forward) beside ``gc2po_add_answer`` (the answer
dependence: one extra no-grad forward pass per episode and one per completion, at generation),
``gc2po_add_oracle`` (the oracle grading the text) and the policy-only signals (beyond the
paper): ``gc2po_add_agree`` (sibling agreement: parsing only) and ``gc2po_add_operand``
(operand sensitivity: one no-grad pass per episode with an equation and one per completion), in
one run; put ``grpo`` first in ``--methods`` for ratios to a GRPO step.

Settings are the default's (``benchmarks/training/step_time.py``: config/config.yaml
``train.trainer``, 16 prompts x 8 completions per step, ``--threads`` torch threads); each
measurement trains a fresh trainer from the same weights and seed for ``--steps`` steps, the first
not timed, methods in an order that rotates every repeat, so machine load hits all alike. Use a
warm-started model (``--model``): a random one writes no final answer, and the answer dependence
then costs nothing.

    OMP_NUM_THREADS=1 python benchmarks/method/signal_cost.py \
        --model resources/testbed/models/testbed
        [--methods gc2po_add,gc2po_add_answer,gc2po_add_oracle] [--repeats 3] [--steps 3]
    OMP_NUM_THREADS=1 python benchmarks/method/signal_cost.py \
        --model resources/testbed/models/testbed \
        --methods grpo,gc2po_add,gc2po_add_answer,gc2po_add_agree,gc2po_add_operand --repeats 2

A method may carry its own settings, as a config's ``variants`` give them:
``grpo_gated:cf_signal=operand_sensitivity`` (``+`` between several; numbers read as numbers).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _rl_step import NESTED, PhaseTimer, run, train_file  # noqa: E402

SIGNAL_PHASE = "per-episode signal (answer or operand passes, agreement, oracle)"


def method_spec(spec: str) -> tuple[str, dict]:
    """``"grpo_gated:cf_signal=operand_sensitivity+lambda_cf=0.8"`` -> (method, settings)."""
    method, _, rest = spec.partition(":")
    settings = {}
    for item in filter(None, rest.split("+")):
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--methods: {spec!r}: a setting is key=value, not {item!r}")
        for kind in (int, float, str):  # 4 -> 4, 0.29 and 1e-4 -> float, a name stays text
            try:
                settings[key] = kind(text)
                break
            except ValueError:
                continue
    return method, settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="a warm-started testbed model")
    parser.add_argument("--methods", default="gc2po_add,gc2po_add_answer,gc2po_add_oracle")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3, help="steps per trainer (first untimed)")
    parser.add_argument("--threads", type=int, default=1)
    ns = parser.parse_args()
    torch.set_num_threads(ns.threads)
    from gc2po.training.batch_scoring import BatchScoringMixin

    phases = PhaseTimer()
    phases._wrap(BatchScoringMixin, "_episode_signal", SIGNAL_PHASE)
    methods = ns.methods.split(",")
    times = collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        data = train_file(workdir)
        print(
            f"model={ns.model} threads={ns.threads} torch={torch.__version__} 16 prompts x 8, "
            f"max_completion_length 64, repeats={ns.repeats}, steps={ns.steps} (first untimed)"
        )
        for repeat in range(ns.repeats):
            for method in methods[repeat % len(methods) :] + methods[: repeat % len(methods)]:
                name, settings = method_spec(method)
                step_times, _ = run(
                    ns.model, data, name, True, ns.steps, workdir, phases, method, settings
                )
                times[method] += step_times
    reference = statistics.median(times[methods[0]])
    for method in methods:
        values = times[method]
        median = statistics.median(values)
        # R_cf's pass is timed inside the loss forward; the other signals at generation
        signal = (phases.seconds[(method, SIGNAL_PHASE)] + phases.seconds[(method, NESTED)]) / len(
            values
        )
        print(
            f"{method}: step min {min(values):.2f} median {median:.2f} max {max(values):.2f} s "
            f"over {len(values)} steps; median / {methods[0]}'s {median / reference:.2f}; "
            f"signal {signal:.2f} s/step ({100 * signal / statistics.mean(values):.0f}% of the "
            "mean step)"
        )


if __name__ == "__main__":
    main()
