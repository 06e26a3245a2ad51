"""``GC2POTrainer``: TRL's ``GRPOTrainer`` with the advantages of a ``gc2po.methods`` entry.

TRL keeps generation, reward calls, the reference model and the clipped loss. What GC2PO needs
beyond GRPO (old log-probs for the surprise weights, final-norm states at episode ends) is taken
from forward passes that run anyway: on-policy, from the loss forward itself (advantages are
computed inside it, so GC2PO adds no pass over TRL's GRPO); when TRL computes old log-probs (vLLM
importance sampling, several iterations per batch), from that pass.
"""

from __future__ import annotations

import warnings

import torch
from trl import GRPOTrainer
from trl.models.utils import unwrap_model_for_generation

from gc2po.training import episode_states, episodes
from gc2po.training.config import GC2POConfig
from gc2po.core.counterfactual import counterfactual_reward
from gc2po.training.distributed import gather_keyed_rows, gathered_lm_head
from gc2po.training.episodes import CaptureRequest, EpisodeStates, StateCapture
from gc2po.models.sampling import trainer_can_sample, trainer_completions
from gc2po.methods import RolloutBatch, get_method
from gc2po.training.ratio_guard import RatioGuard
from gc2po.training.rewards import check_nonnegative_rewards, combined_rewards
from gc2po.training.services import HFContinuations, RolloutServices, ValueHead, VLLMContinuations
from gc2po.training.step_guard import NonFiniteStepGuard
from gc2po.models.tokenization import PAD_IN_PROMPT_WARNING, prompts_hold_pad
from gc2po.training.metrics import JsonlMetricsCallback, reduce_over_processes, sampling_ratios
from gc2po.training.vllm_cpu_sync import needs_cpu_sync, use_cpu_sync

__all__ = ["GC2POConfig", "GC2POTrainer"]


class GC2POTrainer(GRPOTrainer):
    """GRPOTrainer whose advantages come from the configured ``gc2po.methods`` entry.

    Overridden TRL/transformers methods, and why:

    - ``_calculate_rewards``: keep TRL's per-function rewards, to combine them as TRL does
      (weighted sum; a completion no function scored stays NaN and gets advantage 0).
    - ``_generate_single_turn``: the transformers path samples through ``gc2po.models.sampling``
      (each prompt prefilled once, finished rows dropped; the same tokens as ``generate``).
    - ``_generate_and_score_completions``: replace TRL's GRPO advantages by the method's, or
      prepare their computation in the loss forward (GC2PO on-policy).
    - ``_get_per_token_logps_and_entropies``: capture final-norm states at episode ends in a pass
      that runs anyway, and compute deferred advantages inside the loss forward.
    - ``_compute_loss``: methods with their own loss (GVPO); the sampling-ratio metric.
    - ``training_step``, ``_clip_grad_norm``, ``_get_grad_norm``: skip a step whose loss or
      gradient is not finite (``gc2po.training.step_guard``).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.method = get_method(self.args.method)
        if self.method.nonnegative_rewards:  # refused here, not at the first negative reward mid-run
            check_nonnegative_rewards(self.method.name, self.reward_funcs, self.reward_weights.tolist())
        self.step_guard = NonFiniteStepGuard(self.args.max_consecutive_skipped_steps)
        self.ratio_guard = RatioGuard(self.args.ratio_guard_low, self.args.ratio_guard_high,
                                      self.args.ratio_guard_patience)
        self.value_head = ValueHead(self.args.rest_value_lr, lambda t: self.accelerator.reduce(t, "mean"))
        if needs_cpu_sync(self.use_vllm, self.args.vllm_mode):
            use_cpu_sync(self.vllm_generation)
        self._capture: CaptureRequest | None = None
        self._warned_pad_in_prompt = False
        if self.args.metrics_path:
            self.add_callback(JsonlMetricsCallback(self.args.metrics_path))

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        if trainer_can_sample(self, images, multimodal_fields):
            completions = trainer_completions(self, prompt_ids)
            if completions is not None:
                return completions, None
        return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations, has_tool_images)

    # -- rewards and advantages at generation time --------------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        self._rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        return self._rewards_per_func

    def _generate_and_score_completions(self, inputs):
        mode = "train" if self.model.training else "eval"
        method, args = self.method, self.args
        self.step_guard.note_prompts(x.get("id", "?") for x in inputs)
        want_states = method.needs_rollout_states or (method.needs_cf and not args.advantages_in_loss_forward)
        if want_states and args.trl_computes_old_logps:
            self._capture = CaptureRequest()  # TRL's own old-log-prob pass keeps the states
        output = super()._generate_and_score_completions(inputs)
        capture, self._capture = self._capture, None
        if mode == "train" and self.use_vllm and args.vllm_importance_sampling_correction:
            # TRL logged this generation batch's mean trainer/vLLM ratio (gathered over processes)
            ratio = self._metrics["train"]["sampling/importance_sampling_ratio/mean"][-1]
            self.ratio_guard.observe(self.state.global_step + 1, ratio)
        self._warn_if_prompts_hold_pad(output)

        mask = output["completion_mask"].bool()
        rows = mask.shape[0]
        rewards = combined_rewards(self._rewards_per_func, self.reward_weights)
        start = self.accelerator.process_index * rows
        batch = RolloutBatch(rewards=rewards[start:start + rows].to(mask.device),
                             row_index=torch.arange(start, start + rows, device=mask.device),
                             group_size=self.num_generations if mode == "train" else self.num_generations_eval,
                             completion_mask=mask, gather=self.accelerator.gather)

        if (want_states or method.needs_old_logps or args.sampling_ratio_pass) and capture is None:
            capture = CaptureRequest()
            output["old_per_token_logps"] = self._sampling_policy_pass(output, capture)
        if capture is not None:
            batch.old_logps, batch.states = capture.logps, capture.states
            batch.episode_ids = capture.episode_ids
        elif method.needs_episodes:
            batch.episode_ids = self._segment(output["completion_ids"], mask)
        else:  # episode statistics for every method: the length figure compares GRPO with GC2PO
            self._segment(output["completion_ids"], mask)
        self._record_episode_metrics(mask, mode)

        output["gc2po_row_index"] = batch.row_index  # travels with each row through TRL's shuffle
        if method.needs_cf and args.advantages_in_loss_forward:
            # on-policy GC2PO: advantages are computed inside the loss forward (see class docstring)
            output.update(gc2po_rewards=batch.rewards, gc2po_episode_ids=batch.episode_ids,
                          gc2po_state_positions=self._state_table(output["completion_ids"]),
                          advantages=torch.zeros_like(mask, dtype=torch.float32))
            return output
        if method.needs_cf:
            batch.r_cf = self._counterfactual_table(batch, mode)
        if method.needs_rollout_states or (method.needs_episodes and not method.needs_cf):
            batch.services = self._services(inputs, output)
        advantages, metrics = method.advantages(batch, args)
        if batch.services is not None and hasattr(batch.services, "value_loss"):
            metrics["rest/value_loss"] = batch.services.value_loss
        self._record(metrics, mode)
        output["advantages"] = advantages.to(mask.device)
        output.update(batch.extras)
        return output

    @torch.no_grad()
    def _sampling_policy_pass(self, output, capture: CaptureRequest) -> torch.Tensor:
        """One no-grad pass of the sampling policy through TRL's fused log-prob path (the loss's
        numerics), keeping episode-end states: old log-probs [B, C]."""
        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        self._capture = capture
        try:
            logps, _, _ = self._get_per_token_logps_and_entropies(
                self.model, ids, attention, output["completion_ids"].shape[1],
                batch_size=self.args.per_device_train_batch_size)
        finally:
            self._capture = None
        return logps

    # -- states from the passes that run anyway -----------------------------------------------
    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        capture = self._capture
        if capture is None or capture.done or (capture.inputs is None and model is not self.model):
            result = super()._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep,
                                                                 *args, **kwargs)
            self._last_policy_logps = result[0].detach() if torch.is_grad_enabled() else None
            return result
        capture.done = True
        if capture.episode_ids is None:
            capture.episode_ids = self._segment(input_ids[:, -logits_to_keep:],
                                                attention_mask[:, -logits_to_keep:].bool())
        if capture.state_positions is None:
            capture.state_positions = self._state_table(input_ids[:, -logits_to_keep:])
        rows, slots, positions, num_slots = episode_states.flatten(capture.state_positions)
        hook = StateCapture(rows, positions, logits_to_keep)
        unwrapped = self.accelerator.unwrap_model(model)
        handle = getattr(unwrapped, unwrapped.base_model_prefix).register_forward_hook(hook)
        try:
            result = super()._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep,
                                                                 *args, **kwargs)
        finally:
            handle.remove()
        capture.logps = result[0].detach()
        capture.states = EpisodeStates(rows, slots, positions, num_slots,
                                       hook.states(unwrapped.config.hidden_size, torch.float32, input_ids.device))
        if capture.inputs is not None:
            capture.inputs["advantages"] = self._advantages_in_loss_forward(capture)
        return result

    def _advantages_in_loss_forward(self, capture: CaptureRequest) -> torch.Tensor:
        inputs, mode = capture.inputs, "train" if self.model.training else "eval"
        batch = RolloutBatch(rewards=inputs["gc2po_rewards"], row_index=inputs["gc2po_row_index"],
                             group_size=self.num_generations if mode == "train" else self.num_generations_eval,
                             completion_mask=inputs["completion_mask"].bool(), gather=self.accelerator.gather,
                             old_logps=capture.logps, episode_ids=capture.episode_ids, states=capture.states)
        batch.r_cf = self._counterfactual_table(batch, mode)
        advantages, metrics = self.method.advantages(batch, self.args)
        self._record(metrics, mode)
        return advantages

    def _counterfactual_table(self, batch: RolloutBatch, mode: str) -> torch.Tensor:
        """R_cf per (row, episode) [B, Lmax] from the captured states, with S_sta/S_exp metrics."""
        args, states = self.args, batch.states
        device = batch.completion_mask.device
        # Every rank scores the episodes of the whole generation batch in generation-batch order with
        # the same noise: the result depends neither on how rows are shuffled into micro-batches nor
        # on how many processes share the batch, and group_mix sees siblings on other processes.
        key = batch.row_index[states.rows] * 4096 + states.slots  # < 4096 episodes per completion
        all_key, all_u = gather_keyed_rows(self.accelerator, key, states.u)
        order = all_key.argsort()
        all_key, all_u = all_key[order], all_u[order]
        with gathered_lm_head(self.accelerator.unwrap_model(self.model)) as (weight, bias):  # whole under ZeRO-3
            cf = counterfactual_reward(
                all_u, weight, args.counterfactual_params(), lm_head_bias=bias,
                generator=self._perturbation_generator(all_u.device),
                group_index=torch.div(all_key, 4096 * batch.group_size, rounding_mode="floor"))
        self._record({"gc2po/s_sta": cf.s_sta.mean().item(), "gc2po/s_exp": cf.s_exp.mean().item(),
                      "gc2po/r_cf": cf.r_cf.mean().item()}, mode)
        local = torch.searchsorted(all_key, key)  # this rank's episodes in the sorted batch
        return states.table(cf.r_cf[local].to(device), batch.completion_mask.shape[0])

    def _perturbation_generator(self, device) -> torch.Generator:
        """Seeded from (seed, optimizer step, micro-step), the same on every process: a resumed run
        draws the same noise."""
        micro = self._step % self.args.gradient_accumulation_steps
        seed = (self.args.seed * 1_000_003 + self.state.global_step) * 1009 + micro
        return torch.Generator(device=device).manual_seed(seed)

    def _segment(self, completion_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        max_episodes = getattr(self.args, self.method.max_episodes_field)
        self._last_segmentation = episodes.segment_completions(self.processing_class, completion_ids, mask, max_episodes)
        return self._last_segmentation.episode_ids

    def _state_table(self, completion_ids: torch.Tensor) -> torch.Tensor:
        """Where each episode's state u is read (``cf_state``) in the last segmented batch:
        [B, Lmax] completion positions."""
        return episode_states.state_table(self._last_segmentation, completion_ids,
                                          self.args.cf_state,
                                          set(self.processing_class.all_special_ids))

    def _record_episode_metrics(self, mask: torch.Tensor, mode: str):
        """Formatting compliance (the paper's) and episode statistics of the last segmentation."""
        seg = self._last_segmentation
        rows = max(1, len(seg.num_episodes))
        self._record({"segmentation/fallback_rate": sum(seg.used_fallback) / rows,
                      "episodes/mean_count": sum(seg.num_episodes) / rows,
                      "episodes/mean_tokens": mask.sum().item() / max(1, sum(seg.num_episodes))}, mode)

    # -- extra generation and scoring (MRT, GCPO, ReST-MCTS*) ----------------------------------
    def _services(self, inputs, output) -> RolloutServices:
        def model_context():
            return unwrap_model_for_generation(self.model_wrapped, self.accelerator,
                                               gather_deepspeed3_params=self.args.ds3_gather_for_generation)

        tok = self.processing_class
        generate = (VLLMContinuations(self.vllm_generation) if self.use_vllm else
                    HFContinuations(model_context, tok.pad_token_id, tok.eos_token_id, self.temperature,
                                    self.args.per_device_train_batch_size, self.accelerator.device))

        def outcome(rows: list[int], texts: list[str]) -> torch.Tensor:
            chosen = [inputs[r] for r in rows]
            columns = {k: [x[k] for x in chosen] for k in (chosen[0] if chosen else {}) if k not in ("prompt", "completion")}
            values = self.reward_funcs[0](prompts=[x["prompt"] for x in chosen], completion_ids=None,
                                          completions=[[{"role": "assistant", "content": t}] for t in texts], **columns)
            return torch.tensor([0.0 if v is None else float(v) for v in values])

        return RolloutServices(generate=generate, model_context=model_context, tokenizer=tok, outcome=outcome,
                               rollout=output, gather=self.accelerator.gather, step=self.state.global_step,
                               temperature=self.temperature, max_completion_length=self.args.max_completion_length,
                               force_answer_text=self.args.force_answer_text, answer_tokens=self.args.mrt_answer_tokens,
                               value_head=self.value_head)

    # -- loss ----------------------------------------------------------------------------------
    def _compute_loss(self, model, inputs):
        if "gc2po_episode_ids" in inputs:
            self._capture = CaptureRequest(episode_ids=inputs["gc2po_episode_ids"], inputs=inputs,
                                           state_positions=inputs["gc2po_state_positions"])
        try:
            if self.method.loss is not None:
                ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
                attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
                logps, _, _ = self._get_per_token_logps_and_entropies(model, ids, attention,
                                                                      inputs["completion_ids"].shape[1])
                loss = self.method.loss(logps, inputs, self.args)
                loss = loss / (self.current_gradient_accumulation_steps if self.model.training else 1.0)
            else:
                loss = super()._compute_loss(model, inputs)
        finally:
            self._capture = None
        self._record_sampling_ratio(inputs)
        return loss

    def _record_sampling_ratio(self, inputs):
        """pi/pi_old (paper Fig. 3b) where old log-probs come from a separate pass; on-policy
        without that pass the ratio is exactly 1 and is not logged."""
        policy, old = getattr(self, "_last_policy_logps", None), inputs.get("old_per_token_logps")
        if policy is not None and old is not None:
            self._record(sampling_ratios(policy, old, inputs["completion_mask"]),
                         "train" if self.model.training else "eval")

    # -- non-finite steps ----------------------------------------------------------------------
    def training_step(self, model, inputs, num_items_in_batch):
        loss = super().training_step(model, inputs, num_items_in_batch)
        self.step_guard.note_loss(loss)
        return loss

    def _clip_grad_norm(self, model):
        if self.is_deepspeed_enabled:
            return super()._clip_grad_norm(model)
        return self.step_guard.clip(model.named_parameters(), self.args.max_grad_norm)

    def _get_grad_norm(self, model, grad_norm=None):
        if grad_norm is None and not self.is_deepspeed_enabled:
            grad_norm = self.step_guard.clip(model.named_parameters(), None)
        grad_norm = super()._get_grad_norm(model, grad_norm=grad_norm)
        engine_skipped = self.is_deepspeed_enabled and self.accelerator.optimizer_step_was_skipped
        skipped = self.step_guard.end_step(grad_norm, self.state.global_step + 1, model.parameters(), engine_skipped)
        if not self.is_deepspeed_enabled:
            # accelerate's optimizer reports a skipped step (its GradScaler overflow flag) through
            # `step_was_skipped`; the Trainer and the LR scheduler then leave the schedule untouched
            self.optimizer._is_overflow = skipped
        self._metrics["train"]["nonfinite/skipped_steps"].append(float(self.step_guard.skipped_total))
        return grad_norm

    # -- metrics -------------------------------------------------------------------------------
    def _record(self, metrics: dict[str, float], mode: str):
        for name, value in reduce_over_processes(metrics, self.accelerator).items():
            self._metrics[mode][name].append(value)

    def _warn_if_prompts_hold_pad(self, output):
        if not self._warned_pad_in_prompt and prompts_hold_pad(output["prompt_ids"], output["prompt_mask"],
                                                               self.processing_class.pad_token_id):
            self._warned_pad_in_prompt = True
            warnings.warn(PAD_IN_PROMPT_WARNING.format(pad=self.processing_class.pad_token_id), stacklevel=2)
