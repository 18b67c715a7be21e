"""The invariants the core relies on when it reads a plan's arrays, checked in bulk.

The core (tracer/_core/plans.pxi, replay.pxi, records.pxi, events.pxi) indexes C
arrays with the numbers a plan holds and never checks them on the hot path: a local
slot must be below the code's co_nlocalsplus, a stack slot below its co_stacksize,
a record number must start a whole record, a static index must be in the statics
table, a micro-op code must be known, every segment must end in a closing op
before the ops do, and so on.  A plan the builder made satisfies them by
construction; a plan read from disk (tracer.analysis.cache) may not -- a crafted
entry, or a flipped bit under a recomputed checksum -- so the cache checks every
loaded plan here and rebuilds one that fails.  The same function validates freshly
built plans when TRACER_CHECK_PLANS=1 (tests), so the invariants are stated once.

The checks are range checks over whole numpy views of the int32 arrays (no copy),
plus short Python loops over the few records and silent branches; they only read.

This module is the statement of the rules, and the reference: the plan cache runs
the same rules as one C pass in the core (`_core.plan_problem`,
src/tracer/_core/plancheck.pxi: about 1 µs for a small function where this takes
~100 numpy calls, ~150 µs), and `check_plan` holds the two to the same verdict.
tests/test_plan_cache_checks.py gives both every kind of bad value and random flips.
"""

from __future__ import annotations

import os
from types import CodeType

import numpy as np

from .. import _core
from .bytecode import nlocalsplus

__all__ = ["plan_violation", "check_plan", "CHECK_BUILT", "PlanInvalid"]

# Validate every freshly built plan too (tests, debugging the builder).
CHECK_BUILT = os.environ.get("TRACER_CHECK_PLANS", "").strip().lower() not in ("", "0", "off", "false", "no")

M = _core.MicroOp
W = _core.WORDS
OP_WORDS = W["OP_WORDS"]
REC_INPUTS = W["REC_INPUTS"]
SIDE_OFFSET = W["SIDE_OFFSET"]
READ_STORED = W["READ_STORED"]
NSPECIAL = 3  # SET_NULL, SET_UNKNOWN, SET_DYN: the core's SPECIAL_SHADOW entries
_NMICRO = len(M)
_NSEM = len(_core.RecordSem)
_NIV = len(_core.Intervention)
_LF_ALL = int(_core.LocalFlag.LF_SAFE | _core.LocalFlag.LF_CELL | _core.LocalFlag.LF_DYN)
_UF_ALL = int(_core.UnitFlag.JUMP_EVENT | _core.UnitFlag.SILENT_BRANCH)
_RECORD_OPS = (M.M_RECORD, M.M_RECORD_BOOL, M.M_FOR_ITER, M.M_SEND)
# Ops whose segment walk stops (END, and terminal ops from M_BRANCH on but a silent
# jump): the core's _run_to_end/_run/_segment_ends stop there.
_CLOSING = np.array([c == M.M_END or (c >= M.M_BRANCH and c != M.M_SILENT_JUMP) for c in range(_NMICRO)])
# ...and the ones a segment may end the op array with: after a RECORD_BOOL the core
# reads the op that follows it.
_LAST_OK = _CLOSING.copy()
_LAST_OK[M.M_RECORD_BOOL] = False

# Operand roles: which range an op's a, b or c word must be in.
_ANY, _STACK, _LOCAL, _CONST, _RAISE, _OFFSET, _SPECIAL, _FLAGS, _DEFER, _ITEM = range(10)
_ROLES = {  # (a, b, c) per micro-op; a record number (a) is checked with the records
    M.M_LOAD_LOCAL: (_STACK, _LOCAL, _FLAGS), M.M_STORE_LOCAL: (_STACK, _LOCAL, _FLAGS),
    M.M_LOAD_CONST: (_STACK, _CONST, _ANY), M.M_SET: (_STACK, _SPECIAL, _ANY),
    M.M_DELETE_LOCAL: (_LOCAL, _ANY, _ANY), M.M_COPY: (_STACK, _STACK, _ANY),
    M.M_SWAP: (_STACK, _STACK, _ANY), M.M_CAPTURE: (_STACK, _ANY, _ANY),
    M.M_CAPTURE_METHOD: (_STACK, _STACK, _ANY), M.M_RECORD: (_ANY, _ANY, _DEFER),
    M.M_BRANCH: (_STACK, _ANY, _OFFSET), M.M_FOR_ITER: (_ANY, _ITEM, _OFFSET),
    M.M_RETURN: (_STACK, _ANY, _ANY), M.M_RETURN_CONST: (_CONST, _ANY, _ANY),
    M.M_YIELD: (_STACK, _ANY, _ANY), M.M_RAISE: (_RAISE, _ANY, _ANY),
    M.M_SILENT_JUMP: (_ANY, _ANY, _OFFSET), M.M_SEND: (_ANY, _OFFSET, _OFFSET),
}
_ROLES_ABC = np.array([_ROLES.get(m, (_ANY,) * 3) for m in range(_NMICRO)])
_EVEN = np.array([1 if role == _OFFSET else 0 for role in range(10)], dtype=np.int32)


def _table(*codes) -> np.ndarray:
    return np.isin(np.arange(_NMICRO), codes)


_IS_RECORD = _table(*_RECORD_OPS)
_IS_CAPTURE = _table(M.M_CAPTURE, M.M_CAPTURE_METHOD)
_NEEDS_OUT = _table(M.M_RECORD_BOOL, M.M_SEND)
_STOPS_SCAN = _table(*(m for m in range(M.M_RECORD, _NMICRO)
                       if m not in (M.M_SILENT_JUMP, M.M_RECORD_BOOL)))
_PER_UNIT = ("seg_at", "seg_from", "depth", "handler", "istart", "unit_flags", "carry")
_BIG = 1 << 40
_OPERAND = "operand"
_HEADER = np.arange(REC_INPUTS)


def _bounds(ss: int, nlp: int, nconsts: int, ncode: int) -> tuple[np.ndarray, np.ndarray]:
    # [lo, hi) per role; a deferral c is a local + 1 (> 0), READ_RETURNED (< 0) or 0;
    # a FOR_ITER's b a local + 1 (a silent loop: tracer.analysis.silent) or 0.
    lo = np.array([-_BIG, 0, 0, 0, -_BIG, 0, 0, 0, -_BIG, 0], dtype=np.int64)
    hi = np.array([_BIG, ss, nlp, nconsts, ss, ncode, NSPECIAL, _LF_ALL + 1, nlp + 1, nlp + 1],
                  dtype=np.int64)
    return lo, hi


class PlanInvalid(Exception):
    """A plan breaks an invariant the core relies on (the message says which)."""


def _view(x) -> np.ndarray:
    # The int32 items of an array('i') without a copy (any other int sequence copied).
    if hasattr(x, "buffer_info"):
        return np.frombuffer(x, dtype=np.int32)
    return np.fromiter(x, dtype=np.int64)


class _Ranges:
    """Range checks gathered and run in one go: numpy's cost is per call, not per
    item, and the arrays are small, so checking every array at once is what keeps
    a load cheap.  Each piece: a label, the values and their [lo, hi) bounds
    (scalars, or arrays as long as the values)."""

    def __init__(self) -> None:
        self.labels: list[str] = []
        self.values: list[np.ndarray] = []
        self.lo: list = []
        self.hi: list = []

    def add(self, label: str, values: np.ndarray, lo, hi) -> None:
        self.labels.append(label)
        self.values.append(values)
        self.lo.append(lo)
        self.hi.append(hi)

    def failure(self) -> str | None:
        """The first value out of its range, described, or None; then empty."""
        pieces = list(zip(self.labels, self.values, self.lo, self.hi))
        self.__init__()
        # Scalar bounds are repeated per piece (np.repeat: one call for all pieces).
        fixed = [p for p in pieces if type(p[2]) is int and type(p[3]) is int]
        each = [p for p in pieces if not (type(p[2]) is int and type(p[3]) is int)]
        for group in (fixed, each):
            if not group:
                continue
            sizes = [len(p[1]) for p in group]
            v = np.concatenate([p[1] for p in group], dtype=np.int64)
            if group is fixed:
                lo = np.repeat(np.array([p[2] for p in group], dtype=np.int64), sizes)
                hi = np.repeat(np.array([p[3] for p in group], dtype=np.int64), sizes)
            else:
                lo = np.concatenate([np.full(n, p[2]) if type(p[2]) is int else p[2]
                                     for p, n in zip(group, sizes)], dtype=np.int64)
                hi = np.concatenate([np.full(n, p[3]) if type(p[3]) is int else p[3]
                                     for p, n in zip(group, sizes)], dtype=np.int64)
            bad = (v < lo) | (v >= hi)
            if bad.any():
                i = int(np.argmax(bad))
                k = int(np.searchsorted(np.cumsum(sizes), i, side="right"))
                at = i - sum(sizes[:k])
                where = f"op {at // 3} word {'abc'[at % 3]}" if group[k][0] == _OPERAND else f"[{at}]"
                return f"{group[k][0]} {where} = {int(v[i])}, not in [{int(lo[i])}, {int(hi[i])})"
        return None


def plan_violation(plan, code: CodeType) -> str | None:
    """The first invariant `plan` (a CodePlan, or a dict of its fields) breaks for
    `code`, as a sentence, or None when the core may use it."""
    get = plan.get if isinstance(plan, dict) else (lambda name: getattr(plan, name))
    ncode = len(code.co_code)
    nunits = ncode // 2
    nlp = nlocalsplus(code)
    ss = code.co_stacksize
    nconsts = len(code.co_consts)
    statics = get("statics")
    if type(statics) is not list:
        return "statics is not a list"
    nstatics = len(statics)
    ops = _view(get("ops"))
    recs = _view(get("recs"))
    rec_iv = _view(get("rec_iv"))
    if len(ops) % OP_WORDS:
        return "ops is not whole micro-ops"
    nops = len(ops) // OP_WORDS
    nrecs = len(recs)
    seg_at, seg_from, depth, handler, istart, unit_flags, carry = (
        _view(get(name)) for name in _PER_UNIT)
    if any(len(x) != nunits for x in (seg_at, seg_from, depth, handler, istart, unit_flags, carry)):
        return f"the per-code-unit arrays do not have {nunits} entries"
    piece_start = _view(get("piece_start"))
    branch_sides_at = _view(get("branch_sides_at"))
    sides = _view(get("branch_sides"))
    if len(piece_start) != nops or len(branch_sides_at) != nops:
        return "piece_start/branch_sides_at are not one per micro-op"
    if len(rec_iv) != nrecs:
        return "rec_iv is not parallel to recs"
    nparams = get("nparams")
    if type(nparams) is not int or not 0 <= nparams <= nlp:
        return "nparams is not the number of parameters"
    if any(type(x) is not int or not 0 <= x < nparams for x in get("param_cells")):
        return "param_cells names no parameter"

    # One pass: every value is put beside its [lo, hi) and all are compared at once.
    # Lookups that depend on values not yet checked use take(mode="clip"), so they
    # stay in bounds whatever those values are; the verdict comes from the values.
    r = _Ranges()
    r.add("seg_at", seg_at, -1, nops)
    r.add("seg_from", seg_from, -1, nops)
    r.add("depth", depth, -1, ss + 1)
    r.add("istart", istart, 0, ncode)
    r.add("unit_flags", unit_flags, 0, _UF_ALL + 1)
    r.add("rec_iv", rec_iv, 0, _NIV)
    # A handler's exception lands in stack slot depth + lasti: h + (h & 1) is twice it
    # (-1: no handler; a code object may have no stack at all).
    r.add("handler (2 * exception slot)", np.where(handler < 0, handler, handler + (handler & 1)),
          -1, 2 * ss)
    # carry: bits of stack slots a resumed generator brings, all live by the depths.
    r.add("carry beyond the depth", carry >> np.minimum(np.maximum(depth, 0), 31), 0, 1)
    events = [np.fromiter(get(name), dtype=np.int64) for name in ("events", "jump_events")]
    r.add("events", events[0], 0, ncode)
    r.add("jump_events", events[1], 0, ncode)
    evens = [istart, *events]
    if nops:
        o = ops.reshape(nops, OP_WORDS)
        opc, off, a, b, c = o.T
        r.add("micro-op code", opc, 0, _NMICRO)
        if not 0 <= opc[-1] < _NMICRO or not _LAST_OK[opc[-1]]:
            return "the last micro-op does not close its segment"
        # A RECORD_BOOL's segment is closed by the BRANCH after it: scanning for a
        # segment's terminal op (the core's _send_returned) passes over it, and must
        # find one (>= M_RECORD, neither a silent jump nor a RECORD_BOOL) after it.
        bools = np.flatnonzero(opc == M.M_RECORD_BOOL)
        if len(bools):
            stops = np.flatnonzero(_STOPS_SCAN.take(opc, mode="clip"))
            if not len(stops) or stops[-1] < bools[-1]:
                return "a RECORD_BOOL is not followed by the op closing its segment"
        r.add("op offset", off, 0, ncode)
        r.add("piece_start", piece_start, 0, ncode)
        r.add("branch_sides_at", branch_sides_at, -1, len(sides))
        # Each operand word against the range its role gives it in this code
        # object, one table lookup per word.
        roles = _ROLES_ABC.take(opc, axis=0, mode="clip")
        lo, hi = _bounds(ss, nlp, nconsts, ncode)
        r.add(_OPERAND, o[:, 2:].ravel(), lo[roles].ravel(), hi[roles].ravel())
        evens += [off, (o[:, 2:] & _EVEN[roles]).ravel()]
        # Stack values read off the frame at an op's own instruction (CAPTURE and
        # CAPTURE_METHOD at their END's) must be live there.
        cap = np.flatnonzero(_IS_CAPTURE.take(opc, mode="clip"))
        if len(cap):
            r.add("captured slot", np.maximum(a[cap], b[cap]), 0,
                  depth.take(off[cap] >> 1, mode="clip"))
        # -- records --------------------------------------------------------------------
        ri = np.flatnonzero(_IS_RECORD.take(opc, mode="clip"))
        if len(ri):
            st = a[ri].astype(np.int64)
            r.add("record number", st, 0, nrecs - REC_INPUTS + 1)
            sem, fn, nin, nout, kw = recs.take(st[:, None] + _HEADER, mode="clip").T
            rop = opc[ri]
            r.add("record semantics", sem, 0, _NSEM)
            r.add("record function (static)", fn, -1, nstatics)
            r.add("record keyword names (static)", kw, -1, nstatics)
            r.add("record input or output count", np.minimum(nin, nout), 0, _BIG)
            r.add("record end", st + REC_INPUTS + nin + nout, REC_INPUTS, nrecs + 1)
            # What the core reads without looking at nin/nout: the output of a
            # RECORD_BOOL or SEND, the iterator slot of a FOR_ITER.
            r.add("outputs of RECORD_BOOL/SEND (none: 0)",
                  nout | ~_NEEDS_OUT.take(rop, mode="clip"), 1, _BIG)
            r.add("inputs of FOR_ITER (none: 0)", nin | (rop != M.M_FOR_ITER), 1, _BIG)
            r.add("outputs of a READ_STORED record (none: 2)",
                  np.where((rop == M.M_RECORD) & (c[ri] == READ_STORED), nout, 2), 2, _BIG)
            # Every input and output word at once: inputs are stack slots or statics
            # (-(index + 1)), outputs stack slots.  (Counts clipped: a bad one is
            # reported above, and must not make these arrays huge.)
            nin = np.minimum(np.maximum(nin, 0), nrecs)
            n = nin + np.minimum(np.maximum(nout, 0), nrecs)
            owner = np.repeat(np.arange(len(st)), n)
            within = np.arange(len(owner)) - np.repeat(np.cumsum(n) - n, n)
            words = recs.take(st[owner] + REC_INPUTS + within, mode="clip")
            is_out = within >= nin[owner]
            r.add("record slot or static", words, np.where(is_out, 0, -nstatics), ss)
            r.add("FOR_ITER iterator slot (none: 0)",
                  np.where(rop == M.M_FOR_ITER, recs.take(st + REC_INPUTS, mode="clip"), 0), 0, ss)
            # Outputs the recorder reads off the frame at the END closing their
            # segment must be live there (the builder's _check_reads).
            closing = np.flatnonzero(_CLOSING.take(opc, mode="clip"))
            closer = closing.take(np.searchsorted(closing, ri), mode="clip")
            late = (rop == M.M_RECORD) & (c[ri] == 0) & (opc[closer] == M.M_END)
            sel = np.flatnonzero(is_out & late[owner])
            if len(sel):
                r.add("record output at its segment's end", words[sel], 0,
                      depth.take(off[closer[owner[sel]]] >> 1, mode="clip"))
                # An output that waits on the stack past other ops (plain plans) is
                # also read when a frame starts or an exception is raised at one of
                # them (the core's _run): no op up to the END may touch its slot,
                # and the depth may not drop to it.
                problem = _waiting_outputs(o, depth, ri, closer, words, owner, sel)
                if problem:
                    return problem
        # -- silent branches ----------------------------------------------------------
        if len(sides):
            valid = []
            k, nsides, sw = 0, len(sides), sides.tolist()
            while k < nsides:
                valid.append(k)
                p = k + 3
                for _ in range(2):
                    if p + 2 > nsides or not 0 <= sw[p + 1] <= (nsides - p - 2) // 2:
                        return "branch_sides is cut short"
                    p += 2 + 2 * sw[p + 1]
                k = p
            at = np.array(valid)
            # (a successor's sign: that side is written without the op loop,
            # silent.straight_sides; the offset is the rest)
            to = np.concatenate((sides[at + 1], sides[at + 2])) & SIDE_OFFSET
            r.add("silent branch successor", to, 0, ncode)
            evens.append(to)
            # Which words start a silent branch; the extra last one stands for -1
            # (none), which indexes it.
            starts = np.zeros(nsides + 1, dtype=bool)
            starts[at] = True
            starts[nsides] = True
            if not starts.take(branch_sides_at, mode="clip").all():
                return "branch_sides_at names no silent branch"
        elif (branch_sides_at >= 0).any():
            return "branch_sides_at names no silent branch"
    elif len(branch_sides_at) or len(sides):
        return "silent branches in a plan with no micro-ops"
    problem = r.failure()
    if problem:
        return problem
    if nops and len(ri):
        for k in set(kw[kw >= 0].tolist()):
            s = statics[k]
            if type(s) is not tuple or not all(type(x) is str for x in s):
                return f"static {k} holds keyword names that are not a tuple of strings"
    if (np.concatenate(evens, dtype=np.int64) & 1).any():
        return "an instruction offset is odd"
    return None


# Ops standing for instructions that push, pop or move stack slots (a, and b for
# SWAP); captures only read the frame.
_LOW_A = _table(M.M_LOAD_LOCAL, M.M_LOAD_CONST, M.M_SET, M.M_STORE_LOCAL, M.M_COPY, M.M_SWAP)
_LOW_B = _table(M.M_SWAP)


def _waiting_outputs(o, depth, ri, closer, words, owner, sel) -> str | None:
    opc, off = o[:, 0], o[:, 1]
    a, b = o[:, 2].astype(np.int64), o[:, 3].astype(np.int64)
    # The lowest stack slot each op writes or consumes (_BIG: none).
    low = np.where(_LOW_A.take(opc, mode="clip"), a, _BIG)
    low = np.where(_LOW_B.take(opc, mode="clip"), np.minimum(low, b), low)
    slots = np.where(words >= 0, words.astype(np.int64), _BIG)
    np.minimum.at(low, ri[owner], slots)
    for k in np.unique(owner[sel]).tolist():
        i, end = int(ri[k]), int(closer[k])
        if end <= i + 1:
            continue
        x = int(words[sel][owner[sel] == k].max())
        own = off[i + 1:end + 1] == off[i]   # ops of the record's own instruction
        later = low[i + 1:end][~own[:-1]]
        at = off[i + 1:end + 1][~own]
        if (len(later) and int(later.min()) <= x) or \
                (len(at) and int(depth.take(at >> 1, mode="clip").min()) <= x):
            return f"record output slot {x} at offset {int(off[i])} does not stay on the stack"
    return None


def check_plan(plan, code: CodeType) -> None:
    """Raise PlanInvalid if `plan` breaks an invariant the core relies on, or if the
    core's check (`_core.plan_problem`) and these rules disagree about it."""
    problem = plan_violation(plan, code)
    in_core = _core.plan_problem(plan, code)
    if (problem is None) != (in_core is None):
        raise PlanInvalid(f"{code.co_qualname}: the core's plan check says {in_core!r}, "
                          f"the rules (tracer.analysis.plancheck) {problem!r}")
    if problem is not None:
        raise PlanInvalid(f"{code.co_qualname}: {problem}")
