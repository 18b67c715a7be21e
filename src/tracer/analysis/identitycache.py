"""IdentityCache: values kept per object (a code object, a function) while it
lives, with no Python code run when the collector frees one (a
WeakKeyDictionary's callback would run inside whatever program tracer is
recording)."""

from __future__ import annotations

import weakref
from typing import Generic, TypeVar

__all__ = ["IdentityCache"]

V = TypeVar("V")
_MISSING = object()


class IdentityCache(Generic[V]):
    """A mapping from objects, by identity, to values, that forgets an object once
    it is freed.  Keys are any objects that take weak references: code objects
    (the analysis and tape caches) and functions (tracer.ad's paths per function).

    `weakref.WeakKeyDictionary` removes an entry through a Python callback the
    collector calls when it frees the key: during a traced call that callback is
    a frame entered from C in the middle of the user's program (issue 20).  Here
    the entries hold weak references without callbacks; a lookup checks that the
    reference still points at the object asked for (an id can be reused once its
    object is gone), and dead entries are swept whenever the mapping has doubled
    since the last sweep.  Identity, not equality: equal code objects compiled
    from different files are different keys.
    """

    __slots__ = ("_entries", "_sweep_at")

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, V]] = {}
        self._sweep_at = 64

    def get(self, key: object, default=None):
        entry = self._entries.get(id(key))
        if entry is not None and entry[0]() is key:
            return entry[1]
        return default

    def __getitem__(self, key: object) -> V:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: object, value: V) -> None:
        self._entries[id(key)] = (weakref.ref(key), value)
        if len(self._entries) >= self._sweep_at:
            self._sweep()

    def __contains__(self, key: object) -> bool:
        return self.get(key, _MISSING) is not _MISSING  # type: ignore[arg-type]

    def __len__(self) -> int:
        """The number of entries whose keys are alive."""
        return sum(1 for ref, _ in self._entries.values() if ref() is not None)

    def _sweep(self) -> None:
        self._entries = {k: e for k, e in self._entries.items() if e[0]() is not None}
        self._sweep_at = max(64, 2 * len(self._entries))
