"""Which conditional jumps go without a BRANCH event: the frame's next event shows
the side they took (a part of the plan builder, tracer.analysis.plan)."""

from __future__ import annotations

from array import array

from .bytecode import PY313, for_iter_exit
from .microops import (
    FROM, LF_CELL, LF_DYN, LF_SAFE, M_BRANCH, M_CAPTURE, M_CAPTURE_METHOD, M_COPY,
    M_DELETE_LOCAL, M_END, M_FOR_ITER, M_LOAD_CONST, M_LOAD_LOCAL, M_LOST, M_RECORD,
    M_RECORD_BOOL, M_SET, M_SILENT_JUMP, M_STORE_LOCAL, M_SWAP, OP_WORDS, READ_STORED,
    REC_NOUT, SIDE_OFFSET, SIDE_STRAIGHT,
)


# Whether a `for` loop's FOR_ITER may go without its BRANCH event (silent_branches);
# tests build plans with it off to compare against the evented loop.
SILENT_FOR_ITER = True

# Whether a conditional jump's side may end in another one that keeps its BRANCH
# event (silent_branches' chained round); tests build plans with it off to
# compare against the evented chains.
SILENT_CHAINS = True

# Whether straight_sides marks the sides a silent branch's late run writes without
# the op loop; tests build plans with it off to compare against the op loop's rows.
STRAIGHT_SIDES = True

# The ops the core's straight-line writer takes (replay.pxi _straight_ops), besides
# RECORDs of one result.
_STRAIGHT_KINDS = frozenset((M_LOAD_LOCAL, M_LOAD_CONST, M_SET, M_COPY, M_SWAP, M_CAPTURE))


def straight_sides(ops, recs, seg_from, branch_sides, branch_sides_at) -> None:
    """Mark, in `branch_sides` (in place), each side of a silent conditional jump
    whose late run the core writes without its op loop: SIDE_STRAIGHT (the sign)
    set in that side's successor word (`next` or `target`).

    A side is marked when, by the ops' kinds alone, the core's straight-line
    writer (replay.pxi _straight_ops: SET, LOAD_LOCAL, LOAD_CONST, COPY, SWAP,
    CAPTURE, a RECORD of one result) reaches the branch from every op of every
    segment ending in it (a RECORD_BOOL of one result right before the BRANCH or
    not), and reaches the END or terminal op of the segment the side leads to
    from its first op.  The core then writes that side's branch by
    _straight_branch (records.pxi _take_silent_branch tests the sign of the word
    it loads anyway), and the op loop's set-up is paid only where the writer
    stops for a reason known at run time (a callable or constant to pool, no
    room, a value carried in).  A side whose segment writes more than one row
    is left to the loop (cheaper there per row, its columns opened once).
    FOR_ITERs (silent loops) are never marked.
    `ops`, `recs`, `seg_from`: the plan's; the typed builder runs
    _fastplan.straight_sides, the same pass."""
    if not STRAIGHT_SIDES or not len(branch_sides):
        return
    nops = len(ops) // OP_WORDS
    # Per op, backwards: whether the writer reaches its segment's END or terminal
    # op from it writing at most one row (to_end: a run of more rows is cheaper in
    # the op loop, whose columns are opened once per run, than by one commit per
    # row: json's sides of two records measured so), or its segment's BRANCH
    # (to_branch).
    to_end = bytearray(nops)
    to_branch = bytearray(nops)
    end, branch, rows = 0, 0, 0
    for i in range(nops - 1, -1, -1):
        at = i * OP_WORDS
        opc = ops[at]
        if opc in _STRAIGHT_KINDS:
            pass
        elif opc == M_RECORD and recs[ops[at + 2] + REC_NOUT] == 1:
            rows += 1
        elif opc == M_BRANCH:
            end, branch, rows = 1, 1, 0
        elif opc == M_RECORD_BOOL:
            # (the writer stops at it: a segment's end for a run to its end)
            end, rows = 1, 0
            branch = int(branch and i + 1 < nops and ops[at + OP_WORDS] == M_BRANCH
                         and recs[ops[at + 2] + REC_NOUT] == 1)
        elif opc == M_END or (opc > M_RECORD and opc != M_SILENT_JUMP):
            end, branch, rows = 1, 0, 0
        else:
            end, branch, rows = 0, 0, 0   # a store, a delete, a method capture, a silent jump
        to_end[i], to_branch[i] = int(end and rows <= 1), branch
    ok: dict[int, bool] = {}
    for i in range(nops):
        k = branch_sides_at[i]
        if k >= 0:
            ok[k] = ok.get(k, True) and bool(to_branch[i])
    for k, good in ok.items():
        if not good:
            continue   # (a loop's FOR_ITER: never to_branch)
        for side in (1, 2):
            pc = seg_from[(branch_sides[k + side] & SIDE_OFFSET) >> 1]
            if pc >= 0 and to_end[pc]:
                branch_sides[k + side] |= SIDE_STRAIGHT


class SilentBranches:
    """The plan builder's silent-branch analysis (mixed into _Builder)."""

    # -- branches without events -----------------------------------------------------
    def silent_branches(self, segments, nops: int) -> tuple[array, array]:
        """Choose the conditional jumps whose BRANCH event the recorder can do without.

        Such a branch is taken when the frame's next event shows where it went: its
        two successor segments share no instruction, so the instruction that next
        event is at (or, for an INSTRUCTION event, the event ending one of them)
        tells the side.  The recorder then replays the branch's segment at that
        event, so everything the segment reads must still be there: it may not
        capture stack values, and the locals it reads back (deferred results,
        loads of unknown locals, stored constants) may not be assigned on either
        side.  A side that is lost keeps the branch evented.  The conditional
        jumps that are left after the loops (below) are taken again, a side of
        each now allowed to end in another conditional jump whose BRANCH event
        fires (a chain: that event takes this branch first), not in a silent
        one, a silent loop or a guarded 3.12 compare's (_branch_side_ends_ok);
        a jump or loop that a silent branch's side ends in keeps its event.

        A `for` loop's FOR_ITER goes without its BRANCH event the same way
        (SILENT_FOR_ITER), its sides the loop's body (`next`) and its exit
        (`for_iter_exit`, in the `target` word), when the body starts by storing
        the next value in a plain local that the body's segment assigns nowhere
        else: the value is read back from that local (the op's `b` word, local + 1,
        set by the builder from the body's first op).  Loops are taken after the
        conditional jumps, and one whose segments end a silent branch's side stays
        evented (that side's end is its event); a side of a loop may not end in a
        FOR_ITER, and may end in a conditional jump only if that one keeps its
        BRANCH event (not silent; on 3.12 a guarded compare before it has its
        guard checked at the loop's INSTRUCTION event: compare312.pxi).

        Returns `branch_sides` (per silent branch: its offset, the offsets `next` and
        `target`, then for the not-taken and the taken side its END offset or -1,
        the number of offset ranges and the ranges) and `branch_sides_at` (per op: the
        index in `branch_sides` of the silent branch that ends its segment, or -1).
        """
        branch_sides = array("i")
        branch_sides_at = array("i", [-1]) * nops
        if self.exact:
            return branch_sides, branch_sides_at
        by_start = {}
        first_op = {}
        index = 0
        for kind, start, seg in segments:
            by_start[(kind, start)] = seg
            first_op[(kind, start)] = index
            index += len(seg)
        ending_at: dict[int, list[tuple[int, int]]] = {}  # branch offset -> segments
        loops_at: dict[int, list[tuple[int, int]]] = {}   # FOR_ITER offset -> segments
        for key, seg in by_start.items():
            if seg[-1][0] == M_BRANCH:
                ending_at.setdefault(seg[-1][1], []).append(key)
            elif seg[-1][0] == M_FOR_ITER and SILENT_FOR_ITER:
                loops_at.setdefault(seg[-1][1], []).append(key)
        sides_taken: set[tuple[int, int]] = set()
        silent_at: set[int] = set()
        # Conditional jumps whose sides end in none, then loops, then the
        # conditional jumps left, whose sides may end in one that keeps its event
        # (chained): taken last, a chain never costs a loop or a jump taken
        # before its event.
        candidates = [(branch, keys, False, False) for branch, keys in sorted(ending_at.items())]
        candidates += [(at, keys, True, False) for at, keys in sorted(loops_at.items())]
        if SILENT_CHAINS:
            candidates += [(branch, keys, False, True) for branch, keys in sorted(ending_at.items())]
        for branch, keys, loop, chained in candidates:
            if branch in silent_at:
                continue
            ins = self.layout.by_offset[branch]
            if any(k in sides_taken for k in keys):
                continue   # that side's end would be this silent BRANCH
            if loop:
                succ = [(FROM, ins.next), (FROM, for_iter_exit(ins, self.layout.by_offset))]
            else:
                succ = [(FROM, ins.next), (FROM, ins.target)]
            if any(k not in by_start for k in succ):
                continue
            if any(by_start[k][-1][0] == M_LOST for k in succ):
                continue
            if chained and not any(by_start[k][-1][0] == M_BRANCH for k in succ):
                continue   # (the first round's verdict: nothing since can change it)
            if loop:
                if any(by_start[k][-1][0] == M_FOR_ITER for k in succ) \
                        or not all(self._loop_side_ends_ok(by_start[k], silent_at) for k in succ) \
                        or not self._item_stored(by_start, keys, by_start[succ[0]]):
                    continue
            elif not all(self._branch_side_ends_ok(by_start[k], silent_at, branch, chained)
                         for k in succ):
                continue
            members = [self.walked[k] for k in succ]
            ends = [by_start[k][-1][1] if by_start[k][-1][0] == M_END else -1 for k in succ]
            if members[0] & members[1] or (ends[0] >= 0 and ends[0] == ends[1]):
                continue
            # What replaying the branch's segments late reads from the frame.
            late_reads: set[int] = set()
            captures = False
            for k in keys:
                seg = by_start[k]
                for i, op in enumerate(seg):
                    if op[0] in (M_CAPTURE, M_CAPTURE_METHOD) or (
                            op[0] == M_RECORD and op[4] == 0
                            and not (loop and self.recs[op[2] + 3] == 0)):
                        # reads the stack (a record's result waiting there; a loop's
                        # no-result record, a comprehension's LIST_APPEND, reads only
                        # its inputs' shadows)
                        captures = True
                    elif op[0] == M_RECORD and op[4] > 0:
                        late_reads.add(op[4] - 1)
                    elif op[0] == M_RECORD and op[4] == READ_STORED:
                        # an UNPACK_SEQUENCE's outputs, read from the locals the
                        # STORE_LOCALs right after it store them in
                        late_reads.update(o[3] for o in seg[i + 1:i + 1 + self.recs[op[2] + 3]])
                    elif op[0] == M_LOAD_LOCAL and op[4] & LF_SAFE:
                        late_reads.add(op[3])
                    elif op[0] == M_STORE_LOCAL and op[4] & LF_DYN:
                        late_reads.add(op[3])
            assigned = {op[3] if op[0] == M_STORE_LOCAL else op[2]
                        for k in succ for op in by_start[k]
                        if op[0] in (M_STORE_LOCAL, M_DELETE_LOCAL)}
            if captures or late_reads & assigned:
                continue
            at = len(branch_sides)
            sides_taken.update(succ)
            silent_at.add(branch)
            branch_sides.extend([branch, succ[0][1], succ[1][1]])
            for member, end in zip(members, ends):
                ranges = self._ranges(member)
                branch_sides.extend([end, len(ranges) // 2])
                branch_sides.extend(ranges)
            for k in keys:
                base = first_op[k]
                for i in range(len(by_start[k])):
                    branch_sides_at[base + i] = at
        return branch_sides, branch_sides_at

    def _loop_side_ends_ok(self, side, silent_at: set[int]) -> bool:
        # A loop's side may end in a conditional jump whose BRANCH event fires (not
        # a silent one): that event is past the FOR_ITER and shows the side.  On
        # 3.12 also after a compare planned as a RECORD_BOOL: its guard, which must
        # be checked before the compare runs, is checked where the FOR_ITER's own
        # segment starts, at the loop's INSTRUCTION event (the core's
        # compare312.pxi, _loop_guards), or else the jump keeps its event.
        last = side[-1]
        if last[0] != M_BRANCH:
            return True
        return last[1] not in silent_at

    def _branch_side_ends_ok(self, side, silent_at: set[int], branch: int, chained: bool) -> bool:
        # A conditional jump's side may end in a loop's FOR_ITER that keeps its
        # BRANCH event, and in another conditional jump whose BRANCH event fires
        # (`chained`, a chain: `if a: ... elif b: ...`): that event lies on the
        # side and takes this branch first.  Not in a silent one (in the chained
        # round a loop may be silent already: its rounds would run with no event
        # to take this branch), nor in this branch itself (the side would loop
        # back with no event), nor, on 3.12, in the jump after a compare planned
        # as a RECORD_BOOL: its guard, checked where its segment starts, would
        # be checked late, after the compare ran (the core's compare312.pxi).
        last = side[-1]
        if last[0] == M_FOR_ITER:
            return last[1] not in silent_at
        if last[0] != M_BRANCH:
            return True
        if not chained or last[1] == branch or last[1] in silent_at:
            return False
        if not PY313 and len(side) > 1 and side[-2][0] == M_RECORD_BOOL \
                and self.layout.by_offset[side[-2][1]].opname == "COMPARE_OP":
            return False
        return True

    def _item_stored(self, by_start, keys, body) -> bool:
        # A FOR_ITER's body that starts by storing the next value (the FOR_ITER's
        # output slot) in a plain local and assigns that local nowhere else in its
        # segment: the value is there at the frame's next event, wherever in the
        # body or at its end that is.
        first = body[0]
        if first[0] != M_STORE_LOCAL or first[4] & (LF_CELL | LF_DYN):
            return False
        for k in keys:
            r = by_start[k][-1][2]   # the FOR_ITER's record: its one output slot
            if self.recs[r + 3] != 1 or first[2] != self.recs[r + 5 + self.recs[r + 2]]:
                return False
        local = first[3]
        return not any((op[0] == M_STORE_LOCAL and op[3] == local)
                       or (op[0] == M_DELETE_LOCAL and op[2] == local) for op in body[1:])

    def _ranges(self, offsets: set[int]) -> list[int]:
        # The offsets as [first, last] instruction ranges, flattened.
        out: list[int] = []
        for ins in self.layout.instrs:
            if ins.offset in offsets:
                prev = self.prev.get(ins.offset)
                if out and prev is not None and out[-1] == prev.offset:
                    out[-1] = ins.offset
                else:
                    out.extend([ins.offset, ins.offset])
        return out
