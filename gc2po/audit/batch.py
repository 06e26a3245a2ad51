"""The audited model's view of sampled completions (``AuditBatch``): ids and masks as the
trainer holds them, log-probs and final-norm states, the trainer's segmentation; and R_cf at any
``cf_state`` through the trainer's own functions (``cf_at``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from gc2po.training.episode_states import flatten, state_table
from gc2po.training.episodes import EpisodeBatch, EpisodeStates, segment_completions
from gc2po.training.scoring import episode_counterfactuals


@torch.no_grad()
def completion_states(
    model, tokenizer, prompt_texts: list[str], completion_ids: list[list[int]], batch_size: int = 32
):
    """Log-probs [N, T] and final-norm states [N, T, d] of each completion given its prompt."""
    backbone = getattr(model, model.base_model_prefix)
    lm_head = model.get_output_embeddings()
    width = max(1, max(len(c) for c in completion_ids))
    logps = torch.zeros(len(completion_ids), width)
    states = torch.zeros(len(completion_ids), width, model.config.hidden_size)
    for lo in range(0, len(completion_ids), batch_size):
        chunk = range(lo, min(lo + batch_size, len(completion_ids)))
        prompts = [tokenizer(prompt_texts[i], add_special_tokens=False)["input_ids"] for i in chunk]
        p_len = max(len(p) for p in prompts)
        rows = [
            [tokenizer.pad_token_id] * (p_len - len(p))
            + p
            + completion_ids[i]
            + [tokenizer.pad_token_id] * (width - len(completion_ids[i]))
            for p, i in zip(prompts, chunk)
        ]
        attention = [
            [0] * (p_len - len(p))
            + [1] * (len(p) + len(completion_ids[i]))
            + [0] * (width - len(completion_ids[i]))
            for p, i in zip(prompts, chunk)
        ]
        ids, att = torch.tensor(rows), torch.tensor(attention)
        hidden = backbone(input_ids=ids, attention_mask=att).last_hidden_state
        logits = lm_head(hidden[:, p_len - 1 : -1]).float()
        logps[lo : lo + len(chunk)] = (
            torch.log_softmax(logits, -1).gather(-1, ids[:, p_len:].unsqueeze(-1)).squeeze(-1)
        )
        states[lo : lo + len(chunk)] = hidden[:, p_len:].float()
    return logps, states


@dataclass
class AuditBatch:
    """Sampled completions as the trainer would hold them, and the audited model's view of them:
    ids and mask [N, W] (EOS kept after a finished completion), log-probs [N, W], final-norm
    states [N, W, d], the trainer's segmentation, the prompt ids, and what R_cf needs."""

    completion_ids: list[list[int]]
    prompt_ids: list[list[int]]
    ids: torch.Tensor
    mask: torch.Tensor
    logps: torch.Tensor
    states: torch.Tensor
    episodes: EpisodeBatch
    special: set[int]
    lm_head: tuple
    k: int

    @property
    def rows(self) -> torch.Tensor:
        """[N] each completion's place: prompt by prompt, k per prompt (the trainer's row index)."""
        return torch.arange(len(self.completion_ids))


def prepare(model, tokenizer, prompt_texts, generations, args, sampling) -> AuditBatch:
    """The :class:`AuditBatch` of ``generations`` (``sampling.k`` per prompt, prompt by prompt),
    segmented as the run (``args``, its ``GC2POConfig``) segments them."""
    k = sampling.k
    if [g.prompt_index for g in generations] != [i // k for i in range(len(generations))]:
        raise ValueError("audit: completions must come prompt by prompt, k per prompt")
    # a finished completion ends with EOS in training (TRL keeps it in the completion mask), so
    # it does here: every cf_state choice then reads the state training reads
    eos = [tokenizer.eos_token_id]
    completion_ids = [g.token_ids + eos * bool(g.finished) for g in generations]
    prompts = [prompt_texts[g.prompt_index] for g in generations]
    logps, states = completion_states(model, tokenizer, prompts, completion_ids)
    width = logps.shape[1]
    ids = torch.tensor([c + [tokenizer.pad_token_id] * (width - len(c)) for c in completion_ids])
    mask = torch.tensor([[t < len(c) for t in range(width)] for c in completion_ids])
    head = model.get_output_embeddings()
    return AuditBatch(
        completion_ids,
        [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts],
        ids,
        mask,
        logps,
        states,
        segment_completions(tokenizer, ids, mask, args.max_episodes),
        set(tokenizer.all_special_ids),
        (head.weight.detach(), getattr(head, "bias", None)),
        k,
    )


def cf_at(batch: AuditBatch, args, choice: str, spec, seed: int):
    """R_cf with the run's settings (``args.counterfactual_params()``, perturbed by ``spec``) at
    the states ``choice`` picks, through the trainer's functions (``state_table``,
    ``episode_counterfactuals``): (per-episode result, its [N, Lmax] table, per-completion
    mean)."""
    table = state_table(batch.episodes, batch.ids, choice, batch.special)
    rows, slots, positions, num_slots = flatten(table)
    found = EpisodeStates(rows, slots, positions, num_slots, batch.states[rows, positions])
    params = dataclasses.replace(args.counterfactual_params(), perturbation=spec)
    result, _ = episode_counterfactuals(
        found, batch.rows, batch.k, params, batch.lm_head,
        generator=torch.Generator().manual_seed(seed),
    )  # fmt: skip
    count = len(batch.completion_ids)
    values = torch.zeros(count, num_slots)
    values[rows, slots] = result.r_cf
    episodes = torch.zeros(count).index_add_(0, rows, torch.ones_like(result.r_cf))
    means = torch.zeros(count).index_add_(0, rows, result.r_cf) / episodes.clamp(min=1)
    per_completion = {
        name: torch.zeros(count).index_add_(0, rows, getattr(result, name)) / episodes.clamp(min=1)
        for name in ("s_sta", "s_exp")
    }
    return result, values, means, per_completion
