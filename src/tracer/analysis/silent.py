"""Which conditional jumps go without a BRANCH event: the frame's next event shows
the side they took (a part of the plan builder, tracer.analysis.plan)."""

from __future__ import annotations

from array import array

from .microops import (
    FROM, LF_DYN, LF_SAFE, M_BRANCH, M_CAPTURE, M_CAPTURE_METHOD, M_DELETE_LOCAL, M_END,
    M_LOAD_LOCAL, M_LOST, M_RECORD, M_STORE_LOCAL,
)


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
        side.  A side that ends in another conditional branch or is lost keeps the
        branch evented (no chains).

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
        for key, seg in by_start.items():
            if seg[-1][0] == M_BRANCH:
                ending_at.setdefault(seg[-1][1], []).append(key)
        for branch, keys in sorted(ending_at.items()):
            ins = self.layout.by_offset[branch]
            succ = [(FROM, ins.next), (FROM, ins.target)]
            if any(k not in by_start for k in succ):
                continue
            if any(by_start[k][-1][0] in (M_BRANCH, M_LOST) for k in succ):
                continue
            members = [self.walked[k] for k in succ]
            ends = [by_start[k][-1][1] if by_start[k][-1][0] == M_END else -1 for k in succ]
            if members[0] & members[1] or (ends[0] >= 0 and ends[0] == ends[1]):
                continue
            # What replaying the branch's segments late reads from the frame.
            late_reads: set[int] = set()
            captures = False
            for k in keys:
                for op in by_start[k]:
                    if op[0] in (M_CAPTURE, M_CAPTURE_METHOD) or (op[0] == M_RECORD and op[4] == 0):
                        captures = True   # reads the stack (a record's result waiting there)
                    elif op[0] == M_RECORD and op[4] > 0:
                        late_reads.add(op[4] - 1)
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
            branch_sides.extend([branch, ins.next, ins.target])
            for member, end in zip(members, ends):
                ranges = self._ranges(member)
                branch_sides.extend([end, len(ranges) // 2])
                branch_sides.extend(ranges)
            for k in keys:
                base = first_op[k]
                for i in range(len(by_start[k])):
                    branch_sides_at[base + i] = at
        return branch_sides, branch_sides_at

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
