"""Per-episode signals from the policy alone for the corrected GC2PO (``cf_signal``; beyond the
paper), for a generation batch: the episodes' equations parsed from the text as the trainer
segmented it, and the policy's passes. The math is ``gc2po.core.signals_policy``.

- ``sibling_agreement``: no model pass; each episode's key is its equation ``left op right =
  result`` (spaces dropped), or, where none parses, its text without tags and spaces (a copied
  ``bet=G`` episode agrees with the other copies of the group);
- ``operand_sensitivity``: per episode with a parsed equation, one no-grad pass with its
  ``right`` operand changed (to right + 1, or right - 1 where + 1 adds a digit), in the episode
  and wherever the prompt states that number as a run of digit tokens, and one pass per
  completion as written: the fall of the written result's log-probability. An episode without an
  equation (a copied ``bet=G``) uses no operand: 0. The result's log-probability as written is
  the by-product ``result_logprob`` (audited, not a ``cf_signal``).

Both texts are re-tokenized piece by piece (text before the operand, the operand, text up to the
result, the result), the written and the changed sequence alike, so they differ only in the
operand's tokens.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gc2po.core.signals_policy import operand_sensitivity, result_logprob, sibling_agreement
from gc2po.training.episodes import EpisodeBatch
from gc2po.training.signals import present_episodes, table_width

EQUATION = re.compile(r"(-?\d+)\s*([+\-*])\s*(-?\d+)\s*=\s*(-?\d+)")
TAG = re.compile(r"</?episode_\d+>")
INSIDE = re.compile(r"<episode_\d+>(.*?)</episode_\d+>", re.DOTALL)


@dataclass(frozen=True)
class Step:
    """One episode's parse: its key (equation or bare text) and, where an equation parses, the
    character spans of its right operand and its result in the completion's text."""

    key: str
    right: tuple[int, int] | None = None
    result: tuple[int, int] | None = None


def episode_spans(episodes: EpisodeBatch, row: int) -> dict[int, tuple[int, int]]:
    """Episode l of ``row`` -> the character span of its tokens in the row's text."""
    spans: dict[int, tuple[int, int]] = {}
    for t, slot in enumerate(episodes.episode_ids[row].tolist()):
        if slot < 0 or t >= len(episodes.offsets[row]):
            continue
        a, b = episodes.offsets[row][t]
        low, high = spans.get(slot, (a, b))
        spans[slot] = (min(low, a), max(high, b))
    return spans


def parse_steps(episodes: EpisodeBatch, row: int) -> dict[int, Step]:
    """Each episode of ``row``'s parse (:class:`Step`)."""
    text, out = episodes.texts[row], {}
    for slot, (start, end) in episode_spans(episodes, row).items():
        piece = text[start:end]
        match = EQUATION.search(piece)
        if match is None:
            inside = INSIDE.search(piece)  # the last episode's span runs on to the answer
            bare = inside.group(1) if inside else TAG.sub("", piece)
            out[slot] = Step("text:" + re.sub(r"\s+", "", bare))
            continue
        key = "eq:" + "".join(match.group(i) for i in (1, 2, 3)) + "=" + match.group(4)
        right = (start + match.start(3), start + match.end(3))
        result = (start + match.start(4), start + match.end(4))
        out[slot] = Step(key, right, result)
    return out


def agreement_signal(
    episodes: EpisodeBatch, row_index: torch.Tensor, group_size: int
) -> tuple[torch.Tensor, dict[str, float]]:
    """The ``sibling_agreement`` signal [B, Lmax] float64 of a batch and its metrics. Rows of a
    group must be on this process together (the generation batch holds whole groups)."""
    group = row_index.long().cpu() // group_size
    _, sizes = torch.unique(group, return_counts=True)
    if bool((sizes != group_size).any()):
        raise RuntimeError(
            "cf_signal sibling_agreement: this process holds part of a group (a group's "
            f"completions are split over processes; group sizes {sizes.tolist()}, group_size "
            f"{group_size}): run it where each process generates whole groups"
        )
    width = table_width(episodes)
    names: dict[str, int] = {}
    keys = torch.full((len(episodes.texts), width), -1, dtype=torch.long)
    for row in range(len(episodes.texts)):
        for slot, step in parse_steps(episodes, row).items():
            keys[row, slot] = names.setdefault(step.key, len(names))
    table = sibling_agreement(keys, group)
    present = present_episodes(episodes, width)
    mean = table[present].mean().item() if present.any() else 0.0
    return table, {"signal/sibling_agreement": mean}


def format_signal(episodes: EpisodeBatch) -> tuple[torch.Tensor, dict[str, float]]:
    """The ``format`` control [B, Lmax] float64 of a segmented batch: 1 where the episode's text
    parses as an equation ``a op b = c`` (:func:`parse_steps`), else 0; and its metric (the
    share of episodes that parse)."""
    width = table_width(episodes)
    table = torch.zeros(len(episodes.texts), width, dtype=torch.float64)
    for row in range(len(episodes.texts)):
        for slot, step in parse_steps(episodes, row).items():
            table[row, slot] = float(step.result is not None)
    present = present_episodes(episodes, width)
    share = table[present].mean().item() if present.any() else 0.0
    return table, {"signal/format": share}


def changed_operand(value: int) -> int:
    """right + 1, or right - 1 where + 1 would add a digit (same number of digit tokens)."""
    return value + 1 if len(str(value + 1)) == len(str(value)) else value - 1


def perturbed_prompt(
    prompt: list[int], piece_of: Callable[[int], str], value: int, encode
) -> list[int]:
    """The prompt with every maximal run of digit tokens spelling ``value`` replaced by the
    tokens of its changed operand (a tokenizer that merges digits with other text: unchanged)."""
    out, t = [], 0
    target, new = str(value), encode(str(changed_operand(value)))
    while t < len(prompt):
        if piece_of(prompt[t]).isdigit():
            end = t
            while end < len(prompt) and piece_of(prompt[end]).isdigit():
                end += 1
            run = prompt[t:end]
            out += new if "".join(piece_of(i) for i in run) == target else run
            t = end
        else:
            out.append(prompt[t])
            t += 1
    return out


def operand_signal(
    logps_of: Callable[[list[list[int]], list[list[int]]], list[torch.Tensor]],
    encode: Callable[[str], list[int]],
    piece_of: Callable[[int], str],
    prompt_ids: list[list[int]],
    episodes: EpisodeBatch,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(operand sensitivity, result log-prob as written), each [B, Lmax] float64, of a segmented
    batch. ``logps_of(sequences, positions)``: ``gc2po.training.signals.answer_token_logps``
    bound to a model; ``encode`` a text's ids (no special tokens added); ``piece_of`` one id's
    text."""
    # the same short texts and prompt tokens recur across a batch: tokenize each once
    encode, piece_of = functools.cache(encode), functools.cache(piece_of)
    width = table_width(episodes)
    rows = len(episodes.texts)
    sequences, positions, slots = [], [], []
    longest = 1
    for row in range(rows):
        text = episodes.texts[row]
        steps = sorted((s, p) for s, p in parse_steps(episodes, row).items() if p.result)
        if not steps:
            continue
        # the written completion: pieces cut at every probed operand and result
        written, where, cursor = [], {}, 0
        for slot, step in steps:
            (rs, re_), (vs, ve) = step.right, step.result
            written += encode(text[cursor:rs])
            operand_at = len(written)
            written += encode(text[rs:re_])
            written += encode(text[re_:vs])
            result_at = len(written)
            written += encode(text[vs:ve])
            where[slot] = (operand_at, result_at, len(written))
            cursor = ve
        prompt = prompt_ids[row]
        sequences.append(prompt + written)
        positions.append(
            [len(prompt) + t for slot, _ in steps for t in range(where[slot][1], where[slot][2])]
        )
        slots.append((row, None, steps, where))
        for slot, step in steps:
            operand_at, result_at, end = where[slot]
            value = int(text[step.right[0] : step.right[1]])
            new = encode(str(changed_operand(value)))
            old_len = len(encode(text[step.right[0] : step.right[1]]))
            changed = written[:operand_at] + new + written[operand_at + old_len : end]
            shift = len(new) - old_len
            new_prompt = perturbed_prompt(prompt, piece_of, value, encode)
            sequences.append(new_prompt + changed)
            positions.append([len(new_prompt) + t + shift for t in range(result_at, end)])
            slots.append((row, slot, None, None))
            longest = max(longest, end - result_at)
    original = torch.zeros(rows, width, longest, dtype=torch.float64)
    perturbed = torch.zeros(rows, width, longest, dtype=torch.float64)
    mask = torch.zeros(rows, width, longest, dtype=torch.bool)
    probed = torch.zeros(rows, width, dtype=torch.bool)
    # called even with nothing to score: under ZeRO-3 every process must enter the policy's
    # generation context together
    for (row, slot, steps, where), values in zip(slots, logps_of(sequences, positions)):
        if slot is None:
            at = 0
            for step_slot, _ in steps:
                _, result_at, end = where[step_slot]
                count = end - result_at
                original[row, step_slot, :count] = values[at : at + count].double()
                mask[row, step_slot, :count] = True
                at += count
        else:
            perturbed[row, slot, : len(values)] = values.double()
            probed[row, slot] = True
    mask &= probed.unsqueeze(-1)
    return operand_sensitivity(original, perturbed, mask), result_logprob(original, mask)


def operand_metrics(table: torch.Tensor, episodes: EpisodeBatch) -> dict[str, float]:
    present = present_episodes(episodes, table.shape[1])
    return {"signal/operand_sensitivity": table[present].mean().item() if present.any() else 0.0}
