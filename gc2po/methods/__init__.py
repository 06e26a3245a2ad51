"""The registry of training methods: one name -> one :class:`Method`.

Adding a method: write its advantage function in a module of this package, decorate it with
``@register_method(name, summary, ...)`` and import the module here.
"""

from __future__ import annotations

from gc2po.methods import gc2po, gc2po_corrected, gcpo, grpo, gvpo, mrt, rest_mcts  # noqa: F401  (registers them)
from gc2po.methods.base import METHODS, Method, RolloutBatch, get_method, register_method

__all__ = ["METHODS", "Method", "RolloutBatch", "get_method", "register_method"]
