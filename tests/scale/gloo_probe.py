"""Run by tests/scale/test_launch.py under the CPU accelerate config: each rank writes what
accelerate, torch.distributed and transformers' TrainingArguments see (rank<k>.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from accelerate import PartialState
from transformers import TrainingArguments

out_dir = Path(sys.argv[1])
args = TrainingArguments(
    output_dir=str(out_dir / "trainer"), report_to="none"
)  # as gc2po train builds it
state = PartialState()
total = torch.tensor([float(state.process_index + 1)])
dist.all_reduce(total)
record = {
    "rank": state.process_index,
    "world_size": state.num_processes,
    "backend": dist.get_backend(),
    "distributed_type": str(state.distributed_type),
    "all_reduce_sum": total.item(),
    "trainer_world_size": args.world_size,
    "trainer_device": str(args.device),
}
(out_dir / f"rank{state.process_index}.json").write_text(json.dumps(record))
