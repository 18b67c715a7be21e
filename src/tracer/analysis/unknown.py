"""Events for loads of locals the recorder may not know (a part of the plan builder,
tracer.analysis.plan).

A local the recorder has not seen stored -- a generator or coroutine resumed after a
yield (the shadow starts empty there), a frame resynced after a raise it did not
see -- is read from the frame when it is loaded, as a carried ArgumentNode
(replay._carried).  The recorder replays a segment at its end, so that read is only
right when the local still holds the loaded value there: a load of a local the
segment assigns again later is not marked LF_SAFE and stays unknown (`⟨?⟩`), as in

    def g(x):
        k = 0
        while k < 3:
            yield x * k
            k += 1        # `k` after the resume: loaded, then stored again

Where a local may be unknown, the first later assignment of such a load's local gets
an event: the segment then ends before it (the frame still holds the loaded value)
and the load is safe (`_mark_safe_loads` in the next round).  Only code where a
local can be unknown pays: every instruction of a generator, coroutine or async
generator, and the instructions reachable from an exception handler (where a
resync happens); ordinary loops keep their events.
"""

from __future__ import annotations

from .bytecode import for_iter_exit
from .microops import M_DELETE_LOCAL, M_LOAD_LOCAL, M_STORE_LOCAL

# CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR
_RESUMABLE = 0x20 | 0x80 | 0x100 | 0x200
_NO_FALLTHROUGH = frozenset({
    "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD",
    "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT",
})


class UnknownLocals:
    """The plan builder's events for loads of possibly unknown locals (mixed into
    _Builder)."""

    def _may_be_unknown(self) -> set[int] | None:
        """Offsets where a local may be unknown to the recorder: None for all (a
        resumable code object), else those reachable from an exception handler."""
        cached = getattr(self, "_unknown_at", False)
        if cached is not False:
            return cached
        if self.code.co_flags & _RESUMABLE:
            self._unknown_at = None
            return None
        lay = self.layout
        todo = [h.target for h in lay.handlers if h.target in lay.depth]
        seen: set[int] = set()
        while todo:
            off = todo.pop()
            if off in seen or off not in lay.depth:
                continue
            seen.add(off)
            ins = lay.by_offset.get(off)
            if ins is None:
                continue
            if ins.opname not in _NO_FALLTHROUGH:
                todo.append(ins.next)
            if ins.target is not None:
                todo.append(ins.target)
                if ins.opname == "FOR_ITER":
                    todo.append(for_iter_exit(ins, lay.by_offset))
        self._unknown_at = seen
        return seen

    def _event_before_reassign(self, ops: list[list[int]], needs: set[int]) -> None:
        """Ask for an event at the first later assignment of each load's local
        (see the module's docstring), where that local may be unknown."""
        where = self._may_be_unknown()
        if where is not None and not where:
            return
        # position of the first store/delete of each local after position i
        first_after: dict[int, int] = {}
        for op in reversed(ops):
            if op[0] == M_STORE_LOCAL:
                first_after[op[3]] = op[1]
            elif op[0] == M_DELETE_LOCAL:
                first_after[op[2]] = op[1]
            elif op[0] == M_LOAD_LOCAL and op[3] in first_after \
                    and (where is None or op[1] in where):
                at = first_after[op[3]]
                if at != op[1]:
                    needs.add(at)
