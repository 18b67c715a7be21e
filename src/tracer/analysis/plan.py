"""Turn a code object's bytecode into the plan the Cython recorder follows.

The recorder only sees sys.monitoring events.  Between two events of one frame the
instructions that ran are fixed by where the first event was (control flow that is
not fixed fires an event: BRANCH, JUMP, RAISE, ...), so the analysis walks each such
*segment* once and emits micro-ops that replay its effect on the frame's shadow
state (which node holds each local and each stack slot):

* a recorded instruction's result is read where it still is at a later event: in
  the plain local the next instruction stores it in (if the segment does not assign
  that local again), or, in plain plans, in its stack slot at the event before the
  first instruction that pops, overwrites or moves that slot (so `f(a) + g(b)` has
  one event for both calls' results, before the `+`); an event right after the
  instruction only when neither works (the consumer is a loop's head or other
  paths join there, or the segment ends without an event).  A result the next
  instruction returns or yields is read from the value PY_RETURN/PY_YIELD hands
  over; a recorded instruction with no result (a store, an append) needs no event
  of its own.  Snapshot and intervention plans keep the event right after each
  recorded instruction;
* unconditional jumps fire no event: the segment goes on at their target, so a loop
  iteration costs only the events its body needs (a JUMP event is kept only for a
  loop with no other event on it);
* a constant-like value (a global, a module attribute, a free variable) that an
  instruction consumes is read off the stack at the last event before it, adding an
  event at the consuming instruction only when no earlier one can see it.

Every stack read the micro-ops make is of a slot below the static depth at that
event, which the frame provably holds.
"""

from __future__ import annotations

import weakref
from array import array
from types import CodeType

from . import cache, plancheck
from .bytecode import (
    PY313,
    _fastplan,
    AnalysisError,
    CodeLayout,
    Instr,
    for_iter_exit,
    layout,
)
from .instructions import (
    CAPTURED, METH, OTHER, R_CALL, R_CALL_EX, R_OP, R_SPECIAL, Effect, Rec, effect_of,
)
from .microops import (
    AT, BRANCH_KINDS, FROM, IV_ANY, IV_BOOL, IV_NONE, JUMP_EVENT, LF_CELL, LF_DYN, LF_SAFE,
    M_BRANCH, M_CAPTURE, M_CAPTURE_METHOD, M_COPY, M_DELETE_LOCAL, M_END, M_FOR_ITER, M_JUMP,
    M_LOAD_CONST, M_LOAD_LOCAL, M_LOST, M_RAISE, M_RECORD, M_RECORD_BOOL, M_RETURN,
    M_RETURN_CONST, M_SEND, M_SET, M_SILENT_JUMP, M_STORE_LOCAL, M_SWAP, M_YIELD, OP_WORDS,
    PLAN_EXACT, PLAN_INTERVENE, PLAN_INTERVENE_CALLS, PLAN_PLAIN, READ_RETURNED, READ_STORED,
    SIDE_STRAIGHT,
    SILENT_BRANCH, SPECIAL_SHADOW,
)
from .effecttable import effects_of
from .resume import ResumeCarry, _written_first
from . import silent
from .silent import SilentBranches
from .unknown import UnknownLocals

__all__ = ["CodePlan", "build_plan", "plan_for"]

METH_SELF = 5  # the self/attr half of a method pair



# Which records a context may substitute or override (Context.substitute/override).
# Only calls and operators whose result the interpreter treats as an ordinary value:
# building a list or an iterator is followed by instructions that assume its exact
# type (LIST_APPEND, FOR_ITER), and replacing it could crash the interpreter.
_IV_ANY_OPS = frozenset({"BINARY_OP", "BINARY_SUBSCR", "BINARY_SLICE", "UNARY_NEGATIVE",
                         "UNARY_INVERT", "COMPARE_OP"})


def pushes_bool(ins: Instr) -> bool:
    """Whether `ins` certainly pushes True or False, which what follows may rely on.

    IS_OP and CONTAINS_OP always do; on 3.13 so does COMPARE_OP with its bool flag
    (oparg bit 4), and the jump that follows it then tests `is True` and nothing else.
    """
    return ins.opname in ("IS_OP", "CONTAINS_OP") or (
        PY313 and ins.opname == "COMPARE_OP" and bool(ins.arg & 16)
    )


def compare_checked(ins: Instr) -> bool:
    """Whether `ins` is 3.12's COMPARE_OP, whose result is a bool when both operands
    are exact int/float/str/bool and may be any object otherwise.

    In a plain plan (no interventions) one that a POP_JUMP_IF_FALSE/TRUE pops is
    planned as 3.13's compare is (a RECORD_BOOL, no event at the jump); the core
    checks its operands where its segment starts (the recorder's compare312.pxi)
    and keeps the jump's INSTRUCTION event on, reading the value there, when it
    cannot prove them exact builtins.
    """
    return not PY313 and ins.opname == "COMPARE_OP"


def intervention_class(ins: Instr, rec: Rec) -> int:
    """IV_ANY, IV_BOOL or IV_NONE for the record `rec` of instruction `ins`."""
    if rec.sem in (R_CALL, R_CALL_EX):
        return IV_ANY
    if rec.sem != R_OP or not rec.outputs:
        return IV_NONE
    if pushes_bool(ins) or ins.opname == "UNARY_NOT":
        return IV_BOOL
    if ins.opname in _IV_ANY_OPS:
        return IV_ANY
    return IV_NONE


class CodePlan:
    """The compiled plan of one code object, in flat arrays the core indexes.

    The core keeps it on its code object (co_extra), freed with the code: so it
    holds the code only weakly, or the two would keep each other alive through a
    pointer the garbage collector cannot see.

    What the core reads (the arrays, `statics`, `nparams`, `param_cells`) is made by
    the builder or read from the plan cache (tracer.analysis.cache); what only the
    IR and tests read (`layout` with lines and argrepr, `rec_at`) is made when first
    asked for, from the code object.
    """

    __slots__ = ("ops", "recs", "rec_iv", "statics", "seg_at", "seg_from", "depth", "handler",
                 "istart", "events", "jump_events", "unit_flags", "piece_start", "branch_sides",
                 "branch_sides_at", "carry", "nparams", "param_cells", "ir", "mode", "_layout",
                 "_layout_full", "_rec_at", "_code", "__weakref__")

    ops: array  # int32, OP_WORDS per micro-op
    recs: array  # int32, records: sem, fn, nin, nout, kw, inputs..., outputs...
    rec_iv: array  # int32, parallel to recs: at each record's start its IV_* class
    statics: list  # objects referenced by records and static inputs
    seg_at: array  # int32 per code unit: first op of the segment an INSTRUCTION event starts
    seg_from: array  # int32 per code unit: first op of the segment arriving control starts
    depth: array  # int32 per code unit: static stack depth, -1 if unreachable
    handler: array  # int32 per code unit: (depth << 1 | lasti) of a handler target, else -1
    istart: array  # int32 per code unit: offset of the instruction it belongs to
    events: frozenset  # offsets with INSTRUCTION events
    jump_events: frozenset  # offsets of unconditional jumps whose JUMP event is used
    unit_flags: array  # int32 per code unit: JUMP_EVENT | SILENT_BRANCH bits
    piece_start: array  # int32 per micro-op: first offset of its straight-line piece
    branch_sides: array  # int32: per silent branch, its two successors (see silent_branches; a successor's sign: silent.straight_sides)
    branch_sides_at: array  # int32 per micro-op: index in `branch_sides` of the silent branch ending its segment, or -1
    carry: array  # int32 per code unit: stack slots a generator resumed there carries in (bits)
    nparams: int
    param_cells: tuple  # indices of parameters that live in cells
    ir: object  # the IR users see, made on demand by tracer.analysis.ir (it holds the code weakly)
    mode: int  # the PlanMode it was built for

    def __init__(self, code: CodeType, mode: int, *, layout: CodeLayout | None = None,
                 rec_at: dict | None = None, **arrays) -> None:
        for name, value in arrays.items():
            setattr(self, name, value)
        self.mode = mode
        self.ir = None
        self._code = weakref.ref(code)
        self._layout = layout
        self._layout_full = False
        self._rec_at = rec_at

    def _the_code(self) -> CodeType:
        code = self._code()
        if code is None:
            raise ReferenceError("tracer: the code object of this plan is gone")
        return code

    @property
    def layout(self) -> CodeLayout:
        """Instructions (with lines), blocks and stack depths, as the IR shows them."""
        if not self._layout_full:
            code = self._code()
            if code is None and self._layout is not None:
                return self._layout  # the builder's own (no lines), all that is left
            self._layout = layout(self._the_code())
            self._layout_full = True
        return self._layout

    @property
    def rec_at(self) -> dict:
        """Instruction offset -> the Rec it records (what the IR shows)."""
        if self._rec_at is None:
            self._rec_at = _Builder(self._the_code(), self.mode).build()._rec_at
        return self._rec_at


PLAN_FIELDS = ("ops", "recs", "rec_iv", "statics", "seg_at", "seg_from", "depth", "handler",
               "istart", "events", "jump_events", "unit_flags", "piece_start", "branch_sides",
               "branch_sides_at", "carry", "nparams", "param_cells")


_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08  # (inspect.CO_*)


def _nparams(code: CodeType) -> int:
    n = code.co_argcount + code.co_kwonlyargcount
    if code.co_flags & _CO_VARARGS:
        n += 1
    if code.co_flags & _CO_VARKEYWORDS:
        n += 1
    return n


class _Builder(SilentBranches, ResumeCarry, UnknownLocals):
    def __init__(self, code: CodeType, mode: int = 0, reference: bool = False):
        self.code = code
        # `reference`: decode with dis and walk every segment again in every round,
        # as the builder did before it was made fast; tests compare the two plans.
        self.reference = reference
        # Plans for contexts that substitute or override: an event before every
        # call and operator too (to substitute it) and none deferred to a branch
        # (an overridden value must still be on the stack at its event).
        # Plans for snapshots (PLAN_EXACT) read every value at an event right after
        # its instruction; plans for contexts that substitute or override
        # (PLAN_INTERVENE) have an event before every call and operator too, and
        # plans for contexts whose interventions name only callables
        # (PLAN_INTERVENE_CALLS) one before every call only (`before_ops` false).
        self.exact = mode >= PLAN_EXACT
        self.before = mode in (PLAN_INTERVENE, PLAN_INTERVENE_CALLS)
        self.before_ops = mode == PLAN_INTERVENE
        self.mode = mode
        self._lay: CodeLayout | None = None
        self._effects: dict | None = None
        self.prev: dict[int, Instr] = {}  # (the Python passes' only: effects, silent)
        if _fastplan is not None and not reference:
            # The typed builder reads unit arrays decoded from the code object and
            # their effects (_fastplan.prepare); the layout's Instr and Block
            # objects and the effects dict are made only if a Python pass asks
            # (a segment left to the Python walk: `layout`, `effects`).
            self._prep = _fastplan.prepare(self)
        else:
            self._lay = layout(code, fast=not reference)
            for a, b in zip(self._lay.instrs, self._lay.instrs[1:]):
                self.prev[b.offset] = a
            if reference:
                self._effects = {
                    i.offset: effect_of(i, code, self.prev.get(i.offset))
                    for i in self._lay.instrs
                    if i.offset in self._lay.depth
                }
            else:  # the same effects, those that depend on the opcode alone shared
                self._effects = effects_of(self._lay.instrs, self._lay.depth, code)
        self.statics: list = []
        self.static_ids: dict = {}
        self.recs = array("i")
        self.rec_iv = array("i")
        self.rec_index: dict[tuple[int, int], int] = {}
        self.jump_events: set[int] = set()

    @property
    def layout(self) -> CodeLayout:
        """The builder's layout (instructions without lines, blocks, depths)."""
        if self._lay is None:
            self._lay = layout(self.code, fast=True)
            for a, b in zip(self._lay.instrs, self._lay.instrs[1:]):
                self.prev[b.offset] = a
        return self._lay

    @property
    def effects(self) -> dict:
        """Offset -> Effect of every reachable instruction (the typed walk's own
        objects when it made them)."""
        if self._effects is None:
            self._effects = _fastplan.effects_dict(self)
        return self._effects

    # -- interning -------------------------------------------------------------
    def static(self, obj) -> int:
        key = (type(obj), id(obj)) if not isinstance(obj, (str, int, tuple)) else (type(obj), obj)
        idx = self.static_ids.get(key)
        if idx is None:
            idx = len(self.statics)
            self.statics.append(obj)
            self.static_ids[key] = idx
        return idx

    def record(self, ins: Instr, rec: Rec, d: int) -> int:
        key = (ins.offset, d)
        if key in self.rec_index:
            return self.rec_index[key]
        idx = len(self.recs)
        fn = -1 if rec.fn is None else self.static(rec.fn)
        kw = self.static(tuple(rec.kwnames)) if rec.kwnames else -1
        self.recs.extend([rec.sem, fn, len(rec.inputs), len(rec.outputs), kw])
        for x in rec.inputs:
            if isinstance(x, tuple):
                self.recs.append(-(self.static(x[1]) + 1))
            else:
                self.recs.append(d + x)
        for x in rec.outputs:
            self.recs.append(d + x)
        self.rec_iv.extend([0] * (len(self.recs) - len(self.rec_iv)))
        self.rec_iv[idx] = intervention_class(ins, rec)
        self.rec_index[key] = idx
        return idx

    # -- event placement --------------------------------------------------------
    def bool_into_branch(self, ins) -> bool:
        """Whether `ins` pushes a certain bool (pushes_bool) that the next instruction
        branches on: its value is then the branch's direction, so the recorder needs
        no event between the two.
        """
        if self.exact or not (pushes_bool(ins) or (not self.before and compare_checked(ins))):
            return False
        nxt = self.layout.by_offset.get(ins.next)
        return nxt is not None and nxt.opname in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE")

    def initial_events(self) -> set[int]:
        events = set()
        for ins in self.layout.instrs:
            eff = self.effects.get(ins.offset)
            if eff is not None and eff.rec is not None and eff.control not in ("for_iter", "send") \
                    and not self.bool_into_branch(ins) \
                    and not self.deferral(ins, eff, self.layout.depth[ins.offset], eff.rec):
                if self.exact or self._read_right_after(ins, eff):
                    # (plain plans read a result at the event before the instruction
                    # that consumes it: the walk finds that one, _read_point; seeded
                    # here when that is the next one, as it mostly is)
                    events.add(ins.next)
                if self.before and (self.before_ops or eff.rec.sem in (R_CALL, R_CALL_EX)):
                    events.add(ins.offset)
            if eff is not None and eff.control == "send" and ins.target in self.layout.depth:
                events.add(ins.target)
        events.update(h.target for h in self.layout.handlers if h.target in self.layout.depth)
        return events

    def starts(self, events: set[int]) -> list[tuple[int, int]]:
        out = [(AT, off) for off in sorted(events)]
        froms: set[int] = set()
        for ins in self.layout.instrs:
            eff = self.effects.get(ins.offset)
            if eff is None:
                continue
            if ins.opname == "RESUME":
                froms.add(ins.offset)
            if eff.control == "branch":
                froms.update((ins.target, ins.next))
            elif eff.control == "for_iter":
                froms.update((ins.next, for_iter_exit(ins, self.layout.by_offset)))
            elif eff.control == "jump" and ins.offset in self.jump_events:
                froms.add(ins.target)
        out.extend((FROM, off) for off in sorted(froms) if off in self.layout.depth)
        return out

    # -- walking a segment ---------------------------------------------------------
    def walk(self, kind: int, start: int, events: set[int], needs: set[int]) -> list[list[int]]:
        # (the typed builder runs its own walk, _fastplan._walk, in its rounds: it
        # writes the ops into a C buffer and calls _walk_py, the statement, only
        # for a stack shape it does not model)
        return self._walk_py(kind, start, events, needs)

    def _walk_py(self, kind: int, start: int, events: set[int], needs: set[int]) -> list[list[int]]:
        lay = self.layout
        cls = [OTHER] * lay.depth[start]
        ops: list[list[int]] = []
        dyn_stored: set[int] = set()
        visited: dict[int, int] = {}  # offset -> its position in the walk
        followed: list[tuple[int, int]] = []  # (position, offset) of jumps gone through
        off = start
        first = True
        self.later_reads = []
        self.later_records = []
        while True:
            ins = lay.by_offset.get(off)
            if ins is None or off not in lay.depth:
                self._read_now(needs)
                ops.append([M_LOST, off, 0, 0, 0])
                break
            if off in events and not (first and kind == AT):
                self._check_reads(ops, lay.depth[off])
                self._captures(cls, off, ops)
                ops.append([M_END, off, 0, 0, 0])
                break
            if off in visited:
                # A loop with no event on it: the last jump taken on the loop fires
                # its JUMP event (in the next round of build()).
                on_loop = [j for pos, j in followed if pos >= visited[off]]
                if on_loop:
                    self.jump_needs.add(on_loop[-1])
                self._read_now(needs)
                ops.append([M_LOST, off, 0, 0, 0])
                break
            visited[off] = len(visited)
            first = False
            d = lay.depth[off]
            eff = self.effects[off]
            if self.later_reads and self._consumes(ins, eff, d):
                # A result waiting on the stack is consumed (or may leave the stack)
                # here.  One event reads them all: right after the last of them was
                # made (all are live there; an instruction carrying an event runs
                # unspecialised, and that one is the same as an event right after
                # each result would take), else before this instruction -- not
                # where other paths arrive too (a loop's head: an event there would
                # fire on every round); failing both, right after each result.
                # (This instruction needs its own event anyway when it consumes a
                # global or method captured in the segment: then that one.)
                captured = eff.rec is not None and any(
                    isinstance(x, int) and 0 <= d + x < len(cls)
                    and cls[d + x] in (CAPTURED, METH, METH_SELF) for x in eff.rec.inputs)
                at = next((o for o in ((off,) if captured else (self.later_reads[-1][1], off))
                           if o not in self._jump_targets()), None)
                if at is None:
                    self._read_now(needs)
                else:
                    needs.add(at)
                    self.later_reads = []
            work = cls + [OTHER] * eff.pushes
            terminal = self._steps(ins, eff, d, work, ops, dyn_stored, needs, events)
            cls = work[: d - eff.pops + eff.pushes]
            if terminal:
                break
            if eff.control == "silent_jump" or eff.control == "jump":
                if eff.control == "jump":
                    followed.append((visited[off], off))
                ops.append([M_SILENT_JUMP, off, 0, 0, ins.target])
                off = ins.target
            else:
                off = ins.next
        self._event_before_reassign(ops, needs)  # (tracer.analysis.unknown)
        self._mark_safe_loads(ops)
        self._check_deferred(ops, needs)
        self.walked[(kind, start)] = set(visited)
        return ops

    def _check_reads(self, ops: list[list[int]], depth: int) -> None:
        # The recorder reads each record's outputs off the stack at the segment's
        # end: they must be live there, i.e. below the static depth.
        for op in ops:
            if op[0] == M_RECORD and not op[4]:  # (a deferred one is not read off the stack)
                r = op[2]
                nin, nout = self.recs[r + 2], self.recs[r + 3]
                for x in self.recs[r + 5 + nin: r + 5 + nin + nout]:
                    if x >= depth:
                        self.violations.append(
                            f"{self.code.co_qualname}: offset {op[1]}: output slot {x} is not "
                            f"live at the event (depth {depth})"
                        )

    def _captures(self, cls: list[int], off: int, ops: list[list[int]]) -> None:
        for d, c in enumerate(cls):
            if c == CAPTURED:
                ops.append([M_CAPTURE, off, d, 0, 0])
            elif c == METH and d + 1 < len(cls) and cls[d + 1] == METH_SELF:
                ops.append([M_CAPTURE_METHOD, off, d, d + 1, 0])

    def _steps(self, ins, eff, d, work, ops, dyn_stored, needs, events) -> bool:
        off = ins.offset
        for step in eff.steps:
            tag = step[0]
            if tag == "set":
                _, rel, c = step
                work[d + rel] = c
                if c in SPECIAL_SHADOW:
                    ops.append([M_SET, off, d + rel, SPECIAL_SHADOW[c], 0])
            elif tag == "copy":
                _, dst, src = step
                work[d + dst] = work[d + src]
                ops.append([M_COPY, off, d + dst, d + src, 0])
            elif tag == "swap":
                _, a, b = step
                work[d + a], work[d + b] = work[d + b], work[d + a]
                ops.append([M_SWAP, off, d + a, d + b, 0])
            elif tag in ("load_local", "load_cell"):
                _, rel, i = step
                work[d + rel] = OTHER
                flags = LF_CELL if tag == "load_cell" else 0
                ops.append([M_LOAD_LOCAL, off, d + rel, i, flags])
            elif tag == "load_const":
                _, rel, k = step
                work[d + rel] = OTHER
                ops.append([M_LOAD_CONST, off, d + rel, k, 0])
            elif tag == "delete_local":
                _, i = step
                if i in dyn_stored:
                    needs.add(off)
                ops.append([M_DELETE_LOCAL, off, i, 0, 0])
            elif tag in ("store_local", "store_cell"):
                _, rel, i = step
                flags = LF_CELL if tag == "store_cell" else 0
                if i in dyn_stored:
                    # The constant stored earlier in this segment is read back from the
                    # local at the segment's end; a second store would hide it.
                    needs.add(off)
                if work[d + rel] in (CAPTURED, METH, METH_SELF):
                    flags |= LF_DYN
                    dyn_stored.add(i)
                ops.append([M_STORE_LOCAL, off, d + rel, i, flags])
            elif tag == "getattr":
                _, rel, attr = step
                if work[d + rel] == CAPTURED:
                    work[d + rel] = CAPTURED  # an attribute of a constant is a constant
                    continue
                rec = Rec(R_OP, getattr, [rel, ("static", attr)], [rel], display="getattr")
                eff.rec = rec
                deferred = self._read_point(ins, eff, d, rec, events, needs)
                ops.append([M_RECORD, off, self.record(ins, rec, d), 0, deferred])
                work[d + rel] = OTHER
            elif tag == "method_pair":
                _, a, b = step
                ops.append([M_COPY, off, d + b, d + a, 0])
                ops.append([M_SET, off, d + a, SPECIAL_SHADOW[CAPTURED], 0])
                work[d + b] = METH_SELF
                work[d + a] = METH
            elif tag == "record":
                rec = step[1]
                micro = M_RECORD
                deferred = 0
                if ins.next not in events and self.bool_into_branch(ins):
                    micro = M_RECORD_BOOL
                else:
                    deferred = self._read_point(ins, eff, d, rec, events, needs)
                for x in rec.inputs:
                    if isinstance(x, int) and work[d + x] in (CAPTURED, METH, METH_SELF):
                        needs.add(off)
                ops.append([micro, off, self.record(ins, rec, d), 0, deferred])
                for x in rec.outputs:
                    work[d + x] = OTHER
            elif tag == "for_iter":
                rec = step[1]
                if work[d - 1] in (CAPTURED, METH, METH_SELF):
                    needs.add(off)
                ops.append([M_FOR_ITER, off, self.record(ins, rec, d), 0, ins.next])
                return True
            elif tag == "send":
                rec = step[1]
                for x in rec.inputs:
                    if isinstance(x, int) and work[d + x] in (CAPTURED, METH, METH_SELF):
                        needs.add(off)
                ops.append([M_SEND, off, self.record(ins, rec, d), ins.next, ins.target])
                return True
            elif tag == "branch":
                _, rel, name = step
                self._captures(work[: d + rel], off, ops)
                ops.append([M_BRANCH, off, d + rel, BRANCH_KINDS[name], ins.target])
                return True
            elif tag == "jump":
                if off not in self.jump_events:
                    continue  # a SILENT_JUMP (walk)
                self._captures(work[:d], off, ops)
                ops.append([M_JUMP, off, 0, 0, 0])
                return True
            elif tag == "return":
                ops.append([M_RETURN, off, d + step[1], 0, 0])
                return True
            elif tag == "return_const":
                ops.append([M_RETURN_CONST, off, step[1], 0, 0])
                return True
            elif tag == "yield":
                ops.append([M_YIELD, off, d + step[1], 0, 0])
                return True
            elif tag == "raise":
                rel = step[1]
                ops.append([M_RAISE, off, -1 if rel is None else d + rel, 0, 0])
                return True
            elif tag == "lost":
                ops.append([M_LOST, off, 0, 0, 0])
                return True
            else:  # pragma: no cover - effects.py and this walker are kept in step
                raise AssertionError(f"unknown step {tag}")
        return False

    def deferral(self, ins: Instr, eff, d: int, rec: Rec) -> int:
        """Where the one result of `ins` can be read later than right after it.

        `local + 1` when the next instruction stores it in that plain local: the
        recorder reads it back from there when it replays the segment at a later
        event, provided nothing in the segment assigns the local again
        (_check_deferred).  READ_RETURNED when the next instruction returns or yields
        it: the PY_RETURN or PY_YIELD event hands the value over.  READ_STORED for
        an UNPACK_SEQUENCE whose outputs the next instructions store in plain locals
        (STORE_FAST, STORE_FAST_STORE_FAST, STORE_FAST_LOAD_FAST): each output read
        back from its local, provided those stores follow in the same segment and
        nothing after them assigns the locals again (_check_deferred).  0 when it
        must be read off the stack at an event right after `ins`.  Plans for
        contexts that intervene keep every value on the stack at its own event.
        """
        if self.exact or eff.control is not None:
            return 0
        if len(rec.outputs) > 1 and ins.opname == "UNPACK_SEQUENCE" and STORED_UNPACK:
            nxt = self.layout.by_offset.get(ins.next)
            if nxt is not None and nxt.offset in self.layout.depth and nxt.opname in (
                    "STORE_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST"):
                return READ_STORED
            return 0
        if len(rec.outputs) != 1:
            return 0
        if d + rec.outputs[0] != d - eff.pops + eff.pushes - 1:
            return 0  # not the top of the stack
        nxt = self.layout.by_offset.get(ins.next)
        if nxt is None or nxt.offset not in self.layout.depth:
            return 0
        if nxt.opname == "STORE_FAST":
            return nxt.arg + 1
        if nxt.opname in ("STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST"):
            return (nxt.arg >> 4) + 1  # the first local stored takes the top of the stack
        if nxt.opname in ("RETURN_VALUE", "YIELD_VALUE"):
            return READ_RETURNED  # (PY_YIELD hands over the value yielded as well)
        return 0

    def _read_point(self, ins: Instr, eff, d: int, rec: Rec, events: set[int],
                    needs: set[int]) -> int:
        # A record's result is read at the next event if one is right after it,
        # else from where it goes (its deferral), else off the stack at the event
        # before the instruction that consumes it (plain plans: later_reads, walk;
        # the value stays in its slot until then), else right after it (an event
        # there, added to `needs`).
        if ins.next in events:
            return 0
        deferred = self.deferral(ins, eff, d, rec)
        if not deferred:
            if self.exact:
                needs.add(ins.next)
            elif not rec.outputs:
                # Nothing to read (a store, an append: its value is None, its
                # inputs are shadows): replayed at whatever event ends the
                # segment, or at a nested frame's start or a raise before that
                # (replay._run); an event right after it only if the segment
                # ends without one (_read_now).
                self.later_records.append(ins.next)
            else:
                self.later_reads.append((max(d + x for x in rec.outputs), ins.next))
        return deferred

    def _read_right_after(self, ins: Instr, eff) -> bool:
        # Whether the walk would place the event reading `ins`'s result right after
        # it: the next instruction consumes it, or other paths join there.
        if not eff.rec.outputs:
            return False  # nothing to read (_read_point)
        nxt = self.layout.by_offset.get(ins.next)
        if nxt is None or ins.next not in self.layout.depth:
            return True
        if ins.next in self._jump_targets():
            return True
        d = self.layout.depth[ins.offset]
        self.later_reads = [(max(d + x for x in eff.rec.outputs), ins.next)]
        try:
            return self._consumes(nxt, self.effects[ins.next], self.layout.depth[ins.next])
        finally:
            self.later_reads = []

    def _jump_targets(self) -> set[int]:
        targets = getattr(self, "_targets", None)
        if targets is None:
            targets = self._targets = {i.target for i in self.layout.instrs if i.target is not None}
            targets.update(h.target for h in self.layout.handlers)
            targets.update(for_iter_exit(i, self.layout.by_offset) for i in self.layout.instrs
                           if i.opname == "FOR_ITER")
        return targets

    def _read_now(self, needs: set[int]) -> None:
        # The segment ends without an event (a loop, lost control): results waiting
        # on the stack are read right after their instructions after all.
        needs.update(nxt for _slot, nxt in self.later_reads)
        needs.update(self.later_records)
        self.later_reads = []
        self.later_records = []

    def _consumes(self, ins: Instr, eff, d: int) -> bool:
        """Whether instruction `ins` (at depth `d`) may pop, overwrite or move a
        stack slot a result in `later_reads` waits in, or ends the segment in a way
        that leaves the stack (anything but a conditional branch, which only pops
        its condition).  Every read the recorder makes of such a result -- at the
        segment's end, or earlier at a nested frame's start or a raise inside the
        segment (replay._run) -- is then of a slot the frame holds unchanged."""
        control = eff.control
        if control not in (None, "silent_jump", "branch") and not (
                control == "jump" and ins.offset not in self.jump_events):
            return True
        low = d - eff.pops
        for step in eff.steps:
            tag = step[0]
            if tag == "swap":
                low = min(low, d + step[1], d + step[2])
            elif tag in ("copy", "set", "load_local", "load_cell", "load_const", "getattr",
                         "store_local", "store_cell", "branch"):
                low = min(low, d + step[1])
            elif tag == "method_pair":
                low = min(low, d + step[1], d + step[2])
            elif tag in ("record", "for_iter", "send"):
                rec = step[1]
                for x in [*rec.inputs, *rec.outputs]:
                    if isinstance(x, int):
                        low = min(low, d + x)
        return max(slot for slot, _nxt in self.later_reads) >= low

    def _check_deferred(self, ops: list[list[int]], needs: set[int]) -> None:
        # A record read back from a local must find its value there when the
        # segment is replayed: a later store or delete of that local in the same
        # segment would hide it, so that record gets its own event after all.
        for i, op in enumerate(ops):
            if op[0] == M_RECORD and op[4] == READ_STORED:
                if self.stored_locals(ops, i) is None:
                    needs.add(self.layout.by_offset[op[1]].next)
                continue
            if op[0] != M_RECORD or op[4] <= 0:
                continue
            local = op[4] - 1
            stores = [o for o in ops[i + 1:]
                      if (o[0] == M_STORE_LOCAL and o[3] == local)
                      or (o[0] == M_DELETE_LOCAL and o[2] == local)]
            if len(stores) > 1 or not stores or stores[0][0] != M_STORE_LOCAL:
                needs.add(self.layout.by_offset[op[1]].next)

    def stored_locals(self, ops: list[list[int]], i: int) -> list[int] | None:
        """The locals READ_STORED record ops[i] (an UNPACK_SEQUENCE's) is read back
        from, by output, or None where they cannot be: the ops right after it must
        store its outputs, each in a plain local of its own, and no later op of the
        segment may assign one of those locals again."""
        r = ops[i][2]
        nin, nout = self.recs[r + 2], self.recs[r + 3]
        outs = self.recs[r + 5 + nin:r + 5 + nin + nout]
        stores = ops[i + 1:i + 1 + nout]
        if nout > 255 or len(stores) != nout or any(o[0] != M_STORE_LOCAL or o[4] & (LF_CELL | LF_DYN)
                                      for o in stores):
            return None
        local_of = {o[2]: o[3] for o in stores}
        if sorted(local_of) != sorted(outs) or len(set(local_of.values())) != nout:
            return None
        later = {o[3] if o[0] == M_STORE_LOCAL else o[2] for o in ops[i + 1 + nout:]
                 if o[0] in (M_STORE_LOCAL, M_DELETE_LOCAL)}
        if later & set(local_of.values()):
            return None
        return [local_of[x] for x in outs]

    @staticmethod
    def _mark_safe_loads(ops: list[list[int]]) -> None:
        # A local whose shadow is unknown is read back from the frame when it is
        # loaded; that read happens at the segment's end, so it is only right if
        # the local is not assigned again later in the segment.
        later_stores: set[int] = set()
        for op in reversed(ops):
            if op[0] in (M_STORE_LOCAL, M_DELETE_LOCAL):
                later_stores.add(op[2] if op[0] == M_DELETE_LOCAL else op[3])
            elif op[0] == M_LOAD_LOCAL and op[3] not in later_stores:
                op[4] |= LF_SAFE

    # -- putting it together --------------------------------------------------------
    def _walk_once(self, kind: int, start: int, events: set[int], needs: set[int],
                   new_events: set[int] | None, new_jumps: set[int]) -> list[list[int]]:
        """walk(), or the same segment's walk of the round before when nothing it
        read has changed since: the events at the offsets it went through, at the
        instructions after them and where it ended (`new_events`: the events added
        since that round, None in the first) and the JUMP events of the jumps on it.
        A walk's outcome depends on nothing else (records are interned by offset
        and depth), so the plan is the same as when every round walks all."""
        key = (kind, start)
        hit = self._memo.get(key) if new_events is not None else None
        if hit is not None and hit[1].isdisjoint(new_events) and hit[2].isdisjoint(new_jumps):
            ops, _deps, visited, seg_needs, seg_jumps, seg_violations = hit
        else:
            seg_needs: set[int] = set()
            outer_jumps, outer_violations = self.jump_needs, self.violations
            self.jump_needs, self.violations = set(), []
            ops = self.walk(kind, start, events, seg_needs)
            seg_jumps, seg_violations = self.jump_needs, self.violations
            self.jump_needs, self.violations = outer_jumps, outer_violations
            visited = self.walked[key]
            by_offset = self.layout.by_offset
            deps = {by_offset[o].next for o in visited}
            deps |= visited
            deps.add(ops[-1][1])
            self._memo[key] = (ops, deps, visited, seg_needs, seg_jumps, seg_violations)
        needs |= seg_needs
        self.jump_needs |= seg_jumps
        self.violations += seg_violations
        self.walked[key] = visited
        return ops

    @staticmethod
    def _assemble(segments: list, units: int) -> tuple[array, array, array, array]:
        # The segments' ops in one array, where each straight-line piece starts, and
        # the first op of the segment starting at each unit (_fastplan.assemble).
        words: list[int] = []
        pieces: list[int] = []
        seg_at = array("i", [-1]) * units
        seg_from = array("i", [-1]) * units
        for kind, start, seg in segments:
            table = seg_at if kind == AT else seg_from
            table[start // 2] = len(pieces)
            lo = start
            for op in seg:
                words += op
                pieces.append(lo)
                if op[0] == M_SILENT_JUMP:
                    lo = op[4]
        return array("i", words), array("i", pieces), seg_at, seg_from

    def _unit_tables(self, units: int) -> tuple[array, array, array]:
        # Per code unit: static depth, handler depth/lasti, its instruction's start
        # (_fastplan.unit_tables).
        depth = array("i", [-1]) * units
        for off, d in self.layout.depth.items():
            depth[off // 2] = d
        handler = array("i", [-1]) * units
        for h in self.layout.handlers:
            if h.target in self.layout.depth:
                handler[h.target // 2] = (h.depth << 1) | int(h.lasti)
        istart = array("i", [0]) * units
        for ins in self.layout.instrs:
            for unit in range(ins.offset // 2, ins.next // 2):
                istart[unit] = ins.offset
        return depth, handler, istart

    def build(self) -> CodePlan:
        fast = _fastplan is not None and not self.reference
        if fast:  # the same rounds, typed (analysis/_fastplan.pyx)
            events = _fastplan.initial_events(self, pushes_bool)
            segments = _fastplan.rounds(self, events, AT, FROM, pushes_bool)
        else:
            events, segments = self._rounds()
        return self._finish(events, segments, fast)

    def _rounds(self) -> tuple[set[int], list]:
        # Walk every segment, add the events and JUMP events the walks asked for,
        # until none is new.
        events = self.initial_events()
        self._memo: dict = {}
        new_events: set[int] | None = None
        new_jumps: set[int] = set()
        while True:
            needs: set[int] = set()
            self.jump_needs: set[int] = set()
            self.walked: dict[tuple[int, int], set[int]] = {}
            self.violations: list[str] = []
            if self.reference:
                segments = [(k, s, self.walk(k, s, events, needs)) for k, s in self.starts(events)]
            else:
                segments = [(k, s, self._walk_once(k, s, events, needs, new_events, new_jumps))
                            for k, s in self.starts(events)]
            if needs <= events and self.jump_needs <= self.jump_events:
                break
            new_events = needs - events
            new_jumps = self.jump_needs - self.jump_events
            events |= needs
            self.jump_events |= self.jump_needs
        return events, segments

    def _finish(self, events: set[int], segments: list, fast: bool) -> CodePlan:
        if self.violations:
            raise AnalysisError(self.violations[0])
        units = len(self.code.co_code) // 2
        if fast:
            ops, piece_start, seg_at, seg_from = _fastplan.assemble(segments, units, AT)
        else:
            ops, piece_start, seg_at, seg_from = self._assemble(segments, units)
        unit_flags = array("i", [0]) * units
        for off in self.jump_events:
            unit_flags[off // 2] = JUMP_EVENT
        if fast:
            branch_sides, branch_sides_at = _fastplan.silent_branches(
                self, segments, len(ops) // OP_WORDS, FROM, silent.SILENT_FOR_ITER,
                silent.SILENT_CHAINS)
            _fastplan.flag_silent(unit_flags, ops, branch_sides_at, SILENT_BRANCH, seg_from)
        else:
            branch_sides, branch_sides_at = self.silent_branches(segments, len(ops) // OP_WORDS)
            for k in range(len(branch_sides_at)):
                if branch_sides_at[k] >= 0 and ops[k * OP_WORDS] in (M_BRANCH, M_FOR_ITER):
                    unit_flags[ops[k * OP_WORDS + 1] // 2] |= SILENT_BRANCH
                    if ops[k * OP_WORDS] == M_FOR_ITER:
                        # (a silent FOR_ITER's b: the local its body stores the value in, + 1)
                        body = seg_from[ops[k * OP_WORDS + 4] // 2]
                        ops[k * OP_WORDS + 3] = ops[body * OP_WORDS + 3] + 1
        # (the sides of silent branches written without the op loop: a bit in
        # branch_sides, after the loops' `b` words above)
        if fast:
            if silent.STRAIGHT_SIDES:
                _fastplan.straight_sides(ops, self.recs, seg_from, branch_sides, branch_sides_at,
                                         SIDE_STRAIGHT)
        else:
            silent.straight_sides(ops, self.recs, seg_from, branch_sides, branch_sides_at)
        if fast:
            depth, handler, istart = _fastplan.unit_tables(self, units)
            carry = _fastplan.carry_masks(self, segments, units, FROM, _written_first)
            rec_at = _fastplan.rec_at(self)
        else:
            depth, handler, istart = self._unit_tables(units)
            carry = self.carry_masks(segments, units)
            rec_at = {off: eff.rec for off, eff in self.effects.items() if eff.rec is not None}
        code = self.code
        nparams = _nparams(code)
        names = code.co_varnames[:nparams]
        cellvars = code.co_cellvars  # (a new tuple at each access: read once)
        cells = tuple(i for i, n in enumerate(names) if n in cellvars) if cellvars else ()
        # (a typed build hands over no layout: CodePlan.layout makes it when asked)
        # (each field set by name: CodePlan(**fields)'s loop costs a first call more)
        plan = CodePlan.__new__(CodePlan)
        plan.ops, plan.recs, plan.rec_iv, plan.statics = ops, self.recs, self.rec_iv, self.statics
        plan.seg_at, plan.seg_from, plan.depth, plan.handler = seg_at, seg_from, depth, handler
        plan.istart, plan.events = istart, frozenset(events)
        plan.jump_events, plan.unit_flags = frozenset(self.jump_events), unit_flags
        plan.piece_start, plan.branch_sides = piece_start, branch_sides
        plan.branch_sides_at, plan.carry, plan.nparams = branch_sides_at, carry, nparams
        plan.param_cells = cells
        plan.mode, plan.ir, plan._code = self.mode, None, weakref.ref(code)
        plan._layout, plan._layout_full, plan._rec_at = self._lay, False, rec_at
        return plan


# Whether an UNPACK_SEQUENCE's outputs stored in plain locals are read back from
# there (READ_STORED, deferral); tests build plans with it off to compare against
# the event right after the UNPACK_SEQUENCE (set_stored_unpack).
STORED_UNPACK = True


def set_stored_unpack(on: bool) -> bool:
    """Switch READ_STORED deferrals on or off for plans built from now on (both
    builders); returns the previous setting.  For tests."""
    global STORED_UNPACK
    was, STORED_UNPACK = STORED_UNPACK, bool(on)
    if _fastplan is not None:
        _fastplan.set_stored_unpack(STORED_UNPACK)
    return was


def _init_fastplan() -> None:
    # The typed walk gets the analysis's numbers from their home modules.
    from . import microops

    names = {k: getattr(microops, k) for k in dir(microops) if k.startswith("M_")}
    names.update(OTHER=OTHER, CAPTURED=CAPTURED, METH=METH, METH_SELF=METH_SELF,
                 LF_CELL=LF_CELL, LF_DYN=LF_DYN, LF_SAFE=LF_SAFE,
                 READ_RETURNED=READ_RETURNED, READ_STORED=READ_STORED, R_OP=R_OP)
    _fastplan.init_walk(names, Rec, SPECIAL_SHADOW)
    _fastplan.init_branch_kinds(BRANCH_KINDS)
    _fastplan.init_record(dict(R_CALL=R_CALL, R_CALL_EX=R_CALL_EX, IV_NONE=IV_NONE,
                               IV_ANY=IV_ANY, IV_BOOL=IV_BOOL), _IV_ANY_OPS)
    from . import effecttable

    _fastplan.init_effects(effecttable._shared, effecttable.CONTEXTUAL, effecttable.PER_CODE,
                           effecttable._MAX_SHARED, effect_of, Effect)
    from .bytecode import nlocalsplus
    from .instructions import cells_written_inside

    _fastplan.init_named(cells_written_inside, nlocalsplus)


if _fastplan is not None:
    _init_fastplan()


def build_plan(code: CodeType, mode: int = PLAN_PLAIN) -> CodePlan:
    """Build the plan of `code` in variant `mode` (a PlanMode; the core caches
    plans on the code object: use `plan_for` to get one).

    PLAN_EXACT records every value at an event right after its instruction, as
    snapshots need; PLAN_INTERVENE also has an event before every recorded call
    and operator, as substitute/override contexts need; PLAN_INTERVENE_CALLS one
    before every call only, as contexts need whose substitute=/override= filters
    name callables and no operator.

    Read from the plan cache on disk when it holds this code object's plan
    (tracer.analysis.cache), else built and written there.
    """
    # A plan the cache holds, in one typed call (no Python per code object); then,
    # if there is none or it fails a check, the entry read again to say why.
    loaded = cache.load(code, mode, CodePlan)
    if loaded is not None:
        return loaded
    cached = cache.entry(code, mode)
    if cached is not None:
        fields = cached.read()
        if fields is not None:
            return CodePlan(code, mode, **fields)
    plan = _Builder(code, mode).build()
    if plancheck.CHECK_BUILT:  # TRACER_CHECK_PLANS=1: the invariants a loaded plan is held to
        plancheck.check_plan(plan, code)
    if cached is not None:
        cached.write(plan)
    return plan


def plan_for(code: CodeType, mode: int = PLAN_PLAIN) -> CodePlan:
    """The plan of `code`, built once per code object and variant.

    Cached on the code object itself, by identity: two distinct code objects
    that compare equal (the same source compiled twice) each have their own, and
    a plan goes when its code object goes.
    """
    from .. import _core

    return _core.plan_of(code, mode)


__all__ += ["M_END", "OP_WORDS", "PY313", "R_CALL", "R_CALL_EX", "R_OP", "R_SPECIAL"]
