"""GCPO (Gu et al., AAAI-26, arXiv 2508.05428; BASELINES 4), the cheap variant.

B_i = A_i * Upsilon_i, A_i GRPO's advantage, Upsilon_i = alpha * cos(z_i, Zbar_i - Zbar'_i + zbar)
with z_i the final-norm hidden state of o_i's last token. Per group: the policy continues the
prompt followed by all K candidates twice (integrated outputs y_n and y_n'); for each i, x_i is
the prompt + every candidate but o_i + y_n (x'_i: + y_n'), and one sample from x_i (x'_i) gives
Zbar_i (Zbar'_i). The KL term (weight kappa = beta) goes to the modified reference
pi'_ref(y_t) = clamp(pi(y_t|x_i, y_<t) - pi(y_t|x'_i, y_<t) + pi(y_t|q, y_<t), 1e-6, 1).

Deviations, disclosed: one sample per context (the paper averages n), Phi from one alternative
integrated output, pi = the sampling policy, the clamp of pi'_ref; groups must be local to a
process.
"""

from __future__ import annotations

import torch

from gc2po.core.advantages import gcpo_reference_logps, gcpo_upsilon, grpo_advantage
from gc2po.methods.base import Method, RolloutBatch, group_view


def gcpo_advantages(batch: RolloutBatch, config) -> tuple[torch.Tensor, dict]:
    services = batch.services
    seq_adv = grpo_advantage(group_view(batch.rewards_all, batch.group_size)).reshape(-1)[batch.local]
    local_rows, K = batch.completion_mask.shape[0], batch.group_size
    if local_rows % K:
        raise ValueError(f"gcpo needs whole groups on each process ({local_rows} rows, K={K})")
    upsilon = torch.zeros(local_rows)
    reference = torch.zeros_like(batch.old_logps)
    for start in range(0, local_rows, K):
        rows = list(range(start, start + K))
        z = services.final_states(rows)  # [K, d]
        contexts, contexts_alt = services.gcpo_contexts(rows, config.max_completion_length)
        z_ctx = services.sample_final_states(contexts)
        z_alt = services.sample_final_states(contexts_alt)
        upsilon[start:start + K] = gcpo_upsilon(z, z_ctx, z_alt, config.gcpo_alpha).cpu()
        ctx_logps = services.completion_logps_given(rows, contexts)
        alt_logps = services.completion_logps_given(rows, contexts_alt)
        reference[start:start + K] = gcpo_reference_logps(ctx_logps, alt_logps, batch.old_logps[start:start + K])
    batch.extras["ref_per_token_logps"] = reference
    adv = seq_adv.cpu() * upsilon
    return adv.to(batch.completion_mask.device), {
        "advantages/mean": adv.mean().item(), "advantages/std": adv.std(unbiased=False).item(),
        "gcpo/upsilon_mean": upsilon.mean().item(), "gcpo/upsilon_negative_frac": (upsilon < 0).float().mean().item(),
    }


GCPO = Method(
    "gcpo", "GCPO: GRPO advantage times a causal cosine weight from counterfactual contexts, KL to a modified reference",
    loss_type="grpo", advantages=gcpo_advantages, needs_states=True, defaults={"beta": 0.06},
    fidelity="deviation: cheap variant (one sample per context, one alternative integrated output); groups local to a process",
)
