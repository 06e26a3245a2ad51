"""GCPO (Gu et al., AAAI-26, arXiv 2508.05428), the cheap variant.

B_i = A_i * Upsilon_i, A_i GRPO's advantage, Upsilon_i = alpha * cos(z_i, Zbar_i - Zbar'_i + zbar)
with z_i the final-norm hidden state of o_i's last token. Per group: the policy continues the
prompt followed by all K candidates twice (integrated outputs y_n and y_n'); for each i, x_i is
the prompt + every candidate but o_i + y_n (x'_i: + y_n'), and one sample from x_i (x'_i) gives
Zbar_i (Zbar'_i). The KL term (weight kappa = beta = 0.06, the paper's) goes to the modified
reference pi'_ref(y_t) = clamp(pi(y_t|x_i, y_<t) - pi(y_t|x'_i, y_<t) + pi(y_t|q, y_<t), 1e-6, 1).

Deviations, disclosed: one sample per context (the paper averages n), Phi from one alternative
integrated output, pi = the sampling policy, the clamp of pi'_ref; groups must be local to a
process.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gc2po.core.baselines import gcpo_advantages as gcpo_group_advantages
from gc2po.core.baselines import gcpo_reference_logps
from gc2po.methods.base import MethodOutput, RolloutBatch, advantage_metrics, register_method


@dataclass(frozen=True)
class GCPOSettings:
    """GCPO's settings (``trainer.method_args`` of a ``gcpo`` run)."""

    alpha: float = 2.0  # alpha of the causal weight (paper: 2)


@register_method(
    "gcpo",
    "GCPO: GRPO advantage times a causal cosine weight from counterfactual contexts, KL to a "
    "modified reference",
    display_name="GCPO",
    colour="#e377c2",
    order=60,
    needs_rollout_states=True,
    needs_old_logps=True,
    local_groups=True,
    settings=GCPOSettings,
    fixed={"beta": 0.06},
    fidelity="deviation: cheap variant (one sample per context, one alternative integrated "
    "output); groups local to a process",
)
def gcpo_advantages(batch: RolloutBatch, config) -> MethodOutput:
    services, K = batch.services, batch.group_size
    rows_total = batch.completion_mask.shape[0]
    adv = torch.zeros(rows_total, dtype=torch.float64)
    upsilon = torch.zeros(rows_total)
    reference = torch.zeros_like(batch.old_logps)
    for start in range(0, rows_total, K):
        rows = list(range(start, start + K))
        contexts, contexts_alt = counterfactual_contexts(
            services, rows, config.max_completion_length
        )
        z = batch.states.final_states(rows)  # [K, d]
        adv[start : start + K], upsilon[start : start + K] = (
            x.cpu()
            for x in gcpo_group_advantages(
                batch.rewards[start : start + K].double(),
                z,
                sample_final_states(services, contexts),
                sample_final_states(services, contexts_alt),
                config.method_settings.alpha,
            )
        )
        ctx_logps = completion_logps_given(services, rows, contexts)
        alt_logps = completion_logps_given(services, rows, contexts_alt)
        reference[start : start + K] = gcpo_reference_logps(
            ctx_logps, alt_logps, batch.old_logps[start : start + K]
        )
    metrics = advantage_metrics(adv)
    metrics.update(
        {
            "gcpo/upsilon_mean": upsilon.mean().item(),
            "gcpo/upsilon_negative_frac": (upsilon < 0).float().mean().item(),
        }
    )
    # the KL term's reference (TRL reads ref_per_token_logps from the batch)
    loss_inputs = {"ref_per_token_logps": reference}
    return MethodOutput(adv.float().to(batch.completion_mask.device), metrics, loss_inputs)


# -- what GCPO generates and scores beyond the batch (``services``: RolloutServices) ------------
def counterfactual_contexts(
    services, rows: list[int], max_new_tokens: int
) -> tuple[list[list[int]], list[list[int]]]:
    """GCPO's counterfactual contexts for one group: prompt + every candidate but o_i +
    integrated output y_n (and the alternative y_n')."""
    candidates = [services.completion_ids(r) for r in rows]
    separator = services.tokenizer("\n\n", add_special_tokens=False)["input_ids"]
    prompt = services.prompt_ids(rows[0])

    def joined(parts):
        return [token for part in parts for token in part + separator]

    integrated = services.continuations([prompt + joined(candidates)], 2, max_new_tokens)
    contexts = [
        [prompt + joined(candidates[:i] + candidates[i + 1 :] + [y]) for i in range(len(rows))]
        for y in integrated
    ]
    return contexts[0], contexts[1]


def sample_final_states(services, contexts: list[list[int]]) -> torch.Tensor:
    """One sampled continuation per context; the final-norm state at its last token [N, d]."""
    samples = services.continuations(contexts, 1, services.max_completion_length)
    states, _ = services.states_and_logps(
        [c + s for c, s in zip(contexts, samples)], [len(c) for c in contexts]
    )
    return states


def completion_logps_given(services, rows: list[int], contexts: list[list[int]]) -> torch.Tensor:
    """Log-probs of each completion's tokens [R, T] when it follows ``contexts`` instead of its
    prompt."""
    completions = [services.completion_ids(r) for r in rows]
    _, logps = services.states_and_logps(
        [c + y for c, y in zip(contexts, completions)], [len(c) for c in contexts]
    )
    width = services.rollout["completion_ids"].shape[1]
    result = torch.zeros(len(rows), width, device=services.rollout["completion_ids"].device)
    for i, values in enumerate(logps):
        result[i, : len(values)] = values
    return result
