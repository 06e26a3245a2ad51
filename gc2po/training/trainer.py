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

The class holds these overrides only; the helpers they call are
:class:`gc2po.training.batch_scoring.BatchScoringMixin`.
"""

from __future__ import annotations

import torch
from trl import GRPOTrainer

from gc2po.methods import get_method
from gc2po.models.sampling import trainer_can_sample, trainer_completions
from gc2po.training.batch_scoring import BatchScoringMixin
from gc2po.training.config import GC2POConfig
from gc2po.training.forward import ForwardRequest, capture_forward
from gc2po.training.metrics import JsonlMetricsCallback, sampling_ratios
from gc2po.training.ratio_guard import RatioGuard
from gc2po.training.rewards import check_nonnegative_rewards
from gc2po.training.step_guard import NonFiniteStepGuard, NonFiniteStepMixin
from gc2po.training.vllm_cpu_sync import needs_cpu_sync, use_cpu_sync

__all__ = ["GC2POConfig", "GC2POTrainer"]


class GC2POTrainer(BatchScoringMixin, NonFiniteStepMixin, GRPOTrainer):
    """GRPOTrainer whose advantages come from the configured ``gc2po.methods`` entry (the module
    docstring lists the TRL methods it overrides, and why)."""

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
        self.method_state: dict = {}  # what a method keeps from batch to batch (services.state)
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
        from_states = method.needs_cf and args.cf_from_states  # R_cf; other signals: at generation
        deferred = from_states and args.advantages_in_loss_forward
        want_states = method.needs_rollout_states or (from_states and not deferred)
        if want_states and args.trl_computes_old_logps:  # TRL's own old-log-prob pass serves it
            self._request = self._new_request()
        output = super()._generate_and_score_completions(inputs)
        request, self._request = self._request, None
        if mode == "train" and self.use_vllm and args.vllm_importance_sampling_correction:
            # TRL logged this generation batch's mean trainer/vLLM ratio (gathered over processes)
            ratio = self._metrics["train"]["sampling/importance_sampling_ratio/mean"][-1]
            self.ratio_guard.observe(self.state.global_step + 1, ratio)
        self._warn_if_prompts_hold_pad(output)
        return self._score_generation(inputs, output, request, mode, want_states, deferred)

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
