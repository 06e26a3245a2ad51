"""The registry of training methods: one name -> one :class:`Method`.

Adding a method is adding a module to this package: every module here is imported (so its
``@register_method`` runs) when the package is; docs/extending.md says what to declare.
"""

from __future__ import annotations

import importlib
import pkgutil

from gc2po.methods.base import (
    METHODS,
    Method,
    MethodOutput,
    RolloutBatch,
    get_method,
    register_method,
)

# registration order is the modules' alphabetical order; tables sort by each method's ``order``
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["METHODS", "Method", "MethodOutput", "RolloutBatch", "get_method", "register_method"]
