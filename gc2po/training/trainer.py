"""``GC2POTrainer``: TRL's ``GRPOTrainer`` with the advantages of a ``gc2po.methods`` entry.

TRL keeps generation, reward calls, the reference model and the clipped loss; each generation
batch goes through ``gc2po.training.scoring.score``. What GC2PO needs beyond GRPO (old log-probs
for the surprise weights, final-norm states at the episodes' ``cf_state`` tokens) is taken from
forward passes that run anyway: on-policy, from the loss forward itself (advantages are computed
inside it, so GC2PO adds no pass over TRL's GRPO); when TRL computes old log-probs (vLLM
importance sampling, several iterations per batch), from that pass.

Two hand-offs cross TRL's methods, because TRL computes them inside its own: the per-function
rewards (``_calculate_rewards`` -> ``_rewards_per_func``) and a :class:`ForwardRequest` for the
next policy forward (``_request``), which keeps states and log-probs of that forward and, in the
loss forward of on-policy GC2PO, sets the micro-batch's advantages before TRL's loss reads them.
"""

from __future__ import annotations

import warnings

import torch
from trl import GRPOTrainer
from trl.models.utils import unwrap_model_for_generation

from gc2po.methods import RolloutBatch, get_method
from gc2po.models.sampling import trainer_can_sample, trainer_completions
from gc2po.models.tokenization import PAD_IN_PROMPT_WARNING, prompts_hold_pad
from gc2po.training import scoring
from gc2po.training.config import GC2POConfig
from gc2po.training.distributed import gather_keyed_rows, gathered_lm_head
from gc2po.training.episode_states import state_table
from gc2po.training.episodes import EpisodeBatch, segment_completions
from gc2po.training.forward import ForwardRequest, capture_forward
from gc2po.training.metrics import JsonlMetricsCallback, reduce_over_processes, sampling_ratios
from gc2po.training.ratio_guard import RatioGuard
from gc2po.training.rewards import check_nonnegative_rewards, combined_rewards
from gc2po.training.services import ValueHead, rollout_services
from gc2po.training.step_guard import NonFiniteStepGuard, NonFiniteStepMixin
from gc2po.training.vllm_cpu_sync import needs_cpu_sync, use_cpu_sync

__all__ = ["GC2POConfig", "GC2POTrainer"]


class GC2POTrainer(NonFiniteStepMixin, GRPOTrainer):
    """GRPOTrainer whose advantages come from the configured ``gc2po.methods`` entry.

    Overridden TRL/transformers methods, and why:

    - ``_generate_single_turn``: on CPU, sample through ``gc2po.models.sampling`` (each prompt
      prefilled once, finished rows dropped; the same tokens as ``generate``).
    - ``_calculate_rewards``: keep TRL's per-function rewards, to combine them as TRL does.
    - ``_generate_and_score_completions``: the method's advantages instead of GRPO's (or, for
      on-policy GC2PO, what the loss forward needs to compute them).
    - ``_get_per_token_logps_and_entropies``: serve a :class:`ForwardRequest` in a forward pass
      that runs anyway.
    - ``_compute_loss``: methods with their own loss (GVPO); the sampling-ratio metric.
    - ``training_step``, ``_clip_grad_norm``, ``_get_grad_norm`` (``NonFiniteStepMixin``): skip a
      step whose loss or gradient is not finite.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.method = get_method(self.args.method)
        if self.method.nonnegative_rewards:  # refused here, not at the first negative reward
            check_nonnegative_rewards(
                self.method.name, self.reward_funcs, self.reward_weights.tolist()
            )
        self.step_guard = NonFiniteStepGuard(self.args.max_consecutive_skipped_steps)
        self.ratio_guard = RatioGuard(
            self.args.ratio_guard_low, self.args.ratio_guard_high, self.args.ratio_guard_patience
        )
        self.value_head = ValueHead(
            self.args.rest_value_lr, lambda t: self.accelerator.reduce(t, "mean")
        )
        if needs_cpu_sync(self.use_vllm, self.args.vllm_mode):
            use_cpu_sync(self.vllm_generation)
        self._request: ForwardRequest | None = None
        self._warned_pad_in_prompt = False
        if self.args.metrics_path:
            self.add_callback(JsonlMetricsCallback(self.args.metrics_path))

    def _generate_single_turn(
        self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False
    ):
        if trainer_can_sample(self, images, multimodal_fields):
            completions = trainer_completions(self, prompt_ids)
            if completions is not None:
                return completions, None
        return super()._generate_single_turn(
            prompt_ids, images, multimodal_fields, num_generations, has_tool_images
        )

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        self._rewards_per_func = super()._calculate_rewards(
            inputs, prompts, completions, completion_ids_list
        )
        return self._rewards_per_func

    # -- a generation batch -> advantages -------------------------------------------------------
    def _generate_and_score_completions(self, inputs):
        mode, method, args = self._mode, self.method, self.args
        self.step_guard.note_prompts(x.get("id", "?") for x in inputs)
        deferred = method.needs_cf and args.advantages_in_loss_forward
        want_states = method.needs_rollout_states or (method.needs_cf and not deferred)
        if want_states and args.trl_computes_old_logps:  # TRL's own old-log-prob pass serves it
            self._request = self._new_request()
        output = super()._generate_and_score_completions(inputs)
        request, self._request = self._request, None
        if mode == "train" and self.use_vllm and args.vllm_importance_sampling_correction:
            # TRL logged this generation batch's mean trainer/vLLM ratio (gathered over processes)
            ratio = self._metrics["train"]["sampling/importance_sampling_ratio/mean"][-1]
            self.ratio_guard.observe(self.state.global_step + 1, ratio)
        self._warn_if_prompts_hold_pad(output)

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
        batch = self._rollout_batch(mask, mode, episodes.episode_ids, request)
        output["gc2po_row_index"] = batch.row_index  # travels with each row through TRL's shuffle
        if deferred:  # on-policy GC2PO: advantages come from the loss forward's own states
            positions = self._state_table(episodes, output["completion_ids"])
            output.update(
                gc2po_rewards=batch.rewards,
                gc2po_episode_ids=batch.episode_ids,
                gc2po_state_positions=positions,
                advantages=torch.zeros_like(mask, dtype=torch.float32),
            )
            return output
        if method.needs_rollout_states or (method.needs_episodes and not method.needs_cf):
            batch.services = rollout_services(self, inputs, output, self._generation_context)
        scored = scoring.score(method, batch, args, self._counterfactual)
        metrics = dict(scored.metrics)
        if batch.services is not None and hasattr(batch.services, "value_loss"):
            metrics["rest/value_loss"] = batch.services.value_loss
        self._record(metrics, mode)
        output["advantages"] = scored.advantages
        output.update(scored.loss_inputs)
        return output

    def _rollout_batch(self, mask, mode, episode_ids, request) -> RolloutBatch:
        rows = mask.shape[0]
        rewards = combined_rewards(self._rewards_per_func, self.reward_weights)
        start = self.accelerator.process_index * rows
        return RolloutBatch(
            rewards=rewards[start : start + rows].to(mask.device),
            row_index=torch.arange(start, start + rows, device=mask.device),
            group_size=self.num_generations if mode == "train" else self.num_generations_eval,
            completion_mask=mask,
            gather=self.accelerator.gather,
            episode_ids=episode_ids if self.method.needs_episodes or request else None,
            old_logps=request.logps if request else None,
            states=request.states if request else None,
        )

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

    # -- the forward passes that run anyway -----------------------------------------------------
    def _get_per_token_logps_and_entropies(
        self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
    ):
        request = self._request
        forward = super()._get_per_token_logps_and_entropies
        if request is None or not request.serves(model, self.model):
            return forward(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)
        result = capture_forward(
            request,
            forward,
            self.accelerator.unwrap_model(model),
            model,
            input_ids,
            attention_mask,
            logits_to_keep,
            *args,
            **kwargs,
        )
        if request.inputs is not None:  # the loss forward of on-policy GC2PO
            request.inputs["advantages"] = self._advantages_in_loss_forward(request)
        return result

    def _advantages_in_loss_forward(self, request: ForwardRequest) -> torch.Tensor:
        inputs = request.inputs
        batch = RolloutBatch(
            rewards=inputs["gc2po_rewards"],
            row_index=inputs["gc2po_row_index"],
            group_size=self.num_generations if self._mode == "train" else self.num_generations_eval,
            completion_mask=inputs["completion_mask"].bool(),
            gather=self.accelerator.gather,
            old_logps=request.logps,
            episode_ids=request.episode_ids,
            states=request.states,
        )
        scored = scoring.score(self.method, batch, self.args, self._counterfactual)
        self._record(dict(scored.metrics), self._mode)
        return scored.advantages

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
        max_episodes = getattr(self.args, self.method.max_episodes_field)
        return segment_completions(self.processing_class, completion_ids, mask, max_episodes)

    def _state_table(self, episodes: EpisodeBatch, completion_ids) -> torch.Tensor:
        """Where each episode's state u is read (``cf_state``): [B, Lmax] completion positions."""
        return state_table(
            episodes, completion_ids, self.args.cf_state, set(self.processing_class.all_special_ids)
        )

    # -- loss -----------------------------------------------------------------------------------
    def _compute_loss(self, model, inputs):
        old = inputs.get("old_per_token_logps")
        wants_ratio = old is not None and torch.is_grad_enabled()
        if "gc2po_episode_ids" in inputs:
            self._request = self._new_request(
                episode_ids=inputs["gc2po_episode_ids"],
                inputs=inputs,
                for_loss=True,
                state_positions=inputs["gc2po_state_positions"],
            )
        elif wants_ratio:  # pi / pi_old (paper Fig. 3b) from the loss forward's log-probs
            self._request = ForwardRequest(want_states=False, for_loss=True)
        request = self._request
        try:
            loss = (
                self._method_loss(model, inputs)
                if self.method.loss is not None
                else super()._compute_loss(model, inputs)
            )
        finally:
            self._request = None
        if wants_ratio and request is not None and request.logps is not None:
            self._record(sampling_ratios(request.logps, old, inputs["completion_mask"]), self._mode)
        return loss

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
