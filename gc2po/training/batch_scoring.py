"""The helpers of ``GC2POTrainer``'s TRL overrides (``gc2po.training.trainer``), as a mixin: a
generation batch -> :class:`RolloutBatch` -> the method's advantages (through
``gc2po.training.scoring``), the forward requests that the next policy forward serves (old
log-probs and states, the loss forward's advantages), a method's own loss, and metrics.
"""

from __future__ import annotations

import functools
import warnings

import torch
from trl.models.utils import unwrap_model_for_generation

from gc2po.methods import RolloutBatch
from gc2po.methods.grpo_gated import needs_steps, trajectory_gate
from gc2po.models.tokenization import PAD_IN_PROMPT_WARNING, prompts_hold_pad
from gc2po.training import scoring, signals, signals_policy
from gc2po.training.distributed import gather_keyed_rows, gathered_lm_head
from gc2po.training.episode_states import state_table
from gc2po.training.episodes import EpisodeBatch, segment_completions
from gc2po.training.forward import ForwardRequest
from gc2po.training.metrics import reduce_over_processes
from gc2po.training.rewards import combined_rewards
from gc2po.training.services import rollout_services


class BatchScoringMixin:
    """The trainer's own steps between TRL's; mixed into the trainer before TRL's class. It reads
    the trainer's ``method``, ``args``, ``accelerator`` and the hand-offs ``_rewards_per_func``
    and ``_request``."""

    # -- a generation batch -> advantages -------------------------------------------------------
    def _score_generation(self, inputs, output, request, mode, want_states, deferred):
        """TRL's output of a generation batch -> the method's advantages (on-policy GC2PO: what
        the loss forward needs to compute them), after TRL's own old-log-prob pass served
        ``request`` or None."""
        method, args = self.method, self.args
        mask = output["completion_mask"].bool()
        if (want_states or method.needs_old_logps or args.sampling_ratio_pass) and request is None:
            request = self._new_request()
            output["old_per_token_logps"] = self._sampling_policy_pass(output, request)
        episodes = (
            request.episodes
            if request is not None
            else self._segment(output["completion_ids"], mask)
        )  # every method: the length figure compares them
        self._record(scoring.episode_metrics(episodes, mask), mode)
        batch = generation_batch(
            combined_rewards(self._rewards_per_func, self.reward_weights),
            mask,
            self.accelerator.process_index,
            self._group_size(mode),
            self.accelerator.gather,
            episodes.episode_ids if method.needs_episodes or request else None,
            request,
        )
        output["gc2po_row_index"] = batch.row_index  # travels with each row through TRL's shuffle
        if needs_steps(method, args):  # the value gate divides by each problem's step count
            batch.steps = signals.problem_steps(inputs).to(mask.device)
        if deferred:  # on-policy GC2PO: advantages come from the loss forward's own states
            positions = self._state_table(episodes, output["completion_ids"])
            output.update(
                gc2po_rewards=batch.rewards,
                gc2po_episode_ids=batch.episode_ids,
                gc2po_state_positions=positions,
                advantages=torch.zeros_like(mask, dtype=torch.float32),
            )
            if batch.steps is not None:
                output["gc2po_steps"] = batch.steps
            return output
        batch.services = rollout_services(self, inputs, output, self._generation_context)
        signal = (
            self._counterfactual
            if args.cf_signal == "r_cf"
            else functools.partial(self._episode_signal, inputs, output, episodes)
        )
        scored = scoring.score(method, batch, args, signal)
        self._record(dict(scored.metrics), mode)
        output["advantages"] = scored.advantages
        output.update(scored.loss_inputs)
        return output

    def _advantages_in_loss_forward(self, request: ForwardRequest) -> torch.Tensor:
        batch = loss_forward_batch(request, self._group_size(self._mode), self.accelerator.gather)
        scored = scoring.score(self.method, batch, self.args, self._counterfactual)
        self._record(dict(scored.metrics), self._mode)
        return scored.advantages

    def _counterfactual(self, batch: RolloutBatch) -> tuple[torch.Tensor, dict]:
        """R_cf per (row, episode) [B, Lmax] of a batch with states (``scoring.score``)."""
        micro = self._step % self.args.gradient_accumulation_steps
        seed = scoring.perturbation_seed(self.args.seed, self.state.global_step, micro)
        states = batch.states
        with gathered_lm_head(self.accelerator.unwrap_model(self.model)) as lm_head:  # ZeRO-3
            return scoring.counterfactual_table(
                states,
                batch.row_index,
                batch.completion_mask.shape[0],
                batch.group_size,
                self.args.counterfactual_params(),
                lm_head,
                generator=torch.Generator(device=states.u.device).manual_seed(seed),
                gather_keyed=lambda key, u: gather_keyed_rows(self.accelerator, key, u),
            )

    def _episode_signal(self, inputs, output, episodes, batch) -> tuple[torch.Tensor, dict]:
        """The ``cf_signal`` other than R_cf of a generation batch (``gc2po.training.signals``):
        [B, Lmax] per episode, and its metrics."""
        args = self.args
        prompts, completions = (
            [ids[m.bool()].tolist() for ids, m in zip(output[f"{part}_ids"], output[mask])]
            for part, mask in (("prompt", "prompt_mask"), ("completion", "completion_mask"))
        )
        if args.cf_signal == "answer_dependence":
            table, metrics = signals.answer_signal(
                self._policy_logps, prompts, completions, episodes
            )
        elif args.cf_signal == "format":
            table, metrics = signals_policy.format_signal(episodes)
        elif args.cf_signal == "readout":
            table, metrics = signals.readout_signal(
                self._policy_readout,
                inputs,
                prompts,
                completions,
                self._state_table(episodes, output["completion_ids"]),
                episodes,
                batch.row_index,
                batch.group_size,
                weight=args.cf_readout_weight,
                max_episodes=self.method.max_episodes(args),
            )
        elif args.cf_signal == "sibling_agreement":
            table, metrics = signals_policy.agreement_signal(
                episodes, batch.row_index, batch.group_size
            )
        elif args.cf_signal == "operand_sensitivity":
            tokenizer = self.processing_class
            table, _ = signals_policy.operand_signal(
                self._policy_logps,
                lambda text: tokenizer(text, add_special_tokens=False)["input_ids"],
                lambda token: tokenizer.decode([token]),
                prompts,
                episodes,
            )
            metrics = signals_policy.operand_metrics(table, episodes)
        else:
            micro = self._step % args.gradient_accumulation_steps
            table, metrics = signals.oracle_signal(
                inputs,
                episodes,
                batch.row_index,
                batch.group_size,
                max_episodes=self.method.max_episodes(args),
                rho=args.cf_signal_rho,
                seed=scoring.perturbation_seed(args.seed, self.state.global_step, micro),
                trajectory=trajectory_gate(self.method, args),
                every_group=args.cf_signal_noise == "every_group",
            )
        return table.to(batch.completion_mask.device), metrics

    def _policy_logps(self, sequences, positions):
        """The sampling policy's log-probs of the tokens at ``positions`` of each sequence
        (``gc2po.training.signals.answer_token_logps``), no grad."""
        with self._generation_context() as model:
            return signals.answer_token_logps(
                model,
                sequences,
                positions,
                pad_id=self.processing_class.pad_token_id,
                temperature=self.temperature,
                batch_size=self.args.per_device_train_batch_size,
            )

    def _policy_readout(self, sequences, positions):
        """The readout control's cosine of the sampling policy's final-norm states at
        ``positions`` with the run's fixed direction (``gc2po.training.signals.state_readout``),
        no grad."""
        with self._generation_context() as model:
            direction = signals.readout_direction(model.config.hidden_size, self.args.seed)
            return signals.state_readout(
                model,
                sequences,
                positions,
                direction,
                pad_id=self.processing_class.pad_token_id,
                batch_size=self.args.per_device_train_batch_size,
            )

    # -- forward requests ------------------------------------------------------------------------
    @torch.no_grad()
    def _sampling_policy_pass(self, output, request: ForwardRequest) -> torch.Tensor:
        """One no-grad pass of the sampling policy through TRL's fused log-prob path (the
        loss's numerics), serving ``request``: old log-probs [B, C]."""
        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        self._request = request
        try:
            logps, _, _ = self._get_per_token_logps_and_entropies(
                self.model,
                ids,
                attention,
                output["completion_ids"].shape[1],
                batch_size=self.args.per_device_train_batch_size,
            )
        finally:
            self._request = None
        return logps

    def _generation_context(self):
        """The policy unwrapped for generation (ZeRO-3 parameters gathered), as TRL does it."""
        return unwrap_model_for_generation(
            self.model_wrapped,
            self.accelerator,
            gather_deepspeed3_params=self.args.ds3_gather_for_generation,
        )

    def _new_request(self, **known) -> ForwardRequest:
        return ForwardRequest(segment=self._segment, state_table=self._state_table, **known)

    def _segment(self, completion_ids, mask) -> EpisodeBatch:
        max_episodes = self.method.max_episodes(self.args)
        return segment_completions(self.processing_class, completion_ids, mask, max_episodes)

    def _state_table(self, episodes: EpisodeBatch, completion_ids) -> torch.Tensor:
        """Where each episode's state u is read (``cf_state``): [B, Lmax] completion positions."""
        return state_table(
            episodes, completion_ids, self.args.cf_state, set(self.processing_class.all_special_ids)
        )

    # -- loss -----------------------------------------------------------------------------------
    def _method_loss(self, model, inputs):
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        logps, _, _ = self._get_per_token_logps_and_entropies(
            model, ids, attention, inputs["completion_ids"].shape[1]
        )
        loss = self.method.loss(logps, inputs, self.args)
        return loss / (self.current_gradient_accumulation_steps if self.model.training else 1.0)

    # -- metrics --------------------------------------------------------------------------------
    @property
    def _mode(self) -> str:
        return "train" if self.model.training else "eval"

    def _group_size(self, mode: str) -> int:
        return self.num_generations if mode == "train" else self.num_generations_eval

    def _record(self, metrics: dict[str, float], mode: str):
        for name, value in reduce_over_processes(metrics, self.accelerator).items():
            self._metrics[mode][name].append(value)

    def _warn_if_prompts_hold_pad(self, output):
        pad = self.processing_class.pad_token_id
        if not self._warned_pad_in_prompt and prompts_hold_pad(
            output["prompt_ids"], output["prompt_mask"], pad
        ):
            self._warned_pad_in_prompt = True
            warnings.warn(PAD_IN_PROMPT_WARNING.format(pad=pad), stacklevel=2)


def generation_batch(
    rewards, mask, process_index: int, group_size: int, gather, episode_ids, request
) -> RolloutBatch:
    """This process's rows of a generation batch: ``rewards`` [all rows] are the combined rewards
    of every process, ``mask`` [B, C] this process's completion mask; old log-probs and states
    from ``request`` where a forward pass served one."""
    rows = mask.shape[0]
    start = process_index * rows
    return RolloutBatch(
        rewards=rewards[start : start + rows].to(mask.device),
        row_index=torch.arange(start, start + rows, device=mask.device),
        group_size=group_size,
        completion_mask=mask,
        gather=gather,
        episode_ids=episode_ids,
        old_logps=request.logps if request else None,
        states=request.states if request else None,
    )


def loss_forward_batch(request: ForwardRequest, group_size: int, gather) -> RolloutBatch:
    """The loss micro-batch of on-policy GC2PO (``request.inputs``) with what its forward kept."""
    inputs = request.inputs
    return RolloutBatch(
        rewards=inputs["gc2po_rewards"],
        row_index=inputs["gc2po_row_index"],
        group_size=group_size,
        completion_mask=inputs["completion_mask"].bool(),
        gather=gather,
        old_logps=request.logps,
        episode_ids=request.episode_ids,
        states=request.states,
        steps=inputs.get("gc2po_steps"),
    )
