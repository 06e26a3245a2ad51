"""gc2po.workflow.memory: hand-computed cases, DeepSpeed's own estimators, transformers' real Qwen2
(parameter count and saved activations), monotonicity, and the paper plan on 80 GB GPUs."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch

from gc2po.workflow.job_shape import (
    MODEL_SHAPES,
    QWEN25_7B,
    QWEN25_MATH_1_5B,
    JobShape,
    ModelShape,
)
from gc2po.workflow.memory import GIB, estimate_memory, job_from_trainer

PAPER = dict(
    prompt_length=1024,
    completion_length=16384,
    beta=0.04,
    use_vllm=True,
    vllm_max_model_length=17408,
)
# Proposed for config/paper.yaml (one launcher for every job): 8 processes x 1 x 32 = 256 sequences
# per optimizer step, DeepSpeed ZeRO-3, colocated vLLM at 0.6 of the GPU, asleep while training.
PROPOSED = dict(
    num_processes=8,
    zero_stage=3,
    per_device_batch=1,
    gradient_accumulation=32,
    vllm_gpu_memory_utilization=0.6,
    vllm_sleep_mode=True,
    gradient_checkpointing=True,
    **PAPER,
)
PAPER_MODELS = {
    "DeepScaleR-1.5B": "agentica-org/DeepScaleR-1.5B-Preview",
    "R1-Distill-Qwen-1.5B": "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
    "R1-Distill-Qwen-7B": "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
    "Qwen2.5-7B-Instruct": "Qwen/Qwen2.5-7B-Instruct",
}


def job(shape=QWEN25_7B, **overrides) -> JobShape:
    return JobShape(shape=shape, **{**PROPOSED, **overrides})


# --- hand-computed --------------------------------------------------------------------------


def test_parameter_counts_by_hand():
    # 28 x (2*1536^2 + 2*1536*256 + (1536 + 512) + 3*1536*8960 + 2*1536) + 2*151936*1536 + 1536
    assert QWEN25_MATH_1_5B.num_params() == 1_777_088_000
    # 28 x (2*3584^2 + 2*3584*512 + 4608 + 3*3584*18944 + 7168) + 2*152064*3584 + 3584
    assert QWEN25_7B.num_params() == 7_615_616_512


def test_one_billion_parameters_fp32_adam_by_hand():
    """A 1,000,000,000-parameter stand-in (1 layer, no embeddings to speak of): ZeRO-2 on one GPU
    holds 2 + 18 bytes per parameter; the fp32 master weights and Adam m, v alone are 12 GB."""
    shape = ModelShape(
        hidden=1,
        layers=1,
        heads=1,
        kv_heads=1,
        intermediate=333_333_330,
        vocab=3,
        tied_embeddings=True,
        qkv_bias=False,
    )
    assert shape.num_params() == 1_000_000_000
    estimate = estimate_memory(job(shape, num_processes=1, zero_stage=2, beta=0.0, use_vllm=False))
    assert estimate.optimizer * GIB == pytest.approx(12e9)
    assert estimate.weights * GIB == pytest.approx(
        2e9
    ) and estimate.gradients * GIB == pytest.approx(6e9)


def test_zero3_partitions_by_hand():
    estimate = estimate_memory(job(QWEN25_7B))  # 8 processes
    p = 7_615_616_512
    assert estimate.weights * GIB == pytest.approx(2 * p / 8)
    assert estimate.optimizer * GIB == pytest.approx(12 * p / 8)
    assert estimate.gathered_layer * GIB == pytest.approx(4 * 152064 * 3584)  # the embedding
    assert estimate.reference * GIB == pytest.approx(2 * p / 8)  # TRL shards it under ZeRO-3
    replicated = estimate_memory(job(QWEN25_7B, zero_stage=2))
    assert replicated.reference * GIB == pytest.approx(2 * p)  # and replicates it otherwise


def test_vllm_kv_cache_by_hand():
    estimate = estimate_memory(job(QWEN25_7B, vllm_gpu_memory_utilization=0.5, gpu_memory_gib=80.0))
    kv = 0.5 * 80 * GIB - 2 * 7_615_616_512 - 2.0 * GIB
    assert estimate.vllm_kv_cache * GIB == pytest.approx(kv)
    assert estimate.kv_cache_sequences == int(kv // (17408 * 2 * 28 * 512 * 2))


# --- other people's numbers -----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODEL_SHAPES))
def test_shapes_match_transformers_qwen2(name):
    """Parameter count and largest module of transformers' Qwen2 built on the meta device,
    counted by DeepSpeed's own model_to_params when deepspeed is installed."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    shape = MODEL_SHAPES[name]
    config = Qwen2Config(
        hidden_size=shape.hidden,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        intermediate_size=shape.intermediate,
        vocab_size=shape.vocab,
        tie_word_embeddings=shape.tied_embeddings,
    )
    with torch.device("meta"):
        model = Qwen2ForCausalLM(config)
    total = sum(p.numel() for p in model.parameters())
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
    assert (total, largest) == (shape.num_params(), shape.largest_module_params())


@pytest.mark.parametrize("stage", [2, 3])
@pytest.mark.parametrize("processes", [1, 4, 8, 16])
@pytest.mark.parametrize("shape", [QWEN25_MATH_1_5B, QWEN25_7B], ids=["1.5B", "7B"])
def test_model_states_equal_deepspeed_estimators(stage, processes, shape):
    pytest.importorskip("deepspeed", reason="the cross-check needs DeepSpeed's estimator functions")
    if stage == 2:
        from deepspeed.runtime.zero.stage_1_and_2 import (
            estimate_zero2_model_states_mem_needs as ds_estimate,
        )

        _, expected = ds_estimate(
            shape.num_params(), num_gpus_per_node=processes, cpu_offload=False
        )
    else:
        from deepspeed.runtime.zero.stage3 import (
            estimate_zero3_model_states_mem_needs as ds_estimate,
        )

        _, expected, _ = ds_estimate(
            shape.num_params(),
            shape.largest_module_params(),
            num_gpus_per_node=processes,
            cpu_offload=False,
        )
    estimate = estimate_memory(job(shape, num_processes=processes, zero_stage=stage))
    ours = (
        estimate.weights + estimate.gradients + estimate.optimizer + estimate.gathered_layer
    ) * GIB
    assert ours == pytest.approx(expected, abs=2)  # DeepSpeed truncates to int


def saved_activation_bytes(model, input_ids) -> int:
    """Bytes autograd keeps for backward (parameters excluded), counted once per storage."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model.model(input_ids=input_ids, use_cache=False)
    return sum(seen.values())


def qwen2_of(shape: ModelShape, layers: int):
    """A seeded fp32 transformers Qwen2 of ``shape`` with ``layers`` layers (sdpa attention)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        hidden_size=shape.hidden,
        num_hidden_layers=layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        intermediate_size=shape.intermediate,
        vocab_size=shape.vocab,
        attn_implementation="sdpa",
    )
    return Qwen2ForCausalLM(config)


def test_activation_bytes_match_transformers_qwen2():
    """The per-layer and checkpointed bytes per token, measured on transformers' Qwen2 in bf16
    with SDPA (the numbers the plan multiplies by tokens and layers)."""

    shape = ModelShape(
        hidden=128,
        layers=3,
        heads=4,
        kv_heads=2,
        intermediate=352,
        vocab=300,
        tied_embeddings=False,
    )
    tokens = 80

    def build(layers):
        return qwen2_of(shape, layers).to(torch.bfloat16)

    ids = torch.randint(0, shape.vocab, (1, tokens), generator=torch.Generator().manual_seed(0))
    one, three = build(1), build(3)
    per_layer = (saved_activation_bytes(three, ids) - saved_activation_bytes(one, ids)) / 2
    assert per_layer == tokens * shape.layer_activation_bytes_per_token()
    three.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    three.train()
    assert saved_activation_bytes(three, ids) == tokens * shape.checkpoint_bytes_per_token()


def test_bf16_mixed_activation_and_cast_weight_bytes_match_transformers_qwen2():
    """fp32 weights under bf16 autocast (``bf16-mixed``), on CPU: the per-token bytes of a layer
    (the difference of two token counts), the per-layer constant (autocast's bf16 copies of the
    linear weights) and the checkpointed bytes per token, as the plan counts them."""

    shape = ModelShape(
        hidden=128,
        layers=3,
        heads=4,
        kv_heads=2,
        intermediate=352,
        vocab=300,
        tied_embeddings=False,
    )

    def build(layers):
        return qwen2_of(shape, layers)  # fp32

    def saved(model, tokens):
        ids = torch.randint(0, shape.vocab, (1, tokens), generator=torch.Generator().manual_seed(0))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return saved_activation_bytes(model, ids)

    one, three = build(1), build(3)
    per_layer = {t: (saved(three, t) - saved(one, t)) / 2 for t in (80, 160)}
    assert (per_layer[160] - per_layer[80]) / 80 == shape.mixed_layer_activation_bytes_per_token()
    layer_linear = shape.layer_params() - 2 * shape.hidden  # projections and q/k/v biases
    biases = shape.hidden + 2 * shape.kv_dim  # cast and cached, but not saved for backward
    constant = per_layer[80] - 80 * shape.mixed_layer_activation_bytes_per_token()
    assert constant == 2 * (layer_linear - biases)
    assert shape.linear_params() == 3 * layer_linear + shape.vocab * shape.hidden
    three.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    three.train()
    assert saved(three, 80) == 80 * shape.mixed_checkpoint_bytes_per_token()


# the CPU memory timeline has no replacement yet (the one torch names is CUDA's snapshot)
@pytest.mark.filterwarnings("ignore:`export_memory_timeline` is deprecated:FutureWarning")
def test_fused_head_fallback_holds_at_most_the_planned_tiles():
    """TRL's chunked log-prob head without Triton (the torch fallback, as on CPU): the peak of
    its forward + backward, from torch's memory profiler, fits the tiles the plan counts
    (FUSED_HEAD_FALLBACK_FP32_TILES fp32 tiles and one bf16 tile) and exceeds one less."""
    import json

    from torch.profiler import ProfilerActivity, profile
    from trl.kernels.chunked_logprob import ChunkedLogProbFunction

    from gc2po.workflow.memory import FUSED_HEAD_FALLBACK_FP32_TILES

    tokens, hidden, vocab = 256, 16, 32768  # one tile of 256 x 32768
    generator = torch.Generator().manual_seed(0)
    states = torch.randn(tokens, hidden, generator=generator, requires_grad=True)
    weight = torch.randn(vocab, hidden, generator=generator, requires_grad=True)
    labels = torch.randint(0, vocab, (tokens,), generator=generator)

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logps, *_ = ChunkedLogProbFunction.apply(
                states, weight, None, labels, 1.0, 32768, None, 1.0, ("log_probs", "entropy")
            )
        logps.sum().backward()

    step()
    with profile(
        activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True
    ) as prof:
        step()
    path = Path(tempfile.mkdtemp()) / "timeline.json"
    prof.export_memory_timeline(str(path), device="cpu")
    _, sizes = json.loads(path.read_text())
    peak = max(sum(s) for s in sizes)
    tile = tokens * vocab
    assert (4 * (FUSED_HEAD_FALLBACK_FP32_TILES - 1) + 2) * tile < peak
    assert peak <= (4 * FUSED_HEAD_FALLBACK_FP32_TILES + 2) * tile


# --- monotonicity ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, small, large, phase",
    [
        ("per_device_batch", 1, 2, "training_peak"),
        ("completion_length", 4096, 16384, "training_peak"),
        ("gradient_checkpointing", True, False, "training_peak"),
        ("attn_implementation", "sdpa", "eager", "training_peak"),
        ("keeps_episode_states", False, True, "scoring_peak"),
        ("beta", 0.0, 0.04, "generation_peak"),
        ("vllm_gpu_memory_utilization", 0.3, 0.6, "generation_peak"),
    ],
)
def test_memory_grows_with(field, small, large, phase):
    lower, higher = (
        estimate_memory(job(**{"vllm_max_model_length": None, field: v})) for v in (small, large)
    )
    assert getattr(lower, phase) < getattr(higher, phase)
    assert lower.peak <= higher.peak


def test_more_processes_shrink_zero3_states_and_sleep_frees_vllm_while_training():
    four, eight = estimate_memory(job(num_processes=4)), estimate_memory(job(num_processes=8))
    assert eight.optimizer < four.optimizer and eight.weights < four.weights
    awake = estimate_memory(job(vllm_sleep_mode=False))
    asleep = estimate_memory(job(vllm_sleep_mode=True))
    assert asleep.training_peak == pytest.approx(awake.training_peak - awake.vllm_reserved)
    assert asleep.generation_peak == awake.generation_peak


def test_bad_job_settings_are_named():
    with pytest.raises(ValueError, match="per_device_batch must be an int >= 1"):
        job(per_device_batch=0)
    with pytest.raises(ValueError, match="zero_stage must be 0, 1, 2 or 3"):
        job(zero_stage=4)
    with pytest.raises(ValueError, match="vllm_max_model_length 16384 < prompt_length"):
        job(vllm_max_model_length=16384)
    with pytest.raises(ValueError, match="vllm_gpu_memory_utilization must be in"):
        job(vllm_gpu_memory_utilization=1.2)


# --- the paper on 80 GB ---------------------------------------------------------------------


def test_issue_example_does_not_fit_one_gpu():
    """The issue's diagnosis: a 7B policy on one process, 32 x 16k tokens per device."""
    estimate = estimate_memory(
        job(
            num_processes=1,
            zero_stage=0,
            per_device_batch=32,
            gradient_accumulation=1,
            vllm_gpu_memory_utilization=0.3,
            vllm_sleep_mode=False,
        )
    )
    assert not estimate.fits and estimate.weights + estimate.gradients + estimate.optimizer > 100


def test_every_paper_job_fits_80gb_with_256_sequences_per_step():
    jobs = {name: job(MODEL_SHAPES[hub_id]) for name, hub_id in PAPER_MODELS.items()}
    for name, planned in jobs.items():
        estimate = estimate_memory(planned)
        assert planned.sequences_per_step == 256, name
        assert estimate.fits and estimate.peak <= 79.0, (name, estimate)
        assert estimate.kv_cache_sequences >= 32, name  # a device's 32 rollouts at once in vLLM


def test_job_from_trainer_reads_grpo_config_names():
    trainer = {
        "per_device_train_batch_size": 1,
        "gradient_accumulation_steps": 32,
        "max_completion_length": 16384,
        "beta": 0.04,
        "gradient_checkpointing": True,
        "use_vllm": True,
        "vllm_gpu_memory_utilization": 0.6,
        "vllm_max_model_length": 17408,
        "vllm_enable_sleep_mode": True,
        "model_init_kwargs": {"attn_implementation": "flash_attention_2"},
    }
    built = job_from_trainer(
        "Qwen/Qwen2.5-7B-Instruct", trainer, num_processes=8, zero_stage=3, prompt_length=1024
    )
    assert built == job(QWEN25_7B, attn_implementation="flash_attention_2")
    with pytest.raises(ValueError, match=r"^trainer\.beta: missing"):
        job_from_trainer(
            "Qwen/Qwen2.5-7B-Instruct",
            {k: v for k, v in trainer.items() if k != "beta"},
            num_processes=8,
            zero_stage=3,
            prompt_length=1024,
        )
    with pytest.raises(ValueError, match="model 'org/unknown' has no shape"):
        job_from_trainer("org/unknown", trainer, num_processes=8, zero_stage=3, prompt_length=1024)


def test_current_paper_batch_layout_does_not_fit():
    """config/paper.yaml before this plan: 32 sequences of 17k tokens per device and step."""
    estimate = estimate_memory(
        job(
            per_device_batch=32,
            gradient_accumulation=1,
            vllm_sleep_mode=False,
            vllm_gpu_memory_utilization=0.3,
            vllm_max_model_length=None,
        )
    )
    assert not estimate.fits and estimate.activations > 79
