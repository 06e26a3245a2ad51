"""The registry of training methods: one name -> one :class:`Method`.

Adding a method: write its advantage function in a module of this package, decorate it with
``@register_method(name, summary, ...)`` and import the module here.
"""

from __future__ import annotations

# importing a module registers its methods
from gc2po.methods import gc2po, gc2po_corrected, gcpo, grpo, gvpo, mrt, rest_mcts  # noqa: F401
from gc2po.methods.base import (
    METHODS,
    Method,
    MethodOutput,
    RolloutBatch,
    get_method,
    register_method,
)

__all__ = ["METHODS", "Method", "MethodOutput", "RolloutBatch", "get_method", "register_method"]
