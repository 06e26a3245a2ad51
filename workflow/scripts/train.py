"""Train one (run, seed) with gc2po.training.train."""

import shutil
import sys
from pathlib import Path

sys.path.insert(0, __import__("os").path.dirname(__file__))
import torch  # noqa: E402
from _common import logged  # noqa: E402

from gc2po.training.train import train  # noqa: E402

sm = snakemake  # noqa: F821
with logged(sm) as log:
    torch.set_num_threads(sm.threads)
    out_dir = Path(sm.params.out_dir)
    # a fresh run: stale checkpoints or metrics of an earlier configuration must not leak in
    for stale in list(out_dir.glob("checkpoint-*")) + [out_dir / "metrics.jsonl"]:
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink(missing_ok=True)
    run = {
        "model": sm.params.model,
        "train_data": sm.input.data,
        "task": sm.params.task,
        "output_dir": str(out_dir),
        "method": sm.params.run["method"],
        "seed": int(sm.wildcards.seed),
        "trainer": {**sm.params.trainer, **sm.params.run["trainer"]},
    }
    if sm.params.max_train_examples:
        run["max_train_examples"] = sm.params.max_train_examples
    final = train(run, log=log)
    log(f"saved {final}")
