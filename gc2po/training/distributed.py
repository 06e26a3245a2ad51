"""What crosses processes: full output-projection weights on every rank, whatever engine
shards them, and rows of different counts gathered from every process.

Under DeepSpeed ZeRO-3 each rank holds 1/N of every parameter: outside its module's forward,
``lm_head.weight`` has zero elements (its real shape is in ``ds_shape``). The counterfactual
reward multiplies episode states by that weight directly, so it must gather it first, the way
TRL's ``maybe_gather_lm_head_ctx`` does for its fused log-prob head. Everywhere else (one
process, DDP, ZeRO-1/2) the parameter is already whole and is used as is.

No trl import; deepspeed is imported only when a parameter is actually ZeRO-3 partitioned.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn


def is_zero3_param(param: torch.Tensor | None) -> bool:
    """True when DeepSpeed ZeRO-3 partitioned this parameter (it carries ``ds_id``)."""
    return param is not None and hasattr(param, "ds_id")


def _needs_gather(param: torch.Tensor | None) -> bool:
    # A parameter already AVAILABLE is whole on this rank (e.g. a tied lm_head inside the
    # embedding's forward); gathering it again and releasing it on exit would re-partition it
    # under the module that is still using it.
    return is_zero3_param(param) and getattr(param.ds_status, "name", None) != "AVAILABLE"


def _output_projection(model: nn.Module) -> nn.Module:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else model
    if head is None or not isinstance(getattr(head, "weight", None), torch.Tensor):
        raise ValueError(f"{type(model).__name__} has no output projection with a weight (lm_head)")
    return head


@contextmanager
def gathered_lm_head(model: nn.Module) -> Iterator[tuple[torch.Tensor, torch.Tensor | None]]:
    """Yield ``(weight [V, d], bias [V] | None)`` of the model's output projection, whole.

    Under ZeRO-3 the weight (and bias) are gathered with
    ``deepspeed.zero.GatheredParameters(..., modifier_rank=None)`` (read-only, every rank gets
    the full tensors) and re-partitioned on exit. This is a collective: every rank must enter
    it, also a rank with nothing to score, or the others wait forever. Tied embeddings
    (lm_head.weight is embed_tokens.weight) are one parameter and are gathered once.
    Use the tensors only inside the ``with`` block.

    Args:
        model: the unwrapped model (``accelerator.unwrap_model``), or the projection module.
    """
    head = _output_projection(model)
    weight, bias = head.weight, getattr(head, "bias", None)
    unique = {id(p): p for p in (weight, bias) if _needs_gather(p)}
    if not unique:
        yield weight, bias
        return
    import deepspeed

    with deepspeed.zero.GatheredParameters(list(unique.values()), modifier_rank=None):
        yield weight, bias


def gather_keyed_rows(accelerator, key, values):
    """Concatenate every process's (key [E], values [E, d]); E may differ between processes.
    Keys must be >= 0 (-1 marks the padding that is dropped)."""
    if accelerator.num_processes == 1:
        return key, values
    all_key = accelerator.gather(accelerator.pad_across_processes(key, dim=0, pad_index=-1))
    all_values = accelerator.gather(accelerator.pad_across_processes(values, dim=0))
    keep = all_key >= 0
    return all_key[keep], all_values[keep]
