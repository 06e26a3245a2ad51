"""Weight sync into a colocated vLLM engine running on CPU (vLLM's CPU build, the CI's
`vllm_cpu` tests). The one place where CPU and GPU training differ.

TRL 1.16 pushes each parameter through the engine model's ``load_weights``, whose per-parameter
``weight_loader`` the CPU build no longer has after it prepacked the linear weights for its GEMM
kernels ("'Parameter' object has no attribute 'weight_loader'"). vLLM's own ``reload_weights``
takes the same (name, tensor) stream, restores the loaders, loads and prepacks again. A tied
LM head is not in the stream (it is the embedding), so its packed copy is rebuilt from the
freshly loaded embedding. On GPU TRL's own path runs unchanged.
"""

from __future__ import annotations

from types import MethodType

import torch


def needs_cpu_sync(use_vllm: bool, vllm_mode: str) -> bool:
    """Colocated vLLM without CUDA: TRL's weight sync cannot load into the CPU build."""
    return use_vllm and vllm_mode == "colocate" and not torch.cuda.is_available()


def sync_weights_cpu(generation) -> None:
    """Replacement of ``trl.generation.vllm_generation.VLLMGeneration.sync_weights`` on CPU."""
    from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

    runner = generation.llm.llm_engine.model_executor.driver_worker.model_runner
    runner.reload_weights(weights_iterator=generation._iter_named_params())
    model = runner.get_model()
    if getattr(model.config, "tie_word_embeddings", False):
        dispatch_cpu_unquantized_gemm(model.lm_head, remove_weight=False)
    generation.llm.reset_prefix_cache()


def use_cpu_sync(generation) -> None:
    """Make ``generation.sync_weights`` (called by TRL before generating) the CPU path."""
    generation.sync_weights = MethodType(sync_weights_cpu, generation)
