"""``gc2po.core.losses.clipped_token_loss`` is the loss TRL's GRPOTrainer computes with
``loss_type="grpo"`` (as docs/method.md says): the same micro-batch through TRL's own
``_compute_loss`` and through our formula, with off-policy old log-probs (ratios away from 1, some
clipped) and the k3 KL term, which TRL weights by the ratio (``use_bias_correction_kl``, set
explicitly in ``TRAINER_DEFAULTS``; off gives the paper's plain term)."""

from __future__ import annotations

import pytest
import torch
from trl import GRPOTrainer

from gc2po.core.losses import clipped_token_loss


@pytest.mark.slow
@pytest.mark.parametrize("beta, weighted", [(0.0, True), (0.04, True), (0.04, False)])
def test_trl_grpo_loss_is_clipped_token_loss(small_run, beta, weighted):
    trainer = small_run(
        "grpo",
        out=f"loss_{beta}_{weighted}",
        beta=beta,
        epsilon=0.2,
        use_bias_correction_kl=weighted,
    )
    generator = torch.Generator().manual_seed(0)
    rows, prompt, completion = 4, 5, 7
    vocab = trainer.model.config.vocab_size
    completion_mask = torch.ones(rows, completion, dtype=torch.long)
    completion_mask[1, 4:] = 0  # a shorter completion: the per-sequence mean uses its own length
    inputs = {
        "prompt_ids": torch.randint(5, vocab, (rows, prompt), generator=generator),
        "prompt_mask": torch.ones(rows, prompt, dtype=torch.long),
        "completion_ids": torch.randint(5, vocab, (rows, completion), generator=generator),
        "completion_mask": completion_mask,
        "advantages": torch.randn(rows, completion, generator=generator),  # token-level, as GC2PO's
    }
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
    attention = torch.cat([inputs["prompt_mask"], completion_mask], dim=1)
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, ids, attention, completion
        )
    # sampling-policy log-probs away from the policy's (ratios 0.5-2: many outside 1 +- 0.2)
    inputs["old_per_token_logps"] = logps + 0.7 * torch.randn(rows, completion, generator=generator)
    inputs["ref_per_token_logps"] = logps + 0.3 * torch.randn(rows, completion, generator=generator)
    with torch.no_grad():
        trl_loss = GRPOTrainer._compute_loss(trainer, trainer.model, inputs)
        ours = clipped_token_loss(
            logps,
            inputs["old_per_token_logps"],
            inputs["advantages"],
            completion_mask.bool(),
            clip_eps=0.2,
            ref_logps=inputs["ref_per_token_logps"],
            beta_kl=beta,
            kl_ratio_weighted=trainer.args.use_bias_correction_kl,
        )
    ratio = torch.exp(logps - inputs["old_per_token_logps"])
    assert ((ratio < 0.8) | (ratio > 1.2)).any()  # the clip is exercised
    # outside a training step TRL divides by no accumulation count (the model is in eval mode)
    assert trainer.loss_type == "grpo" and not trainer.model.training
    torch.testing.assert_close(trl_loss, ours, atol=1e-6, rtol=1e-6)
