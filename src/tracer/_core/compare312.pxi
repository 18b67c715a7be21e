# 3.12's COMPARE_OP into a branch without an event at the jump, when its
# operands are proved exact builtins before it runs.
#
# `if n < 2:` compiles on 3.12 to COMPARE_OP (pushing whatever the comparison
# returns) and POP_JUMP_IF_FALSE (popping it): the value lives only between the
# two, so reading it needs an INSTRUCTION event at the jump.  When both operands
# are exact int, bool, float or str, the result is True or False (or the compare
# raises), and then it is the branch's direction, which the frame's next event
# shows: plain plans make such a compare a RECORD_BOOL (tracer.analysis.plan
# compare_checked), as on 3.13, and the jump's event is switched off (DISABLE).
#
# What the operands will be is checked where the compare's segment starts
# (_start_segment: an event of the frame before the compare runs; the segment
# ends in the compare's BRANCH, so it is never a silent branch's side, which
# starts without an event).  The plan's ops from that start to the compare say
# where each operand comes from: a local not assigned in between (not a cell:
# no call in between can change a fast local), a constant, a stack slot live at
# the start, or `+`, `-`, `*` of such (i += 1; of exact builtins these give an
# exact builtin or raise before the compare runs): a guard per segment, made
# when the plan is loaded, the locals and stack slots whose types to check
# (constants are checked then).  If an operand is not proved an exact builtin,
# the jump's location is switched on for good (CMP_ON) and, if a callback may
# have switched it off, sys.monitoring.restart_events() re-instruments every
# executing code object at once (CPython 3.12 Python/instrumentation.c:
# monitoring_restart_events_impl -> instrument_all_executing_code_objects ->
# _Py_Instrument, which re-adds the INSTRUCTION tools of every offset of a
# restarted code object; 3.12 executes instrumented bytecode in place, so the
# running frame's jump fires in this very execution).  The jump's event then
# reads the compare's value off the stack (_compare_event) and the row gets it.
# A segment whose operands no guard can follow (a call's result read later, a
# cell) keeps its jump's event on from the start.
#
# The event right after a call may be switched off (aftercall.pxi): a segment
# starting there would be started late, after its compare ran, so such an END
# stays on (_end_skip_of asks _guards_start).
#
# A silent `for` loop's sides (tracer.analysis.silent) start without an event:
# the frame's next event takes the loop, after a compare at the start of the
# body or the exit ran.  Its guard is checked where the FOR_ITER's own segment
# starts instead (the loop's INSTRUCTION event, before next() runs): the side's
# locals are the same there (the FOR_ITER assigns none), its stack slots below
# the iterator live, and the next value -- the body's first store, the item --
# is told by peeking into an exact list, tuple or range iterator (G_ITEM:
# tracer_next_is_exact_scalar; any other iterator fails the guard).  The side's
# own guard is dropped (started late it would read the item's slot, dead by
# then).  Where that cannot be done (the FOR_ITER does not start its segment,
# both sides end in guarded compares, an operand no guard follows) the side's
# jump keeps its event for good (CMP_ON); its event, before the loop was taken,
# takes it first (_compare_event).

cdef extern from "Python.h":
    PyTypeObject PyLong_Type
    PyTypeObject PyBool_Type
    PyTypeObject PyFloat_Type
    PyTypeObject PyUnicode_Type
    PyObject *PyObject_CallNoArgs(PyObject *)
    void PyErr_WriteUnraisable(PyObject *)

# cmp_unit's bits per code unit (a compare's jump).
cdef enum:
    CMP_SITE = 1          # the jump after a RECORD_BOOL compare
    CMP_ON = 2            # its event stays on for good
    CMP_MAY_BE_OFF = 4    # a callback answered DISABLE there

# Origins of a compare's operand (the guard's leaves: a local or a stack slot;
# the others are decided when the guard is made).
cdef enum:
    G_FAIL = 0
    G_LOCAL = 1           # the local's value at the segment's start
    G_STACK = 2           # a stack slot live at the start
    G_CONST = 3           # a constant (co_consts index)
    G_ARITH = 4           # + - * of two origins
    G_ITEM = 5            # the next value of the iterator in a stack slot (a silent loop's)

import dis as _dis
import operator as _operator
cdef int _COMPARE_OP = _dis.opmap["COMPARE_OP"]
cdef dict _ARITH_FNS = {
    id(_operator.add): 0, id(_operator.iadd): 0,
    id(_operator.sub): 1, id(_operator.isub): 1,
    id(_operator.mul): 2, id(_operator.imul): 2,
}


cdef inline bint _exact_builtin(PyObject *v) noexcept:
    # int, bool, float or str, no subclass: `<` and friends return a bool or raise
    cdef PyTypeObject *t
    if v == NULL:
        return False
    t = Py_TYPE(v)
    return t == &PyLong_Type or t == &PyFloat_Type or t == &PyBool_Type or t == &PyUnicode_Type


cdef bint _next_item_ok(FrameRec *fr, int32_t it) noexcept:
    # G_ITEM: the value the iterator in stack slot `it` gives next is an exact
    # builtin, or there is none (tracer_next_is_exact_scalar).
    return tracer_next_is_exact_scalar(tracer_frame_stack_item(fr.frame, it)) != 0


cdef int _compare_guard(Recorder self, FrameRec *fr, int32_t g) noexcept:
    """The segment just started in fr ends in a compare whose jump's event may be
    off: it stays off only if both operands are proved exact builtins now; else
    it is switched on for good (restart_events, where it may be off)."""
    cdef CPlan *plan = fr.plan
    cdef int32_t *p = plan.cmp_prog + g       # its jump's unit, n, n (G_*, index) leaves
    cdef int32_t *end = p + 2 + 2 * p[1]
    if plan.cmp_unit[p[0]] & CMP_ON:
        return 0
    p += 2
    while p < end:
        if not _exact_builtin(tracer_frame_local(fr.frame, p[1]) if p[0] == G_LOCAL
                              else tracer_frame_stack_item(fr.frame, p[1])):
            # (the rest out of line, a tail call through a pointer gcc cannot
            # inline: this loop, which every guarded compare runs, then keeps
            # no register across a call)
            return _GUARD_LEAF_FAILED(self, fr, g, p)
        p += 2
    return 0


cdef int _guard_leaf_failed(Recorder self, FrameRec *fr, int32_t g, int32_t *p) noexcept:
    """Guard `g`'s leaf at `p` is no exact builtin.  A silent loop's item leaf
    (G_ITEM: its iterator's slot) is asked what comes next (_next_item_ok) and
    the leaves after it checked; anything else switches the jump's event on for
    good (restart_events, where a callback may have switched it off)."""
    cdef CPlan *plan = fr.plan
    cdef int32_t *prog = plan.cmp_prog + g
    cdef int32_t unit = prog[0]
    cdef int32_t *end = prog + 2 + 2 * prog[1]
    cdef uint8_t bits = plan.cmp_unit[unit]
    cdef PyObject *res
    while p < end:
        if p[0] == G_ITEM:
            if not _next_item_ok(fr, p[1]):
                break
        elif not _exact_builtin(tracer_frame_local(fr.frame, p[1]) if p[0] == G_LOCAL
                                else tracer_frame_stack_item(fr.frame, p[1])):
            break
        p += 2
    else:
        return 0
    plan.cmp_unit[unit] = bits | CMP_ON
    if bits & CMP_MAY_BE_OFF:
        res = PyObject_CallNoArgs(<PyObject *>_RESTART_EVENTS)
        if res == NULL:
            PyErr_WriteUnraisable(<PyObject *>_RESTART_EVENTS)
        else:
            Py_DECREF(<object>res)
    return 0


ctypedef int (*_GuardLeafFailed)(Recorder, FrameRec *, int32_t, int32_t *) noexcept
cdef _GuardLeafFailed _GUARD_LEAF_FAILED = _guard_leaf_failed


cdef int _compare_event(Recorder self, FrameRec *fr, int32_t offset) except -1:
    """The INSTRUCTION event at a compare's jump (CMP_SITE) fired: at the jump's
    first execution, where a guard could not prove the operands exact
    builtins, or after someone's restart_events.  The compare's value is on the
    stack (the jump's operand): its RECORD_BOOL's row is written with it now,
    fr left at the BRANCH (taken at its own or the next event, as any branch on
    a value).  Switched off again unless its guard needs it on."""
    cdef CPlan *plan = fr.plan
    cdef int32_t *op
    self.events += 1
    if fr.bool_end & END_NONE_TAG:
        _none_call_caught(self, fr, offset, CATCH_INSIDE)   # (aftercall.pxi)
    if fr.after_call:
        _past_call(self, fr)
    if fr.pending >= 0 and plan.branch_sides_at[fr.pc] >= 0:
        # (a silent loop whose side this compare starts: taken first)
        _take_silent_branch(self, fr, offset, CATCH_INSIDE)
    if fr.pending >= 0:
        _run_to_end(self, fr)
        op = plan.ops + fr.pc * OP_WORDS
        if fr.pending >= 0 and op[OP_CODE] == M_RECORD_BOOL and \
                op[OP_WORDS + OP_CODE] == M_BRANCH and op[OP_WORDS + OP_OFFSET] == offset:
            if fr.open_row < 0:
                _record_primitive(self, fr, plan.recs + op[OP_A], NULL)
            else:
                _record(self, fr, op[OP_A], NULL)
            fr.pc += 1
    if plan.cmp_unit[offset >> 1] & CMP_ON or self.plan_mode != PLAN_PLAIN:
        return EV_CONTINUE
    plan.cmp_unit[offset >> 1] |= CMP_MAY_BE_OFF
    return EV_DISABLE


cdef inline bint _guards_start(CPlan *plan, int32_t first) noexcept:
    # Whether the segment starting at op `first` holds a guarded compare.
    return TRACER_PY312 and plan.cmp_guard != NULL and first >= 0 and plan.cmp_guard[first] >= 0


# -- the guard programs, made when a plan is loaded (3.12) -------------------------

cdef list _slot_origin(dict at, int32_t k, int32_t depth):
    o = at.get(("s", k))
    if o is not None:
        return o
    return [G_STACK, k] if 0 <= k < depth else [G_FAIL]


cdef bint _leaves(list origin, object consts, list out):
    """Append the leaves (G_LOCAL/G_STACK, index) an operand's type depends on to
    `out`; False where its being an exact builtin cannot be checked that way.
    (+ - * of exact int/bool/float/str give one or raise: str + int, float * str.)"""
    kind = origin[0]
    if kind == G_LOCAL or kind == G_STACK:
        if (kind, origin[1]) not in zip(out[0::2], out[1::2]):
            out.extend([kind, origin[1]])
        return True
    if kind == G_CONST:
        return _exact_builtin(<PyObject *>consts[origin[1]])
    if kind == G_ARITH:
        return _leaves(origin[2], consts, out) and _leaves(origin[3], consts, out)
    return False


cdef object _origins(CPlan *plan, int32_t first, int32_t end, int32_t depth):
    """Where the stack slots ("s", k) and locals ("l", i) the ops first..end-1
    write come from, as origins: [G_LOCAL, i] (the local's value at the start),
    [G_STACK, k] (a slot live at the start), [G_CONST, index], [G_ARITH, kind,
    a, b], [G_FAIL]; None if an op there is not followed."""
    cdef int32_t *op
    cdef int32_t *r
    cdef int32_t pc, opc, nin, j
    cdef dict at = {}
    statics = <object>plan.statics
    for pc in range(first, end):
        op = plan.ops + pc * OP_WORDS
        opc = op[OP_CODE]
        if opc == M_LOAD_LOCAL:
            if op[OP_C] & LF_CELL:
                at[("s", op[OP_A])] = [G_FAIL]
            else:
                at[("s", op[OP_A])] = at.get(("l", op[OP_B]), [G_LOCAL, op[OP_B]])
        elif opc == M_LOAD_CONST:
            at[("s", op[OP_A])] = [G_CONST, op[OP_B]]
        elif opc == M_STORE_LOCAL:
            at[("l", op[OP_B])] = [G_FAIL] if op[OP_C] & LF_CELL else _slot_origin(at, op[OP_A], depth)
        elif opc == M_DELETE_LOCAL:
            at[("l", op[OP_A])] = [G_FAIL]
        elif opc == M_COPY:
            at[("s", op[OP_A])] = _slot_origin(at, op[OP_B], depth)
        elif opc == M_SWAP:
            a = _slot_origin(at, op[OP_A], depth)
            b = _slot_origin(at, op[OP_B], depth)
            at[("s", op[OP_A])] = b
            at[("s", op[OP_B])] = a
        elif opc == M_SET or opc == M_CAPTURE:
            at[("s", op[OP_A])] = [G_FAIL]
        elif opc == M_CAPTURE_METHOD:
            at[("s", op[OP_A])] = [G_FAIL]
            at[("s", op[OP_B])] = [G_FAIL]
        elif opc == M_RECORD:
            r = plan.recs + op[OP_A]
            nin = r[REC_NIN]
            kind = None
            if r[REC_SEM] == R_OP and nin == 2 and r[REC_NOUT] == 1 and r[REC_FN] >= 0 \
                    and r[REC_INPUTS] >= 0 and r[REC_INPUTS + 1] >= 0:
                kind = _ARITH_FNS.get(id(statics[r[REC_FN]]))
            if kind is not None:
                res = [G_ARITH, kind, _slot_origin(at, r[REC_INPUTS], depth),
                       _slot_origin(at, r[REC_INPUTS + 1], depth)]
            else:
                res = [G_FAIL]
            for j in range(r[REC_NOUT]):
                at[("s", r[REC_INPUTS + nin + j])] = res
        elif opc != M_SILENT_JUMP:
            return None
    return at


cdef int _loop_guards(CPlan *plan, Py_ssize_t nops, list prog, dict guard_of,
                      dict units) except -1:
    """The guards of silent loops' sides moved to where their FOR_ITER's segment
    starts (see the top of this file): per silent FOR_ITER (b > 0), the first
    side whose segment has a guard gets it there, its item leaf (the FOR_ITER's
    output slot) turned into G_ITEM of the iterator's slot; that side's own
    guard dropped; any other guarded side, or one that cannot be moved, keeps
    its jump's event for good (CMP_ON)."""
    cdef int32_t *op
    cdef int32_t *r
    cdef int32_t k, at, it, item, g, n, kind, idx, first
    cdef bint moved
    if plan.branch_sides == NULL:
        return 0
    for k in range(nops):
        op = plan.ops + k * OP_WORDS
        if op[OP_CODE] != M_FOR_ITER or op[OP_B] <= 0 or plan.branch_sides_at[k] < 0:
            continue
        at = plan.branch_sides_at[k]
        r = plan.recs + op[OP_A]
        it = r[REC_INPUTS]
        item = r[REC_INPUTS + r[REC_NIN]]
        # (its own segment, started at its INSTRUCTION event: nothing runs
        # between that event and its next())
        first = plan.seg_at[op[OP_OFFSET] >> 1]
        moved = False
        for side in (plan.seg_from[op[OP_C] >> 1], plan.seg_from[plan.branch_sides[at + 2] >> 1]):
            if side < 0 or side not in guard_of:
                continue
            g = guard_of.pop(side)
            n = prog[g + 1]
            words = [prog[g], n]
            leaves = []
            for j in range(n):
                kind, idx = prog[g + 2 + 2 * j], prog[g + 3 + 2 * j]
                if kind == G_STACK and idx == item:
                    words += [G_ITEM, it]
                elif kind == G_LOCAL or (kind == G_STACK and idx < it):
                    leaves += [kind, idx]
                else:
                    words = None
                    break
            if words is not None:
                words += leaves
            if words is None or moved or first != k:
                units[prog[g]] = CMP_SITE | CMP_ON
                continue
            guard_of[k] = len(prog)
            prog.extend(words)
            moved = True
    return 0


cdef int _compare_guards(CPlan *plan, object code, Py_ssize_t nops) except -1:
    """3.12, plain plans: find the segments ending in a compare's RECORD_BOOL and
    its BRANCH (the instruction a COMPARE_OP) and make each one's guard (in
    cmp_prog: its jump's unit, the number of leaves, the leaves; indexed by the
    segment's first op in cmp_guard) and its jump's
    cmp_unit bits (CMP_ON from the start where no guard follows the operands)."""
    cdef int32_t *op
    cdef int32_t *r
    cdef int32_t u, first, pc, opc, jump, depth, k
    cdef bytes co = code.co_code
    consts = code.co_consts
    prog = [0]          # (a guard's index is never 0)
    guard_of = {}
    units = {}
    starts = []
    for u in range(plan.nunits):
        if plan.seg_at[u] >= 0:
            starts.append((plan.seg_at[u], u))
        if plan.seg_from[u] >= 0:
            starts.append((plan.seg_from[u], u))
    for first, u in starts:
        if first in guard_of:
            continue
        pc = first
        while pc < nops:
            opc = plan.ops[pc * OP_WORDS + OP_CODE]
            if opc == M_RECORD_BOOL or opc == M_END or (opc >= M_BRANCH and opc != M_SILENT_JUMP):
                break
            pc += 1
        if pc + 1 >= nops or plan.ops[pc * OP_WORDS + OP_CODE] != M_RECORD_BOOL:
            continue
        op = plan.ops + pc * OP_WORDS
        if op[OP_WORDS + OP_CODE] != M_BRANCH or co[op[OP_OFFSET]] != _COMPARE_OP:
            continue
        jump = op[OP_WORDS + OP_OFFSET] >> 1
        r = plan.recs + op[OP_A]
        depth = plan.depth[u]
        words = None
        at = _origins(plan, first, pc, depth) if depth >= 0 else None
        if at is not None and r[REC_NIN] == 2:
            leaves = []
            if _leaves(_slot_origin(at, r[REC_INPUTS], depth), consts, leaves) and \
                    _leaves(_slot_origin(at, r[REC_INPUTS + 1], depth), consts, leaves):
                words = [jump, len(leaves) // 2] + leaves
        if words is None:
            units[jump] = CMP_SITE | CMP_ON
            continue
        units.setdefault(jump, CMP_SITE)
        guard_of[first] = len(prog)
        prog.extend(words)
    _loop_guards(plan, nops, prog, guard_of, units)
    if not units:
        return 0
    plan.cmp_unit = <uint8_t *>calloc(plan.nunits, 1)
    plan.cmp_guard = <int32_t *>malloc((nops + 1) * sizeof(int32_t))
    plan.cmp_prog = <int32_t *>malloc(len(prog) * sizeof(int32_t))
    if plan.cmp_unit == NULL or plan.cmp_guard == NULL or plan.cmp_prog == NULL:
        raise MemoryError()
    for k in range(nops + 1):
        plan.cmp_guard[k] = -1
    for first, g in guard_of.items():
        plan.cmp_guard[first] = g
    for k in range(len(prog)):
        plan.cmp_prog[k] = prog[k]
    for u, bits in units.items():
        plan.cmp_unit[u] = bits
    return 0
