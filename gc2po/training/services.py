"""Extra generation and scoring that some baselines need (MRT's forced answers, ReST-MCTS*'s
branches and value head, GCPO's counterfactual contexts), behind one small interface so the
trainer stays a thin TRL adapter. No trl import: the trainer injects its model and vLLM engine;
the generation backends are ``gc2po.training.continuations``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch

from gc2po.core.segment import segment_episodes
from gc2po.training.continuations import (
    Continuations,
    Gather,
    HFContinuations,
    VLLMContinuations,
    left_pad,
    synced_contexts,
)


class ValueHead:
    """ReST-MCTS*'s value head: a linear layer on final-norm states trained online by MSE, its
    gradients averaged over processes so every rank keeps the same head."""

    def __init__(self, lr: float, reduce_mean: Callable[[torch.Tensor], torch.Tensor]):
        self.lr, self.reduce_mean = lr, reduce_mean
        self.layer: torch.nn.Linear | None = None

    def fit(self, states: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, float]:
        """One MSE step on (states [N, d], targets [N]); returns (predictions after it, loss)."""
        states, targets = states.float().detach(), targets.float().to(states.device)
        if self.layer is None:
            self.layer = torch.nn.Linear(states.shape[-1], 1).to(states.device)
            self.optimizer = torch.optim.Adam(self.layer.parameters(), lr=self.lr)
        with torch.enable_grad():
            self.optimizer.zero_grad()
            loss = (
                torch.nn.functional.mse_loss(self.layer(states).squeeze(-1), targets)
                if len(targets)
                else None
            )
            if loss is not None:
                loss.backward()
            for p in self.layer.parameters():  # every rank steps, with or without states of its own
                p.grad = self.reduce_mean(p.grad if p.grad is not None else torch.zeros_like(p))
            self.optimizer.step()
        with torch.no_grad():
            return self.layer(states).squeeze(-1), (loss.item() if loss is not None else 0.0)


@dataclass
class RolloutServices:
    """What MRT, ReST-MCTS* and GCPO ask of the trainer for one generation batch.

    ``rollout`` holds the batch's prompt_ids/prompt_mask (left-padded) and completion_ids/
    completion_mask (right-padded) [B, T]; ``outcome(rows, texts)`` scores texts as completions of
    those rows with the run's outcome reward.
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
    force_answer_text: str
    answer_tokens: int
    value_head: ValueHead | None = None

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

    def _continue_prefixes(self, rows, prefix_ends, suffix, num, max_new_tokens):
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

    # -- MRT -------------------------------------------------------------------------------------
    def forced_answer_success(
        self, rows: list[int], prefix_ends: list[int], num: int
    ) -> torch.Tensor:
        """MRT's meta-prover: mean outcome of ``num`` forced answers after each
        completion prefix."""
        force = self.tokenizer(self.force_answer_text, add_special_tokens=False)["input_ids"]
        _, outcome = self._continue_prefixes(rows, prefix_ends, force, num, self.answer_tokens)
        return outcome.view(-1, num).mean(-1) if len(rows) else torch.zeros(0)

    # -- ReST-MCTS* ------------------------------------------------------------------------------
    def branch_outcomes(
        self, rows: list[int], prefix_ends: list[int], num: int
    ) -> list[list[tuple[bool, int]]]:
        """``num`` continuations of each prefix, each as (verified correct,
        number of steps it adds)."""
        continuations, outcome = self._continue_prefixes(
            rows, prefix_ends, [], num, self.max_completion_length
        )
        steps = [
            len(segment_episodes(self.tokenizer.decode(c, skip_special_tokens=True)))
            for c in continuations
        ]
        results = [(bool(o > 0.5), n) for o, n in zip(outcome.tolist(), steps)]
        return [results[i * num : (i + 1) * num] for i in range(len(rows))]

    def fit_value_head(self, states: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        predictions, self.value_loss = self.value_head.fit(states, targets)
        return predictions.cpu()

    # -- GCPO ------------------------------------------------------------------------------------
    def gcpo_contexts(
        self, rows: list[int], max_new_tokens: int
    ) -> tuple[list[list[int]], list[list[int]]]:
        """GCPO's counterfactual contexts for one group: prompt + every candidate but o_i +
        integrated output y_n (and the alternative y_n')."""
        candidates = [self.completion_ids(r) for r in rows]
        separator = self.tokenizer("\n\n", add_special_tokens=False)["input_ids"]
        prompt = self.prompt_ids(rows[0])

        def joined(parts):
            return [token for part in parts for token in part + separator]

        integrated = self.continuations([prompt + joined(candidates)], 2, max_new_tokens)
        contexts = [
            [prompt + joined(candidates[:i] + candidates[i + 1 :] + [y]) for i in range(len(rows))]
            for y in integrated
        ]
        return contexts[0], contexts[1]

    @torch.no_grad()
    def _states_and_logps(self, sequences: list[list[int]], score_from: list[int]):
        """Final-norm states at the last token [N, d] and log-probs of the tokens from
        ``score_from`` on."""
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

    def sample_final_states(self, contexts: list[list[int]]) -> torch.Tensor:
        """One sampled continuation per context; the final-norm state at its last token [N, d]."""
        samples = self.continuations(contexts, 1, self.max_completion_length)
        states, _ = self._states_and_logps(
            [c + s for c, s in zip(contexts, samples)], [len(c) for c in contexts]
        )
        return states

    def completion_logps_given(self, rows: list[int], contexts: list[list[int]]) -> torch.Tensor:
        """Log-probs of each completion's tokens [R, T] when it follows ``contexts`` instead of
        its prompt."""
        completions = [self.completion_ids(r) for r in rows]
        _, logps = self._states_and_logps(
            [c + y for c, y in zip(contexts, completions)], [len(c) for c in contexts]
        )
        width = self.rollout["completion_ids"].shape[1]
        result = torch.zeros(len(rows), width, device=self.rollout["completion_ids"].device)
        for i, values in enumerate(logps):
            result[i, : len(values)] = values
        return result


def rollout_services(trainer, inputs: list[dict], output: dict, model_context) -> RolloutServices:
    """The services of one generation batch of ``trainer`` (a ``GC2POTrainer``): its vLLM engine
    or transformers generation under ``model_context`` (the policy unwrapped for generation),
    its first reward function as the outcome of a continuation."""
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
        force_answer_text=args.force_answer_text,
        answer_tokens=args.mrt_answer_tokens,
        value_head=trainer.value_head,
    )
