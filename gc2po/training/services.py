"""What the trainer offers a method that needs more than the scored batch: extra generation
(continuations of any context, synced across processes), the run's outcome reward on any text,
final-norm states and log-probs of any sequence, a mean over processes, and state that lasts
from one batch to the next. Generic on purpose: MRT's forced answers, ReST-MCTS*'s branches and
value head and GCPO's counterfactual contexts are built from these in their own method files, so
a new method that needs extra generation is one file. No trl import: the trainer injects its
model and vLLM engine; the generation backends are ``gc2po.training.continuations``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch

from gc2po.training.continuations import (
    Continuations,
    Gather,
    HFContinuations,
    VLLMContinuations,
    left_pad,
    synced_contexts,
)


@dataclass
class RolloutServices:
    """What a method may ask of the trainer for one generation batch (``RolloutBatch.services``).

    ``rollout`` holds the batch's prompt_ids/prompt_mask (left-padded) and completion_ids/
    completion_mask (right-padded) [B, T]; ``outcome(rows, texts)`` scores texts as completions of
    those rows with the run's outcome reward; ``reduce_mean`` averages a tensor over processes;
    ``state`` is one dict per trainer, kept from batch to batch (a method's learned parts).
    """

    generate: Continuations
    model_context: Callable[[], AbstractContextManager]
    tokenizer: object
    outcome: Callable[[list[int], list[str]], torch.Tensor]
    rollout: dict
    gather: Gather
    step: int
    temperature: float
    max_completion_length: int
    reduce_mean: Callable[[torch.Tensor], torch.Tensor] = lambda t: t
    state: dict | None = None

    # -- token views of the rollout ------------------------------------------------------------
    def prompt_ids(self, row: int) -> list[int]:
        return self.rollout["prompt_ids"][row][self.rollout["prompt_mask"][row].bool()].tolist()

    def completion_ids(self, row: int) -> list[int]:
        return self.rollout["completion_ids"][row][
            self.rollout["completion_mask"][row].bool()
        ].tolist()

    def continuations(
        self, contexts: list[list[int]], num: int, max_new_tokens: int
    ) -> list[list[int]]:
        """``num`` samples per context (consecutive), synced across processes."""
        jobs = [c for c in contexts for _ in range(num)]
        padded = synced_contexts(jobs, self.gather, [self.tokenizer.eos_token_id])
        return self.generate(padded, max_new_tokens)[: len(jobs)] if padded else []

    def continue_prefixes(self, rows, prefix_ends, suffix, num, max_new_tokens):
        """``num`` continuations of each completion prefix (tokens up to ``prefix_end`` inclusive,
        -1 = none) followed by ``suffix``, and the outcome of prefix + suffix + continuation."""
        prefixes = [self.completion_ids(r)[: end + 1] + suffix for r, end in zip(rows, prefix_ends)]
        continuations = self.continuations(
            [self.prompt_ids(r) + p for r, p in zip(rows, prefixes)], num, max_new_tokens
        )
        texts = [
            self.tokenizer.decode(prefixes[i // num] + c, skip_special_tokens=True)
            for i, c in enumerate(continuations)
        ]
        return continuations, self.outcome([rows[i // num] for i in range(len(texts))], texts)

    @torch.no_grad()
    def states_and_logps(self, sequences: list[list[int]], score_from: list[int]):
        """Final-norm states at the last token [N, d] and, per sequence, the log-probs [n_i] of its
        tokens from position ``score_from[i]`` on (the policy at the sampling temperature)."""
        with self.model_context() as model:
            backbone = getattr(model, model.base_model_prefix)
            ids, attention = left_pad(
                sequences, self.tokenizer.pad_token_id, next(model.parameters()).device
            )
            hidden = backbone(input_ids=ids, attention_mask=attention).last_hidden_state
            width, logps = ids.shape[1], []
            for row, (seq, start) in enumerate(zip(sequences, score_from)):
                offset = width - len(seq)
                logits = (
                    model.get_output_embeddings()(hidden[row, offset + start - 1 : -1]).float()
                    / self.temperature
                )
                logps.append(
                    torch.log_softmax(logits, -1)
                    .gather(-1, ids[row, offset + start :].unsqueeze(-1))
                    .squeeze(-1)
                )
        return hidden[:, -1].float(), logps


def rollout_services(trainer, inputs: list[dict], output: dict, model_context) -> RolloutServices:
    """The services of one generation batch of ``trainer`` (a ``GC2POTrainer``): its vLLM engine
    or transformers generation under ``model_context`` (the policy unwrapped for generation),
    its first reward function as the outcome of a continuation, its ``method_state``."""
    tok, args = trainer.processing_class, trainer.args
    generate = (
        VLLMContinuations(trainer.vllm_generation)
        if trainer.use_vllm
        else HFContinuations(
            model_context,
            tok.pad_token_id,
            tok.eos_token_id,
            trainer.temperature,
            args.per_device_train_batch_size,
            trainer.accelerator.device,
        )
    )

    def outcome(rows: list[int], texts: list[str]) -> torch.Tensor:
        chosen = [inputs[r] for r in rows]
        columns = {
            k: [x[k] for x in chosen]
            for k in (chosen[0] if chosen else {})
            if k not in ("prompt", "completion")
        }
        values = trainer.reward_funcs[0](
            prompts=[x["prompt"] for x in chosen],
            completion_ids=None,
            completions=[[{"role": "assistant", "content": t}] for t in texts],
            **columns,
        )
        return torch.tensor([0.0 if v is None else float(v) for v in values])

    return RolloutServices(
        generate=generate,
        model_context=model_context,
        tokenizer=tok,
        outcome=outcome,
        rollout=output,
        gather=trainer.accelerator.gather,
        step=trainer.state.global_step,
        temperature=trainer.temperature,
        max_completion_length=args.max_completion_length,
        reduce_mean=lambda t: trainer.accelerator.reduce(t, "mean"),
        state=trainer.method_state,
    )
