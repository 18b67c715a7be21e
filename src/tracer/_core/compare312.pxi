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
# the start, or `+`, `-`, `*` of such (i += 1): a guard program per segment,
# made when the plan is loaded.  If an operand is not proved an exact builtin,
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

# Guard program words (prefix form: an ARITH's two operands follow it).
cdef enum:
    G_FAIL = 0
    G_LOCAL = 1           # then the local's index
    G_STACK = 2           # then the stack slot
    G_TYPE = 3            # then a T_* (a constant's type)
    G_ARITH = 4           # then A_*, then both operands

cdef enum:
    T_OTHER = 0
    T_INT = 1             # int or bool
    T_FLOAT = 2
    T_STR = 3

cdef enum:
    A_ADD = 0
    A_SUB = 1
    A_MUL = 2

import dis as _dis
import operator as _operator
cdef int _COMPARE_OP = _dis.opmap["COMPARE_OP"]
cdef dict _ARITH_FNS = {
    id(_operator.add): A_ADD, id(_operator.iadd): A_ADD,
    id(_operator.sub): A_SUB, id(_operator.isub): A_SUB,
    id(_operator.mul): A_MUL, id(_operator.imul): A_MUL,
}


cdef inline int _exact_type(PyObject *v) noexcept:
    cdef PyTypeObject *t
    if v == NULL:
        return T_OTHER
    t = Py_TYPE(v)
    if t == &PyLong_Type or t == &PyBool_Type:
        return T_INT
    if t == &PyFloat_Type:
        return T_FLOAT
    if t == &PyUnicode_Type:
        return T_STR
    return T_OTHER


cdef int _guard_type(FrameRec *fr, int32_t **at) noexcept:
    """The exact builtin type the guard expression at *at evaluates to in fr's
    frame now (T_OTHER: not proved), *at moved past it."""
    cdef int32_t *p = at[0]
    cdef int32_t word = p[0]
    cdef int kind, a, b
    if word == G_ARITH:
        kind = p[1]
        at[0] = p + 2
        a = _guard_type(fr, at)
        b = _guard_type(fr, at)
        if a == T_OTHER or b == T_OTHER:
            return T_OTHER
        if a == T_STR or b == T_STR:
            # str + str is a str; str * int is one too, but not proved here
            return T_STR if (a == b and kind == A_ADD) else T_OTHER
        return T_FLOAT if (a == T_FLOAT or b == T_FLOAT) else T_INT
    at[0] = p + 2
    if word == G_LOCAL:
        return _exact_type(tracer_frame_local(fr.frame, p[1]))
    if word == G_STACK:
        return _exact_type(tracer_frame_stack_item(fr.frame, p[1]))
    if word == G_TYPE:
        return p[1]
    return T_OTHER


cdef int _compare_guard(Recorder self, FrameRec *fr, int32_t g) noexcept:
    """The segment just started in fr ends in a compare whose jump's event may be
    off: it stays off only if both operands are proved exact builtins now; else
    it is switched on for good (restart_events, where it may be off)."""
    cdef CPlan *plan = fr.plan
    cdef int32_t *p = plan.cmp_prog + g
    cdef int32_t unit = p[0]
    cdef uint8_t bits = plan.cmp_unit[unit]
    cdef PyObject *res
    if bits & CMP_ON:
        return 0
    p += 1
    if _guard_type(fr, &p) != T_OTHER and _guard_type(fr, &p) != T_OTHER:
        return 0
    plan.cmp_unit[unit] = bits | CMP_ON
    if bits & CMP_MAY_BE_OFF:
        res = PyObject_CallNoArgs(<PyObject *>_RESTART_EVENTS)
        if res == NULL:
            PyErr_WriteUnraisable(<PyObject *>_RESTART_EVENTS)
        else:
            Py_DECREF(<object>res)
    return 0


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
    if fr.after_call:
        _past_call(self, fr)
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


cdef object _origin_words(list origin, object consts):
    # The guard words of an operand's origin, or None where nothing is proved.
    kind = origin[0]
    if kind == G_LOCAL or kind == G_STACK:
        return [kind, origin[1]]
    if kind == G_TYPE:
        t = _exact_type(<PyObject *>consts[origin[1]])
        return None if t == T_OTHER else [G_TYPE, t]
    if kind == G_ARITH:
        a = _origin_words(origin[2], consts)
        b = _origin_words(origin[3], consts)
        if a is None or b is None:
            return None
        return [G_ARITH, origin[1]] + a + b
    return None


cdef object _origins(CPlan *plan, int32_t first, int32_t end, int32_t depth):
    """Where the stack slots ("s", k) and locals ("l", i) the ops first..end-1
    write come from, as origins: [G_LOCAL, i] (the local's value at the start),
    [G_STACK, k] (a slot live at the start), [G_TYPE, const index], [G_ARITH,
    kind, a, b], [G_FAIL]; None if an op there is not followed."""
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
            at[("s", op[OP_A])] = [G_TYPE, op[OP_B]]
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


cdef int _compare_guards(CPlan *plan, object code, Py_ssize_t nops) except -1:
    """3.12, plain plans: find the segments ending in a compare's RECORD_BOOL and
    its BRANCH (the instruction a COMPARE_OP) and make each one's guard program
    (cmp_prog, indexed by the segment's first op in cmp_guard) and its jump's
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
            a = _origin_words(_slot_origin(at, r[REC_INPUTS], depth), consts)
            b = _origin_words(_slot_origin(at, r[REC_INPUTS + 1], depth), consts)
            if a is not None and b is not None:
                words = [jump] + a + b
        if words is None:
            units[jump] = CMP_SITE | CMP_ON
            continue
        units.setdefault(jump, CMP_SITE)
        guard_of[first] = len(prog)
        prog.extend(words)
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
