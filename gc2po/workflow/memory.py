"""Per-GPU memory plan of one GRPO / GC2PO training job (pure Python, offline).

Three phases share a GPU; the plan is the largest of them. What each holds, term by term
(:class:`MemoryEstimate` fields; "measured" says where the bytes were counted):

- ``weights``, ``gradients``, ``optimizer``, ``gathered_layer``: the model states, as DeepSpeed's
  own estimators count them (``estimate_zero2_model_states_mem_needs``,
  ``estimate_zero3_model_states_mem_needs``, deepspeed 0.19.8; tests/scale compares): ZeRO-2 keeps
  2 bytes/param of bf16 weights and partitions 2 (bf16 gradients) + 4 (fp32 gradients) + 4 (fp32
  master) + 8 (Adam m, v) over the N processes; ZeRO-3 also partitions the weights and gathers the
  largest module (4 bytes/param). Without ZeRO (one process or DDP, ``bf16-mixed``): fp32 weights,
  fp32 gradients and fp32 Adam m, v, 16 bytes/param.
- ``reference``: the reference model when beta > 0, loaded like the policy (fp32 without ZeRO;
  bf16, and sharded under ZeRO-3, with DeepSpeed: ``trl.models.prepare_deepspeed``).
- ``autocast_weights``: under ``bf16-mixed`` (fp32 weights, bf16 autocast), the bf16 copy autocast
  makes of every ``F.linear`` weight is cached until the outermost autocast region ends, so a
  forward holds a bf16 copy of all linear weights (2 bytes x :meth:`ModelShape.linear_params`),
  and without gradient checkpointing backward keeps them. Measured on transformers' Qwen2 under
  CPU autocast (saved-tensor hooks: the per-layer constant of the saved bytes is exactly the
  layer's linear weights in bf16; tests/scale/test_memory.py).
- ``activations``: one micro-batch's saved activations. Bytes per token were measured on
  transformers' Qwen2 with saved-tensor hooks (SDPA; tests/scale/test_memory.py): in bf16
  (:meth:`ModelShape.layer_activation_bytes_per_token`) and under ``bf16-mixed``, where the
  residual stream and the RMSNorm outputs stay fp32 (10 more bytes per hidden unit and layer; each
  checkpointed layer input 4 bytes per hidden unit instead of 2). With gradient checkpointing:
  every layer's input plus one layer recomputed, with its gradients.
- ``lm_head``: TRL 1.16's fused log-prob head (``add_fused_lm_head``), which never materialises
  the [B, T, V] logits: logits tiles of ``FUSED_HEAD_TILE`` (tokens x vocabulary), the saved
  hidden copy and per-token statistics, the fp32 gradient of the hidden states, the fp32
  gradient of the head weight and its copy. With Triton (CUDA) one bf16 tile is live; without it
  (``trl.kernels.chunked_logprob``'s torch fallback, which also scores every position, not only
  completion tokens) holds a tile's float32 transforms and gradient pieces at once:
  ``FUSED_HEAD_FALLBACK_FP32_TILES`` fp32 tiles plus the bf16 buffer, 8.19 fp32-tile equivalents
  measured with torch's CPU memory profiler on the kernel's forward + backward (log-probs
  and entropy requested, gradient through the log-probs, as TRL's loss does). Whether a machine
  has Triton is not in the job's settings, so the plan takes the fallback's (larger) bytes.
- ``episode_states``: the final-norm states GC2PO keeps for a generation batch (scoring).
- ``generation_cache``: generation on the transformers backend (no vLLM): the KV cache of the
  generation batch (bf16, ``DynamicCache``; while a layer's cache grows, its old and new copies
  coexist) and the float32 last-position logits and sampling scores of each row.
- ``runtime``: what no tensor count sees: the CUDA context, cuBLAS workspaces, NCCL buffers and the
  caching allocator's reserve (``nvidia-smi`` counts reserved memory, not allocated); a named
  allowance, ``RUNTIME_ALLOWANCE_GIB``.
- ``vllm_reserved`` / ``vllm_kv_cache``: colocated vLLM's ``vllm_gpu_memory_utilization`` of the
  GPU: its own bf16 weights, ``VLLM_OVERHEAD_GIB`` of profiling peak and CUDA graphs, the rest
  KV cache.

Phases: generation = resident + vLLM (or the transformers backend's cache and cast weights);
scoring = resident + vLLM unless asleep + episode states + one no-grad micro-batch + cast weights
+ head; training = resident + vLLM unless asleep + cast weights + activations + head; resident =
model states + reference + runtime.

Checked against GPU measurements (tests/scale/test_memory_measured.py holds them as data, with the
settings that produced them): the real ``gc2po train`` at DeepScaleR-1.5B's shape on one H100
(grpo and gc2po at beta 0 and gc2po at beta 0.04, 8 x 728 tokens a micro-batch; the paper's
layout at 1 x 1,240; peaks of ``nvidia-smi``'s memory in use, from ``benchmarks/gpu/gpu_check.py``)
and ``benchmarks/gpu/gpu_smoke.py`` on an H200 (64 x 472 tokens in one micro-batch, no
checkpointing; ``torch.cuda.max_memory_allocated``): the plan is never below a measured peak and
at most 25% above it. Where it is loose: at 8 x 728 tokens it is 17-20% above, because it keeps
the gradients resident through the forward pass, while the trainer frees them between steps
(``zero_grad(set_to_none=True)``): inside the beta 0 run the allocated peak (26.6 GiB) was the
optimizer step's weights, gradients and Adam states.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gc2po.workflow.job_shape import GPU_80GB_GIB, MODEL_SHAPES, JobShape, ModelShape

GIB = 2**30
# CUDA context, cuBLAS workspaces, NCCL buffers, allocator fragmentation
RUNTIME_ALLOWANCE_GIB = 3.0
# vLLM's profiled activation peak (max_num_batched_tokens 4096) + CUDA graphs
VLLM_OVERHEAD_GIB = 2.0
FUSED_HEAD_TILE = (4096, 32768)  # TRL 1.16: TOKEN_CHUNK_SIZE x _CHUNKED_LOGPROB_CHUNK_SIZE
# float32 copies of a logits tile the head's torch fallback (no Triton) holds at once, besides
# its bf16 tile buffer (8.19 fp32-tile equivalents in all, measured; see the module docstring)
FUSED_HEAD_FALLBACK_FP32_TILES = 8


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU memory in GiB (``kv_cache_sequences``: how many full-length sequences vLLM's
    KV cache holds at once; ``fits``: the peak fits the GPU and vLLM can hold one sequence)."""

    weights: float
    gradients: float
    optimizer: float
    gathered_layer: float
    reference: float
    autocast_weights: float
    activations: float
    lm_head: float
    episode_states: float
    generation_cache: float
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
    if job.mixed_precision:
        layer_bytes, checkpoint_bytes = (
            shape.mixed_layer_activation_bytes_per_token(),
            shape.mixed_checkpoint_bytes_per_token(),
        )
        final_norm = 8 * shape.hidden + 12
    else:
        layer_bytes, checkpoint_bytes = (
            shape.layer_activation_bytes_per_token(),
            shape.checkpoint_bytes_per_token(),
        )
        final_norm = 6 * shape.hidden + 12
    per_layer = tokens * layer_bytes + eager
    if job.gradient_checkpointing:  # layer inputs + one layer recomputed, with its gradients
        return tokens * checkpoint_bytes + 2 * per_layer
    return shape.layers * per_layer + tokens * final_norm


def _autocast_weight_bytes(job: JobShape) -> float:
    """bf16 copies of the linear weights that autocast caches during a forward (fp32 weights)."""
    return 2 * job.shape.linear_params() if job.mixed_precision else 0.0


def _fused_head_bytes(job: JobShape) -> float:
    """TRL's chunked log-prob head: the logits tiles of the torch fallback (which scores every
    position; with Triton only one bf16 tile is live, less), the saved hidden copy and per-token
    statistics, the fp32 gradient of the hidden states, the fp32 gradient of the head weight
    and its copy."""
    shape, tokens = job.shape, job.per_device_batch * job.sequence_length
    tile = min(FUSED_HEAD_TILE[0], tokens) * min(FUSED_HEAD_TILE[1], shape.vocab)
    tiles = tile * (4 * FUSED_HEAD_FALLBACK_FP32_TILES + 2)
    return tiles + tokens * (6 * shape.hidden + 16) + 6 * shape.vocab * shape.hidden


def _generation_cache_bytes(job: JobShape) -> float:
    """The transformers backend's KV cache of one generation batch (bf16; a layer's old and new
    copies while it grows) and its float32 last-position logits and scores."""
    if job.use_vllm:
        return 0.0
    shape, rows = job.shape, job.generation_batch_per_device
    cache = rows * job.sequence_length * shape.kv_cache_bytes_per_token()
    return cache * (1 + 1 / shape.layers) + 2 * rows * shape.vocab * 4


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
    cast = _autocast_weight_bytes(job)
    generation_cache = _generation_cache_bytes(job)

    resident = sum(states.values()) + reference + runtime
    generation = resident + (vllm_reserved if job.use_vllm else generation_cache + cast)
    scoring = (
        resident + vllm_awake_in_training + episode_states + no_grad_micro_batch + cast + lm_head
    )
    training = resident + vllm_awake_in_training + cast + activations + lm_head
    peak = max(generation, scoring, training)
    fits = peak <= job.gpu_memory_gib * GIB and (kv_sequences >= 1 or not job.use_vllm)
    return MemoryEstimate(
        **{k: v / GIB for k, v in states.items()},
        reference=reference / GIB,
        autocast_weights=cast / GIB,
        activations=activations / GIB,
        lm_head=lm_head / GIB,
        episode_states=episode_states / GIB,
        generation_cache=generation_cache / GIB,
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
    model: ModelShape | str,
    trainer: Mapping,
    *,
    num_processes: int,
    zero_stage: int,
    prompt_length: int,
    keeps_episode_states: bool = True,
    gpu_memory_gib: float = GPU_80GB_GIB,
) -> JobShape:
    """A job from a model's shape (or a Hub id of :data:`MODEL_SHAPES`) and a resolved trainer
    mapping (GRPOConfig field names; the vLLM ones default as in TRL 1.16). Raises ValueError
    naming a missing key."""
    if not isinstance(model, ModelShape) and model not in MODEL_SHAPES:
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
        shape=model if isinstance(model, ModelShape) else MODEL_SHAPES[model],
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
