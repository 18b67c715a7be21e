# The sys.monitoring event handlers: frames entered, resumed and left,
# instructions, branches, jumps, raises.

from types import FunctionType


cdef int _py_start(Recorder self, object code, int offset) except -1:
    return _frame_entered(self, code, offset, STARTED)


cdef int _py_resume(Recorder self, object code, int offset) except -1:
    # (resume.pxi: a delegation's yield may be off; the check is made before the
    # frame runs on, by _resume_plain or here)
    global RESUME_CHECKED
    RESUME_CHECKED = False
    _frame_entered(self, code, offset, RESUMED)
    if YIELDS_OFF and not RESUME_CHECKED:
        _check_resume(self, code, offset)
    return EV_CONTINUE


cdef int _py_throw(Recorder self, object code, int offset, object exception) except -1:
    # A generator resumed by throw() (or close()): the exception is raised at
    # the yield it is suspended in; a RAISE event follows at once.
    return _frame_entered(self, code, offset, THROWN)


# Frame starts followed that _enter_plain left to _enter (in every thread, every
# recorder), for the tests: which calls the plain entry takes.  Counted in
# _enter, off the inlined entry (a count there moved gcc's code: fib +9).
cdef Py_ssize_t GENERAL_STARTS = 0


def _general_starts():
    """How many followed frame starts the plain entry left to the general one
    so far (all recorders, all threads; for the tests)."""
    return GENERAL_STARTS


cdef inline int _frame_entered(Recorder self, object code, int offset, int how) except -1:
    # A frame starts or goes on; it is followed if the frame calling it is the one
    # the recorder follows now (this thread, the top of its frame stack).
    cdef void *frame
    cdef FrameRec *parent
    if self.nframes == 0 or not tracer_on_thread(self.tstate_cell, self.tstate):
        return EV_CONTINUE
    frame = tracer_thread_frame(self.tstate)
    parent = &self.frames[self.nframes - 1]
    # A Python function called from Python code has its caller right below it
    # (inline test); tracer_frame_caller skips C entry frames and shims first.
    if tracer_frame_previous(frame) != parent.frame and \
            tracer_frame_caller(frame) != parent.frame and not (
            how == THROWN and tracer_frame_thrown_from(frame, parent.frame)):
        return EV_CONTINUE
    if parent.after_call and \
            _executing(self, parent) != parent.plan.ops[(parent.pc - 1) * OP_WORDS + OP_OFFSET]:
        _past_call(self, parent)   # (not while the caller still executes the CALL)
    if how == STARTED and _enter_plain(self, self.trace, parent, frame, code, offset):
        return EV_CONTINUE
    if how == RESUMED and _resume_plain(self, self.trace, parent, frame, code, offset):
        return EV_CONTINUE   # (resume.pxi)
    _enter(self, parent, frame, code, offset, how)
    return EV_CONTINUE


cdef bint _enter_plain(Recorder self, Trace t, FrameRec *parent, void *frame, object code,
                       int offset) except -1:
    """The common frame entry in one routine: a Python function called by the
    call op the caller's pending segment is at, under a context with no hooks
    (or only primitives and filters that leave this callee alone:
    _plain_entry_ok), its plan this session's, no growth; False (nothing
    written) for anything else, which _enter handles.  Under a value policy
    the rows are written with the objects, as without one, and what the policy
    keeps replaces them once the frame is entered (_policy_rows).

    What _enter, _open, _push, _argument_rows and add_frame do for that case,
    with the columns and counts in locals (`t` is borrowed, so no reference
    is taken): the call row with its inputs, the argument rows, the frame
    record and its shadow, the frame's entry in the frames column.
    """
    cdef CPlan *pp = parent.plan
    cdef CPlan *plan
    cdef int32_t *ins
    cdef int32_t lasti, here, nin, nparams, i, x, ref, row, n, nrefs, first, pc, call_row
    cdef int32_t nframes, code_id
    cdef int64_t *ss
    cdef int64_t *slots
    cdef int64_t s, need, w
    cdef int32_t *refs
    cdef PyObject *func
    cdef PyObject *callee
    cdef PyObject *v
    cdef PyObject *ctx
    cdef PyObject *kept
    cdef FrameRec *fr
    cdef uint32_t hooks
    cdef uint8_t *kinds
    cdef uint8_t *flags
    cdef int32_t *parents
    cdef int32_t *offsets
    cdef int32_t *auxes
    cdef int32_t *ref_starts
    cdef PyObject **values
    if pp == NULL or parent.open_row >= 0 or parent.pending < 0 \
            or parent.subst_pc >= 0 or not _plain_entry_ok(self, parent, frame, code):   # (filters.pxi)
        return False
    # What the caller's record is read for, in locals before any store: the
    # column and frame-record stores below are int32 and pointer stores the
    # compiler must assume alias parent's fields.
    pc = parent.pc
    hooks = parent.hooks
    ctx = parent.ctx
    call_row = parent.call_row
    # The instruction the caller executes is the call its pending op records
    # (the event before the CALL read its inputs: nothing to replay first):
    # the op's offset, the code units of its instruction, its inputs in one
    # word (plans.pxi's _call_entries).  The caller's lasti, in any unit of
    # that instruction (one unsigned compare; -1 is out of range too).
    w = pp.call_in[pc]
    if w < 0:
        # Ops of the caller's segment before the call still to run (no event
        # at the call: its inputs were read at a branch before it).
        if not _run_to_call(self, parent):
            return False
        pc = parent.pc
        w = pp.call_in[pc]
    lasti = tracer_frame_lasti(parent.frame)
    here = <int32_t>(w >> 40)
    if <uint32_t>((lasti >> 1) - (here >> 1)) >= <uint32_t>((w >> 32) & CALL_UNITS):
        return False
    plan = _entry_plan(code, self.plan_mode)   # (plans.pxi)
    if plan == NULL or (plan.plain_session != self.session and not _plain_plan(self, t, plan, code)):
        return False
    nin = <int32_t>w & CALL_NIN
    ins = pp.recs + (<int32_t>w >> 8)
    nparams = plan.nparams
    need = plan.nlocalsplus + plan.stacksize
    code_id = plan.code_id
    n = t.n
    nrefs = t.nrefs
    nframes = t.nframes
    if n + nparams + 3 >= t.zcap:
        # Rows past zcap are not known to have aux and flags 0 (arena.pxi),
        # which the rows below leave unstored: zeroed ahead, in the room there.
        if n + nparams + 3 >= t.cap or t.external:
            return False
        t._zero_ahead(n + nparams + 3)
    if nrefs + nin > t.refcap or nframes == t.framecap \
            or self.nframes == self.framecap or self.shadow_top + need > self.shadow_cap:
        return False
    # The call row's inputs, written past the refs in use: committed only once
    # the callee is known to be this frame's function.  A row's shadow (tag 0)
    # and a pool entry's (tag 2) decode without a branch apart.
    ss = _stack(self, parent)
    refs = t.refs_
    first = nrefs
    for i in range(nin):
        s = ss[ins[i]]   # (every input a stack slot: _call_entries)
        if s & 1 == 0:
            ref = (<int32_t>(s >> 2)) ^ -(<int32_t>((s >> 1) & 1))
        elif s == S_NULL:
            continue
        elif s & 3 == 1:
            if pp.session != self.session:
                return False
            ref = pp.const_refs[s >> 2]
            if ref == 0:
                return False   # a constant's first use in this trace: pooled by _open
        else:
            ref = -1   # unknown (pool[0])
        refs[nrefs] = ref
        nrefs += 1
    if nrefs == first:
        return False
    ref = refs[first]
    callee = t.value_[ref] if ref >= 0 else PyList_GET_ITEM(t.pool, -ref - 1)
    func = tracer_frame_function(frame)
    if func == NULL or callee != func:
        return False   # a frame entered from C under the call (a nested node of its own)
    # The call row (open until the frame returns), then the function's and the
    # parameters' argument rows, through local column pointers (stores through
    # t.kind_ and the like could alias t's own fields and force reloads): the
    # call row and the function's written out, one loop over the parameters
    # (fixed-count loops over six columns cost more in set-up than in stores).
    # Their aux and flags are 0 already (below zcap) but for the call row's
    # F_OPEN and the parameters' positions.
    kinds = t.kind_
    flags = t.flags_
    parents = t.parent_
    offsets = t.offset_
    auxes = t.aux_
    ref_starts = t.ref_start_
    values = t.value_
    row = n
    kinds[row] = K_NESTED
    flags[row] = F_OPEN
    parents[row] = call_row
    offsets[row] = here
    values[row] = NULL
    ref_starts[row + 1] = nrefs
    kinds[row + 1] = K_ARGUMENT
    parents[row + 1] = row
    offsets[row + 1] = -1
    ref_starts[row + 2] = nrefs
    Py_INCREF(<object>func)
    values[row + 1] = func
    # The frame record and its shadow (_frame_init); parameters are their rows.
    # The caller's context (_plain_entry_ok); its return plain but for the hooks
    # (no timing: _plain_plan).
    fr = _frame_init(self, frame, <PyObject *>code, plan, code_id, row, ctx,
                     hooks, need, _plain_return_ok(hooks))
    if hooks & (H_FILTERED | H_SUBST_BY):
        fr.filters = parent.filters
    else:
        # What this body's return does to the call op (_return_plain).
        fr.ret_to = pp.ret_to[pc] if not hooks else -1
        fr.ret_pc = pc
    fr.body = 1   # callee is func
    slots = self.shadow + fr.shadow
    # The first parameter written out, the rest in a loop: the loop's set-up
    # (a pointer per column) cost more than its one pass for a one-parameter
    # function.
    if nparams:
        x = row + 2
        kinds[x] = K_ARGUMENT
        parents[x] = row
        offsets[x] = -1
        auxes[x] = 1
        ref_starts[x + 1] = nrefs
        v = tracer_frame_local(frame, 0)
        Py_XINCREF(v)
        values[x] = v
        slots[0] = (<int64_t>x) << 2
        for i in range(1, nparams):
            x = row + 2 + i
            kinds[x] = K_ARGUMENT
            parents[x] = row
            offsets[x] = -1
            auxes[x] = i + 1
            ref_starts[x + 1] = nrefs
            v = tracer_frame_local(frame, i)
            Py_XINCREF(v)
            values[x] = v
            slots[i] = (<int64_t>x) << 2
    t.n = row + nparams + 2
    t.nrefs = nrefs
    parent.open_row = row
    parent.body_may_be_callee = 1
    parent.callee_body_entered = 1
    parent.open_primitive = 0
    # add_frame's common case (room checked above).  The column stays sorted:
    # `row` is past every row recorded, so past every entry's.
    t.frames_[nframes] = ((<int64_t>row) << 32) | (<uint32_t>code_id)
    t.nframes = nframes + 1
    self.events += 1
    _start_segment(self, fr, plan.seg_from[offset >> 1])
    if t.value_policy:
        # (the argument rows' values as _enter's add_row keeps them: applied
        # last, when the trace and the frames are consistent, since a policy
        # may allocate and so run the collector and finalizers)
        # (the function's row: kept by every policy; the parameters' plain
        # values decided in line, _policy_rows from the first other one on:
        # arena.pxi's _policy_rows_in_line written out, since through it gcc
        # called _policy_plain out of line here, +0.4 % instructions on json
        # under "weak")
        values = t.value_
        for i in range(row + 2, row + nparams + 2):
            v = values[i]
            if v == NULL:
                continue
            kept = _policy_plain(t.value_policy, v)
            if kept == NULL:
                _policy_rows(t, i, row + nparams + 2)
                break
            if kept != v:
                Py_INCREF(<object>kept)
                values[i] = kept
                Py_DECREF(<object>v)
    return True


cdef bint _run_to_call(Recorder self, FrameRec *parent) except -1:
    """For _enter_plain, a call whose op is further on in the caller's pending
    segment (the event before it was a branch or a silent one's, e.g. at a
    conditional expression among the arguments: no INSTRUCTION at the call):
    what _enter does first, the ops before the executing instruction run
    (_run), so the pending op is the call's and the plain entry goes on from
    it.  Whether it is one the plain entry takes (pc at a call_in op, nothing
    opened); the state is the one _enter reaches either way (its _catch_up a
    no-op, its _run with nothing left to run).  A segment ending in a silent
    branch, or a boolean call's end pending (what _catch_up acts on), is left
    to _enter untouched."""
    cdef int32_t here
    if parent.bool_end or parent.plan.branch_sides_at[parent.pc] >= 0:
        return False
    here = _executing(self, parent)
    if parent.plan.ops[parent.pc * OP_WORDS + OP_OFFSET] != here:
        _run(self, parent, here, True)
    return parent.pending >= 0 and parent.open_row < 0 and parent.subst_pc < 0 \
        and parent.plan.call_in[parent.pc] >= 0


cdef bint _plain_plan(Recorder self, Trace t, CPlan *plan, object code) noexcept:
    """Whether _enter_plain may enter `plan`'s frames in this session: the plan
    is this session's with a code id, its code followed as the program's own
    (not tracer's, not `track` itself), no cell parameters, and the trace has no
    timing (fixed while it records; a value policy is applied by _enter_plain
    itself).  Found once per plan and session (plan.plain_session; _own_refs
    clears it), not at every call."""
    if plan.session != self.session or plan.code_id < 0 or plan.own != 2 \
            or plan.ncellparams or code is TRACK_CODE or t.timing != NULL:
        return False
    plan.plain_session = self.session
    return True


cdef int _enter(Recorder self, FrameRec *parent, void *frame, object code, int offset,
                int how) except -1:
    cdef CPlan *plan
    cdef int32_t call_row, i, code_id, rec
    cdef int32_t here = -1
    cdef bint resumed = how != STARTED
    cdef int32_t *op
    cdef FrameRec *fr
    cdef PyObject *func
    cdef PyObject *v
    # Borrowed: Recorder.contexts keeps every context alive (no refcount pair per call).
    cdef PyObject *ctx = parent.ctx
    cdef object new_ctx
    cdef uint32_t hooks
    cdef int32_t row
    cdef bint under_op
    cdef bint body = False
    global GENERAL_STARTS
    if not resumed:
        GENERAL_STARTS += 1   # (_general_starts)
    self.events += 1
    # Which node the new activation records into: the op of the instruction the
    # caller is executing, if that instruction is a recorded one.
    if parent.plan != NULL:
        here = _executing(self, parent)
    if parent.plan != NULL and parent.pending >= 0:
        _catch_up(self, parent, here, CATCH_INSIDE)
        op = parent.plan.ops + parent.pc * OP_WORDS
        if op[OP_OFFSET] != here:
            # Ops before `here` have run, an op opened earlier among them.  (At
            # `here` already, the common case of a call whose inputs the event
            # before it read, there is nothing to run: _run would stop at once.)
            _run(self, parent, here, True)
            op = parent.plan.ops + parent.pc * OP_WORDS
        if parent.open_row < 0 and here >= 0 and op[OP_OFFSET] == here and _is_record(op[OP_CODE]):
            rec = op[OP_A]
            parent.open_row = _open(self, parent, rec, K_NESTED)
            parent.body_may_be_callee = parent.plan.recs[rec + REC_SEM] in (R_CALL, R_CALL_EX)
            parent.callee_body_entered = 0
            parent.open_primitive = 0
            if parent.hooks & (H_CANRECUR | H_PRIMITIVES) and \
                    not _may_recur_cached(self, parent, frame, code):
                parent.open_primitive = 1
                self.trace.kind_[parent.open_row] = K_PRIMITIVE
    if parent.plan == NULL and (not (self.trace.flags_[parent.call_row] & F_OPEN)
                                or not _root_program_frame(self, parent, frame)):
        # The traced call has returned (a finalizer run as its frame is torn down,
        # an object it dropped under a value policy, is not part of it), or the
        # frame is not the traced call's own (see _root_program_frame).
        return 0
    # The plan first: it caches the code's own-verdict (one co_extra read a call).
    plan = _cached_plan(self, code)
    if code is TRACK_CODE or (parent.plan != NULL and _own_code_planned(self, code, plan)):
        # A `track` inside the traced call records its own trace, and tracer's
        # own code (a library printing, querying or taping inside the traced
        # call) is not the program's: for this trace a primitive call, nothing
        # inside it followed; entered from C after other frames of the call ran,
        # it leaves no trace at all.  (The root's own callee is recorded: the
        # caller asked for it.)
        if parent.open_row >= 0 and (code is TRACK_CODE or self.trace.n == parent.open_row + 1):
            parent.open_primitive = 1
            self.trace.kind_[parent.open_row] = K_PRIMITIVE
        return 0
    if (parent.open_row >= 0 and parent.open_primitive) or self.broken:
        return 0
    if plan != NULL and plan.session == self.session and plan.code_id >= 0:
        # A plan this session already uses is the common case: no Python runs for it.
        code_id = plan.code_id
    else:
        # Analysing and instrumenting a new code object runs Python code (see
        # _user_code_starts for why the collector waits).
        _user_code_starts(self)
        try:
            plan = _plan_for(code, self.plan_mode)
            code_id = plan.code_id
            if plan.session != self.session or code_id < 0:
                # Read before on_code: it runs Python code, during which another
                # thread tracking the same code may take the plan over.
                code_id = plan.code_id = self.trace.intern_code(code)
                _own_refs(self, plan)
                if id(code) not in self.instrumented:
                    self.instrumented[id(code)] = code
                    self.on_code(code, bool((<object>plan.owner).jump_events))
        finally:
            _user_code_ran(self)
    func = tracer_frame_function(frame)
    if parent.open_row >= 0 and parent.body_may_be_callee and not parent.callee_body_entered \
            and not resumed and self.trace.n == parent.open_row + 1 \
            and ((func != NULL and _callee_ptr(self.trace, parent.open_row) == func) or
                 _is_callee(self, parent.open_row, func)):
        call_row = parent.open_row
        body = func != NULL and _callee_ptr(self.trace, parent.open_row) == func
    else:
        # A frame entered from C (a key function, a dunder method, a generator
        # resumed by SEND), or any frame after the first: a nested call node of
        # its own, at the instruction that entered it.
        # Under the caller's open instruction while it runs; once that call has
        # returned (a finalizer run as its frame is torn down, after its return),
        # beside it, under the caller's own call.
        under_op = parent.open_row >= 0 and (self.trace.flags_[parent.open_row] & F_OPEN) != 0
        call_row = self.trace.add_row(K_NESTED, F_OPEN | F_FRAME,
                             parent.open_row if under_op else parent.call_row,
                             self.trace.offset_[parent.open_row]
                             if parent.open_row >= 0 else here, 0, NULL)
        self.trace.add_ref(_pool_ref(self, func) if func != NULL else -1)
    parent.callee_body_entered = 1
    hooks = parent.hooks
    if hooks & H_ENTER:
        new_ctx = _enter_context(self, <object>ctx, parent, call_row, frame, code)
        if self.broken:
            return 0
        if <PyObject *>new_ctx != ctx:
            ctx = <PyObject *>new_ctx
            hooks = _mask_of(self, new_ctx)
    fr = _push(self, frame, plan, code_id, call_row, ctx, hooks)
    fr.code = <PyObject *>code
    fr.body = body
    if body and not parent.hooks and parent.plan != NULL and parent.pc >= 0:
        fr.ret_to = parent.plan.ret_to[parent.pc]   # (_return_plain)
        fr.ret_pc = parent.pc
    if hooks & (H_FILTERED | H_SUBST_BY):
        fr.filters = parent.filters if ctx == parent.ctx else _filters_of(<object>ctx)
    self.trace.add_frame(call_row, code_id)
    if not resumed and plan.ncellparams == 0 and not (hooks & (H_NODE_ALL | H_SNAP_ANY)) \
            and _argument_rows(self, fr, plan.nparams, call_row, func):
        _start_segment(self, fr, plan.seg_from[offset >> 1])
    elif not resumed:
        _run_node_hook(self, fr, self.trace.add_row(K_ARGUMENT, 0, call_row, -1, 0, func))
        for i in range(plan.nparams):
            v = tracer_frame_local(frame, i)
            if v != NULL and _is_cell_param(self, plan, i) and PyCell_Check(v):
                v = PyCell_GET(v)
            if hooks & H_SNAP_ANY:
                v = _kept(self, fr, v)
            row = self.trace.add_row(K_ARGUMENT, 0, call_row, -1, i + 1, v)
            _locals(self, fr)[i] = (<int64_t>row) << 2
            _run_node_hook(self, fr, row)
        _start_segment(self, fr, plan.seg_from[offset >> 1])
    elif how == RESUMED:
        _carry_stack(self, fr, offset, plan.carry[offset >> 1])
        _start_segment(self, fr, plan.seg_from[offset >> 1])
    else:
        # throw(): the RAISE event that follows finds the exception in flight.
        i = plan.depth[offset >> 1] - 1 if 0 <= offset < 2 * plan.nunits else 0
        _carry_stack(self, fr, offset, (1 << i) - 1 if 0 < i < 31 else 0)
        fr.pending = P_EXC
    return 0


cdef bint _may_recur_cached(Recorder self, FrameRec *parent, void *frame, object code) except -1:
    """_may_recur, its answer kept per code object and context when no canrecur
    asks: with no primitive callables it depends on the code's function's module
    alone, which _may_recur itself caches per code for one recording, but through
    Python attribute reads and dicts on every call (a model drawing from `random`
    paid ~3,000 instructions per draw); with them (tracer.ppl's contexts), the
    module's part is kept and the callables are a set lookup (_kept_verdict)."""
    cdef size_t h = (<size_t>(<PyObject *>code) >> 4) & (VERDICT_CACHE - 1)
    cdef bint recur
    cdef int keep
    if parent.hooks & H_CANRECUR:
        return _may_recur(self, parent, frame, code)
    if self.verdict_code[h] == <PyObject *>code and self.verdict_ctx[h] == parent.ctx:
        return _kept_verdict(self, parent, frame, code, self.verdict_recur[h])  # (contexts.pxi)
    recur = _may_recur(self, parent, frame, code)
    if self.broken or tracer_frame_function(frame) == NULL:
        return recur
    keep = _verdict_to_keep(self, parent, frame, code, recur)    # (contexts.pxi)
    if keep < 0:
        return recur
    Py_INCREF(code)
    Py_XDECREF(self.verdict_code[h])
    self.verdict_code[h] = <PyObject *>code
    self.verdict_ctx[h] = parent.ctx
    self.verdict_recur[h] = <uint8_t>keep
    return recur


cdef inline bint _own_code_planned(Recorder self, object code, CPlan *plan) except -1:
    # _own_code with the verdict kept on the code's plan when it has one (the
    # verdict is the code's: every plan variant of it caches the same).
    cdef int verdict
    if plan == NULL:
        return _own_code(self, code)
    verdict = plan.own
    if verdict == 0:
        verdict = plan.own = _own_verdict(code)
    return _own_by_verdict(self, verdict)


cdef bint _argument_rows(Recorder self, FrameRec *fr, int32_t nparams, int32_t call_row,
                         PyObject *func) except -1:
    """A started frame's argument rows (the function, then each parameter) in one
    block, when no growth is in the way; False if not written.  Under a value
    policy the rows are written with the objects, then given what it keeps, in
    row order, as add_row gives it (_policy_rows).

    The rows the loop in _enter writes one add_row at a time (kind ARGUMENT, no
    flags, offset -1, aux = the parameter's index + 1, no refs), each column
    written for the whole block: the per-call path of every Python call.
    """
    cdef Trace t = self.trace
    cdef int32_t r = t.n, i
    cdef int32_t nrefs = t.nrefs
    cdef PyObject *v
    cdef int64_t *sl
    if r + nparams + 2 >= t.cap:
        return False
    sl = _locals(self, fr)
    memset(t.kind_ + r, K_ARGUMENT, nparams + 1)
    memset(t.flags_ + r, 0, nparams + 1)
    Py_XINCREF(func)
    t.value_[r] = func
    for i in range(nparams + 1):
        t.parent_[r + i] = call_row
        t.offset_[r + i] = -1
        t.aux_[r + i] = i
        t.ref_start_[r + i + 1] = nrefs
    for i in range(nparams):
        v = tracer_frame_local(fr.frame, i)
        Py_XINCREF(v)
        t.value_[r + 1 + i] = v
        sl[i] = (<int64_t>(r + 1 + i)) << 2
    t.n = r + nparams + 1
    if t.value_policy:
        _policy_rows(t, r, t.n)
    return True


cdef bint _root_program_frame(Recorder self, FrameRec *root, void *frame) except -1:
    """Whether a frame entered with track's own frame (the root pseudo-frame) as
    its caller is part of the traced call.

    For a Python function that is its body only: anything else run there (a
    finalizer or weakref callback the collector runs while track calls f or
    handles what f raised, on 3.12 at any allocation) runs in tracer's own
    frame, not in the program.  Frames a C callable or a class enters (track(
    sorted, xs, key=g)) are the call's own.
    """
    cdef object callee = _callee(self, 0)
    if type(getattr(callee, "__func__", callee)) is not FunctionType:
        return True
    if root.callee_body_entered:
        return False
    return _is_callee(self, 0, tracer_frame_function(frame))


cdef int _instruction(Recorder self, object code, int offset) except -1:
    """An INSTRUCTION event.  The common one here: a followed frame with no hooks,
    a segment pending, no call completed at its body's return and no bool call
    pending (aftercall.pxi), the event at the end of the pending segment or past
    the silent branch that ends it (taken here, _catch_up's work) and no call row
    open: the segment run to its end, the next one started, its call's END
    checked.  Everything else, before any side effect or from where this path
    stops, out of line (_instruction_unfollowed, _instruction_general,
    _instruction_rest): their branches and registers are not this path's."""
    cdef FrameRec *fr = _top_for(self, code)
    cdef CPlan *plan
    cdef int32_t first
    cdef int32_t *op
    if fr == NULL:
        return _instruction_unfollowed(self, code, offset)
    plan = fr.plan      # the frame being followed runs `code`
    first = plan.seg_at[offset >> 1]
    if first < 0 or fr.after_call or fr.bool_end or fr.hooks or fr.pending < 0:
        return _instruction_general(self, fr, offset, first)
    self.events += 1
    if plan.seg_end[fr.pc] != offset:
        # (_catch_up, bool_end 0)
        if plan.branch_sides_at[fr.pc] >= 0:
            _take_silent_branch(self, fr, offset, CATCH_INSTRUCTION)
        if fr.pending < 0 or plan.seg_end[fr.pc] != offset:
            return _instruction_rest(self, fr, offset, first, 0)
    if fr.open_row >= 0:
        return _instruction_rest(self, fr, offset, first, 0)
    # _instruction_rest's run to the segment's end for this case (no hooks, no
    # call row open): keep the two in step.
    op = plan.ops + fr.pc * OP_WORDS
    if _runs_on(op[OP_CODE]):
        if op[OP_CODE] == M_RECORD and _single_row_at_return(op[OP_WORDS + OP_CODE]):
            if not _single_row(self, fr, op):
                _run_ops(self, fr, -1, -1, -1)
        elif not (op[OP_CODE] == M_SET and not _runs_on(_straight_ops(self, fr))):
            _run_ops(self, fr, -1, -1, -1)
    elif TRACER_EVENT_LOG:
        _log_segment(fr, fr.pc, fr.pc, "to end")
    _start_segment(self, fr, first)
    if plan.end_skip == NULL and not plan.bool_sites and self.plan_mode == PLAN_PLAIN:
        _find_bool_sites(plan)   # (once per plan: aftercall.pxi)
    if plan.end_skip != NULL and plan.end_skip[offset >> 1] & (S_CHECK | SEND_CHECK) \
            and not _call_end_settled(self, fr, plan.end_skip, offset, first):
        _check_skip(self, fr, offset, first)
    return EV_CONTINUE


cdef int _instruction_unfollowed(Recorder self, object code, int offset) except -1:
    """_instruction for a frame the recorder does not follow."""
    cdef CPlan *plan = _cached_plan(self, code)
    if plan == NULL:
        return EV_DISABLE
    if plan.seg_at[offset >> 1] < 0:
        if TRACER_PY312 and plan.cmp_unit != NULL and plan.cmp_unit[offset >> 1]:
            # (3.12, a compare's jump: on for good if a followed frame's guard
            # needs it, else off, as a guard that fails must know)
            if plan.cmp_unit[offset >> 1] & CMP_ON or self.plan_mode != PLAN_PLAIN:
                return EV_CONTINUE
            plan.cmp_unit[offset >> 1] |= CMP_MAY_BE_OFF
        return EV_DISABLE
    return EV_CONTINUE


cdef int _instruction_general(Recorder self, FrameRec *fr, int offset, int32_t first) except -1:
    """_instruction for a followed frame, any case (`first`: the segment the
    event's offset starts, or -1)."""
    cdef CPlan *plan = fr.plan
    cdef int32_t *op
    if first < 0:
        if TRACER_PY312 and plan.cmp_unit != NULL and plan.cmp_unit[offset >> 1]:
            return _compare_event(self, fr, offset)   # (3.12: compare312.pxi)
        return EV_DISABLE
    self.events += 1
    # (a bool call's END, its event on: aftercall.pxi; any other INSTRUCTION
    # event of the frame is past the call's branch, which _catch_up takes)
    cdef int32_t bool_end = fr.bool_end
    if fr.after_call:
        if plan.ops[fr.pc * OP_WORDS + OP_OFFSET] == offset:
            # The segment's call was completed at its body's return: nothing to
            # read here (aftercall.pxi).
            fr.after_call = 0
            if bool_end:
                fr.bool_end = 0
            _start_segment(self, fr, first)
            if plan.end_skip != NULL and plan.end_skip[offset >> 1] & (S_CHECK | SEND_CHECK):
                _check_skip(self, fr, offset, first)
            return _end_event_done(self, fr, offset)
        _past_call(self, fr)
    if fr.pending >= 0 and not _ends_at(self, fr, offset):
        _catch_up(self, fr, offset, CATCH_INSTRUCTION)
    return _instruction_rest(self, fr, offset, first, bool_end)


cdef int _instruction_rest(Recorder self, FrameRec *fr, int offset, int32_t first,
                           int32_t bool_end) except -1:
    """_instruction_general from where the silent branch before the event has
    been taken (_catch_up), and _instruction's common path where it stops
    (`bool_end`: the frame's at the event, cleared since)."""
    cdef CPlan *plan = fr.plan
    cdef int32_t h
    cdef int32_t *op
    cdef bint sent = False
    if fr.pending >= 0 and not _ends_at(self, fr, offset):
        sent = _send_returned(self, fr, offset)
    h = plan.handler[offset >> 1]
    if sent:
        pass  # the segment that led here is recorded (a SEND's target)
    elif h >= 0 and fr.pending == P_EXC:
        _enter_handler(self, fr, offset, h)
    elif fr.pending >= 0 and _ends_at(self, fr, offset):
        if fr.open_row >= 0 and _plain_close_ok(self, fr) and _close_open_call(self, self.trace, fr):
            pass   # the segment was that call and its END: nothing left to run
        else:
            # _run_to_end's body, written out: the 3.13 build called it here (gcc
            # inlined it on 3.12 only), a call and its register saves per event.
            # Keep it in step with _run_to_end (replay.pxi): the same writers
            # for the same shapes.
            op = plan.ops + fr.pc * OP_WORDS
            if _runs_on(op[OP_CODE]):
                if fr.open_row >= 0:
                    _run_ops(self, fr, -1, -1, -1)
                elif op[OP_CODE] == M_RECORD and _single_row_at_return(op[OP_WORDS + OP_CODE]):
                    if not _single_row(self, fr, op):
                        _run_ops(self, fr, -1, -1, -1)
                elif not (op[OP_CODE] == M_SET and (fr.hooks & ~<uint32_t>ROW_NEUTRAL_HOOKS) == 0
                          and not _runs_on(_straight_ops(self, fr))):
                    _run_ops(self, fr, -1, -1, -1)
            elif TRACER_EVENT_LOG:
                _log_segment(fr, fr.pc, fr.pc, "to end")
    elif h >= 0:
        _enter_handler(self, fr, offset, h)
    else:
        _resync(self, fr)
    _start_segment(self, fr, first)
    if bool_end:
        fr.bool_end = 0
        if bool_end & ~END_NONE_TAG == offset:
            # A bool call's END whose event is on, or a NONE_CALL callee's
            # (aftercall.pxi): read as any END, then switched off where that is
            # allowed.
            return _end_event_done(self, fr, offset)
    if plan.end_skip == NULL and not plan.bool_sites and self.plan_mode == PLAN_PLAIN:
        _find_bool_sites(plan)   # (once per plan: aftercall.pxi)
    if plan.end_skip != NULL and plan.end_skip[offset >> 1] & (S_CHECK | SEND_CHECK) \
            and not _call_end_settled(self, fr, plan.end_skip, offset, first):
        _check_skip(self, fr, offset, first)
    if fr.hooks & (H_SUBSTITUTE | H_SUBST_BY) and not self.broken and \
            (self.plan_mode == PLAN_INTERVENE or self.plan_mode == PLAN_INTERVENE_CALLS):
        op = plan.ops + first * OP_WORDS
        if op[OP_CODE] == M_RECORD and op[OP_OFFSET] == offset:
            _substitute(self, fr, op)
    return EV_CONTINUE


cdef inline bint _call_end_settled(Recorder self, FrameRec *fr, uint16_t *skip, int32_t offset,
                                   int32_t first) noexcept:
    """Whether _check_skip has nothing to do at the event at `offset`, which
    starts segment `first`, a call op alone (CALL_ALONE): no delegation, bool
    call or None call (NONE_CALL, aftercall.pxi) to check there, and the END
    after the call on (nothing to check), or possibly off with the callee the
    followed function _call_returns_here saw last (a recursion, a loop calling
    one function), read as _call_returns_here reads it
    (_returning_call_callee).  The common cases at S, without _check_skip's
    call; anything else goes there, which decides as before."""
    cdef int32_t *op
    cdef uint16_t e
    cdef PyObject *v
    if skip[offset >> 1] & (SEND_CHECK | BOOL_CALL | NONE_CALL):
        return False
    op = fr.plan.ops + first * OP_WORDS
    e = skip[op[OP_WORDS + OP_OFFSET] >> 1]
    if e & (END_MAY_BE_OFF | END_ON) != END_MAY_BE_OFF:
        return True   # (E is on: _check_call_end does nothing without BOOL_CALL)
    if self.returns_fn == NULL:
        return False
    v = _returning_call_callee(fr, op)
    return v == self.returns_fn and Py_TYPE(v) == &PyFunction_Type \
        and PyFunction_GET_CODE(v) == self.returns_code


cdef int _check_skip(Recorder self, FrameRec *fr, int32_t offset, int32_t first) except -1:
    # The event starts a call op alone whose END may be off (aftercall.pxi), or a
    # delegation whose yield may be off (resume.pxi).
    if fr.plan.end_skip[offset >> 1] & S_CHECK:
        _check_call_end(self, fr, first)
    if fr.plan.end_skip[offset >> 1] & SEND_CHECK:
        _check_send(self, fr, offset)
    return 0


cdef bint _close_open_call(Recorder self, Trace t, FrameRec *fr) except -1:
    """The pending op is the call whose callee's frames ran (fr.open_row): its
    row completed with the call's result, as _record does for it, when nothing
    else is needed (no hooks, one output); then, if the segment ends right
    after it, True: _run_to_end has nothing left to do."""
    cdef int32_t *op = fr.plan.ops + fr.pc * OP_WORDS
    cdef int32_t *r
    cdef int32_t row, out
    cdef PyObject *v
    if op[OP_CODE] != M_RECORD:
        return False
    r = fr.plan.recs + op[OP_A]
    if r[REC_NOUT] != 1:
        return False
    out = r[REC_INPUTS + r[REC_NIN]]
    row = fr.open_row
    fr.open_row = -1
    # A call still open (C code that entered Python frames) ends here; one whose
    # body returned ended at its return (see _record).
    if t.kind_[row] == K_NESTED and t.flags_[row] & F_OPEN:
        t.aux_[row] = t.n
    t.flags_[row] &= ~F_OPEN
    v = _deferred_value(self, fr, op) if op[OP_C] else tracer_frame_stack_item(fr.frame, out)
    t.set_value(row, v)
    _stack(self, fr)[out] = (<int64_t>row) << 2
    fr.pc += 1
    op += OP_WORDS
    return op[OP_CODE] == M_END


cdef int _branch(Recorder self, object code, int offset, int dest) except -1:
    cdef FrameRec *fr = _top_for(self, code)
    cdef int32_t *op
    cdef int32_t flags = _unit_flags(self, fr, code, offset)
    if flags >= 0 and flags & SILENT_BRANCH:
        # Taken at the frame's next event (_catch_up); it fires only at its first
        # execution or because its event was switched on again.
        return EV_DISABLE
    if fr == NULL:
        return EV_CONTINUE
    self.events += 1
    if fr.bool_end:
        _bool_call_branch(self, fr, offset, dest)   # (aftercall.pxi)
    if fr.after_call:
        _past_call(self, fr)
    _catch_up(self, fr, offset, CATCH_INSIDE)
    if fr.pending >= 0:
        # (the branch's rows written by the op loop, or else by _take_branch)
        if _run_ops(self, fr, offset, dest, -1) or _take_branch(self, fr, offset, dest):
            return EV_CONTINUE
        op = fr.plan.ops + fr.pc * OP_WORDS
        if op[OP_CODE] == M_FOR_ITER and op[OP_OFFSET] == offset:
            _for_iter(self, fr, op, dest)
            _start_segment(self, fr, fr.plan.seg_from[dest >> 1])
            return EV_CONTINUE
    _lost_jump(self, fr, offset, dest)
    return EV_CONTINUE


cdef int _jump(Recorder self, object code, int offset, int dest) except -1:
    cdef FrameRec *fr = _top_for(self, code)
    cdef int32_t *op
    cdef int32_t flags = _unit_flags(self, fr, code, offset)
    if flags >= 0 and not flags & JUMP_EVENT:
        # A silent jump (its JumpNode is written when the segment is replayed);
        # it fires only at its first execution or because its event was switched
        # on again.
        return EV_DISABLE
    if fr == NULL:
        return EV_CONTINUE
    self.events += 1
    if fr.after_call:
        _past_call(self, fr)
    _catch_up(self, fr, offset, CATCH_TO_END)
    if fr.pending >= 0:
        _run_to_end(self, fr)
        op = fr.plan.ops + fr.pc * OP_WORDS
        if op[OP_CODE] == M_JUMP and op[OP_OFFSET] == offset:
            _jump_row(self, fr, offset, dest, S_NULL, <PyObject *>None)
            _start_segment(self, fr, fr.plan.seg_from[dest >> 1])
            return EV_CONTINUE
    _lost_jump(self, fr, offset, dest)
    return EV_CONTINUE


# _leave in two copies, a fused type its last parameter's (`kind`): the fast
# return's (_FastReturn, the value unused, `flags` a constant 0), whose only call
# is callbacks.pxi's _cb_py_return's, so that the compiler inlines it (and its
# _return_plain) into that callback: no call of its own on every return; and
# any leave's (_AnyLeave, the value the flags: 0 or F_YIELD), _py_return's (the
# generic callback's handler: an event log, a thread's own slot) and
# _py_yield's.  Each copy has its own _return_plain (same tag), each called once.
# With one copy for both, _leave stayed a call of its own on every return.
ctypedef signed char _FastReturn
ctypedef short _AnyLeave
ctypedef fused _LeaveKind:
    _FastReturn
    _AnyLeave


cdef int _py_return(Recorder self, object code, int offset, object retval) except -1:
    return _leave(self, code, offset, <PyObject *>retval, <_AnyLeave>0)


cdef int _py_yield(Recorder self, object code, int offset, object retval) except -1:
    # (resume.pxi: the plain path; the yields of the frames that delegated to
    # this one, whose events may be off, written after it)
    cdef FrameRec *fr = _top_for(self, code)
    cdef int32_t n = self.nframes
    cdef void *frame
    cdef int rc
    if fr == NULL:
        return _yield_unfollowed(self, code, offset)
    frame = fr.frame
    rc = _yield_switch(self, fr, offset)
    self.events += 1
    if not _yield_plain(self, fr, offset, <PyObject *>retval):
        self.events -= 1   # (counted by _leave)
        _leave(self, code, offset, <PyObject *>retval, <_AnyLeave>F_YIELD)
    if self.nframes == n - 1:
        _yield_delegators(self, frame, <PyObject *>retval)
    return rc


cdef inline int _leave_start(Recorder self, FrameRec *fr, int32_t offset) except -1:
    """What every PY_RETURN and PY_YIELD of a followed frame does first (_leave,
    resume.pxi's _yield_plain): the frame moved past a call its body's return
    completed (aftercall.pxi), the silent branch before the return taken.  The
    event is counted by the caller (_leave; _py_yield for _yield_plain, which
    also writes the yields of delegating frames whose own event is off)."""
    if fr.after_call:
        _past_call(self, fr)
    return _catch_up(self, fr, offset, CATCH_INSIDE)


cdef inline int64_t _returned_source(Recorder self, FrameRec *fr, int32_t *op,
                                     int32_t offset) noexcept:
    """The shadow of the value the RETURN/YIELD at `offset` hands back, when the
    pending op `op` (the segment replayed up to it) is that instruction: its
    stack slot's, or its constant's; S_UNKNOWN otherwise (a SEND whose receiver
    yielded is the caller's to finish: _leave, _yield_plain)."""
    if op[OP_OFFSET] != offset:
        return S_UNKNOWN
    if op[OP_CODE] == M_RETURN or op[OP_CODE] == M_YIELD:
        return _stack(self, fr)[op[OP_A]]
    if op[OP_CODE] == M_RETURN_CONST:
        return ((<int64_t>op[OP_A]) << 2) | 1
    return S_UNKNOWN


cdef inline int _leave(Recorder self, object code, int32_t offset, PyObject *retval,
                       _LeaveKind kind) except -1:
    # (`kind`: see _LeaveKind)
    cdef uint8_t flags = 0 if _LeaveKind is _FastReturn else <uint8_t>kind
    cdef FrameRec *fr = _top_for(self, code)
    cdef int32_t *op
    cdef int64_t src = S_UNKNOWN
    if fr == NULL:
        return 0
    self.events += 1
    if fr.after_call:
        _past_call(self, fr)
    if fr.pending >= 0:
        # (a result the plan reads from the value returned or yielded: READ_RETURNED)
        self.returning = retval
        # A silent branch before the return is taken and the segment it leads
        # to run on up to the return, in one op-loop run (CATCH_TO_END).
        _catch_up(self, fr, offset, CATCH_TO_END)
        # A call whose row is still open and whose result is returned (geom's
        # `return geom(rng, n + 1, beta)`: the call op's result is read from the
        # value returned, so its body's return left it open): its row completed
        # here, as at an INSTRUCTION event (_close_open_call), not by _run_ops.
        # (The _AnyLeave copy leaves it to _run_to_end, as under hooks: no second
        # call of _close_open_call, which flipped the compiler's inlining of the
        # op loop's helpers on 3.12.)
        if fr.pending < 0 or fr.open_row < 0 or _LeaveKind is _AnyLeave \
                or not _plain_close_ok(self, fr) or not _close_open_call(self, self.trace, fr):
            _run_to_end(self, fr)
        self.returning = NULL
        op = fr.plan.ops + fr.pc * OP_WORDS
        src = _returned_source(self, fr, op, offset)
        if op[OP_CODE] == M_SEND and op[OP_B] == offset and flags == F_YIELD:
            # The receiver of `yield from` / `await` yielded: its value is what
            # this frame's YIELD_VALUE passes on.
            src = _finish_send(self, fr, op, retval)
    if src & 3 == 0 and _return_plain(self, fr, offset, retval, kind, <int32_t>(src >> 2)):
        return 0
    return _leave_general(self, fr, offset, retval, flags, src)


cdef int _leave_general(Recorder self, FrameRec *fr, int32_t offset, PyObject *retval,
                        uint8_t flags, int64_t src) except -1:
    """_leave's general end (hooks, timing, growth, a constant returned), out
    of line: one copy for both of _leave's (_LeaveKind)."""
    cdef object copy
    cdef int32_t row, ref
    if fr.hooks & H_SNAP_ANY:
        copy = _snapshot(self, fr, <object>retval)  # one snapshot for the return and the call
        retval = <PyObject *>copy
    if src & 3 == 0:
        ref = <int32_t>(src >> 2)
    else:
        # aux -1: the value is a constant of the code; -2: its producer was not
        # followed (tracer.validate reports that).
        ref = _constant_row(self, fr, offset, -2 if src == S_UNKNOWN else -1, retval)
    row = self.trace.add_row(K_RETURN, flags, fr.call_row, offset, 0, retval)
    self.trace.add_ref(ref)
    _run_node_hook(self, fr, row)
    if flags:
        fr.body = 0   # a yield is not the call's result (aftercall.pxi)
        fr.ret_to = -1
    _close_call(self, fr, retval, 0)
    return 0


cdef bint _return_plain(Recorder self, FrameRec *fr, int32_t offset, PyObject *retval,
                        _LeaveKind kind, int32_t ref) except -1:
    """The common end of a frame in one routine: its ReturnNode (the value
    returned or yielded, from row `ref`), its call row closed and the frame
    record popped, with no hooks, timing or growth in the way (a value policy
    applied at the end, _policy_rows);
    False (nothing written) otherwise: _leave's general path.  The trace's
    columns are read into locals through `self.trace` (no reference to the
    trace taken and dropped: the incref/decref of a Trace argument cost ~11
    instructions per return; none of it is read after the last release)."""
    cdef uint8_t flags = 0 if _LeaveKind is _FastReturn else <uint8_t>kind   # (_LeaveKind)
    cdef int32_t row = self.trace.n, nrefs = self.trace.nrefs, call_row = fr.call_row
    cdef PyObject *old
    cdef PyObject **value
    cdef uint8_t *fl
    cdef int32_t *aux
    cdef FrameRec *parent
    cdef int32_t to
    cdef uint8_t cflags
    cdef PyObject *stored
    cdef bint policy_after = False
    # (fr.plain_ret: no snapshot or node hook, timing or substitution, decided at
    # entry: _frame_init)
    if not fr.plain_ret or row + 2 >= self.trace.cap or nrefs >= self.trace.refcap:
        return False
    # What the policy keeps of the value, stored in both rows at once when that
    # is decided in line (an int or a float, None, a bool, a str, an instance of
    # a type decided before); else the value, replaced once all is consistent
    # (below).
    stored = _policy_stored(self.trace.value_policy, retval, &policy_after)
    value = self.trace.value_
    fl = self.trace.flags_
    aux = self.trace.aux_
    # The ReturnNode, its one ref the value's producer.
    self.trace.kind_[row] = K_RETURN
    fl[row] = flags
    self.trace.parent_[row] = call_row
    self.trace.offset_[row] = offset
    aux[row] = 0
    Py_INCREF(<object>stored)   # (never NULL: an event's value)
    value[row] = stored
    self.trace.refs_[nrefs] = ref
    self.trace.ref_start_[row + 1] = nrefs + 1
    self.trace.n = row + 1
    self.trace.nrefs = nrefs + 1
    # The call row closed (_close_call): its value, one past its last row.
    old = value[call_row]
    Py_INCREF(<object>stored)
    value[call_row] = stored
    cflags = fl[call_row]
    fl[call_row] = cflags & ~F_OPEN
    aux[call_row] = row + 1
    self.shadow_top = fr.shadow   # (frames are popped in the order pushed)
    self.nframes -= 1
    to = fr.ret_to
    if to >= 0 and flags == 0 and self.nframes > 0:
        # _call_returned's body with what it reads of the caller's plan decided
        # at entry (plans.pxi's _return_targets; keep the two in step): the
        # call op still open at the pc it was entered from.
        parent = &self.frames[self.nframes - 1]
        if parent.open_row == call_row and parent.pc == fr.ret_pc and parent.pending >= 0:
            _stack(self, parent)[to >> 1] = (<int64_t>call_row) << 2
            parent.open_row = -1
            parent.after_call = to & 1
            parent.pc += 1
    if policy_after:
        # What the policy keeps, for the ReturnNode and then the call row (the
        # order _leave's general path applies it in), now that all is consistent.
        _policy_rows(self.trace, row, row + 1)
        _policy_rows(self.trace, call_row, call_row + 1)
    # Released last: a destructor it runs sees the trace and the frames consistent.
    Py_XDECREF(old)
    if cflags & F_FRAME and self.nframes > 0:
        # A frame entered from C is a node of its own, complete now (_close_call).
        _run_node_hook(self, &self.frames[self.nframes - 1], call_row)
    return True


cdef int _raised(Recorder self, object code, int offset, object exception) except -1:
    cdef FrameRec *fr = _top_for(self, code)
    cdef int32_t *op
    cdef int64_t src
    cdef Trace t = self.trace
    cdef int32_t row
    if fr == NULL:
        return EV_CONTINUE
    self.events += 1
    if fr.bool_end:
        _bool_end_raised(self, fr)   # (aftercall.pxi)
    if fr.after_call:
        _past_call(self, fr)
    # The instruction that raised is the one the frame is executing: the event's
    # offset is not always inside it (3.13 reports an exception coming out of a
    # call at the code unit before the CALL).  The event's own offset stands in
    # should the frame's lasti ever be out of the code's range.
    cdef int32_t executing = _executing(self, fr)
    if executing < 0 and 0 <= offset < 2 * fr.plan.nunits:
        executing = fr.plan.istart[offset >> 1]
    offset = executing
    _catch_up(self, fr, offset, CATCH_INSIDE)
    fr.exc_row = -1
    if fr.pending >= 0:
        _run(self, fr, offset, False)
        op = fr.plan.ops + fr.pc * OP_WORDS
        if op[OP_OFFSET] == offset and op[OP_CODE] == M_SEND \
                and isinstance(exception, StopIteration):
            # A receiver that is not a generator returned by raising StopIteration:
            # CPython reports it, then SEND takes the value and jumps to its
            # target, whose INSTRUCTION event records the SEND (_send_returned).
            return EV_CONTINUE
        if op[OP_OFFSET] == offset and op[OP_CODE] == M_FOR_ITER \
                and isinstance(exception, StopIteration):
            # A generator that returned a value ends a for loop by raising
            # StopIteration, which FOR_ITER swallows: the loop's exit BRANCH that
            # follows records the exhaustion (_for_iter) and the frame's shadow
            # stays known (a lost jump would forget every local).
            return EV_CONTINUE
        if op[OP_OFFSET] == offset and _is_record(op[OP_CODE]):
            _record(self, fr, op[OP_A], <PyObject *>exception)
        elif op[OP_OFFSET] == offset and op[OP_CODE] == M_RAISE and op[OP_A] >= 0:
            src = _stack(self, fr)[op[OP_A]]
            row = t.add_row(K_SPECIAL, F_RAISED, fr.call_row, offset, 0,
                            <PyObject *>exception)
            if src & 3 == 0:
                t.add_ref(<int32_t>(src >> 2))
            fr.exc_row = row
            _run_node_hook(self, fr, row)
    if fr.open_row >= 0:
        # A nested call under an op that did not get to record itself.
        row = fr.open_row
        t.flags_[row] = (t.flags_[row] & ~F_OPEN) | F_RAISED
        t.set_value(row, <PyObject *>exception)
        t.aux_[row] = t.n
        fr.exc_row = row
        fr.open_row = -1
        _run_node_hook(self, fr, row)
    fr.pending = P_EXC
    return EV_CONTINUE


cdef int _py_unwind(Recorder self, object code, int offset, object exception) except -1:
    cdef FrameRec *fr = _top_for(self, code)
    if fr == NULL:
        return EV_CONTINUE
    self.events += 1
    _close_call(self, fr, <PyObject *>exception, F_RAISED)
    return EV_CONTINUE


cdef inline PyObject *_callee_ptr(Trace t, int32_t row) noexcept:
    # The value of a call row's first input (its callee), borrowed, or NULL: the
    # common case of _is_callee (a plain function called) without Python objects.
    cdef int32_t first = t.ref_start_[row]
    cdef int32_t ref
    if first == t.ref_start_[row + 1]:
        return NULL
    ref = t.refs_[first]
    if ref >= 0:
        return t.value_[ref]
    return PyList_GET_ITEM(t.pool, -ref - 1)


cdef inline bint _is_record(int32_t opc) noexcept:
    # Micro-ops that record the instruction they stand for (a call, an operator, a
    # FOR_ITER's next, a SEND): nested frames it starts record under its row.
    return opc == M_RECORD or opc == M_FOR_ITER or opc == M_RECORD_BOOL or opc == M_SEND
