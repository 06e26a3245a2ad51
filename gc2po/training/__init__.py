"""RL training of a policy with a registered method, on TRL's ``GRPOTrainer``.

The pipeline, module by module:

- ``run_config``: a run config (YAML) checked before any model loads -> the resolved ``config``
  (``GC2POConfig``, TRL's ``GRPOConfig`` plus GC2PO's and the baselines' fields, whose values
  ``config_checks`` checks); ``output_dir``: refuse, resume or start over in the output directory;
- ``train``: model, data and reward -> ``trainer.GC2POTrainer`` -> checkpoints, final model;
- ``trainer``: the thin TRL adapter (its helpers in ``batch_scoring``); it hands each generation
  batch to ``scoring``, which turns it into the method's advantages (episodes from ``episodes``,
  the state each episode is read at from ``episode_states``, R_cf, extra generation and scoring
  from ``services`` and its backends in ``continuations``);
- ``rewards``, ``step_guard``, ``ratio_guard``, ``metrics``, ``distributed``,
  ``vllm_cpu_sync``: what a step needs around that.

The planning of a workflow config (training jobs, launch commands, memory) is ``gc2po.workflow``.

``GC2POConfig``, ``GC2POTrainer`` and ``train`` are importable from here; they load TRL on first
use, so importing this package costs nothing.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "GC2POConfig": "gc2po.training.config",
    "GC2POTrainer": "gc2po.training.trainer",
    "train": "gc2po.training.train",
}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gc2po.training' has no attribute {name!r}")
