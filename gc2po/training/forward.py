"""Keeping what a policy forward pass computes anyway: the final-norm hidden states at chosen
completion positions (a backbone hook) and the per-token log-probs.

The trainer sets a :class:`ForwardRequest` before a forward TRL runs (the old-log-prob pass, the
loss forward) and :func:`capture_forward` serves it, so GC2PO needs no forward pass of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from gc2po.training import episode_states
from gc2po.training.episodes import EpisodeBatch, EpisodeStates


class StateCapture:
    """A forward hook for the backbone (``model.model``) that keeps the final-norm hidden states
    at given completion positions, chunk by chunk, during a forward pass over left-padded
    prompts + right-padded completions (the layout TRL's log-prob passes use).

    rows, positions [E]: completion-token coordinates of the wanted states; ``completion_width``:
    the number of completion columns at the end of each sequence.
    """

    def __init__(self, rows: torch.Tensor, positions: torch.Tensor, completion_width: int):
        self.rows, self.positions, self.completion_width = rows, positions, completion_width
        self.next_row = 0
        self.parts: list[tuple[torch.Tensor, torch.Tensor]] = []

    def __call__(self, module, args, output):
        hidden = output.last_hidden_state if hasattr(output, "last_hidden_state") else output[0]
        chunk, width = hidden.shape[:2]
        rows = self.rows.to(hidden.device)
        here = (rows >= self.next_row) & (rows < self.next_row + chunk)
        index = here.nonzero(as_tuple=True)[0]
        columns = width - self.completion_width + self.positions.to(hidden.device)[index]
        self.parts.append((index, hidden[rows[index] - self.next_row, columns].detach()))
        self.next_row += chunk

    def states(self, hidden_size: int, dtype: torch.dtype, device) -> torch.Tensor:
        """The captured states [E, d] in the order of ``rows``."""
        out = torch.zeros(len(self.rows), hidden_size, dtype=dtype, device=device)
        for index, values in self.parts:
            out[index.to(device)] = values.to(dtype=dtype, device=device)
        return out


@dataclass
class ForwardRequest:
    """What to keep from the next policy forward, and what it kept.

    A rollout request (the old-log-prob pass) serves only the policy, not the reference model;
    a loss request (``for_loss``) serves the loss forward whatever wraps the model. Episodes
    and state positions are segmented from the forward's own ids unless already known.
    ``inputs``: the loss micro-batch whose advantages that forward computes (on-policy GC2PO).
    """

    segment: Callable | None = None  # (completion_ids [B,C], mask [B,C]) -> EpisodeBatch
    state_table: Callable | None = None  # (EpisodeBatch, completion_ids) -> [B, Lmax] positions
    want_states: bool = True
    for_loss: bool = False
    episode_ids: torch.Tensor | None = None  # [B, C]; known in the loss forward
    state_positions: torch.Tensor | None = None  # [B, Lmax] where u is read (cf_state)
    inputs: dict | None = None
    # filled in by the forward
    done: bool = False
    episodes: EpisodeBatch | None = None
    states: EpisodeStates | None = None
    logps: torch.Tensor | None = None  # [B, C] detached

    def serves(self, model, policy) -> bool:
        return not self.done and (self.for_loss or model is policy)


def capture_forward(
    request: ForwardRequest,
    forward,
    unwrapped,
    model,
    input_ids,
    attention_mask,
    logits_to_keep,
    *args,
    **kwargs,
):
    """Run ``forward`` (TRL's ``_get_per_token_logps_and_entropies``) once, keeping what
    ``request`` asks for; returns what ``forward`` returns. ``unwrapped``: the model without its
    distributed wrapper (its backbone gets the hook)."""
    request.done = True
    if not request.want_states:
        result = forward(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)
        request.logps = result[0].detach()
        return result
    completion_ids = input_ids[:, -logits_to_keep:]
    if request.episode_ids is None:
        request.episodes = request.segment(
            completion_ids, attention_mask[:, -logits_to_keep:].bool()
        )
        request.episode_ids = request.episodes.episode_ids
    if request.state_positions is None:
        request.state_positions = request.state_table(request.episodes, completion_ids)
    rows, slots, positions, num_slots = episode_states.flatten(request.state_positions)
    hook = StateCapture(rows, positions, logits_to_keep)
    backbone = getattr(unwrapped, unwrapped.base_model_prefix)
    handle = backbone.register_forward_hook(hook)
    try:
        result = forward(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)
    finally:
        handle.remove()
    request.logps = result[0].detach()
    hidden = hook.states(unwrapped.config.hidden_size, torch.float32, input_ids.device)
    request.states = EpisodeStates(rows, slots, positions, num_slots, hidden)
    return result
