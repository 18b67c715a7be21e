# The INSTRUCTION event right after a call, switched off where the call's
# result comes from its body's PY_RETURN.
#
# `a = f(x) + g(y)`: the plan ends the segment holding g's CALL at the `+` after
# it (the event E that reads g's result off the stack before `+` pops it).  When
# g is a Python function the recorder follows, g's PY_RETURN hands over that
# very object: the call op is completed there (_call_returned), and E has
# nothing left to do but start its segment, which the frame's next event can do
# as well (_past_call).  E's location is then switched off (DISABLE).
#
# A location's event is the same for every execution, though, and the next
# execution of the call may reach a C function, a class, a generator function
# or tracer's own code, whose result only E can read.  So the event at the
# call itself (S, which starts the segment [call op, END at E]) checks the
# callee while E may be off: anything but a followed plain Python function
# switches every location back on (sys.monitoring.restart_events(): process-
# wide, so E fires again) and keeps E on for good (END_ON): at most one
# restart per call site and process.  E is switched off only while one
# recorder runs in the process (LIVE_RECORDERS), under a plain plan with no
# hooks, where DISABLE is allowed (ALLOW_DISABLE) and E is no handler's target:
# another recorder (a thread, a nested track) could otherwise switch E off
# between its own check at S and its call's return.
# E is switched off only if the call is the one way to it: where another
# segment ends at E too (`y = (k if c else f(x)) + 1`: the `k` side's silent
# jump to E, or a branch or loop exit landing there), that segment needs E's
# event, so E stays on for good (END_ON, set when end_skip is made).

cdef extern from "Python.h":
    PyTypeObject PyFunction_Type
    PyObject *PyFunction_GET_CODE(PyObject *)
    ctypedef struct PyCodeObject:
        int co_flags
    int CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR, CO_ITERABLE_COROUTINE

# end_skip's bits per code unit: the END event there may be off (a callback
# answered DISABLE), or stays on for good; the unit's INSTRUCTION event starts a
# call op alone in its segment (_call_then_end), whose callee it checks.
cdef enum:
    END_MAY_BE_OFF = 1
    END_ON = 2
    CALL_ALONE = 4
    BOOL_CALL = 256    # a call op alone whose END starts its result's branch (below)
    NONE_CALL = 512    # a call op alone whose END pops its result at once (below)
    S_CHECK = 1024     # a call op alone whose event must check its callee: its END
                       # may be off, or it is a BOOL_CALL/NONE_CALL site (_check_skip)

# fr.bool_end's tag for a NONE_CALL callee (the END's offset in the low bits).
cdef enum:
    END_NONE_TAG = 1 << 30

# Recorders between activate and deactivate, in every thread (callbacks.pxi).
cdef int LIVE_RECORDERS = 0
cdef object _RESTART_EVENTS = sys.monitoring.restart_events


cdef inline bint _call_then_end(CPlan *plan, int32_t pc) noexcept:
    """Whether op `pc` is a call op alone in a segment that starts at its own
    INSTRUCTION event (S) and ends at the instruction right after it (E)."""
    cdef int32_t *op = plan.ops + pc * OP_WORDS
    cdef int32_t s = op[OP_OFFSET], e = op[OP_WORDS + OP_OFFSET]
    return op[OP_CODE] == M_RECORD and op[OP_WORDS + OP_CODE] == M_END \
        and plan.seg_at[s >> 1] == pc and e > s and plan.istart[(e >> 1) - 1] == s


cdef inline void _call_returned(Recorder self, FrameRec *parent, int32_t row) noexcept:
    """A frame entered as the body of `parent`'s open call op (its row `row`)
    returned normally (its return has closed the row with the value returned):
    the op is completed here, as _close_open_call would at the caller's next
    event (the value the CALL pushes is the one returned), when nothing else
    needs that event: no hooks, the op's one result on the stack.  If the op is
    alone in its segment (_call_then_end: S checked its callee), the caller goes
    on at the END's instruction without needing its event (after_call).
    (events.pxi's _return_plain does the same with the op's part decided at
    the body's entry, plans.pxi's _return_targets: keep the three in step.)"""
    cdef CPlan *plan = parent.plan
    cdef int32_t *op
    cdef int32_t *r
    if plan == NULL or parent.open_row != row or parent.hooks or parent.pending < 0:
        return
    op = plan.ops + parent.pc * OP_WORDS
    if op[OP_CODE] != M_RECORD or op[OP_C] != 0:
        return
    r = plan.recs + op[OP_A]
    if r[REC_NOUT] != 1:
        return
    _stack(self, parent)[r[REC_INPUTS + r[REC_NIN]]] = (<int64_t>row) << 2
    parent.open_row = -1
    if _call_then_end(plan, parent.pc):
        parent.after_call = 1
    parent.pc += 1


cdef inline void _past_call(Recorder self, FrameRec *fr) noexcept:
    """An event of fr's frame after its call op was completed at its body's
    return (after_call): control went on through the END's instruction, whose
    segment is the pending one now (as if its event had fired).  (A frame
    entered while fr still executes the CALL, a finalizer run as the body's
    frame is cleared, is not such an event: _frame_entered asks first.)"""
    fr.after_call = 0
    _start_segment(self, fr, fr.plan.seg_at[fr.plan.ops[fr.pc * OP_WORDS + OP_OFFSET] >> 1])


cdef int _end_event_done(Recorder self, FrameRec *fr, int32_t offset) except -1:
    """The event at `offset` ends a segment whose call op its body's return
    completed: EV_DISABLE if its location may be switched off (see above), else
    EV_CONTINUE.  Never when the segment it starts is a call op alone (its
    event is where that call's callee is checked)."""
    cdef uint16_t *skip = fr.plan.end_skip
    if self.plan_mode != PLAN_PLAIN or not ALLOW_DISABLE or LIVE_RECORDERS != 1 \
            or fr.plan.handler[offset >> 1] >= 0:
        return EV_CONTINUE
    if skip == NULL:
        skip = _end_skip_of(fr.plan)
        if skip == NULL:
            return EV_CONTINUE
    if skip[offset >> 1] & (END_ON | CALL_ALONE):
        return EV_CONTINUE
    skip[offset >> 1] |= END_MAY_BE_OFF
    # (the call op alone ending here starts at the instruction before it:
    # _call_then_end; its event checks each callee from now on)
    skip[fr.plan.istart[(offset >> 1) - 1] >> 1] |= S_CHECK
    return EV_DISABLE


cdef uint16_t *_end_skip_of(CPlan *plan) noexcept:
    """The plan's end_skip, made with the CALL_ALONE bits (NULL: no memory), and
    END_ON where a segment other than a call op alone ends: control arrives
    there by other ways too (a silent jump, a branch's side, a loop's exit),
    and the segment they run needs that event (its END; a silent branch before
    it is taken there)."""
    cdef int32_t u, pc, e
    cdef uint16_t *skip = <uint16_t *>calloc(plan.nunits, sizeof(uint16_t))
    if skip == NULL:
        return NULL
    for u in range(plan.nunits):
        pc = plan.seg_at[u]
        if pc >= 0 and _call_then_end(plan, pc):
            skip[u] = CALL_ALONE | (BOOL_CALL | S_CHECK if _bool_shape(plan, pc) else 0) \
                | (NONE_CALL | S_CHECK if _none_shape(plan, pc) else 0)
    for u in range(plan.nunits):
        pc = plan.seg_at[u]
        if pc >= 0 and not skip[u] & CALL_ALONE:
            e = plan.seg_end[pc]
            if e >= 0:
                skip[e >> 1] |= END_ON
        if _guards_start(plan, pc):
            # (3.12: the segment starting here is checked before its compare
            # runs, at this event: compare312.pxi)
            skip[u] |= END_ON
        pc = plan.seg_from[u]
        if pc >= 0:
            e = plan.seg_end[pc]
            if e >= 0:
                skip[e >> 1] |= END_ON
    _delegation_bits(plan, skip)   # (resume.pxi)
    plan.end_skip = skip
    return skip


def locations_on(code):
    """`code` was just given local events by a tool id that had none there (its
    first recorder since the last released it, api._ToolShare.instrument):
    CPython re-instruments every location of it for that tool, also those a
    callback had switched off (DISABLE) while an earlier recorder ran, on 3.12
    and 3.13 alike.  So the bits of its plans (every plan mode) that say a
    location may be off are cleared: an END after a call (END_MAY_BE_OFF, and
    the check at its call's event, S_CHECK, where only that needed it), a
    delegation's yield (Y_OFF, resume.pxi), a 3.12 compare's jump
    (CMP_MAY_BE_OFF, compare312.pxi).  Left set, they made the next recorder's
    check at such a call (a general path: hooks) call restart_events() for a
    location that was on, which switched on again, in that very run, the
    locations its own callbacks had switched off: on 3.12 a compare's jump then
    fired twice, one event more than the same run gives after a general one.
    The caller holds api's lock: no recorder has the code's events (its
    callbacks could switch a location off meanwhile)."""
    cdef void *extra
    cdef CPlan *plan
    cdef uint16_t *skip
    cdef uint16_t bits
    cdef int mode
    cdef int32_t u
    for mode in range(4):
        extra = NULL
        if PyUnstable_Code_GetExtra(code, _extra_index(mode), &extra) < 0:
            raise RuntimeError("tracer: cannot read the code object's extra slot")
        if extra == NULL:
            continue
        plan = <CPlan *>extra
        skip = plan.end_skip
        if skip != NULL:
            for u in range(plan.nunits):
                bits = skip[u] & ~(END_MAY_BE_OFF | Y_OFF)
                if bits & CALL_ALONE and not bits & (BOOL_CALL | NONE_CALL):
                    bits &= ~S_CHECK
                skip[u] = bits
        if plan.cmp_unit != NULL:
            for u in range(plan.nunits):
                plan.cmp_unit[u] &= ~CMP_MAY_BE_OFF


cdef int _check_call_end(Recorder self, FrameRec *fr, int32_t first) except -1:
    """The INSTRUCTION event that starts segment `first`, a call op alone
    (CALL_ALONE): if the event after it may be off, make sure the call's
    result reaches the recorder (_call_returns_here), or switch the event on
    again, for good."""
    cdef uint16_t *skip = fr.plan.end_skip
    cdef int32_t *op = fr.plan.ops + first * OP_WORDS
    cdef int32_t e = op[OP_WORDS + OP_OFFSET] >> 1
    cdef int32_t s = op[OP_OFFSET] >> 1
    cdef uint16_t here = skip[s]
    if skip[e] & (END_MAY_BE_OFF | END_ON) != END_MAY_BE_OFF:
        # E is on: a bool call (BOOL_CALL) or a call of a NONE_CALLEES callee
        # (NONE_CALL) tells E's event it may switch E off.
        if here & (BOOL_CALL | NONE_CALL) and not skip[e] & END_ON:
            if here & BOOL_CALL:
                _bool_call_starts(self, fr, op)
            elif not _none_call_starts(self, fr, op) and not fr.hooks:
                # Another callee at a NONE_CALL site whose E never went off:
                # the site is an ordinary call's from now on (S_CHECK is set
                # again if E goes off after a Python body's return).  (A frame
                # with hooks, a general path's, reads E as any END: the site
                # stays one for the plain runs after it.)
                skip[s] = here & ~(NONE_CALL | S_CHECK)
        return 0
    if here & BOOL_CALL and _bool_call_starts(self, fr, op):
        return 0
    if here & NONE_CALL and _none_call_starts(self, fr, op):
        return 0
    if _call_returns_here(self, fr, op):
        return 0
    skip[e] = (skip[e] & ~END_MAY_BE_OFF) | END_ON
    skip[s] &= ~S_CHECK   # (E is on for good: nothing left to check here)
    _RESTART_EVENTS()
    return 0


cdef inline PyObject *_returning_call_callee(FrameRec *fr, int32_t *op) noexcept:
    """The callee of the call op at `op`, about to run, if the op is one
    _call_returned can complete: a call, no hooks, its one result on the
    stack; the callee is its first input that is not NULL, read off the stack
    (the CALL's operands are live at its own event).  NULL otherwise."""
    cdef int32_t *r = fr.plan.recs + op[OP_A]
    cdef int32_t i, x
    cdef PyObject *v = NULL
    if fr.hooks or op[OP_C] != 0 or r[REC_NOUT] != 1 or \
            (r[REC_SEM] != R_CALL and r[REC_SEM] != R_CALL_EX):
        return NULL
    for i in range(REC_INPUTS, REC_INPUTS + r[REC_NIN]):
        x = r[i]
        if x < 0:
            return NULL
        v = tracer_frame_stack_item(fr.frame, x)
        if v != NULL:
            break
    return v


cdef bint _call_returns_here(Recorder self, FrameRec *fr, int32_t *op) except -1:
    """Whether the call op at `op`, about to run, is certain to be completed by
    _call_returned (or to raise): its callee (_returning_call_callee) a plain
    Python function, not a generator's, whose code the recorder follows (not
    tracer's own code, not track)."""
    cdef PyObject *v = _returning_call_callee(fr, op)
    cdef PyObject *code
    if v == NULL or Py_TYPE(v) != &PyFunction_Type:
        return False
    code = PyFunction_GET_CODE(v)
    if v == self.returns_fn and code == self.returns_code:
        return True   # (the same function as last time: a recursion, a loop)
    if (<PyCodeObject *>code).co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
                                          | CO_ITERABLE_COROUTINE) \
            or code == <PyObject *>TRACK_CODE:
        return False
    # (_enter follows it: a plan of this session or a new one, as the body.)
    if _own_code_planned(self, <object>code, _cached_plan(self, <object>code)):
        return False
    cdef PyObject *old_fn = self.returns_fn
    cdef PyObject *old_code = self.returns_code
    Py_INCREF(<object>v)
    Py_INCREF(<object>code)
    self.returns_fn = v
    self.returns_code = code
    Py_XDECREF(old_fn)     # (released last: a destructor sees the recorder consistent)
    Py_XDECREF(old_code)
    return True



# -- a call whose result its branch's direction gives ----------------------------
#
# `if isinstance(key, str):` is CALL, TO_BOOL (3.13), POP_JUMP_IF_FALSE: the
# segment [call op, END at E] and then E's segment, the branch alone.  E's
# event reads the call's result, and the BRANCH event right after it shows
# which way the branch went.  When the callee is the builtin isinstance or
# issubclass, the result is exactly True or False (they return a bool whatever
# __instancecheck__ returns, or raise) and TO_BOOL passes a bool on unchanged,
# so the direction alone gives the result: the call op is completed at the
# BRANCH event with that bool (_bool_call_branch), and E's location is switched
# off like the END of a call whose body returned (the same END_MAY_BE_OFF /
# END_ON bits, the same conditions in _end_event_done).  The event at the call
# (S) checks each callee while E may be off: a bool callee sets fr.bool_end
# (E's offset) for the branch; a followed Python function is the case above;
# anything else switches every location back on for good.

cdef object _BOOL_CALLEE_1 = isinstance
cdef object _BOOL_CALLEE_2 = issubclass


cdef void _find_bool_sites(CPlan *plan) noexcept:
    """plan.bool_sites set, and end_skip made if the plan has a bool call site
    (a plan without one gets end_skip only if a call's body returns into it:
    its call sites then pay no check at S)."""
    cdef int32_t u, pc
    plan.bool_sites = 1
    for u in range(plan.nunits):
        pc = plan.seg_at[u]
        if pc >= 0 and _call_then_end(plan, pc) and (_bool_shape(plan, pc) or _none_shape(plan, pc)):
            plan.bool_sites = 2
            if plan.end_skip == NULL:
                _end_skip_of(plan)
            return


cdef bint _bool_shape(CPlan *plan, int32_t pc) noexcept:
    """Whether op `pc` (a call op alone) has its one result on the stack and
    only E's segment uses it, as the condition of an IF_FALSE/IF_TRUE branch
    (evented: _bool_call_branch, or silent: _bool_call_caught)."""
    cdef int32_t *op = plan.ops + pc * OP_WORDS
    cdef int32_t *r = plan.recs + op[OP_A]
    cdef int32_t k
    cdef int32_t *b
    if op[OP_C] != 0 or r[REC_NOUT] != 1 or r[REC_SEM] != R_CALL:
        return False
    k = plan.seg_at[op[OP_WORDS + OP_OFFSET] >> 1]
    if k < 0:
        return False
    b = plan.ops + k * OP_WORDS
    return b[OP_CODE] == M_BRANCH and b[OP_A] == r[REC_INPUTS + r[REC_NIN]] and 0 <= b[OP_B] <= 1


cdef bint _bool_call_starts(Recorder self, FrameRec *fr, int32_t *op) noexcept:
    """Whether the call op at `op` (BOOL_CALL, about to run: the CALL's operands
    are live at its own event) calls builtin isinstance or issubclass, with no
    hooks (the callee is its first input that is not NULL, read off the stack);
    if so, fr.bool_end is its END's offset."""
    cdef int32_t *r = fr.plan.recs + op[OP_A]
    cdef int32_t i, x
    cdef PyObject *v = NULL
    if fr.hooks:
        return False
    for i in range(REC_INPUTS, REC_INPUTS + r[REC_NIN]):
        x = r[i]
        if x < 0:
            return False
        v = tracer_frame_stack_item(fr.frame, x)
        if v != NULL:
            break
    if v == NULL or (v != <PyObject *>_BOOL_CALLEE_1 and v != <PyObject *>_BOOL_CALLEE_2):
        return False
    fr.bool_end = op[OP_WORDS + OP_OFFSET]
    return True


cdef int _bool_call_branch(Recorder self, FrameRec *fr, int32_t offset, int32_t dest) except -1:
    """The BRANCH event after a bool call whose END's event did not fire
    (fr.bool_end): the call op completed with the bool the direction shows,
    and E's segment started, as E's own event would have.  (A NONE_CALL's
    tag is left for _catch_up, which the BRANCH event calls next; so is a
    bool call's whose branch is silent when the event is another branch's,
    one that a side of it ends in: _bool_call_caught completes the call with
    the side the event lies on.)"""
    cdef CPlan *plan = fr.plan
    cdef int32_t e = fr.bool_end, k
    if e & END_NONE_TAG:
        return 0
    k = plan.seg_at[e >> 1]
    if (plan.ops + k * OP_WORDS)[OP_OFFSET] == offset:
        fr.bool_end = 0
        _bool_call_done(self, fr, e, k, dest)
    elif plan.branch_sides_at[k] < 0:
        fr.bool_end = 0
    return 0


cdef int _bool_call_caught(Recorder self, FrameRec *fr, int32_t here, int how) except -1:
    """An event of the frame after a bool call whose END's event did not fire
    and whose branch is silent (_catch_up): if the event lies on one of the
    branch's sides, the call op is completed with the bool that side shows and
    E's segment started; the caller's _catch_up then takes the branch.  An
    event elsewhere (a frame the call entered, E's own event) leaves it."""
    cdef CPlan *plan = fr.plan
    cdef int32_t e = fr.bool_end, k, j, side
    if e & END_NONE_TAG:
        return _none_call_caught(self, fr, here, how)
    k = plan.seg_at[e >> 1]
    j = plan.branch_sides_at[k]
    if j < 0 or (how == CATCH_INSTRUCTION and here == e) or fr.pending < 0:
        return 0   # (an evented branch: only its BRANCH event completes the call)
    if how != CATCH_INSTRUCTION and _executing(self, fr) == (plan.ops + fr.pc * OP_WORDS)[OP_OFFSET]:
        return 0   # a frame the call entered (isinstance ran Python code)
    side = _silent_side(plan, j, here, how)
    if side < 0:
        return 0
    fr.bool_end = 0
    _bool_call_done(self, fr, e, k, plan.branch_sides[j + 1 + side] & SIDE_OFFSET)
    return 0


cdef int _bool_call_done(Recorder self, FrameRec *fr, int32_t e, int32_t k,
                         int32_t dest) except -1:
    """The pending call op (a bool call alone, its END at `e`) completed with
    the bool its branch (op `k`, E's segment) going to `dest` shows, and E's
    segment started."""
    cdef CPlan *plan = fr.plan
    cdef int32_t *b = plan.ops + k * OP_WORDS
    cdef int32_t *op = plan.ops + fr.pc * OP_WORDS
    cdef bint value
    if fr.pending < 0 or fr.after_call or op[OP_CODE] != M_RECORD \
            or op[OP_WORDS + OP_CODE] != M_END or op[OP_WORDS + OP_OFFSET] != e:
        return 0
    # (IF_FALSE, kind 0, jumps when the value is false; IF_TRUE, kind 1, when true)
    value = (dest == b[OP_C]) == (b[OP_B] == 1)
    if not _bool_row(self, fr, op, <PyObject *>(PY_TRUE if value else PY_FALSE)):
        _record(self, fr, op[OP_A], NULL, <PyObject *>(PY_TRUE if value else PY_FALSE))
        fr.pc += 1
    _start_segment(self, fr, k)
    return 0


cdef inline bint _bool_row(Recorder self, FrameRec *fr, int32_t *op, PyObject *v) noexcept:
    """replay.pxi's _single_row for the call op `op` with its value `v` given
    (no longer on the stack): the row written as the op loop writes a
    primitive's and fr.pc moved past it (_row_room, _commit_row); False,
    nothing written, where that loop would not write it itself (per-row
    hooks, a row open for frames the call entered, an input to pool first) or
    the columns must grow."""
    cdef int32_t *r = fr.plan.recs + op[OP_A]
    cdef int64_t *ss
    cdef int32_t nrefs
    if (fr.hooks & ~<uint32_t>ROW_NEUTRAL_HOOKS) != 0 or fr.open_row >= 0:
        return False
    ss = _locals(self, fr) + fr.plan.nlocalsplus
    nrefs = _row_room(self, self.trace, fr, r, ss)
    if nrefs < 0:
        return False
    _commit_row(self.trace, fr, op, r, ss, nrefs, v)
    return True


# -- a call whose result is None whenever it returns ------------------------------
#
# `lst.append(x)` as a statement is CALL, POP_TOP: the segment [call op, END at
# E] (E the POP_TOP) and E's segment, which starts with the result gone.  E's
# event only reads the call's result, and for the C methods in NONE_CALLEES
# (list.append, dict.update, deque.append, ...) that result is None whenever
# the call returns (they return None or raise).  So when S finds such a callee
# (the method descriptor itself, as LOAD_ATTR's method form leaves it, or a
# method bound from it: the same C function), the call op is completed with
# None at the frame's next own event, wherever it is (_none_call_caught, from
# _catch_up: any INSTRUCTION, BRANCH, JUMP, return or yield of the frame, a
# frame it calls starting, a raise past the call), and E's segment started
# there, as E's event would have.  E is switched off like a bool call's END:
# the same END_MAY_BE_OFF / END_ON bits and conditions (_end_event_done), the
# tag END_NONE_TAG in fr.bool_end telling the two kinds apart.  An event
# while the frame still executes the CALL (a finalizer the collector runs
# during it, the call raising: the frame's executing offset is the CALL's)
# leaves the op pending: the call's own END, or _raised, completes it then.
# Any other callee at a site whose E may be off switches events back on for
# good (_check_call_end), as for bool calls.

# (PyCFunctionObject, PyMethodDescrObject, PyCFunction_Check, PyMethodDescr_Type:
# filters.pxi's declarations; their method-table pointers as void *)

from collections import deque as _deque

# C methods that return None whenever they return (or raise).  Kept alive here.
# (the commonest first: _none_callee scans them in this order)
cdef tuple NONE_CALLEES = (
    list.append, _deque.append, set.add, dict.update, list.extend, _deque.appendleft,
    list.insert, set.discard, list.sort, list.clear, list.reverse, list.remove,
    dict.clear, set.update, set.clear, set.difference_update,
    set.intersection_update, set.symmetric_difference_update,
    _deque.extend, _deque.extendleft, _deque.clear, _deque.rotate,
)
cdef enum:
    N_NONE_MAX = 32
cdef PyObject *_NONE_DESCRS[N_NONE_MAX]
cdef void *_NONE_DEFS[N_NONE_MAX]
cdef int N_NONE = 0


cdef void _none_callees_init() noexcept:
    global N_NONE
    cdef object m
    for m in NONE_CALLEES:
        if N_NONE < N_NONE_MAX and Py_TYPE(<PyObject *>m) == &PyMethodDescr_Type:
            _NONE_DESCRS[N_NONE] = <PyObject *>m
            _NONE_DEFS[N_NONE] = (<PyMethodDescrObject *><PyObject *>m).d_method
            N_NONE += 1

_none_callees_init()


cdef inline bint _none_callee(PyObject *v) noexcept:
    """Whether `v` is one of NONE_CALLEES or a method bound from one (its C
    function and flags the descriptor's own: PyMethodDef identity)."""
    cdef int i
    cdef void *ml
    if Py_TYPE(v) == &PyMethodDescr_Type:
        for i in range(N_NONE):
            if _NONE_DESCRS[i] == v:
                return True
        return False
    if PyCFunction_Check(v):
        ml = (<PyCFunctionObject *>v).m_ml
        for i in range(N_NONE):
            if _NONE_DEFS[i] == ml:
                return True
    return False


cdef bint _none_shape(CPlan *plan, int32_t pc) noexcept:
    """Whether op `pc` (a call op alone, its END at E) has its one result on
    the stack and E's instruction pops it at once, reading nothing (no op of
    E's segment is at E; the stack is one slot lower right after E, a
    one-unit instruction: POP_TOP)."""
    cdef int32_t *op = plan.ops + pc * OP_WORDS
    cdef int32_t *r = plan.recs + op[OP_A]
    cdef int32_t e = op[OP_WORDS + OP_OFFSET], u, k, x
    if op[OP_C] != 0 or r[REC_NOUT] != 1 or r[REC_SEM] != R_CALL:
        return False
    u = e >> 1
    k = plan.seg_at[u]
    if k < 0 or u + 1 >= plan.nunits or plan.istart[u + 1] != 2 * (u + 1):
        return False
    x = r[REC_INPUTS + r[REC_NIN]]
    return (plan.ops + k * OP_WORDS)[OP_OFFSET] > e and plan.depth[u] == x + 1 \
        and plan.depth[u + 1] == x


cdef bint _none_call_starts(Recorder self, FrameRec *fr, int32_t *op) noexcept:
    """Whether the call op at `op` (NONE_CALL, about to run: the CALL's operands
    are live at its own event) calls one of NONE_CALLEES, with no hooks (the
    callee is its first input that is not NULL, read off the stack); if so,
    fr.bool_end is its END's offset, tagged END_NONE_TAG."""
    cdef int32_t *r = fr.plan.recs + op[OP_A]
    cdef int32_t i, x
    cdef PyObject *v = NULL
    if fr.hooks:
        return False
    for i in range(REC_INPUTS, REC_INPUTS + r[REC_NIN]):
        x = r[i]
        if x < 0:
            return False
        v = tracer_frame_stack_item(fr.frame, x)
        if v != NULL:
            break
    if v == NULL or not _none_callee(v):
        return False
    fr.bool_end = op[OP_WORDS + OP_OFFSET] | END_NONE_TAG
    return True


cdef int _none_call_caught(Recorder self, FrameRec *fr, int32_t here, int how) except -1:
    """An event of the frame after a NONE_CALL callee's call whose END's event
    did not fire (_catch_up): the call op completed with None and E's segment
    started, unless the event is E's own (on: read there) or comes while the
    frame still executes the CALL (a frame the call entered, the call
    raising: left pending)."""
    cdef int32_t e = fr.bool_end & ~END_NONE_TAG
    if how == CATCH_INSTRUCTION and here == e:
        return 0
    if fr.pending < 0:
        fr.bool_end = 0
        return 0
    if how != CATCH_INSTRUCTION and _executing(self, fr) == (fr.plan.ops + fr.pc * OP_WORDS)[OP_OFFSET]:
        return 0
    fr.bool_end = 0
    return _none_call_done(self, fr, e)


cdef int _none_call_done(Recorder self, FrameRec *fr, int32_t e) except -1:
    """The pending call op (a NONE_CALL alone, its END at `e`) completed with
    None, and E's segment started."""
    cdef CPlan *plan = fr.plan
    cdef int32_t *op = plan.ops + fr.pc * OP_WORDS
    if fr.pending < 0 or fr.after_call or op[OP_CODE] != M_RECORD \
            or op[OP_WORDS + OP_CODE] != M_END or op[OP_WORDS + OP_OFFSET] != e:
        return 0
    if not _bool_row(self, fr, op, <PyObject *>None):
        _record(self, fr, op[OP_A], NULL, <PyObject *>None)
        fr.pc += 1
    _start_segment(self, fr, plan.seg_at[e >> 1])
    return 0


cdef int _bool_end_raised(Recorder self, FrameRec *fr) except -1:
    """A RAISE event of a frame with fr.bool_end set: a bool call's is dropped
    (its op raised, or its branch was never reached: the general path); a
    NONE_CALL callee's call returned None if the frame is past its CALL (the
    raise came later, before the frame's next event), and is completed so."""
    cdef int32_t e = fr.bool_end
    fr.bool_end = 0
    if e & END_NONE_TAG and fr.pending >= 0 and \
            _executing(self, fr) != (fr.plan.ops + fr.pc * OP_WORDS)[OP_OFFSET]:
        _none_call_done(self, fr, e & ~END_NONE_TAG)
    return 0
