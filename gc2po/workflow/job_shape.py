"""What the memory plan of a training job (``gc2po.workflow.memory``) is computed from: the
model's shape (:class:`ModelShape`, a Qwen2/Llama-style decoder: parameter counts, KV-cache and
saved-activation bytes per token; the paper's policies by Hub id in :data:`MODEL_SHAPES`) and the
job's settings (:class:`JobShape`, checked when built)."""

from __future__ import annotations

from dataclasses import dataclass

GPU_80GB_GIB = 79.0  # an 80 GB H100/A100 shows ~79.2-79.6 GiB to CUDA; a little is the driver's
ATTENTION = ("sdpa", "flash_attention_2", "flash_attention_3", "eager")


@dataclass(frozen=True)
class ModelShape:
    """A Qwen2/Llama-style decoder (RMSNorm, GQA attention, SwiGLU MLP)."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    qkv_bias: bool = True  # Qwen2 has q/k/v biases, Llama does not

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.hidden // self.heads

    def layer_params(self) -> int:
        h, kv = self.hidden, self.kv_dim
        attention = 2 * h * h + 2 * h * kv + (h + 2 * kv if self.qkv_bias else 0)
        return attention + 3 * h * self.intermediate + 2 * h  # + two RMSNorm weights

    def num_params(self) -> int:
        embeddings = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return self.layers * self.layer_params() + embeddings + self.hidden

    def largest_module_params(self) -> int:
        """Parameters of the largest single module (what ZeRO-3 gathers at once)."""
        return max(
            self.vocab * self.hidden, self.hidden * self.intermediate, self.hidden * self.hidden
        )

    def kv_cache_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_dim * 2  # K and V, bf16

    def layer_activation_bytes_per_token(self) -> int:
        """Saved for backward by one decoder layer (bf16, SDPA): 4 SwiGLU intermediates, 6 bf16
        and 2 fp32 (RMSNorm upcasts) hidden-sized tensors, K and V, attention log-sum-exp."""
        return 8 * self.intermediate + 20 * self.hidden + 4 * self.kv_dim + 4 * self.heads + 8

    def checkpoint_bytes_per_token(self) -> int:
        """Saved with gradient checkpointing: each layer's bf16 input, the final norm's input
        (bf16 and its fp32 copy), its rstd and the token id."""
        return self.layers * 2 * self.hidden + 6 * self.hidden + 12

    def mixed_layer_activation_bytes_per_token(self) -> int:
        """:meth:`layer_activation_bytes_per_token` for fp32 weights under bf16 autocast
        (``bf16-mixed``): the residual stream and the RMSNorm outputs stay fp32, 10 more bytes per
        hidden unit (measured on transformers' Qwen2 under CPU autocast, tests/scale)."""
        return self.layer_activation_bytes_per_token() + 10 * self.hidden

    def mixed_checkpoint_bytes_per_token(self) -> int:
        """:meth:`checkpoint_bytes_per_token` under ``bf16-mixed``: each layer's input is fp32
        (4 bytes per hidden unit), the final norm keeps its fp32 input, output and rstd."""
        return self.layers * 4 * self.hidden + 8 * self.hidden + 12

    def linear_params(self) -> int:
        """Parameters that pass through ``F.linear`` (every projection, q/k/v biases, the LM
        head; a tied head is the embedding matrix again): what bf16 autocast casts."""
        return self.layers * (self.layer_params() - 2 * self.hidden) + self.vocab * self.hidden


# Shapes of the paper's policies (config.json of each Hub model; read in stored public sources:
# R1-Distill-Qwen-1.5B's Qwen2Config dump and, for both 7B models, the unpruned module shapes in
# VainF/Torch-Pruning examples/LLMs/readme.md; Qwen2.5-7B-Instruct also in volcengine/verl
# tests/utils/test_flops_counter.py). DeepScaleR-1.5B-Preview is fine-tuned from
# R1-Distill-Qwen-1.5B, which is Qwen2.5-Math-1.5B's shape; R1-Distill-Qwen-7B is Qwen2.5-Math-7B's.
QWEN25_MATH_1_5B = ModelShape(
    hidden=1536,
    layers=28,
    heads=12,
    kv_heads=2,
    intermediate=8960,
    vocab=151936,
    tied_embeddings=False,
)


QWEN25_7B = ModelShape(
    hidden=3584,
    layers=28,
    heads=28,
    kv_heads=4,
    intermediate=18944,
    vocab=152064,
    tied_embeddings=False,
)


MODEL_SHAPES: dict[str, ModelShape] = {
    "agentica-org/DeepScaleR-1.5B-Preview": QWEN25_MATH_1_5B,
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": QWEN25_MATH_1_5B,
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": QWEN25_7B,  # Qwen2.5-Math-7B shape
    "Qwen/Qwen2.5-7B-Instruct": QWEN25_7B,
}


@dataclass(frozen=True)
class JobShape:
    """One training job: a model on ``num_processes`` GPUs and the trainer settings that size it."""

    shape: ModelShape
    num_processes: int
    zero_stage: int  # 0: no ZeRO (one process or DDP, fp32 weights); 1-3: DeepSpeed ZeRO, bf16
    per_device_batch: int
    gradient_accumulation: int
    prompt_length: int  # longest prompt, tokens
    completion_length: int  # max_completion_length
    beta: float = 0.0  # > 0: a reference model
    gradient_checkpointing: bool = True
    attn_implementation: str = "sdpa"
    keeps_episode_states: bool = True  # GC2PO keeps final-norm states of a generation batch
    steps_per_generation: int | None = None  # TRL's default: gradient_accumulation
    use_vllm: bool = False
    vllm_gpu_memory_utilization: float = 0.3
    vllm_max_model_length: int | None = None  # None: prompt_length + completion_length
    vllm_sleep_mode: bool = False
    gpu_memory_gib: float = GPU_80GB_GIB

    def __post_init__(self):
        for name in (
            "num_processes",
            "per_device_batch",
            "gradient_accumulation",
            "prompt_length",
            "completion_length",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if self.zero_stage not in (0, 1, 2, 3):
            raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {self.zero_stage!r}")
        if self.attn_implementation not in ATTENTION:
            raise ValueError(
                f"attn_implementation must be one of {list(ATTENTION)}, got "
                f"{self.attn_implementation!r}"
            )
        if not 0 < self.vllm_gpu_memory_utilization < 1:
            raise ValueError(
                "vllm_gpu_memory_utilization must be in (0, 1), got "
                f"{self.vllm_gpu_memory_utilization!r}"
            )
        if (
            self.use_vllm
            and self.vllm_max_model_length is not None
            and self.vllm_max_model_length < self.sequence_length
        ):
            raise ValueError(
                f"vllm_max_model_length {self.vllm_max_model_length} < "
                f"prompt_length + completion_length = {self.sequence_length}: "
                "vLLM would refuse the longest requests"
            )
        if self.steps_per_generation is not None and self.steps_per_generation < 1:
            raise ValueError(
                f"steps_per_generation must be >= 1, got {self.steps_per_generation!r}"
            )
        if not (self.beta >= 0 and self.gpu_memory_gib > 0):
            raise ValueError(
                f"beta must be >= 0 and gpu_memory_gib > 0, got {self.beta!r}, "
                f"{self.gpu_memory_gib!r}"
            )

    @property
    def mixed_precision(self) -> bool:
        """fp32 weights trained under bf16 autocast: how a job without ZeRO runs (``bf16-mixed``);
        DeepSpeed's bf16 keeps the weights themselves in bf16."""
        return self.zero_stage == 0

    @property
    def sequence_length(self) -> int:
        return self.prompt_length + self.completion_length

    @property
    def sequences_per_step(self) -> int:
        return self.num_processes * self.per_device_batch * self.gradient_accumulation

    @property
    def generation_batch_per_device(self) -> int:
        return self.per_device_batch * (self.steps_per_generation or self.gradient_accumulation)
