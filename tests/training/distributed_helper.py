"""Run by tests/training/test_distributed.py under `accelerate launch` (or as one process): trains
a run config for its steps with a deterministic "generation" (each completion a function of its
row's place in the generation batch, so one and two processes see the same batch) and dumps,
per process and step, the rows and the advantages the loss used.

    python tests/training/distributed_helper.py RUN_YAML DUMP_DIR [RUN_YAML DUMP_DIR ...]

Several runs train one after the other in the same processes: each launch costs the processes'
start-up (torch, transformers and TRL imports, the gloo group) once for all of them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from gc2po.data.jsonl import read_jsonl
from gc2po.training.output_dir import prepare_output_dir
from gc2po.training.run_config import build_args, load_run_config
from gc2po.training.train import build_dataset, exit_launched_process
from gc2po.training.trainer import GC2POTrainer


def parity_reward(prompts, completions, completion_ids, **kwargs):
    return [float(len(ids) % 2) for ids in completion_ids]


parity_reward.__name__ = "outcome"
parity_reward.reward_range = (0.0, 1.0)  # GC2PO checks that R_out cannot go below 0


class FixedGenerationTrainer(GC2POTrainer):
    """Completions depend on (step, global row) only: sampling streams differ between
    process counts."""

    def _generate_single_turn(
        self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False
    ):
        tok = self.processing_class
        words = [i for i in range(len(tok)) if i not in tok.all_special_ids][:200]
        start = self.accelerator.process_index * len(prompt_ids)
        out = []
        for row in range(start, start + len(prompt_ids)):
            g = torch.Generator().manual_seed(1000 * self.state.global_step + row)
            length = 3 + (row + self.state.global_step) % 4  # both parities in every group of 4
            body = [words[int(i)] for i in torch.randint(0, len(words), (length,), generator=g)]
            first = (
                tok.convert_tokens_to_ids("<episode_1>"),
                tok.convert_tokens_to_ids("</episode_1>"),
            )
            second = (
                tok.convert_tokens_to_ids("<episode_2>"),
                tok.convert_tokens_to_ids("</episode_2>"),
            )
            cut = length // 2
            out.append(
                [
                    first[0],
                    *body[:cut],
                    first[1],
                    second[0],
                    *body[cut:],
                    second[1],
                    tok.eos_token_id,
                ]
            )
        return out, None


def main(run_path: str, dump_dir: str):
    run = load_run_config(run_path)
    args = build_args(run)
    prepare_output_dir(run, args, log=lambda *a: None)
    model = AutoModelForCausalLM.from_pretrained(run["model"])
    trainer = FixedGenerationTrainer(
        model=model,
        args=args,
        train_dataset=build_dataset(read_jsonl(run["train_data"]), run["task"]),
        processing_class=AutoTokenizer.from_pretrained(run["model"]),
        reward_funcs=[parity_reward],
    )
    records = []
    original = trainer._compute_loss

    def compute_loss(model, inputs):
        loss = original(model, inputs)
        records.append(
            {
                "step": trainer.state.global_step,
                "rows": inputs["gc2po_row_index"].cpu(),
                "advantages": inputs["advantages"].detach().cpu(),
                "completion_ids": inputs["completion_ids"].cpu(),
                "mask": inputs["completion_mask"].cpu(),
            }
        )
        return loss

    trainer._compute_loss = compute_loss
    trainer.train()
    Path(dump_dir).mkdir(parents=True, exist_ok=True)
    torch.save(records, Path(dump_dir) / f"rank{trainer.accelerator.process_index}.pt")
    trainer.save_model(str(Path(args.output_dir) / "final"))


if __name__ == "__main__":
    pairs = sys.argv[1:]
    if not pairs or len(pairs) % 2:
        sys.exit(f"usage: {sys.argv[0]} RUN_YAML DUMP_DIR [RUN_YAML DUMP_DIR ...]; got {pairs}")
    for run_path, dump_dir in zip(pairs[::2], pairs[1::2]):
        main(run_path, dump_dir)
    # end as `gc2po train` does under accelerate launch: the interpreter's teardown can abort on a
    # gloo thread's last release (pytorch#190489, docs/measurements.md)
    exit_launched_process(0)
