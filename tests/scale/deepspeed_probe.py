"""Run by tests/scale/test_distributed_deepspeed.py under ``accelerate launch`` with a shipped
DeepSpeed config on 2 CPU processes (DS_ACCELERATOR=cpu, gloo).

A transformers Trainer trains a tiny Llama for 2 steps in bf16; step 1's loss is made NaN.
Each rank writes rank<k>.json: whether lm_head is ZeRO-3 sharded, what ``gathered_lm_head``
yields, R_cf from the gathered weight vs from the unsharded initial weight, and whether
DeepSpeed skipped the non-finite step (accelerate's ``optimizer_step_was_skipped``).

    python -m accelerate.commands.launch --config_file C --num_processes 2 \
        --deepspeed_config_file J tests/scale/deepspeed_probe.py OUT_DIR tied|untied
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback, TrainingArguments

from gc2po.core.counterfactual import CounterfactualParams
from gc2po.training.distributed import gathered_lm_head, is_zero3_param
from gc2po.training.train import exit_launched_process

VOCAB, HIDDEN = 96, 32
CF_PARAMS = CounterfactualParams(
    perturbation=["dropout", "gaussian"],
    num_perturbations=4,
    cf_tau=0.1,
    lambda_exp=0.9,
    lambda_sta=1.0,
    cf_eps_u=1e-6,
    answer_space="topk",
    answer_topk=16,
)
STATES = torch.randn(6, HIDDEN, generator=torch.Generator().manual_seed(1))


def is_zero3_sharded(model) -> bool:
    """True when any parameter of ``model`` is DeepSpeed ZeRO-3 partitioned."""
    return any(is_zero3_param(p) for p in model.parameters())


def r_cf(weight: torch.Tensor) -> torch.Tensor:
    return CF_PARAMS.reward(STATES, weight, generator=torch.Generator().manual_seed(2)).r_cf


class NaNFirstStep(Trainer):
    """Makes the first optimizer step's loss NaN, so every gradient is non-finite."""

    def compute_loss(self, model, inputs, **kwargs):
        loss = super().compute_loss(model, inputs, **kwargs)
        return loss * float("nan") if self.state.global_step == 0 else loss


class Probe(TrainerCallback):
    def __init__(self, initial_head: torch.Tensor):
        self.initial_head = initial_head
        self.record: dict = {"steps": []}

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        head = model.get_output_embeddings().weight
        rec = self.record
        rec.update(
            sharded=is_zero3_sharded(model), numel_outside=head.numel(), dtype=str(head.dtype)
        )
        with gathered_lm_head(model) as (weight, bias):
            rec["gathered_shape"] = list(weight.shape)
            rec["bias"] = bias is not None
            rec["r_cf_gathered"] = r_cf(weight).tolist()
            rec["r_cf_unsharded"] = r_cf(self.initial_head).tolist()
            with gathered_lm_head(model) as (inner, _):  # nested: already whole, no second gather
                rec["nested_shape"] = list(inner.shape)
            rec["shape_after_nested"] = list(weight.shape)
        rec["numel_after"] = head.numel()

    def on_step_end(self, args, state, control, model=None, **kwargs):
        with gathered_lm_head(model) as (weight, _):
            unchanged = torch.equal(weight.detach(), self.initial_head)
        self.record["steps"].append(
            {
                "step": state.global_step,
                "skipped": trainer.accelerator.optimizer_step_was_skipped,
                "head_unchanged": unchanged,
            }
        )


out_dir, tied = Path(sys.argv[1]), sys.argv[2] == "tied"
config = LlamaConfig(
    vocab_size=VOCAB,
    hidden_size=HIDDEN,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    tie_word_embeddings=tied,
)
torch.manual_seed(0)
model = LlamaForCausalLM(config)
probe = Probe(model.get_output_embeddings().weight.detach().to(torch.bfloat16).clone())
args = TrainingArguments(
    output_dir=str(out_dir / "trainer"),
    per_device_train_batch_size=1,
    max_steps=2,
    bf16=True,
    use_cpu=True,
    learning_rate=1e-2,
    max_grad_norm=1.0,
    report_to="none",
    save_strategy="no",
    logging_steps=1,
    seed=0,
)
generator = torch.Generator().manual_seed(0)
data = [
    {"input_ids": ids, "labels": ids}
    for ids in torch.randint(0, VOCAB, (4, 8), generator=generator)
]
trainer = NaNFirstStep(model=model, args=args, train_dataset=data, callbacks=[probe])
trainer.train()
probe.record["tied"] = model.get_output_embeddings().weight is model.get_input_embeddings().weight
(out_dir / f"rank{trainer.accelerator.process_index}.json").write_text(json.dumps(probe.record))
trainer.accelerator.end_training()  # as gc2po.training.train does
exit_launched_process(0)  # and as gc2po train then ends (no exit-time abort)
