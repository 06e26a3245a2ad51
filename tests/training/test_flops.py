"""benchmarks/_flops.py, the FLOP count of benchmarks/training/flops.py: by hand on a toy shape,
and against torch's own FLOP counter on a tiny Llama."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest
import torch

from gc2po.workflow.job_shape import ModelShape

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("flops", ROOT / "benchmarks" / "_flops.py")
flops = importlib.util.module_from_spec(spec)
spec.loader.exec_module(flops)

# hidden 4, 1 layer, 2 heads, MLP 8, vocab 10: q, k, v, o 4 x 4 each, gate and up 4 x 8, down 8 x 4
TOY = ModelShape(
    hidden=4,
    layers=1,
    heads=2,
    kv_heads=2,
    intermediate=8,
    vocab=10,
    tied_embeddings=True,
    qkv_bias=False,
)


def test_the_toy_shapes_count_by_hand():
    assert flops.layer_weights(TOY) == 4 * 16 + 3 * 32  # 160
    # 3 tokens attending to 1 + 2 + 3 positions, logits on all 3:
    # 2 x 160 x 3 (projections) + 4 x 4 x 6 (attention) + 2 x 4 x 10 x 3 (head)
    assert flops.forward_flops(TOY, 3, 6, 3) == 960 + 96 + 240
    assert flops.sequence_flops(TOY, [(3, 3)], backward=False) == 1296
    assert flops.sequence_flops(TOY, [(3, 2)], backward=True) == 3 * (1296 - 80)
    # a 2-token prompt prefilled once (attending 1 + 2, one logit): 640 + 48 + 80; its rows
    # decode 3 tokens (2 forwards at positions 3 and 4: 640 + 4 x 4 x 7 + 160) and 1 (none)
    assert flops.generation_flops(TOY, [2], [(2, 3), (2, 1)]) == 768 + 912


def test_grouped_query_attention_shrinks_k_and_v():
    gqa = dataclasses.replace(TOY, kv_heads=1)
    assert flops.layer_weights(gqa) == 16 + 8 + 8 + 16 + 3 * 32


def test_the_matmuls_run_carry_the_forward_count_and_twice_it_backward():
    rows = 7
    forward = 2 * (TOY.layers * flops.layer_weights(TOY) + TOY.hidden * TOY.vocab) * rows
    assert flops.matmul_flops(flops.linear_matmuls(TOY, rows, rows, False)) == forward
    assert flops.matmul_flops(flops.linear_matmuls(TOY, rows, rows, True)) == 3 * forward


@pytest.mark.parametrize("backward", [False, True])
def test_the_count_is_torchs_own_on_a_tiny_llama(backward):
    """Eager attention computes the whole [T x T] score matrix, so T x T positions attended;
    torch counts the matmuls (mm, bmm) only, as the script does; the rotary embedding's tiny
    outer product (no gradient) is left out."""
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=20, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, intermediate_size=16, max_position_embeddings=16,
    )  # fmt: skip
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    tokens = 5
    ids = torch.arange(tokens)[None]
    with FlopCounterMode(display=False) as counter:
        out = model(input_ids=ids, labels=ids)
        if backward:
            out.loss.backward()
    counts = counter.get_flop_counts()
    rotary = sum(counts.get("LlamaForCausalLM.model.rotary_emb", {}).values())
    expected = flops.forward_flops(flops.shape_of(config), tokens, tokens * tokens, tokens)
    assert counter.get_total_flops() - rotary == (3 * expected if backward else expected)
