"""Sampling K completions per prompt with transformers, at less cost than ``generate`` on a small
model: the same tokens and the same random-number stream, less work.

TRL's transformers path calls ``model.generate`` on B = prompts x K left-padded rows in which the
K copies of a prompt are consecutive. Two costs there buy nothing (measured in
``benchmarks/training/step_time.py``): the prompt is prefilled K times, and every decode step runs
all B rows until the longest completion ends, finished rows included. ``sample_completions``
prefills each distinct prompt once and copies its KV cache to its K rows, and runs the model on
the unfinished rows only. Everything a sampled token depends on is computed as ``generate`` computes
it: the same forward call per row (a row's result does not depend on the rows beside it, which
the tests check against ``generate`` itself), the same logits processors, and one
``torch.multinomial`` over all B rows per step (finished rows get placeholder probabilities and
their token is replaced by the pad token, as ``generate`` does), so the generator advances
exactly as it does in ``generate``.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.generation.logits_process import LogitsProcessorList, TemperatureLogitsWarper

# processors that act on each row's scores alone (``generate`` builds them from the config)
ROW_WISE_PROCESSORS = (TemperatureLogitsWarper,)


def row_wise_processors(
    model, generation_config, prompt_width: int, device
) -> LogitsProcessorList | None:
    """The logits processors ``generate`` would apply, or None when one of them is not row-wise
    (top-k/top-p, repetition penalty, ...) or the config stops on anything but EOS and length;
    the caller then keeps ``generate``."""
    if (
        not generation_config.do_sample
        or generation_config.stop_strings
        or generation_config.max_time
    ):
        return None
    processors = model._get_logits_processor(
        generation_config=generation_config,
        input_ids_seq_length=prompt_width,
        device=device,
        model_kwargs={},
    )
    return processors if all(isinstance(p, ROW_WISE_PROCESSORS) for p in processors) else None


@torch.no_grad()
def sample_completions(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    *,
    max_new_tokens: int,
    eos_token_ids: list[int],
    pad_token_id: int,
    processors: LogitsProcessorList,
) -> torch.Tensor:
    """Sampled continuations [B, S] (S <= max_new_tokens; pad after a row's EOS), as
    ``model.generate(input_ids, attention_mask, do_sample=True, ...)[:, W:]`` returns them.

    input_ids, attention_mask: [B, W] left-padded prompts; identical consecutive rows share one
    prefill. The model must support ``logits_to_keep`` and a ``DynamicCache``."""
    rows = input_ids.shape[0]
    device = input_ids.device
    repeat = torch.zeros(rows, dtype=torch.bool, device=device)
    repeat[1:] = (input_ids[1:] == input_ids[:-1]).all(-1) & (
        attention_mask[1:] == attention_mask[:-1]
    ).all(-1)
    first = ~repeat  # the first row of each run of identical prompts
    source = first.long().cumsum(0) - 1  # [B]: the distinct prompt each row copies
    positions = (attention_mask.long().cumsum(-1) - 1).masked_fill(
        attention_mask == 0, 0
    )  # as generate does

    cache = DynamicCache(config=model.config)
    out = model(
        input_ids=input_ids[first],
        attention_mask=attention_mask[first],
        position_ids=positions[first],
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    _select_rows(cache, source)
    logits = out.logits[:, -1].to(dtype=torch.float32)[source]  # [active, V]

    active = torch.arange(rows, device=device)  # rows the model still runs on
    attention = attention_mask[active]
    next_position = positions[:, -1] + 1
    unfinished = torch.ones(rows, dtype=torch.long, device=device)
    eos = torch.tensor(eos_token_ids, device=device)
    tokens = []
    for _ in range(max_new_tokens):
        scores = torch.zeros(
            rows, logits.shape[-1], dtype=torch.float32, device=device
        )  # finished: placeholder
        scores[active] = processors(None, logits)
        sampled = torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1)
        sampled = sampled * unfinished + pad_token_id * (1 - unfinished)
        tokens.append(sampled)
        unfinished = unfinished & ~torch.isin(sampled, eos)
        still = unfinished[active].bool()
        if not still.any() or len(tokens) == max_new_tokens:
            break
        if not still.all():  # drop finished rows from the batch and the cache
            _select_rows(cache, still.nonzero(as_tuple=True)[0])
            active, attention = active[still], attention[still]
        attention = torch.cat([attention, attention.new_ones(len(active), 1)], dim=1)
        out = model(
            input_ids=sampled[active, None],
            attention_mask=attention,
            position_ids=next_position[active, None],
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        logits = out.logits[:, -1].to(dtype=torch.float32)
        next_position = next_position + 1
    return torch.stack(tokens, dim=1)


def _select_rows(cache: DynamicCache, index: torch.Tensor) -> None:
    """Keep (or repeat) the cache rows ``index`` [R] in every layer."""
    for layer in cache.layers:
        layer.keys, layer.values = layer.keys[index], layer.values[index]


def trainer_can_sample(trainer, images, multimodal_fields) -> bool:
    """Whether a GRPOTrainer's generation may go through ``sample_completions``: text-only, the
    plain transformers path (no vLLM, continuous batching, DeepSpeed or FSDP, whose generation
    synchronises processes step by step), on CPU, the option on. CPU only: there a row's result
    was checked not to depend on the batch it sits in; GPU matmul kernels are chosen by shape, so
    a smaller batch could change a logit's last bits and, rarely, a sampled token."""
    return (
        trainer.args.fast_generation
        and trainer.accelerator.device.type == "cpu"
        and not trainer.use_vllm
        and images is None
        and not multimodal_fields
        and not trainer.use_transformers_continuous_batching
        and not trainer.is_deepspeed_enabled
        and not trainer.is_fsdp_enabled
    )


def trainer_completions(trainer, prompt_ids: list[list[int]]) -> list[list[int]] | None:
    """TRL's transformers generation (``GRPOTrainer._generate_single_turn``) through
    ``sample_completions``: completion ids up to and including the first EOS, or None when the
    generation config needs ``generate`` itself."""
    from trl.models.utils import unwrap_model_for_generation
    from trl.trainer.utils import pad

    pad_id = trainer._tokenizer.pad_token_id
    prompts = [torch.tensor(ids) for ids in prompt_ids]
    ids = pad(
        prompts,
        padding_value=pad_id,
        padding_side="left",
        pad_to_multiple_of=trainer.pad_to_multiple_of,
    )
    mask = pad(
        [torch.ones_like(t) for t in prompts],
        padding_value=0,
        padding_side="left",
        pad_to_multiple_of=trainer.pad_to_multiple_of,
    )
    device = trainer.accelerator.device
    ids, mask = ids.to(device), mask.to(device)
    with unwrap_model_for_generation(
        trainer.model_wrapped,
        trainer.accelerator,
        gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
        generation_kwargs=trainer.generation_kwargs,
        gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
    ) as model:
        # the config generate would use: unset fields filled from the model's generation_config
        config, _ = model._prepare_generation_config(trainer.generation_config)
        processors = row_wise_processors(model, config, ids.shape[1], device)
        if processors is None:
            return None
        completions = sample_completions(
            model,
            ids,
            mask,
            max_new_tokens=config.max_new_tokens,
            eos_token_ids=list(trainer.eos_token_ids),
            pad_token_id=pad_id,
            processors=processors,
        )
    eos = torch.isin(completions, torch.tensor(trainer.eos_token_ids, device=device)).cpu()
    lengths = torch.where(eos.any(1), eos.int().argmax(1) + 1, completions.shape[1])
    return [row[:n].tolist() for row, n in zip(completions.cpu(), lengths.tolist())]
