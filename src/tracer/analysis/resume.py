"""What a generator frame brings back on its stack when it resumes: the carry masks
(a part of the plan builder, tracer.analysis.plan)."""

from __future__ import annotations

from array import array

from .microops import (
    FROM, M_BRANCH, M_CAPTURE, M_CAPTURE_METHOD, M_COPY, M_FOR_ITER, M_LOAD_CONST,
    M_LOAD_LOCAL, M_RAISE, M_RECORD, M_RECORD_BOOL, M_RETURN, M_SEND, M_SET, M_STORE_LOCAL,
    M_SWAP, M_YIELD,
)


class ResumeCarry:
    """The plan builder's carry masks (mixed into _Builder)."""

    # -- generators ---------------------------------------------------------------------
    def carry_masks(self, segments, units: int) -> array:
        """Per code unit, the value-stack slots a generator frame resumed there brings
        back (bit k: slot k), which the recorder reads as carried ArgumentNodes.

        At a RESUME after a yield (PY_RESUME) every slot below its depth is live: the
        values the frame kept across the yield (an iterator, a `yield from`
        receiver) and, on top, the value sent in.  A slot the first segment writes
        before reading it is left out (the sent value of a plain `yield`
        statement is popped unused).  Slots past 30 are not carried (they stay
        unknown).  A frame resumed by throw() carries every slot but the top (the
        recorder's rule, _Recorder._carry_stack).
        """
        carry = array("i", [0]) * units
        by_start = {(kind, start): seg for kind, start, seg in segments}
        for ins in self.layout.instrs:
            d = self.layout.depth.get(ins.offset)
            if not d:
                continue
            if ins.opname == "RESUME" and ins.arg:
                live = (1 << min(d, 31)) - 1
                seg = by_start.get((FROM, ins.offset))
                written = _written_first(seg, self.recs) if seg else 0
                nxt = self.layout.by_offset.get(ins.next)
                if nxt is not None and nxt.opname == "POP_TOP":
                    written |= 1 << (d - 1)  # `yield x` as a statement drops what is sent
                carry[ins.offset // 2] = live & ~written
        return carry


def _written_first(ops: list[list[int]], recs: array) -> int:
    """Bits of the stack slots the micro-ops `ops` assign before they read them."""
    read = written = 0

    def reads(slot: int) -> None:
        nonlocal read
        if 0 <= slot < 31 and not (written >> slot) & 1:
            read |= 1 << slot

    def writes(slot: int) -> None:
        nonlocal written
        if 0 <= slot < 31 and not (read >> slot) & 1:
            written |= 1 << slot

    for op in ops:
        code = op[0]
        if code in (M_LOAD_LOCAL, M_LOAD_CONST, M_SET, M_CAPTURE):
            writes(op[2])
        elif code == M_CAPTURE_METHOD:
            writes(op[2])
            writes(op[3])
        elif code == M_STORE_LOCAL:
            reads(op[2])
        elif code in (M_COPY, M_SWAP):
            reads(op[3])
            if code == M_SWAP:
                reads(op[2])
            writes(op[2])
        elif code in (M_RECORD, M_RECORD_BOOL, M_FOR_ITER, M_SEND):
            r = op[2]
            nin, nout = recs[r + 2], recs[r + 3]
            for x in recs[r + 5: r + 5 + nin]:
                if x >= 0:
                    reads(x)
            for x in recs[r + 5 + nin: r + 5 + nin + nout]:
                writes(x)
        elif code in (M_BRANCH, M_RETURN, M_YIELD, M_RAISE):
            reads(op[2])
    return written
