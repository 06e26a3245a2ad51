"""The only module importing trl: ``GC2POConfig`` and ``GC2POTrainer``.

``GC2POTrainer`` keeps TRL's generation, reward calls, reference model and clipped loss, and
replaces the advantages with those of the selected method (``gc2po.methods``). For methods that
need episodes it runs **one** no-grad forward pass of the sampling policy that yields both the
per-token log-probs (used as old log-probs) and the final-norm hidden states at each episode's
last token, then calls ``gc2po.core`` for the counterfactual reward and token advantages.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from gc2po.core.counterfactual import PERTURBATIONS, build_perturbation, counterfactual_reward
from gc2po.core.segment import segment_with_info, token_episode_ids
from gc2po.methods import METHODS, RolloutBatch, get_method
from gc2po.tokenization import decode_with_offsets

PERTURBATION_PARAM_FIELDS = {"dropout": ("p", "perturbation_p"), "gaussian": ("sigma", "perturbation_sigma"),
                             "group_mix": ("alpha", "perturbation_alpha")}


@dataclass
class GC2POConfig(GRPOConfig):
    """GRPOConfig plus GC2PO's hyper-parameters (paper defaults; SPEC 2 where the paper is silent)."""

    method: str = field(default="gc2po", metadata={"help": f"Training method, one of {sorted(METHODS)}."})
    lambda_cf: float = field(default=0.8, metadata={"help": "Weight of R_cf in the episodic score S (paper: 0.8)."})
    lambda_exp: float = field(default=0.9, metadata={"help": "Weight of S_exp in R_cf (paper: 0.9)."})
    lambda_sta: float = field(default=1.0, metadata={"help": "Weight of S_sta in R_cf (1; 0 for the w/o S_sta ablation)."})
    cf_tau: float = field(default=0.1, metadata={"help": "Temperature tau of the stability term."})
    cf_eps_u: float = field(default=1e-6, metadata={"help": "eps_u in the expressiveness term's denominator."})
    num_perturbations: int = field(default=8, metadata={"help": "Monte Carlo samples M of perturbed states."})
    perturbation: str = field(default="dropout,gaussian", metadata={
        "help": f"Comma-separated perturbation operators applied in order, from {sorted(PERTURBATIONS)}."})
    perturbation_p: float = field(default=0.1, metadata={"help": "Dropout probability of the dropout operator."})
    perturbation_sigma: float = field(default=0.1, metadata={"help": "Relative noise scale of the gaussian operator."})
    perturbation_alpha: float = field(default=0.3, metadata={"help": "Mixing weight of the group_mix operator."})
    answer_space: str = field(default="topk", metadata={"help": "'topk' or 'vocab': support of q(.|u)."})
    answer_topk: int = field(default=64, metadata={"help": "k of the top-k answer space."})
    max_episodes: int = field(default=32, metadata={"help": "Episodes past this merge into the last one."})
    trunc_frac: float = field(default=0.05, metadata={"help": "Fraction of token rewards dropped at each tail."})
    adv_clip: float = field(default=10.0, metadata={"help": "Token advantages are clamped to [-adv_clip, adv_clip]."})
    episode_weight_norm: str = field(default="sum", metadata={
        "help": "'sum' (paper: surprise weights sum to 1 per episode) or 'mean' (average 1)."})
    length_penalty_alpha: float = field(default=0.1, metadata={"help": "alpha of the length-penalty baseline."})
    compute_old_logps: bool = field(default=True, metadata={
        "help": "Always compute old log-probs in one extra no-grad pass (gives the sampling-ratio metric for "
                "every method; GC2PO needs the pass anyway)."})
    metrics_path: str | None = field(default=None, metadata={"help": "JSONL file that receives every logged step."})

    def __post_init__(self):
        method = get_method(self.method)  # fails with the valid names
        for key, value in method.defaults.items():
            setattr(self, key, value)
        for key in ("lambda_cf", "lambda_exp", "lambda_sta"):
            value = getattr(self, key)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{key} must be in [0, 1], got {value!r}")
        if not self.cf_tau > 0:
            raise ValueError(f"cf_tau must be > 0, got {self.cf_tau!r}")
        if self.num_perturbations < 1:
            raise ValueError(f"num_perturbations must be >= 1, got {self.num_perturbations!r}")
        if self.answer_space not in ("topk", "vocab"):
            raise ValueError(f"answer_space must be 'topk' or 'vocab', got {self.answer_space!r}")
        if self.episode_weight_norm not in ("sum", "mean"):
            raise ValueError(f"episode_weight_norm must be 'sum' or 'mean', got {self.episode_weight_norm!r}")
        if not 0 <= self.trunc_frac < 0.5:
            raise ValueError(f"trunc_frac must be in [0, 0.5), got {self.trunc_frac!r}")
        if self.num_generations is not None and self.num_generations < 2:
            raise ValueError(f"num_generations must be >= 2 (a group needs K >= 2), got {self.num_generations}")
        build_perturbation(self.perturbation_spec())
        self.loss_type = method.loss_type
        super().__post_init__()

    def perturbation_spec(self) -> list[dict]:
        spec = []
        for name in [n.strip() for n in self.perturbation.split(",") if n.strip()]:
            item = {"name": name}
            if name in PERTURBATION_PARAM_FIELDS:
                param, attr = PERTURBATION_PARAM_FIELDS[name]
                item[param] = getattr(self, attr)
            spec.append(item)
        return spec


class JsonlMetricsCallback(TrainerCallback):
    """Appends every log record (with step and wall-clock step time) to a JSONL file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._step_start = None
        self._step_times: list[float] = []

    def on_step_begin(self, args, state, control, **kwargs):
        self._step_start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if self._step_start is not None:
            self._step_times.append(time.perf_counter() - self._step_start)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        record = {"step": state.global_step, **logs}
        if self._step_times:
            record["step_time"] = sum(self._step_times) / len(self._step_times)
            self._step_times = []
        with self.path.open("a") as handle:
            handle.write(json.dumps(record) + "\n")


class GC2POTrainer(GRPOTrainer):
    """GRPOTrainer whose advantages come from the configured ``gc2po.methods`` entry."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.method = get_method(self.args.method)
        if self.args.metrics_path:
            self.add_callback(JsonlMetricsCallback(self.args.metrics_path))

    # -- rewards: keep the gathered outcome rewards for the method ------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._rewards_per_func = rewards_per_func
        return rewards_per_func

    # -- advantages -------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        completion_mask = output["completion_mask"]
        weights = self.reward_weights.to(self._rewards_per_func.device)
        rewards_all = torch.nan_to_num((self._rewards_per_func * weights).nansum(dim=1), nan=0.0)
        local_n = completion_mask.shape[0]
        start = self.accelerator.process_index * local_n
        batch = RolloutBatch(
            rewards_all=rewards_all,
            lengths_all=self.accelerator.gather(completion_mask.sum(1)),
            group_size=self.num_generations if mode == "train" else self.num_generations_eval,
            local=slice(start, start + local_n),
            completion_mask=completion_mask,
            gather=self.accelerator.gather,
        )
        if self.method.needs_episodes or self.args.compute_old_logps:
            old_logps, states = self._sampling_policy_pass(output, want_states=self.method.needs_episodes)
            output["old_per_token_logps"] = old_logps
            batch.old_logps = old_logps
            if self.method.needs_episodes:
                self._score_episodes(output, batch, states, mode)
        advantages, metrics = self.method.advantages(batch, self.args)
        self._last_rollout = batch  # kept for inspection and tests
        output["advantages"] = advantages.to(completion_mask.device)
        for name, value in metrics.items():
            self._metrics[mode][name].append(value)
        return output

    @torch.no_grad()
    def _sampling_policy_pass(self, output, want_states: bool):
        """One forward pass of the sampling policy through TRL's own fused log-prob path (no
        [B, T, V] logits; the same numerics as the loss), with a forward hook on the backbone
        that keeps the final-norm hidden states of the completion when wanted.
        Returns (log-probs [B, C], hidden states [B, C, d] or None)."""
        model = self.accelerator.unwrap_model(self.model)
        prompt_ids, completion_ids = output["prompt_ids"], output["completion_ids"]
        input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        prompt_len = prompt_ids.shape[1]
        states: list[torch.Tensor] = []

        def keep_states(module, args, result):
            states.append(result.last_hidden_state[:, prompt_len:].detach())

        backbone = getattr(model, model.base_model_prefix)
        handle = backbone.register_forward_hook(keep_states) if want_states else None
        try:
            logps, _, _ = self._get_per_token_logps_and_entropies(
                self.model, input_ids, attention_mask, completion_ids.shape[1],
                batch_size=self.args.per_device_train_batch_size)
        finally:
            if handle is not None:
                handle.remove()
        return logps, (torch.cat(states) if want_states else None)

    def _score_episodes(self, output, batch: RolloutBatch, states: torch.Tensor, mode: str):
        """Segment completions, gather episode-end states, compute S_sta and S_exp per episode."""
        args = self.args
        completion_ids, mask = output["completion_ids"], output["completion_mask"].bool()
        device = completion_ids.device
        episode_ids = torch.full_like(completion_ids, -1)
        fallbacks, counts = [], []
        for row in range(completion_ids.shape[0]):
            n = int(mask[row].sum())
            text, offsets = decode_with_offsets(self.processing_class, completion_ids[row, :n].tolist())
            seg = segment_with_info(text, args.max_episodes)
            fallbacks.append(seg.used_fallback)
            counts.append(len(seg.spans))
            offsets_t = torch.tensor(offsets, dtype=torch.long).reshape(-1, 2)
            episode_ids[row, :n] = token_episode_ids(offsets_t, seg.spans, torch.ones(n, dtype=torch.bool)).to(device)
        num_slots = max(1, int(episode_ids.max()) + 1)
        # last token index of every (row, episode) present
        positions = torch.arange(completion_ids.shape[1], device=device).expand_as(episode_ids)
        last = torch.full((completion_ids.shape[0], num_slots), -1, dtype=torch.long, device=device)
        last.scatter_reduce_(1, episode_ids.clamp(min=0), torch.where(episode_ids >= 0, positions, -1), reduce="amax")
        rows, slots = (last >= 0).nonzero(as_tuple=True)
        s_sta = torch.zeros(completion_ids.shape[0], num_slots, device=device)
        s_exp = torch.zeros_like(s_sta)
        if rows.numel():
            u = states[rows, last[rows, slots]].float()
            lm_head = self.accelerator.unwrap_model(self.model).get_output_embeddings()
            group_index = (rows + batch.local.start) // batch.group_size
            cf = counterfactual_reward(
                u, lm_head.weight, perturbation=args.perturbation_spec(),
                num_samples=args.num_perturbations, tau=args.cf_tau, lambda_exp=args.lambda_exp, eps_u=args.cf_eps_u,
                answer_space=args.answer_space, topk=args.answer_topk, temperature=self.temperature,
                lm_head_bias=lm_head.bias, generator=self._generator_for(u.device), group_index=group_index,
            )
            s_sta[rows, slots], s_exp[rows, slots] = cf.s_sta.to(device), cf.s_exp.to(device)
            r_cf = args.lambda_sta * cf.s_sta + args.lambda_exp * cf.s_exp
            self._metrics[mode]["gc2po/s_sta"].append(cf.s_sta.mean().item())
            self._metrics[mode]["gc2po/s_exp"].append(cf.s_exp.mean().item())
            self._metrics[mode]["gc2po/r_cf"].append(r_cf.mean().item())
        batch.episode_ids, batch.s_sta, batch.s_exp = episode_ids, s_sta, s_exp
        tokens = mask.sum().item()
        self._metrics[mode]["segmentation/fallback_rate"].append(sum(fallbacks) / len(fallbacks))
        self._metrics[mode]["episodes/mean_count"].append(sum(counts) / len(counts))
        self._metrics[mode]["episodes/mean_tokens"].append(tokens / max(1, sum(counts)))

    def _generator_for(self, device: torch.device) -> torch.Generator:
        """Perturbation RNG seeded from (seed, step, process): a resumed run draws the same noise."""
        seed = (self.args.seed * 1_000_003 + self.state.global_step) * 64 + self.accelerator.process_index
        return torch.Generator(device=device).manual_seed(seed)

    # -- sampling-ratio metric (paper Fig. 3b) ---------------------------------------------
    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        logps, entropies, aux = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        if torch.is_grad_enabled():
            self._last_policy_logps = logps.detach()
        return logps, entropies, aux

    def _compute_loss(self, model, inputs):
        loss = super()._compute_loss(model, inputs)
        old = inputs.get("old_per_token_logps")
        if old is not None and getattr(self, "_last_policy_logps", None) is not None:
            mask = inputs["completion_mask"].bool()
            ratio = torch.exp(self._last_policy_logps - old)[mask]
            if ratio.numel():
                mode = "train" if self.model.training else "eval"
                self._metrics[mode]["sampling_ratio/mean"].append(ratio.mean().item())
                self._metrics[mode]["sampling_ratio/max"].append(ratio.max().item())
                self._metrics[mode]["sampling_ratio/min"].append(ratio.min().item())
        return loss
