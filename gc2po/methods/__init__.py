"""The registry of training methods: one name -> one :class:`Method`.

Adding a method: write its advantage function in a module of this package and register a
``Method`` in ``METHODS``.
"""

from __future__ import annotations

from gc2po.methods.base import Method, RolloutBatch
from gc2po.methods.gc2po import GC2PO, GC2PO_NO_RCF, GC2PO_NO_SEXP, GC2PO_NO_SSTA
from gc2po.methods.gcpo import GCPO
from gc2po.methods.grpo import DR_GRPO, GRPO, LENGTH_PENALTY
from gc2po.methods.gvpo import GVPO
from gc2po.methods.mrt import MRT
from gc2po.methods.rest_mcts import REST_MCTS

METHODS: dict[str, Method] = {
    m.name: m for m in (GC2PO, GC2PO_NO_SEXP, GC2PO_NO_SSTA, GC2PO_NO_RCF, GRPO, DR_GRPO, LENGTH_PENALTY, GVPO, MRT, GCPO, REST_MCTS)
}


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise ValueError(f"method: unknown name {name!r}; valid choices: {sorted(METHODS)}")
    return METHODS[name]


__all__ = ["METHODS", "Method", "RolloutBatch", "get_method"]
