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

from gc2po.core.counterfactual import (
    PERTURBATIONS,
    build_perturbation,
    counterfactual_reward,
    spec_from_fields,
)
from gc2po.core.segment import segment_episodes
from gc2po.episodes import episode_end_positions, segment_completions
from gc2po.methods import METHODS, RolloutBatch, get_method


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
    gvpo_beta: float = field(default=0.1, metadata={"help": "beta of GVPO's implicit reward (authors' default 0.1)."})
    mrt_alpha: float = field(default=1.0, metadata={"help": "Weight alpha of MRT's progress rewards."})
    mrt_num_stops: int = field(default=4, metadata={"help": "Forced-answer samples per episode boundary (MRT)."})
    mrt_max_episodes: int = field(default=6, metadata={"help": "Episodes per completion for MRT (later ones merge)."})
    mrt_answer_tokens: int = field(default=16, metadata={"help": "Tokens generated for a forced answer (MRT)."})
    rest_branches: int = field(default=3, metadata={"help": "Continuations per branch point (ReST-MCTS*-lite)."})
    rest_min_value: float = field(default=0.2, metadata={"help": "Minimum predicted step value to clone a rollout."})
    rest_value_lr: float = field(default=1e-3, metadata={"help": "Learning rate of the ReST-MCTS* value head."})
    gcpo_alpha: float = field(default=2.0, metadata={"help": "alpha of GCPO's causal weight (paper: 2)."})
    force_answer_text: str = field(default="\n\nTime is up. The final answer is \\boxed{", metadata={
        "help": "Appended to a truncated trajectory to force a final answer (MRT's meta-prover)."})
    compute_old_logps: bool = field(default=True, metadata={
        "help": "Always compute old log-probs in one extra no-grad pass (gives the sampling-ratio metric for "
                "every method; GC2PO needs the pass anyway)."})
    metrics_path: str | None = field(default=None, metadata={"help": "JSONL file that receives every logged step."})

    def __post_init__(self):
        method = get_method(self.method)  # fails with the valid names
        for key, value in method.fixed.items():
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
        if method.loss is not None and not self.compute_old_logps:
            raise ValueError(f"method {self.method!r} needs old log-probs: compute_old_logps must be true")
        if method.loss is not None and self.steps_per_generation != 1:
            raise ValueError(f"method {self.method!r} needs whole groups in one loss computation: "
                             f"steps_per_generation must be 1, got {self.steps_per_generation}")

    def perturbation_spec(self) -> list[dict]:
        return spec_from_fields(self.perturbation, p=self.perturbation_p, sigma=self.perturbation_sigma,
                                alpha=self.perturbation_alpha)


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
            services=self,
        )
        self._rollout_inputs, self._rollout_output = inputs, output
        if self.method.needs_episodes or self.method.needs_states or self.args.compute_old_logps:
            old_logps, states = self._sampling_policy_pass(output, want_states=self.method.needs_states)
            output["old_per_token_logps"] = old_logps
            batch.old_logps = old_logps
            self._rollout_states = states
            if self.method.needs_episodes:
                self._score_episodes(output, batch, states, mode)
        advantages, metrics = self.method.advantages(batch, self.args)
        self._last_rollout = batch  # kept for inspection and tests
        output["advantages"] = advantages.to(completion_mask.device)
        output.update(batch.extras)
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
        max_episodes = getattr(args, self.method.max_episodes_field)
        episodes = segment_completions(self.processing_class, completion_ids, mask, max_episodes)
        rows, slots, positions, num_slots = episode_end_positions(episodes.episode_ids)
        s_sta = torch.zeros(completion_ids.shape[0], num_slots, device=device)
        s_exp = torch.zeros_like(s_sta)
        if rows.numel() and self.method.needs_cf:
            lm_head = self.accelerator.unwrap_model(self.model).get_output_embeddings()
            cf = counterfactual_reward(
                states[rows, positions].float(), lm_head.weight, perturbation=args.perturbation_spec(),
                num_samples=args.num_perturbations, tau=args.cf_tau, lambda_exp=args.lambda_exp, eps_u=args.cf_eps_u,
                answer_space=args.answer_space, topk=args.answer_topk, temperature=self.temperature,
                lm_head_bias=lm_head.bias, generator=self._generator_for(device),
                group_index=(rows + batch.local.start) // batch.group_size,
            )
            s_sta[rows, slots], s_exp[rows, slots] = cf.s_sta.to(device), cf.s_exp.to(device)
            r_cf = args.lambda_sta * cf.s_sta + args.lambda_exp * cf.s_exp
            self._metrics[mode]["gc2po/s_sta"].append(cf.s_sta.mean().item())
            self._metrics[mode]["gc2po/s_exp"].append(cf.s_exp.mean().item())
            self._metrics[mode]["gc2po/r_cf"].append(r_cf.mean().item())
        batch.episode_ids, batch.s_sta, batch.s_exp = episodes.episode_ids, s_sta, s_exp
        counts = episodes.num_episodes
        self._metrics[mode]["segmentation/fallback_rate"].append(sum(episodes.used_fallback) / len(counts))
        self._metrics[mode]["episodes/mean_count"].append(sum(counts) / len(counts))
        self._metrics[mode]["episodes/mean_tokens"].append(mask.sum().item() / max(1, sum(counts)))

    # -- services for methods that generate or score more (MRT, GCPO) --------------------------
    def _prompt_ids(self, row: int) -> list[int]:
        out = self._rollout_output
        return out["prompt_ids"][row][out["prompt_mask"][row].bool()].tolist()

    def _completion_ids(self, row: int) -> list[int]:
        out = self._rollout_output
        return out["completion_ids"][row][out["completion_mask"][row].bool()].tolist()

    def _left_pad(self, sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Token lists -> left-padded ids and attention mask [N, max length] on the device."""
        pad, width = self.processing_class.pad_token_id, max(len(s) for s in sequences)
        ids = [[pad] * (width - len(s)) + s for s in sequences]
        attention = [[0] * (width - len(s)) + [1] * len(s) for s in sequences]
        device = self.accelerator.device
        return torch.tensor(ids, device=device), torch.tensor(attention, device=device)

    @torch.no_grad()
    def generate_continuations(self, contexts: list[list[int]], num: int, max_new_tokens: int) -> list[list[int]]:
        """``num`` sampled continuations of each token context (the rollout policy, training
        temperature); returns the continuations' ids, ``num`` consecutive entries per context."""
        model = self.accelerator.unwrap_model(self.model)
        pad = self.processing_class.pad_token_id
        out: list[list[int]] = []
        chunk = max(1, self.args.per_device_train_batch_size)
        jobs = [c for c in contexts for _ in range(num)]
        for lo in range(0, len(jobs), chunk):
            ids, attention = self._left_pad(jobs[lo:lo + chunk])
            width = ids.shape[1]
            generated = model.generate(input_ids=ids, attention_mask=attention, max_new_tokens=max_new_tokens, do_sample=True,
                                       temperature=self.temperature, top_p=1.0, top_k=0, pad_token_id=pad,
                                       eos_token_id=self.processing_class.eos_token_id)[:, width:]
            out.extend(row.tolist() for row in generated)
        return out

    def _outcome(self, rows: list[int], texts: list[str]) -> torch.Tensor:
        """The outcome reward (the first reward function) of ``texts`` as completions of ``rows``."""
        inputs = [self._rollout_inputs[r] for r in rows]
        columns = {k: [x[k] for x in inputs] for k in inputs[0] if k not in ("prompt", "completion", "completion_ids")}
        completions = [[{"role": "assistant", "content": t}] for t in texts]
        values = self.reward_funcs[0](prompts=[x["prompt"] for x in inputs], completions=completions,
                                      completion_ids=None, **columns)
        return torch.tensor([0.0 if v is None else float(v) for v in values])

    def _continue_prefixes(self, rows: list[int], prefix_ends: list[int], suffix: list[int], num: int,
                           max_new_tokens: int) -> tuple[list[list[int]], torch.Tensor]:
        """Sample ``num`` continuations of each completion prefix (completion tokens up to
        ``prefix_end`` inclusive, -1 = none) followed by ``suffix``; returns the continuations
        (``num`` consecutive per prefix) and the outcome of prefix + suffix + continuation."""
        completions = self._rollout_output["completion_ids"]
        prefixes = [completions[r, :end + 1].tolist() + suffix for r, end in zip(rows, prefix_ends)]
        continuations = self.generate_continuations([self._prompt_ids(r) + p for r, p in zip(rows, prefixes)], num,
                                                    max_new_tokens)
        decode = self.processing_class.decode
        texts = [decode(prefixes[i // num] + c, skip_special_tokens=True) for i, c in enumerate(continuations)]
        return continuations, self._outcome([rows[i // num] for i in range(len(texts))], texts)

    def forced_answer_success(self, rows: list[int], prefix_ends: list[int], num: int) -> torch.Tensor:
        """MRT's meta-prover: mean outcome of ``num`` forced answers after each completion prefix."""
        force = self.processing_class(self.args.force_answer_text, add_special_tokens=False)["input_ids"]
        _, outcome = self._continue_prefixes(rows, prefix_ends, force, num, self.args.mrt_answer_tokens)
        return outcome.view(-1, num).mean(-1)

    def branch_outcomes(self, rows: list[int], prefix_ends: list[int], num: int) -> list[list[tuple[bool, int]]]:
        """ReST-MCTS*: ``num`` continuations of each completion prefix, each as (verified
        correct, number of steps it adds)."""
        continuations, outcome = self._continue_prefixes(rows, prefix_ends, [], num, self.args.max_completion_length)
        decode = self.processing_class.decode
        steps = [len(segment_episodes(decode(c, skip_special_tokens=True))) for c in continuations]
        results = [(bool(o > 0.5), n) for o, n in zip(outcome.tolist(), steps)]
        return [results[i * num:(i + 1) * num] for i in range(len(rows))]

    def fit_value_head(self, rows: list[int], positions: list[int], targets: torch.Tensor) -> torch.Tensor:
        """One MSE step of the value head on (step states, targets); returns its predictions
        for the same states (after the step) [N]."""
        states = self._rollout_states[rows, positions].float().detach()
        if not hasattr(self, "value_head"):
            self.value_head = torch.nn.Linear(states.shape[-1], 1).to(states.device)
            self._value_optimizer = torch.optim.Adam(self.value_head.parameters(), lr=self.args.rest_value_lr)
        targets = targets.to(states.device)
        with torch.enable_grad():
            loss = torch.nn.functional.mse_loss(self.value_head(states).squeeze(-1), targets)
            self._value_optimizer.zero_grad()
            loss.backward()
            self._value_optimizer.step()
        self._metrics["train"]["rest/value_loss"].append(loss.item())
        with torch.no_grad():
            return self.value_head(states).squeeze(-1).cpu()

    def final_states(self, rows: list[int]) -> torch.Tensor:
        """Final-norm hidden state at the last token of each completion in ``rows`` [R, d]."""
        lengths = self._rollout_output["completion_mask"][rows].sum(1).clamp(min=1) - 1
        return self._rollout_states[rows, lengths].float()

    def gcpo_contexts(self, rows: list[int], max_new_tokens: int) -> tuple[list[list[int]], list[list[int]]]:
        """GCPO's counterfactual contexts for one group: prompt + candidates but o_i + integrated
        output y_n (and the alternative y_n')."""
        tok = self.processing_class
        candidates = [self._completion_ids(r) for r in rows]
        separator = tok("\n\n", add_special_tokens=False)["input_ids"]
        prompt = self._prompt_ids(rows[0])

        def joined(parts):
            ids = []
            for part in parts:
                ids += part + separator
            return ids

        integrated = self.generate_continuations([prompt + joined(candidates)], 2, max_new_tokens)
        contexts = [[prompt + joined(candidates[:i] + candidates[i + 1:] + [y]) for i in range(len(rows))] for y in integrated]
        return contexts[0], contexts[1]

    @torch.no_grad()
    def _states_and_logps(self, sequences: list[list[int]], score_from: list[int]):
        """Final-norm states at the last token, and log-probs of tokens from ``score_from`` on."""
        model = self.accelerator.unwrap_model(self.model)
        backbone = getattr(model, model.base_model_prefix)
        ids, attention = self._left_pad(sequences)
        width = ids.shape[1]
        hidden = backbone(input_ids=ids, attention_mask=attention).last_hidden_state
        logps = []
        for row, (seq, start) in enumerate(zip(sequences, score_from)):
            offset = width - len(seq)
            logits = model.get_output_embeddings()(hidden[row, offset + start - 1: -1]).float() / self.temperature
            logps.append(torch.log_softmax(logits, -1).gather(-1, ids[row, offset + start:].unsqueeze(-1)).squeeze(-1))
        return hidden[:, -1].float(), logps

    def sample_final_states(self, contexts: list[list[int]]) -> torch.Tensor:
        """One sampled continuation per context; the final-norm state at its last token [N, d]."""
        samples = self.generate_continuations(contexts, 1, self.args.max_completion_length)
        states, _ = self._states_and_logps([c + s for c, s in zip(contexts, samples)], [len(c) for c in contexts])
        return states

    def completion_logps_given(self, rows: list[int], contexts: list[list[int]]) -> torch.Tensor:
        """Log-probs of each completion's tokens [R, T] when it follows ``contexts`` instead of its prompt."""
        out = self._rollout_output
        completions = [self._completion_ids(r) for r in rows]
        _, logps = self._states_and_logps([c + y for c, y in zip(contexts, completions)], [len(c) for c in contexts])
        result = torch.zeros(len(rows), out["completion_ids"].shape[1], device=out["completion_ids"].device)
        for i, values in enumerate(logps):
            result[i, : len(values)] = values
        return result

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
        if self.method.loss is not None:
            input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
            attention_mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
            logps, _, _ = self._get_per_token_logps_and_entropies(model, input_ids, attention_mask,
                                                                  inputs["completion_ids"].shape[1])
            loss = self.method.loss(logps, inputs, self.args)
            normalizer = self.current_gradient_accumulation_steps if self.model.training else 1.0
            loss = loss / normalizer
        else:
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
