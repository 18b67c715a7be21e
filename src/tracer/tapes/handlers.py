"""Which ops an exception would not simply escape from: those inside a `try`, `with`
or `finally` of their own frame or of a caller inlined around them.

Re-running such an op, an exception the trace did not see means the program would
have taken another path (its handler), so the tape reports a GuardError instead of
letting the exception out.  Handlers that only clean up and re-raise (an inlined
comprehension restoring its variable, an `except` block's own cleanup) do not count.
"""

from __future__ import annotations

from ..analysis.identitycache import IdentityCache
from ..analysis.ir import ir as ir_of

__all__ = ["handled_offsets"]

# Instructions a pure cleanup handler consists of, ending in RERAISE.
_CLEANUP = {"PUSH_EXC_INFO", "SWAP", "POP_TOP", "STORE_FAST", "LOAD_FAST", "LOAD_FAST_CHECK",
            "LOAD_FAST_AND_CLEAR", "COPY", "POP_EXCEPT", "NOP", "LOAD_CONST", "STORE_DEREF",
            "DELETE_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST", "LOAD_FAST_LOAD_FAST",
            "CACHE", "EXTENDED_ARG", "NOT_TAKEN", "LOAD_FAST_BORROW"}

_STOPITERATION_ERROR = 3  # CALL_INTRINSIC_1's INTRINSIC_STOPITERATION_ERROR (3.12, 3.13)

_cache: "IdentityCache[frozenset[int]]" = IdentityCache()


def handled_offsets(code) -> frozenset[int]:
    """The offsets of `code` from which an exception reaches a real handler."""
    hit = _cache.get(code)
    if hit is not None:
        return hit
    lay = ir_of(code).layout
    out: set[int] = set()
    for h in lay.handlers:
        if not _is_cleanup(lay, h.target):
            out.update(off for off in lay.by_offset if h.start <= off < h.end)
    result = _cache[code] = frozenset(out)
    return result


def _is_cleanup(lay, target: int) -> bool:
    off = target
    while True:
        ins = lay.by_offset.get(off)
        if ins is None:
            return False
        if ins.opname == "RERAISE":
            return True
        if ins.opname == "CALL_INTRINSIC_1" and getattr(ins, "arg", None) == _STOPITERATION_ERROR:
            # A generator's handler around its whole body: a StopIteration raised
            # inside becomes a RuntimeError, re-raised (nothing is caught).
            off = ins.next
            continue
        if ins.opname not in _CLEANUP:
            return False
        off = ins.next
