"""GCPO (Gu et al., AAAI-26, arXiv 2508.05428; BASELINES 4), the cheap variant.

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

import torch

from gc2po.core.baselines import gcpo_advantages as gcpo_group_advantages
from gc2po.core.baselines import gcpo_reference_logps
from gc2po.methods.base import MethodOutput, RolloutBatch, advantage_metrics, register_method


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
        contexts, contexts_alt = services.gcpo_contexts(rows, config.max_completion_length)
        z = batch.states.final_states(rows)  # [K, d]
        adv[start : start + K], upsilon[start : start + K] = (
            x.cpu()
            for x in gcpo_group_advantages(
                batch.rewards[start : start + K].double(),
                z,
                services.sample_final_states(contexts),
                services.sample_final_states(contexts_alt),
                config.gcpo_alpha,
            )
        )
        ctx_logps = services.completion_logps_given(rows, contexts)
        alt_logps = services.completion_logps_given(rows, contexts_alt)
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
