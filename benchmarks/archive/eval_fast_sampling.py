"""Evaluation sampling on CPU: ``TransformersBackend.generate`` through ``gc2po.models.sampling``
(each prompt prefilled once for its n samples, finished rows dropped) against ``model.generate``,
on the same model, prompts and seed; the completions must be identical.

    python benchmarks/archive/eval_fast_sampling.py --model resources/testbed/models/testbed \\
        --data resources/testbed/data/test_id.jsonl [--n 4] [--problems 300] [--repeats 3]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _testbed import testbed_parser  # noqa: E402

from gc2po.data.jsonl import read_jsonl  # noqa: E402
from gc2po.evaluation.backends import SamplingConfig, TransformersBackend  # noqa: E402
from gc2po.evaluation.run import prompts_for  # noqa: E402


def main() -> None:
    args = testbed_parser(__doc__, n=4, problems=300, repeats=3, batch_size=128).parse_args()
    torch.set_num_threads(1)
    prompts = prompts_for(read_jsonl(args.data)[: args.problems], "testbed")
    backend = TransformersBackend.from_pretrained(args.model, batch_size=args.batch_size)
    sampling = SamplingConfig(n=args.n, temperature=1.0, top_p=1.0, max_new_tokens=96, seed=0)
    fast_rows = backend._sample_rows
    times = {"generate": [], "group_sampling": []}
    outputs = {}
    for _ in range(args.repeats):  # alternated, so drift in the machine's load hits both alike
        for name in ("generate", "group_sampling"):
            backend._sample_rows = fast_rows if name == "group_sampling" else (lambda *a: None)
            start = time.perf_counter()
            generations = backend.generate(prompts, sampling)
            times[name].append(time.perf_counter() - start)
            outputs[name] = [g.text for g in generations]
    same = outputs["generate"] == outputs["group_sampling"]
    print(
        f"{len(prompts)} prompts x {args.n} samples, 1 thread, {args.repeats} repeats "
        "(alternated); "
        f"identical completions: {same}"
    )
    for name, values in times.items():
        print(
            f"{name}: min {min(values):.2f} s, median {statistics.median(values):.2f} s, max "
            f"{max(values):.2f} s"
        )
    print(
        f"ratio group_sampling / generate (medians): "
        f"{statistics.median(times['group_sampling']) / statistics.median(times['generate']):.2f}"
    )
    if not same:
        raise SystemExit("the two paths gave different completions")


if __name__ == "__main__":
    main()
