# Generator frames resumed and suspended (PY_RESUME, PY_YIELD): the common case
# of each in one routine, the general paths (events.pxi's _enter and _leave) for
# everything else.
#
# What a resume records (the same on both paths): the op of the follower's frame
# that resumed the generator (a SEND of `yield from` / `await`, a FOR_ITER, a call
# of C code consuming it) replayed up to the instruction it executes and opened;
# under it a node of the resumed frame's own (K_NESTED | F_FRAME, its function as
# its one input) with a fresh frame record and shadow; what the frame kept on its
# stack across the yield (a `yield from` receiver, a for loop's iterator, the
# value sent in: the slots the plan's carry mask proves live at the RESUME) as
# carried ArgumentNodes.  Locals enter as carried ArgumentNodes when first read
# (_carried).  Nothing of the previous activation's frame record is reused: its
# shadow names rows of another node.
#
# The plain paths cover a followed frame resumed by a followed frame with a plan
# (no hooks, no substitution, no timing), the generator's plan
# this session's, its code not tracer's own, no frame stack, shadow or frames
# column growth; they write the rows the general paths write, through the column
# pointers in locals (tests/test_resume_paths.py compares them with a context
# that takes the general paths).

cdef extern from *:
    """
    /* Carry masks have a bit or two: no libgcc call (no -mpopcnt). */
    static inline int tracer_bits32(unsigned int x) {
        int n = 0;
        for (; x; x &= x - 1) n++;
        return n;
    }
    /* A fresh shadow: four stores an iteration, which the compiler pairs into
       vector stores (a plain loop over int64 was ~3 instructions a slot). */
    static inline void tracer_fill64(int64_t *p, Py_ssize_t n, int64_t v) {
        Py_ssize_t i = 0;
        for (; i + 4 <= n; i += 4) {
            p[i] = v; p[i + 1] = v; p[i + 2] = v; p[i + 3] = v;
        }
        for (; i < n; i++) p[i] = v;
    }
    """
    int _bits32 "tracer_bits32"(unsigned int x) noexcept
    void _fill64 "tracer_fill64"(int64_t *p, Py_ssize_t n, int64_t v) noexcept

cdef extern from *:
    """
    /* A generator's or coroutine's code (a new reference). */
    static inline PyObject *tracer_gen_code(PyObject *g) {
        return (PyObject *)PyGen_GetCode((PyGenObject *)g);
    }
    """
    PyTypeObject PyGen_Type
    PyTypeObject PyCoro_Type
    PyObject *_gen_code "tracer_gen_code"(PyObject *g) noexcept

cdef extern from "_frame.h":
    int tracer_gen_unstarted(PyObject *gen)
    PyObject *tracer_gen_code_of(PyObject *gen) noexcept   # (borrowed)


cdef bint _resume_plain(Recorder self, Trace t, FrameRec *parent, void *frame, object code,
                        int32_t offset) except -1:
    """A generator frame resumed (PY_RESUME) under a followed frame, written in
    one routine: False (nothing written) when the case is not the common one
    (above), which _enter handles.  `t` is self.trace, borrowed."""
    global RESUME_CHECKED
    cdef CPlan *pp = parent.plan
    cdef CPlan *plan
    cdef int32_t here, rec, call_row, ref, k, under
    cdef int32_t *op
    cdef uint32_t carry
    cdef int64_t need
    cdef int64_t *slots
    cdef PyObject *func
    cdef PyObject *v
    cdef FrameRec *fr
    cdef Rows w
    if pp == NULL or parent.hooks or parent.subst_pc >= 0 or self.broken:
        return False
    plan = _cached_plan(self, code)
    if YIELDS_OFF and plan != NULL:
        # (a delegation's yield may be off: _py_resume's check, with this plan)
        _check_resume_plan(self, plan, offset)
        RESUME_CHECKED = True
    if plan == NULL or plan.session != self.session or plan.code_id < 0 or plan.own != 2 \
            or code is TRACK_CODE or not 0 <= offset < 2 * plan.nunits:
        return False
    need = plan.nlocalsplus + plan.stacksize
    if t.timing != NULL or t.nframes == t.framecap \
            or self.nframes == self.framecap or self.shadow_top + need > self.shadow_cap:
        return False
    self.events += 1
    # The follower's op that resumed the frame, as _enter finds and opens it.
    here = _executing(self, parent)
    if parent.pending >= 0:
        _catch_up(self, parent, here, False)
        op = pp.ops + parent.pc * OP_WORDS
        if op[OP_OFFSET] != here:
            _replay_to_resumer(self, t, parent, here)
            op = pp.ops + parent.pc * OP_WORDS
        if parent.open_row < 0 and here >= 0 and op[OP_OFFSET] == here and _is_record(op[OP_CODE]):
            rec = op[OP_A]
            parent.open_row = _open_resumer(self, t, parent, rec, op[OP_OFFSET])
            parent.body_may_be_callee = pp.recs[rec + REC_SEM] == R_CALL or \
                pp.recs[rec + REC_SEM] == R_CALL_EX
            parent.callee_body_entered = 0
            parent.open_primitive = 0
    if (parent.open_row >= 0 and parent.open_primitive) or self.broken:
        return True   # not followed (as _enter)
    # The resumed frame's node: under the resuming op while that runs, else beside
    # it (a generator resumed by a finalizer after its op completed).
    func = tracer_frame_function(frame)
    ref = _pool_ref(self, func) if func != NULL else -1
    carry = <uint32_t>plan.carry[offset >> 1]
    t.open_rows(&w, 1 + _bits32(carry), 1)
    under = parent.open_row >= 0 and (w.flags[parent.open_row] & F_OPEN) != 0
    w.refs[w.nrefs] = ref
    w.nrefs += 1
    call_row = _rows_add(t, &w, K_NESTED, F_OPEN | F_FRAME,
                         parent.open_row if under else parent.call_row,
                         w.offset[parent.open_row] if parent.open_row >= 0 else here, 0, NULL)
    parent.callee_body_entered = 1
    # Its frame record and fresh shadow (recorder.pxi's _frame_init; no hooks, so
    # no filters and no timing; a generator's frame is no call's body:
    # aftercall.pxi).
    fr = _frame_init(self, frame, <PyObject *>code, plan, plan.code_id, call_row, parent.ctx,
                     0, need, True)   # (no hooks or timing: a plain return)
    slots = self.shadow + fr.shadow
    # add_frame's common case (room checked above).
    if t.nframes and (t.frames_[t.nframes - 1] >> 32) >= call_row:
        t.frames_sorted = False
    t.frames_[t.nframes] = ((<int64_t>call_row) << 32) | (<uint32_t>plan.code_id)
    t.nframes += 1
    # The stack it kept across the yield (_carry_stack): only the slots the plan
    # proves live at this RESUME are read.
    slots += plan.nlocalsplus
    k = 0
    while carry:
        if carry & 1:
            v = tracer_frame_stack_item(frame, k)
            if v == NULL:
                slots[k] = S_NULL
            else:
                Py_INCREF(<object>v)
                slots[k] = (<int64_t>_rows_add(t, &w, K_ARGUMENT, F_CARRIED, call_row, offset,
                                               -(plan.nlocalsplus + k) - 1, v)) << 2
        carry >>= 1
        k += 1
    _start_segment(self, fr, plan.seg_from[offset >> 1])
    if t.value_policy:
        # (the carried values as _enter's add_row keeps them, applied once the
        # frame is consistent: arena.pxi's _policy_rows; a `yield from`'s
        # receiver, at each resume, decided in line once its type is)
        _policy_rows_in_line(t, call_row + 1, t.n)
    return True


cdef inline int _replay_to_resumer(Recorder self, Trace t, FrameRec *fr, int32_t here) except -1:
    """_run(fr, here, True) for the resuming frame: the silent jumps before the
    op at `here` written here (a `yield from` / `await` loop resumed after its
    YIELD_VALUE jumps back to its SEND), the rest of the run left to _run."""
    cdef int32_t *op = fr.plan.ops + fr.pc * OP_WORDS
    cdef int32_t *lo = fr.plan.piece_start
    cdef Rows w
    if fr.pending < 0 or TRACER_EVENT_LOG:
        return _run(self, fr, here, True)
    while op[OP_CODE] == M_SILENT_JUMP and not (op[OP_OFFSET] >= here and lo[fr.pc] <= here):
        # _jump_row(fr, offset, dest, S_NULL, None) with no hooks: no condition ref.
        t.open_rows(&w, 1, 1)
        Py_INCREF(None)
        _rows_add(t, &w, K_JUMP, 0, fr.call_row, op[OP_OFFSET], op[OP_C], <PyObject *>None)
        fr.pc += 1
        op += OP_WORDS
    if op[OP_OFFSET] >= here and lo[fr.pc] <= here:
        return 0   # where _run stops at once
    return _run(self, fr, here, True)


cdef inline int32_t _open_resumer(Recorder self, Trace t, FrameRec *fr, int32_t rec,
                                  int32_t op_offset) except -1:
    """_open(fr, rec, K_NESTED) with no substitution pending: the resuming op's
    row, open, with its inputs."""
    cdef int32_t *r = fr.plan.recs + rec
    cdef int32_t nin = r[REC_NIN], i, x, ref
    cdef int64_t *ss = _stack(self, fr)
    cdef int64_t s
    cdef Rows w
    t.open_rows(&w, 1, nin)
    for i in range(nin):
        x = r[REC_INPUTS + i]
        if x < 0:
            ref = _static_ref(self, fr.plan, -x - 1)
        else:
            s = ss[x]
            if s == S_NULL:
                continue
            ref = _ref(self, fr, s)
        w.refs[w.nrefs] = ref
        w.nrefs += 1
    return _rows_add(t, &w, K_NESTED, F_OPEN, fr.call_row, op_offset, 0, NULL)


cdef bint _yield_plain(Recorder self, FrameRec *fr, int32_t offset, PyObject *retval) except -1:
    """A followed generator frame suspended (PY_YIELD) in one routine: the
    segment before the yield replayed, the yielded value's ReturnNode (a SEND
    that delegated to a receiver completed with the value it passes on), the
    frame's node closed and its record popped.  False (nothing done) when the
    frame has hooks, a substitution or timing: _leave's.  `fr`
    is the yielding frame's record, the top one (_top_for, or a delegating
    frame whose yield its receiver's yield stands for: _yield_delegators)."""
    cdef Trace t
    cdef int32_t *op
    cdef int64_t src = S_UNKNOWN
    cdef int32_t row, ref
    if fr.hooks or fr.subst_pc >= 0:
        return False
    t = self.trace
    if t.timing != NULL:
        return False
    # A yield is not the call's result; a call before it that its body's return
    # completed leaves the frame past that call (events.pxi's _leave_start).
    fr.body = 0
    _leave_start(self, fr, offset)
    if fr.pending >= 0:
        op = fr.plan.ops + fr.pc * OP_WORDS
        if (op[OP_CODE] != M_SEND and op[OP_CODE] != M_YIELD) or TRACER_EVENT_LOG:
            # (a `yield from` whose receiver yielded is at its SEND already: the
            # op loop would stop at once.)  A result the plan reads from the
            # value yielded: READ_RETURNED.
            self.returning = retval
            _run_to_end(self, fr)
            self.returning = NULL
            op = fr.plan.ops + fr.pc * OP_WORDS
        src = _returned_source(self, fr, op, offset)   # (events.pxi)
        if op[OP_CODE] == M_SEND and op[OP_B] == offset:
            src = _send_yielded(self, t, fr, op, retval)
    if src & 3 == 0 and _yielded_row(self, t, fr, offset, retval, <int32_t>(src >> 2)):
        return True
    # _leave's tail with no hooks (a constant yielded, or growth).
    if src & 3 == 0:
        ref = <int32_t>(src >> 2)
    else:
        ref = _constant_row(self, fr, offset, -2 if src == S_UNKNOWN else -1, retval)
    row = t.add_row(K_RETURN, F_YIELD, fr.call_row, offset, 0, retval)
    t.add_ref(ref)
    _close_call(self, fr, retval, 0)
    return True


cdef inline int64_t _send_yielded(Recorder self, Trace t, FrameRec *fr, int32_t *op,
                                  PyObject *value) except? -1:
    """_finish_send(fr, op, value) for a SEND whose receiver's frame ran under
    its open row (no hooks, one output): the row completed with the value the
    receiver yielded, which this frame passes on; the shadow of the result."""
    cdef int32_t *r = fr.plan.recs + op[OP_A]
    cdef int32_t row = fr.open_row
    cdef int64_t s
    cdef PyObject *old
    cdef PyObject *stored
    cdef bint policy_after = False
    if row < 0 or r[REC_NOUT] != 1:
        return _finish_send(self, fr, op, value)
    fr.open_row = -1
    if t.kind_[row] == K_NESTED and t.flags_[row] & F_OPEN:
        t.aux_[row] = t.n
    t.flags_[row] &= ~F_OPEN
    # set_value, the old value released last (what the policy keeps, when
    # decided in line: arena.pxi's _policy_stored).
    old = t.value_[row]
    stored = _policy_stored(t.value_policy, value, &policy_after)
    Py_XINCREF(stored)
    t.value_[row] = stored
    if policy_after:
        _policy_rows(t, row, row + 1)
    Py_XDECREF(old)
    s = (<int64_t>row) << 2
    _stack(self, fr)[r[REC_INPUTS + r[REC_NIN]]] = s
    return s


cdef inline bint _yielded_row(Recorder self, Trace t, FrameRec *fr, int32_t offset,
                              PyObject *retval, int32_t ref) except -1:
    """_return_plain(fr, offset, retval, F_YIELD, ref) for _yield_plain, whose
    caller checked hooks, substitution and timing: the ReturnNode
    of the value yielded (its one ref `ref`), the frame's node closed, its record
    popped; False (nothing written) when the columns must grow.  (Its own copy:
    a second caller of _return_plain kept the compiler from inlining it into
    _leave, every return's path.)"""
    cdef int32_t row = t.n, nrefs = t.nrefs, call_row = fr.call_row
    cdef PyObject *old
    cdef PyObject *stored
    cdef bint policy_after = False
    if row + 2 >= t.cap or nrefs >= t.refcap:
        return False
    # What the policy keeps, stored in both rows at once when decided in line
    # (as events.pxi's _return_plain); else the value, replaced once all is
    # consistent (below).
    stored = _policy_stored(t.value_policy, retval, &policy_after)
    t.kind_[row] = K_RETURN
    t.flags_[row] = F_YIELD
    t.parent_[row] = call_row
    t.offset_[row] = offset
    t.aux_[row] = 0
    Py_XINCREF(stored)
    t.value_[row] = stored
    t.refs_[nrefs] = ref
    t.ref_start_[row + 1] = nrefs + 1
    t.n = row + 1
    t.nrefs = nrefs + 1
    old = t.value_[call_row]
    Py_XINCREF(stored)
    t.value_[call_row] = stored
    t.flags_[call_row] &= ~F_OPEN
    t.aux_[call_row] = row + 1
    self.shadow_top = fr.shadow   # (frames are popped in the order pushed)
    self.nframes -= 1
    if policy_after:
        # (what the policy keeps, for the ReturnNode, then the call row: as
        # events.pxi's _return_plain)
        _policy_rows(t, row, row + 1)
        _policy_rows(t, call_row, call_row + 1)
    # Released last: a destructor it runs sees the trace and the frames consistent.
    Py_XDECREF(old)
    if t.flags_[call_row] & F_FRAME and self.nframes > 0:
        # A frame entered from C is a node of its own, complete now (_close_call):
        # the hook of the frame below, whose context may differ.
        _run_node_hook(self, &self.frames[self.nframes - 1], call_row)
    return True


# -- a delegating frame's yield, written at its receiver's ------------------------
#
# `yield from chunks` / `await x` suspend a chain of frames at once: the innermost
# frame C yields v (PY_YIELD), its SEND-ing frame B goes on at the YIELD_VALUE
# right after its SEND and yields the same v (PY_YIELD again), and so on up the
# chain: one event per frame for a value the first event already handed over.
# When C is a generator or coroutine the recorder follows, B's yield is certain
# the moment C's is handled (no Python code runs between C's YIELD_VALUE and B's,
# which pushes what C yielded), so C's PY_YIELD writes B's yield as B's own event
# would (_yield_delegators), and B's location is switched off (DISABLE).
#
# DISABLE is per location and restart_events() switches every location back on;
# a location's event is the same for every delegation that passes it, and one
# whose receiver is C code (a list iterator, an asyncio future) has no inner
# yield to stand for B's.  So a delegation yield (Y_CAN: its SEND is reached
# only from an INSTRUCTION event at the instruction before it, SEND_CHECK, or
# from the RESUME after it, RESUME_CHECK, through LOAD_CONST and silent jumps
# alone) is switched off only while one recorder runs, under a plain plan, with
# no hooks or timing (Y_OFF; a value policy is applied there as at its own
# event); from then on, a delegation that starts (SEND_CHECK) or goes on
# (RESUME_CHECK) with any other receiver switches
# every location back on (restart_events, before its SEND runs: the frame is
# executing, so CPython re-instruments its code at once) and keeps that yield on
# for good (Y_ON).  An event that fires anyway for a yield already written
# (after another tool's restart) finds its frame's record gone: _top_for sees a
# frame it does not follow, and the location goes off again.
#
# The bits live in the plan's per-unit end_skip table (aftercall.pxi), made with
# them when first needed.
cdef enum:
    Y_CAN = 8           # a delegation's YIELD_VALUE whose every way in is checked
    Y_OFF = 16          # its PY_YIELD may be off (a callback answered DISABLE)
    Y_ON = 32           # its PY_YIELD stays on for good
    SEND_CHECK = 64     # an INSTRUCTION event whose segment runs into such a SEND
    RESUME_CHECK = 128  # the RESUME after such a YIELD_VALUE

cdef bint YIELDS_OFF = False   # any Y_OFF set in this process (gates the resume check)
cdef bint RESUME_CHECKED = False   # _resume_plain made the resume check (_py_resume)
# The codes of generators found followed (_gen_followed), by address, with the
# session that found them (strong references: an address cannot be another
# code's while kept): a delegation's receiver is checked at each resume of its
# delegator, and a chain's levels run a few codes.  Two ways per set (a code
# found is kept in the first, the one it displaces moves to the second): code
# objects are allocated close together, and two codes of one chain that shared
# a slot missed at every item (bench's yieldfrom: 2 of its 5 checks per item).
cdef PyObject *FOLLOWED_RECEIVER_CODES[16]
cdef int64_t FOLLOWED_RECEIVER_SESSIONS[16]


cdef inline size_t _receiver_slot(PyObject *code) noexcept:
    # The set's first way (the second is slot ^ 1).
    cdef size_t a = <size_t>code
    return ((a >> 5) ^ (a >> 9)) & 14


cdef void _delegation_bits(CPlan *plan, uint16_t *skip) noexcept:
    """Mark the plan's delegation yields that may be switched off (Y_CAN) with
    their checks (SEND_CHECK, RESUME_CHECK), the others Y_ON."""
    cdef int32_t u, pc, start, y, which, c, recv
    cdef int32_t *op
    cdef bint clean, ok
    for which in range(2):
        for u in range(plan.nunits):
            start = plan.seg_at[u] if which == 0 else plan.seg_from[u]
            if start < 0:
                continue
            pc = start
            clean = True
            while True:   # the segment's terminal op, as _send_returned finds it
                op = plan.ops + pc * OP_WORDS
                c = op[OP_CODE]
                if c == M_END or (c >= M_RECORD and c != M_SILENT_JUMP):
                    break
                if c != M_LOAD_CONST and c != M_SILENT_JUMP:
                    clean = False
                pc += 1
            if c != M_SEND:
                continue
            y = op[OP_B] >> 1
            if not 0 <= y < plan.nunits - 1:
                continue
            # The receiver is the SEND's first input, at the same stack slot at
            # the check, the YIELD_VALUE and the RESUME after it.
            recv = plan.recs[op[OP_A] + REC_INPUTS]
            ok = clean and plan.recs[op[OP_A] + REC_NIN] == 2 and recv >= 0 \
                and plan.depth[y] == recv + 2 and plan.depth[y + 1] == recv + 2
            if which == 0:
                ok = ok and plan.depth[u] == recv + 1
                if ok:
                    skip[u] |= SEND_CHECK | END_ON   # (never switched off: aftercall.pxi)
            else:
                ok = ok and u == y + 1
                if ok:
                    skip[u] |= RESUME_CHECK
            if ok:
                skip[y] |= Y_CAN
            else:
                skip[y] |= Y_ON


cdef inline uint16_t *_skip_table(CPlan *plan) noexcept:
    return plan.end_skip if plan.end_skip != NULL else _end_skip_of(plan)


cdef inline bint _receiver_followed(Recorder self, PyObject *v) except -1:
    """Whether a delegation's receiver is certain to yield through a PY_YIELD the
    recorder handles: a generator or coroutine (exact type) it follows
    (_gen_followed).  Asked at each resume of a delegator whose yield may be
    off: a code found followed this session is answered inline, its code read
    from the generator's frame (no call, no reference)."""
    cdef PyObject *code
    cdef size_t slot
    if v == NULL or (Py_TYPE(v) != &PyGen_Type and Py_TYPE(v) != &PyCoro_Type):
        return False
    code = tracer_gen_code_of(v)
    slot = _receiver_slot(code)
    if code == FOLLOWED_RECEIVER_CODES[slot] and FOLLOWED_RECEIVER_SESSIONS[slot] == self.session:
        return True
    slot += 1
    if code == FOLLOWED_RECEIVER_CODES[slot] and FOLLOWED_RECEIVER_SESSIONS[slot] == self.session:
        return True
    return _gen_followed(self, v)


cdef bint _gen_followed(Recorder self, PyObject *v) except -1:
    """Whether `v`, an exact generator or coroutine, runs code this recorder
    follows (not tracer's own, not track) and whose PY_RESUME and PY_YIELD it
    is certain to get: code it gave its local events (a plan of this session,
    instrumented when interned), or a frame not started yet (its first run
    fires PY_START, a global event, and _enter gives the code its events).  A
    generator started before the recorder saw its code runs with no events."""
    cdef PyObject *code
    cdef PyObject *old
    cdef CPlan *plan
    cdef size_t slot
    cdef bint planned, ok
    code = _gen_code(v)   # (a new reference)
    if code == NULL:
        return False
    slot = _receiver_slot(code)
    try:
        plan = _cached_plan(self, <object>code)
        planned = plan != NULL and plan.session == self.session and plan.code_id >= 0
        ok = (planned or tracer_gen_unstarted(v)) and code != <PyObject *>TRACK_CODE \
            and not _own_code_planned(self, <object>code, plan)
    except BaseException:
        Py_DECREF(<object>code)
        raise
    if not (ok and planned):
        Py_DECREF(<object>code)
        return ok
    # The first way gets it; what was there moves to the second, whose entry
    # is dropped.  A code already in the set (of an earlier session) keeps the
    # reference it holds there: ours is the one released.
    if FOLLOWED_RECEIVER_CODES[slot] == code:
        old = code
    elif FOLLOWED_RECEIVER_CODES[slot + 1] == code:
        old = code
        FOLLOWED_RECEIVER_CODES[slot + 1] = FOLLOWED_RECEIVER_CODES[slot]
        FOLLOWED_RECEIVER_SESSIONS[slot + 1] = FOLLOWED_RECEIVER_SESSIONS[slot]
    else:
        old = FOLLOWED_RECEIVER_CODES[slot + 1]
        FOLLOWED_RECEIVER_CODES[slot + 1] = FOLLOWED_RECEIVER_CODES[slot]
        FOLLOWED_RECEIVER_SESSIONS[slot + 1] = FOLLOWED_RECEIVER_SESSIONS[slot]
    FOLLOWED_RECEIVER_CODES[slot] = code
    FOLLOWED_RECEIVER_SESSIONS[slot] = self.session
    Py_XDECREF(old)
    return True


cdef inline bint _may_switch_off(Recorder self, FrameRec *fr) noexcept:
    # One recorder in the process, a plain plan, nothing but the plain paths (a
    # value policy among them: _yield_plain applies it, at the receiver's yield
    # as at the frame's own).
    return self.plan_mode == PLAN_PLAIN and ALLOW_DISABLE and LIVE_RECORDERS == 1 \
        and not fr.hooks and fr.subst_pc < 0 \
        and self.trace.timing == NULL and not self.broken


cdef int _keep_yield_on(uint16_t *skip, int32_t y) except -1:
    """The delegation yield at unit y fires from now on, for good (a receiver
    whose yields the recorder does not handle passes there)."""
    skip[y] |= Y_ON
    _RESTART_EVENTS()
    return 0


cdef int _yield_back_on(uint16_t *skip, int32_t y) except -1:
    """The delegation yield at unit y fires again (a frame with hooks, or a
    recorder with timing, writes it at its own event); a plain run may switch
    it off again."""
    skip[y] &= ~Y_OFF
    _RESTART_EVENTS()
    return 0


cdef int _check_send(Recorder self, FrameRec *fr, int32_t offset) except -1:
    """The INSTRUCTION event at `offset` (SEND_CHECK) starts a segment that runs
    into a delegation's SEND: if its yield may be off, the receiver (on the
    stack now) must be one whose yields the recorder handles."""
    cdef uint16_t *skip = fr.plan.end_skip
    cdef int32_t pc = fr.plan.seg_at[offset >> 1]
    cdef int32_t *op = fr.plan.ops + pc * OP_WORDS
    cdef int32_t y
    while op[OP_CODE] != M_SEND:
        op += OP_WORDS
    y = op[OP_B] >> 1
    if skip[y] & (Y_OFF | Y_ON) != Y_OFF:
        return 0
    if fr.hooks:
        _yield_back_on(skip, y)
    elif not _receiver_followed(
            self, tracer_frame_stack_item(fr.frame, fr.plan.recs[op[OP_A] + REC_INPUTS])):
        _keep_yield_on(skip, y)
    return 0


cdef int _check_resume(Recorder self, object code, int32_t offset) except -1:
    """A PY_RESUME at `offset`: if it is a delegation's RESUME whose yield may be
    off, the receiver it goes on sending to must be one whose yields the
    recorder handles (a delegation started before the recorder saw it).
    (_resume_plain makes the check itself, with the plan it looked up.)"""
    return _check_resume_plan(self, _cached_plan(self, code), offset)


cdef inline int _check_resume_plan(Recorder self, CPlan *plan, int32_t offset) except -1:
    cdef uint16_t *skip
    cdef int32_t u = offset >> 1
    if plan == NULL or plan.end_skip == NULL or not 0 <= u < plan.nunits:
        return 0
    skip = plan.end_skip
    if not skip[u] & RESUME_CHECK or skip[u - 1] & (Y_OFF | Y_ON) != Y_OFF:
        return 0
    return _check_receiver(self, plan, skip, u)


cdef int _check_receiver(Recorder self, CPlan *plan, uint16_t *skip, int32_t u) except -1:
    # (the resumed frame is the thread's current one)
    if self.nframes == 0 or self.frames[self.nframes - 1].hooks:
        _yield_back_on(skip, u - 1)
    elif not _receiver_followed(self, tracer_frame_stack_item(tracer_thread_frame(self.tstate),
                                                              plan.depth[u] - 2)):
        _keep_yield_on(skip, u - 1)
    return 0


cdef int _yield_switch(Recorder self, FrameRec *fr, int32_t offset) except -1:
    """Before a followed frame's own PY_YIELD at `offset` is handled: EV_DISABLE
    if it is a delegation's yield that may be switched off from now on (its
    receiver's yields will stand for it), else EV_CONTINUE."""
    global YIELDS_OFF
    cdef uint16_t *skip
    cdef int32_t u = offset >> 1
    if not _may_switch_off(self, fr) or not 0 <= u < fr.plan.nunits:
        return EV_CONTINUE
    skip = _skip_table(fr.plan)
    if skip == NULL or skip[u] & (Y_CAN | Y_ON) != Y_CAN:
        return EV_CONTINUE
    if not _receiver_followed(self, tracer_frame_stack_item(fr.frame, fr.plan.depth[u] - 2)):
        return EV_CONTINUE
    skip[u] |= Y_OFF
    YIELDS_OFF = True
    return EV_DISABLE


cdef int _yield_unfollowed(Recorder self, object code, int32_t offset) except -1:
    """A PY_YIELD of a frame the recorder does not follow: EV_DISABLE again for
    a delegation yield already written at its receiver's (it fires after a
    restart), else EV_CONTINUE."""
    cdef CPlan *plan
    cdef int32_t u = offset >> 1
    if not YIELDS_OFF or not ALLOW_DISABLE or LIVE_RECORDERS != 1 or self.nframes == 0 \
            or not tracer_on_thread(self.tstate_cell, self.tstate):
        return EV_CONTINUE
    plan = _cached_plan(self, code)
    if plan == NULL or plan.end_skip == NULL or not 0 <= u < plan.nunits \
            or plan.end_skip[u] & (Y_OFF | Y_ON) != Y_OFF:
        return EV_CONTINUE
    return EV_DISABLE


cdef int _yield_delegators(Recorder self, void *frame, PyObject *retval) except -1:
    """A followed frame `frame` has yielded `retval` (its record is popped): each
    frame below it on the frame stack that delegated to it (SEND) and whose
    yield may be off yields the same value now, written here as its own event
    would write it."""
    cdef FrameRec *fr
    cdef int32_t *op
    cdef uint16_t *skip
    cdef int32_t y
    while self.nframes > 1 and not self.broken:
        fr = &self.frames[self.nframes - 1]
        if fr.pending < 0 or fr.after_call or fr.plan == NULL or fr.plan.end_skip == NULL:
            return 0
        skip = fr.plan.end_skip
        op = fr.plan.ops + fr.pc * OP_WORDS
        while op[OP_CODE] == M_LOAD_CONST or op[OP_CODE] == M_SILENT_JUMP:
            op += OP_WORDS
        if op[OP_CODE] != M_SEND:
            return 0   # (a for loop, a call of C code: its own next event)
        y = op[OP_B]
        if skip[y >> 1] & (Y_OFF | Y_ON) != Y_OFF:
            return 0
        if tracer_frame_previous(frame) != fr.frame and tracer_frame_caller(frame) != fr.frame:
            return 0   # (not the frame that sent to this one)
        if not _yield_plain(self, fr, y, retval):
            # (hooks or timing since the location went off: its own event
            # writes it)
            _yield_back_on(skip, y >> 1)
            return 0
        frame = fr.frame
    return 0
