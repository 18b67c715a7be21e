"""CodeCache: values kept per code object while it lives, with no Python code run
when the collector frees one (a WeakKeyDictionary's callback would run inside
whatever program tracer is recording)."""

from __future__ import annotations

import weakref
from types import CodeType
from typing import Generic, TypeVar

__all__ = ["CodeCache"]

V = TypeVar("V")
_MISSING = object()


class CodeCache(Generic[V]):
    """A mapping from code objects, by identity, to values, that forgets a code
    object once it is freed.

    `weakref.WeakKeyDictionary` removes an entry through a Python callback the
    collector calls when it frees the key: during a traced call that callback is
    a frame entered from C in the middle of the user's program (issue 20).  Here
    the entries hold weak references without callbacks; a lookup checks that the
    reference still points at the code asked for (an id can be reused once its
    object is gone), and dead entries are swept whenever the mapping has doubled
    since the last sweep.  Identity, not equality: equal code objects compiled
    from different files are different codes.
    """

    __slots__ = ("_entries", "_sweep_at")

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, V]] = {}
        self._sweep_at = 64

    def get(self, code: CodeType, default=None):
        entry = self._entries.get(id(code))
        if entry is not None and entry[0]() is code:
            return entry[1]
        return default

    def __getitem__(self, code: CodeType) -> V:
        value = self.get(code, _MISSING)
        if value is _MISSING:
            raise KeyError(code)
        return value

    def __setitem__(self, code: CodeType, value: V) -> None:
        self._entries[id(code)] = (weakref.ref(code), value)
        if len(self._entries) >= self._sweep_at:
            self._sweep()

    def __contains__(self, code: object) -> bool:
        return self.get(code, _MISSING) is not _MISSING  # type: ignore[arg-type]

    def __len__(self) -> int:
        """The number of entries whose code objects are alive."""
        return sum(1 for ref, _ in self._entries.values() if ref() is not None)

    def _sweep(self) -> None:
        self._entries = {k: e for k, e in self._entries.items() if e[0]() is not None}
        self._sweep_at = max(64, 2 * len(self._entries))
