"""Per-GPU memory plan of one GRPO / GC2PO training job (pure Python, offline).

Three phases share a GPU; the plan is the largest of them:

- generation: model states + reference + colocated vLLM (``vllm_gpu_memory_utilization`` of the
  GPU: its own bf16 weights, a profiling/CUDA-graph allowance and the KV cache);
- scoring: model states + reference + vLLM unless asleep + the final-norm states GC2PO keeps for
  a generation batch + one no-grad micro-batch;
- training: model states + reference + vLLM unless asleep + activations of one micro-batch
  (with gradient checkpointing: every layer's input plus one layer recomputed) + TRL's fused LM
  head, which never materialises [B, T, V] logits (TRL 1.16 ``add_fused_lm_head``: 4096 x 32768
  logit tiles, an fp32 gradient of the head weight).

Model states follow DeepSpeed's own estimators (``estimate_zero2_model_states_mem_needs``,
``estimate_zero3_model_states_mem_needs``, deepspeed 0.19.8) for bf16 weights with fp32 master
weights and fp32 Adam states: ZeRO-2 keeps 2 bytes/param of weights and partitions 2 (bf16
gradients) + 4 (fp32 gradients) + 4 (fp32 master) + 8 (Adam m, v) over the N processes; ZeRO-3
also partitions the weights and gathers the largest module (4 bytes/param). TRL shards the
reference model under ZeRO-3 and replicates it (bf16) otherwise (``trl.models.prepare_deepspeed``).
Activation bytes per token were measured on transformers' Qwen2 (saved-tensor hooks, bf16, SDPA;
tests/scale/test_memory.py repeats the measurement). Allowances that are not derived (CUDA
context, NCCL and fragmentation; vLLM's profiling peak and CUDA graphs) are named constants.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gc2po.workflow.job_shape import GPU_80GB_GIB, MODEL_SHAPES, JobShape

GIB = 2**30
# CUDA context, cuBLAS workspaces, NCCL buffers, allocator fragmentation
RUNTIME_ALLOWANCE_GIB = 3.0
# vLLM's profiled activation peak (max_num_batched_tokens 4096) + CUDA graphs
VLLM_OVERHEAD_GIB = 2.0
FUSED_HEAD_TILE = (4096, 32768)  # TRL 1.16: TOKEN_CHUNK_SIZE x _CHUNKED_LOGPROB_CHUNK_SIZE


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU memory in GiB (``kv_cache_sequences``: how many full-length sequences vLLM's
    KV cache holds at once; ``fits``: the peak fits the GPU and vLLM can hold one sequence)."""

    weights: float
    gradients: float
    optimizer: float
    gathered_layer: float
    reference: float
    activations: float
    lm_head: float
    episode_states: float
    runtime: float
    vllm_reserved: float
    vllm_kv_cache: float
    kv_cache_sequences: int
    generation_peak: float
    scoring_peak: float
    training_peak: float
    peak: float
    fits: bool


def _model_state_bytes(job: JobShape) -> dict[str, float]:
    p, n, stage = job.shape.num_params(), job.num_processes, job.zero_stage
    if stage == 0:  # fp32 weights and gradients, bf16 autocast, fp32 Adam m and v
        return {"weights": 4 * p, "gradients": 4 * p, "optimizer": 8 * p, "gathered_layer": 0}
    return {
        "weights": 2 * p / (n if stage == 3 else 1),
        # bf16 gradients (whole under ZeRO-1) and their fp32 partition; ZeRO-3 counts 4 bytes
        "gradients": 4 * p / n if stage == 3 else (2 * p / n if stage == 2 else 2 * p) + 4 * p / n,
        "optimizer": 12 * p / n,  # fp32 master weights + Adam m and v
        "gathered_layer": 4 * job.shape.largest_module_params() if stage == 3 else 0,
    }


def _reference_bytes(job: JobShape) -> float:
    if job.beta == 0:
        return 0.0  # TRL builds no reference model
    bytes_per_param = (
        4 if job.zero_stage == 0 else 2
    )  # without DeepSpeed it is loaded like the policy
    return (
        bytes_per_param * job.shape.num_params() / (job.num_processes if job.zero_stage == 3 else 1)
    )


def _activation_bytes(job: JobShape) -> float:
    shape, tokens = job.shape, job.per_device_batch * job.sequence_length
    eager = (
        job.per_device_batch * shape.heads * job.sequence_length**2 * 4
        if job.attn_implementation == "eager"
        else 0
    )
    per_layer = tokens * shape.layer_activation_bytes_per_token() + eager
    if job.gradient_checkpointing:  # layer inputs + one layer recomputed, with its gradients
        return tokens * shape.checkpoint_bytes_per_token() + 2 * per_layer
    return shape.layers * per_layer + tokens * (6 * shape.hidden + 12)  # + the final norm's tensors


def _fused_head_bytes(job: JobShape) -> float:
    """TRL's chunked log-prob head: one logit tile, the saved hidden copy and per-token
    statistics, the fp32 gradient of the hidden states, the fp32 gradient of the head weight
    and its bf16 copy."""
    shape, tokens = job.shape, job.per_device_batch * job.sequence_length
    tile = FUSED_HEAD_TILE[0] * min(FUSED_HEAD_TILE[1], shape.vocab) * 2
    return tile + tokens * (6 * shape.hidden + 16) + 6 * shape.vocab * shape.hidden


def _vllm_bytes(job: JobShape) -> tuple[float, float, int]:
    """(reserved, KV cache, full-length sequences the KV cache holds)."""
    if not job.use_vllm:
        return 0.0, 0.0, 0
    reserved = job.vllm_gpu_memory_utilization * job.gpu_memory_gib * GIB
    kv_cache = max(0.0, reserved - 2 * job.shape.num_params() - VLLM_OVERHEAD_GIB * GIB)
    max_length = job.vllm_max_model_length or job.sequence_length
    return (
        reserved,
        kv_cache,
        math.floor(kv_cache / (max_length * job.shape.kv_cache_bytes_per_token())),
    )


def estimate_memory(job: JobShape) -> MemoryEstimate:
    """Per-GPU memory of ``job`` by phase, in GiB."""
    shape = job.shape
    states = _model_state_bytes(job)
    reference = _reference_bytes(job)
    runtime = RUNTIME_ALLOWANCE_GIB * GIB
    vllm_reserved, kv_cache, kv_sequences = _vllm_bytes(job)
    vllm_awake_in_training = 0.0 if job.vllm_sleep_mode else vllm_reserved
    episode_states = (
        job.generation_batch_per_device
        * (job.sequence_length + job.completion_length)
        * shape.hidden
        * 2
        if job.keeps_episode_states
        else 0.0
    )
    no_grad_micro_batch = (
        job.per_device_batch * job.sequence_length * shape.layer_activation_bytes_per_token()
    )
    activations, lm_head = _activation_bytes(job), _fused_head_bytes(job)

    resident = sum(states.values()) + reference + runtime
    generation = resident + vllm_reserved
    scoring = resident + vllm_awake_in_training + episode_states + no_grad_micro_batch
    training = resident + vllm_awake_in_training + activations + lm_head
    peak = max(generation, scoring, training)
    fits = peak <= job.gpu_memory_gib * GIB and (kv_sequences >= 1 or not job.use_vllm)
    return MemoryEstimate(
        **{k: v / GIB for k, v in states.items()},
        reference=reference / GIB,
        activations=activations / GIB,
        lm_head=lm_head / GIB,
        episode_states=episode_states / GIB,
        runtime=runtime / GIB,
        vllm_reserved=vllm_reserved / GIB,
        vllm_kv_cache=kv_cache / GIB,
        kv_cache_sequences=kv_sequences,
        generation_peak=generation / GIB,
        scoring_peak=scoring / GIB,
        training_peak=training / GIB,
        peak=peak / GIB,
        fits=fits,
    )


TRAINER_KEYS = (
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "max_completion_length",
    "beta",
    "gradient_checkpointing",
)


def job_from_trainer(
    model: str,
    trainer: Mapping,
    *,
    num_processes: int,
    zero_stage: int,
    prompt_length: int,
    keeps_episode_states: bool = True,
    gpu_memory_gib: float = GPU_80GB_GIB,
) -> JobShape:
    """A job from a Hub id of :data:`MODEL_SHAPES` and a resolved trainer mapping (GRPOConfig
    field names; the vLLM ones default as in TRL 1.16). Raises ValueError naming a missing key."""
    if model not in MODEL_SHAPES:
        raise ValueError(
            f"model {model!r} has no shape in gc2po.workflow.memory.MODEL_SHAPES; known: "
            f"{sorted(MODEL_SHAPES)}"
        )
    missing = [key for key in TRAINER_KEYS if key not in trainer]
    if missing:
        raise ValueError(
            f"trainer.{missing[0]}: missing (the memory plan needs {list(TRAINER_KEYS)})"
        )
    return JobShape(
        shape=MODEL_SHAPES[model],
        num_processes=num_processes,
        zero_stage=zero_stage,
        per_device_batch=trainer["per_device_train_batch_size"],
        gradient_accumulation=trainer["gradient_accumulation_steps"],
        prompt_length=prompt_length,
        completion_length=trainer["max_completion_length"],
        beta=trainer["beta"],
        gradient_checkpointing=trainer["gradient_checkpointing"],
        attn_implementation=(trainer.get("model_init_kwargs") or {}).get(
            "attn_implementation", "sdpa"
        ),
        keeps_episode_states=keeps_episode_states,
        steps_per_generation=trainer.get("steps_per_generation"),
        use_vllm=trainer.get("use_vllm", False),
        vllm_gpu_memory_utilization=trainer.get("vllm_gpu_memory_utilization", 0.3),
        vllm_max_model_length=trainer.get("vllm_max_model_length"),
        vllm_sleep_mode=trainer.get("vllm_enable_sleep_mode", False),
        gpu_memory_gib=gpu_memory_gib,
    )
