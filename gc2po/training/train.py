"""Training entry point: a run config (YAML) -> GC2POConfig -> GC2POTrainer.

A run config:

    model: path or Hub id of the policy (also the reference model)
    train_data: normalised JSONL (id, source, question, answer, meta)
    task: testbed | benchmark     # gc2po.data.tasks: prompt style and outcome reward (default
                                  # benchmark: each record's meta.answer_format and meta.grader)
    output_dir: where checkpoints, the final model and metrics.jsonl go
    method: gc2po                 # any name of gc2po.methods.METHODS
    seed: 0
    precision: bf16-mixed         # bf16-mixed | bf16 | fp32 (default: bf16-mixed on GPU,
                                  # fp32 on CPU)
    resume: false                 # continue from the last checkpoint of the same run config
    overwrite: false              # allow starting over in a used output_dir (deletes its
                                  # checkpoints)
    max_train_examples: null      # first N problems only
    trainer: {...}                # GC2POConfig / GRPOConfig fields
    memory_plan: "..."            # set by the workflow for a job its memory plan says does not
                                  # fit, trained because train.ignore_memory_plan is set: logged
    keep_checkpoints: true        # false: when the run ends, delete its checkpoint-<step>
                                  # folders (final stays)

Everything is validated (and a bad key or value named) before a model is loaded. The resolved
config's hash is stored beside the checkpoints (``run_config.json``), so a resumed job continues
only the run it started.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
from pathlib import Path

import torch

from gc2po.data.jsonl import read_jsonl
from gc2po.layout import RunDir
from gc2po.training.output_dir import prepare_output_dir, remove_checkpoints
from gc2po.training.run_config import build_args, precheck, run_task


def build_dataset(records: list[dict], task: str):
    """TRL prompt dataset: conversational prompt + the columns the reward needs."""
    from datasets import Dataset

    from gc2po.data.prompts import record_messages

    rows = [
        {
            "prompt": record_messages(record, task),
            "question": record["question"],
            "answer": str(record["answer"]),
            "meta_json": json.dumps(record.get("meta", {})),
            "id": record["id"],
        }
        for record in records
    ]
    return Dataset.from_list(rows)


def train(run: dict, log=print) -> Path:
    """Train one run; returns the directory holding the final model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.methods import get_method
    from gc2po.training.rewards import reward_functions
    from gc2po.training.trainer import GC2POTrainer

    precheck(run)  # the commonest mistakes, within a second
    if run.get("memory_plan"):  # the workflow was told to train a job its plan says will not fit
        log(f"WARNING memory plan: {run['memory_plan']}")
    args = build_args(run)  # everything else, before any model is loaded
    task = run_task(run)
    records = read_jsonl(run["train_data"])
    if run.get("max_train_examples"):
        records = records[: int(run["max_train_examples"])]
    checkpoint = prepare_output_dir(run, args, log)
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(run["model"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = (
        torch.bfloat16 if args.precision == "bf16" else torch.float32
    )  # bf16-mixed keeps fp32 master weights
    model = AutoModelForCausalLM.from_pretrained(run["model"], dtype=dtype)
    trainer = GC2POTrainer(
        model=model,
        args=args,
        train_dataset=build_dataset(records, task),
        processing_class=tokenizer,
        reward_funcs=reward_functions(get_method(args.method), task),
    )
    log(
        f"training {args.method} ({args.precision}) on {len(records)} problems -> "
        f"{args.output_dir} "
        f"(resume={checkpoint is not None}{f' from {checkpoint.name}' if checkpoint else ''})"
    )
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    final = Path(args.output_dir) / RunDir.FINAL
    trainer.save_model(str(final))  # rank 0 writes; gathers ZeRO-3 shards (16-bit) first
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(final)
    trainer.accelerator.wait_for_everyone()
    if run.get("keep_checkpoints") is False and trainer.is_world_process_zero():
        remove_checkpoints(Path(args.output_dir), log)
    trainer.accelerator.end_training()  # trackers ended, process group destroyed (as torch asks)
    return final


def exit_launched_process(status: int = 0) -> None:
    """End a process started by ``accelerate launch``/torchrun (``WORLD_SIZE`` > 1) with
    ``status`` without Python's interpreter finalization; return in a single process.

    Why (torch 2.13 + CPython 3.11, reproduced by ``benchmarks/gpu/gloo_exit_abort.py``, numbers in
    docs/measurements.md): a gloo worker thread of a process group that is still referenced
    (DeepSpeed's groups, DDP's) releases its last collective (``AsyncAllgatherWork``) after the
    caller's wait returned. Releasing a tensor that has a Python object takes the GIL; once
    ``Py_FinalizeEx`` has begun, ``take_gil`` ends the thread with ``pthread_exit``, whose
    unwinding through the noexcept work destructor calls ``std::terminate``: "terminate called
    without an active exception", SIGABRT, after every output was written (pytorch/pytorch#190489;
    ``destroy_process_group`` does not help, the groups outlive it). Here the atexit callbacks
    and the non-daemon threads finish as at a normal exit, the streams are flushed, and the
    process ends before finalization begins, so no thread can be caught in it."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # logging.shutdown, temporary files, ... (what exit would run)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
