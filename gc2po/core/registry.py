"""Name -> entry registries filled by decorators, which refuse a name registered twice.

Used for the perturbation operators (``gc2po.core.counterfactual``) and the training methods
(``gc2po.methods``). A duplicate fails at import, naming where both registrations are.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


def caller_site(depth: int = 2) -> str:
    """``file:line`` of the code ``depth`` frames up (1 = the caller of this function's caller).
    ``sys._getframe``, not ``inspect.stack()``: the latter reads the source of every frame,
    seconds at import for a registry of a dozen entries."""
    frame = sys._getframe(depth)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


class Registry(Generic[T]):
    """A read-only mapping of names to entries, extended only through :meth:`add`."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._sites: dict[str, str] = {}

    def add(self, name: str, entry: T, site: str) -> T:
        if name in self._entries:
            raise ValueError(
                f"{self.kind} {name!r} is registered twice: first at {self._sites[name]}, "
                f"again at {site}"
            )
        self._entries[name] = entry
        self._sites[name] = site
        return entry

    def get(self, name: str) -> T:
        """The entry called ``name``; a ValueError lists the valid names."""
        if name not in self._entries:
            raise ValueError(
                f"{self.kind}: unknown name {name!r}; valid choices: {sorted(self._entries)}"
            )
        return self._entries[name]

    def site(self, name: str) -> str:
        return self._sites[name]

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def items(self):
        return self._entries.items()

    def values(self):
        return self._entries.values()
