"""FLOPs of a Llama-style decoder's work, counted from its shape and the real token counts
(``training/limits.py`` prints them beside the time the work took); 2 FLOPs per multiply-add.

What is counted:

- per token through the decoder: each layer's q, k, v, o, gate, up and down projections
  (2 x their weights) and attention's two products (4 x hidden x the positions the token
  attends to, itself included);
- the LM head (2 x hidden x vocab) only where a logit is used: the SFT step's completion tokens
  (the loss's positions), a prompt's last token and every decoded token but the last in
  generation, the completion tokens in the RL loss;
- a backward pass as twice its forward (forward + backward = 3 x forward);
- generation: each distinct prompt once (the sampler prefills it once for its rows), then every
  completion token but the last through the decoder with its cache.

Not counted: padding, embeddings, norms, activations, softmax, sampling, the reward and the
optimizer (their time is in a step's). ``linear_matmuls`` lists
instead the linear layers' matmuls a work really runs (padded rows included), the shapes at which
``training/limits.py`` times torch's matmul.
"""

from __future__ import annotations

from collections import Counter

from gc2po.workflow.job_shape import ModelShape


def shape_of(config) -> ModelShape:
    """The decoder's shape from a transformers config (``LlamaConfig``, ``Qwen2Config``)."""
    return ModelShape(
        hidden=config.hidden_size,
        layers=config.num_hidden_layers,
        heads=config.num_attention_heads,
        kv_heads=config.num_key_value_heads,
        intermediate=config.intermediate_size,
        vocab=config.vocab_size,
        tied_embeddings=config.tie_word_embeddings,
        qkv_bias=bool(getattr(config, "attention_bias", False)),
    )


def linears(shape: ModelShape) -> list[tuple[int, int]]:
    """(in, out) of one layer's projections: q, k, v, o, gate, up, down."""
    h, kv, i = shape.hidden, shape.kv_dim, shape.intermediate
    return [(h, h), (h, kv), (h, kv), (h, h), (h, i), (h, i), (i, h)]


def layer_weights(shape: ModelShape) -> int:
    """Multiply-adds per token of one layer's projections (their weights, biases apart)."""
    return sum(a * b for a, b in linears(shape))


def forward_flops(shape: ModelShape, tokens: int, attended: int, logits: int) -> int:
    """One forward pass over ``tokens`` tokens that attend to ``attended`` positions in all
    (each its own included), with the LM head on ``logits`` of them."""
    per_layer = 2 * layer_weights(shape) * tokens + 4 * shape.hidden * attended
    return shape.layers * per_layer + 2 * shape.hidden * shape.vocab * logits


def triangle(n: int) -> int:
    """Positions attended by the n tokens of one causal sequence: 1 + 2 + ... + n."""
    return n * (n + 1) // 2


def sequence_flops(shape: ModelShape, rows: list[tuple[int, int]], backward: bool) -> int:
    """Training forward (x 3 with ``backward``) over ``rows`` of (real tokens, tokens whose
    logit the loss reads)."""
    forward = sum(forward_flops(shape, n, triangle(n), k) for n, k in rows)
    return 3 * forward if backward else forward


def generation_flops(shape: ModelShape, prompts: list[int], rows: list[tuple[int, int]]) -> int:
    """Sampling: each distinct prompt of ``prompts`` (real lengths) prefilled once with one
    logit; each row of ``rows`` (prompt length, completion tokens incl. EOS) decodes every
    completion token but the last, attending to the prompt and the tokens before it."""
    prefill = sum(forward_flops(shape, p, triangle(p), 1) for p in prompts)
    decode = 0
    for p, c in rows:
        steps = max(0, c - 1)
        decode += forward_flops(shape, steps, triangle(p + steps) - triangle(p), steps)
    return prefill + decode


def linear_matmuls(shape: ModelShape, rows: int, logit_rows: int, backward: bool) -> Counter:
    """{(kind, m, k, n): count} of the linear layers' matmuls of one forward over ``rows`` rows
    (``logit_rows`` through the head); with ``backward`` also each layer's input-gradient and
    weight-gradient matmuls. kind: ``fwd`` [m x k] x [k x n], ``dgrad`` [m x n] x [n x k],
    ``wgrad`` [n x m] x [m x k]."""
    counts = Counter()
    kinds = ("fwd", "dgrad", "wgrad") if backward else ("fwd",)
    for k, n in linears(shape):
        for kind in kinds:
            counts[(kind, rows, k, n)] += shape.layers
    if logit_rows:
        for kind in kinds:
            counts[(kind, logit_rows, shape.hidden, shape.vocab)] += 1
    return counts


def matmul_flops(matmuls: Counter) -> int:
    return sum(2 * m * k * n * count for (_, m, k, n), count in matmuls.items())
