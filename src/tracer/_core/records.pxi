# Rows: recorded calls and operators, jumps and branches, returns, handlers.

cdef int32_t _constant_row(Recorder self, FrameRec *fr, int32_t offset, int32_t aux,
                           PyObject *value) except -1:
    if fr.hooks & H_SNAP_ANY:
        value = _kept(self, fr, value)
    cdef int32_t r = self.trace.add_row(K_CONSTANT, 0, fr.call_row, offset,
                                        aux, value)
    _run_node_hook(self, fr, r)
    return r


cdef int32_t _open(Recorder self, FrameRec *fr, int32_t rec, uint8_t kind) except -1:
    """Append the row of recorded op `rec` with its inputs; its value comes later."""
    cdef int32_t *r = fr.plan.recs + rec
    cdef int32_t nin = r[REC_NIN], i, x
    cdef int64_t *ss = _stack(self, fr)
    cdef int64_t s
    cdef int32_t op_offset = (fr.plan.ops + fr.pc * OP_WORDS)[OP_OFFSET]
    cdef int32_t row = self.trace.add_row(kind, F_OPEN, fr.call_row, op_offset, 0, NULL)
    for i in range(nin):
        x = r[REC_INPUTS + i]
        if x < 0:
            self.trace.add_ref(_static_ref(self, fr.plan, -x - 1))
            continue
        s = ss[x]
        if s == S_NULL:
            continue
        self.trace.add_ref(_ref(self, fr, s))
    if fr.subst_pc == fr.pc and fr.subst_args == NULL:
        _patch_callee(self, fr, row)
    return row


cdef inline int32_t _primitive_row(Recorder self, FrameRec *fr, Trace t, Rows *w, int32_t *r,
                                   int32_t offset, PyObject *v, int64_t *ss, int policy) except -1:
    """The row of record `r` (an op that ran without a nested call, one output)
    with value `v`, written at once through `w` (room reserved): kind, inputs,
    value.  The output's shadow (stack slot in `ss`) becomes the row."""
    # Small enough for the compiler to inline into the op loop: inputs that are
    # rows of this call are written here, the rest by _input_ref.
    cdef int32_t nin = r[REC_NIN], i, x, row
    cdef int64_t s
    for i in range(nin):
        x = r[REC_INPUTS + i]
        if x >= 0:
            s = ss[x]
            if s & 3 == 0:
                w.refs[w.nrefs] = <int32_t>(s >> 2)
                w.nrefs += 1
                continue
            if s == S_NULL:
                continue
        w.refs[w.nrefs] = _input_ref(self, fr, x, ss)
        w.nrefs += 1
    row = _rows_add(t, w, K_SPECIAL if r[REC_SEM] == R_SPECIAL else K_PRIMITIVE, 0,
                    fr.call_row, offset, 0, _row_value(policy, v))
    ss[r[REC_INPUTS + nin]] = (<int64_t>row) << 2
    return row


cdef int32_t _input_ref(Recorder self, FrameRec *fr, int32_t x, int64_t *ss) except? -2147483647:
    # The ref of record input `x` that is not a row: a static (x < 0), a constant
    # of the code or of the pool, or unknown.
    if x < 0:
        return _static_ref(self, fr.plan, -x - 1)
    return _ref(self, fr, ss[x])


cdef int _record_primitive(Recorder self, FrameRec *fr, int32_t *r, PyObject *known) except -1:
    """An op that ran without a nested call, one output, recorded at fr.pc: its
    row (_primitive_row), then the context's hooks for it.

    The value is `known`, or read from the output's stack slot (live at this
    event by the plan's check).
    """
    cdef Rows w
    cdef int32_t out = r[REC_INPUTS + r[REC_NIN]], row
    cdef PyObject *v = known if known != NULL else tracer_frame_stack_item(fr.frame, out)
    self.trace.open_rows(&w, 1, r[REC_NIN])
    row = _primitive_row(self, fr, self.trace, &w, r, (fr.plan.ops + fr.pc * OP_WORDS)[OP_OFFSET], v,
                         _stack(self, fr), self.trace.value_policy)
    if fr.hooks and not _no_filtered_hook(self, fr, r, row):
        return _recorded(self, fr, r, row, out if known == NULL else -1,
                         fr.plan.rec_iv[r - fr.plan.recs])
    return 0


cdef int _record(Recorder self, FrameRec *fr, int32_t rec, PyObject *raised,
                 PyObject *known=NULL, int32_t stop=-1) except -1:
    """Record op `rec` at its end event (or its failure, with `raised`).

    `known` is its one output's value when that is no longer on the stack (a
    RECORD_BOOL recorded at its branch).  An UNPACK_SEQUENCE whose outputs were
    stored in locals (READ_STORED, the op at fr.pc) has them read there
    (_stored_output); `stop` >= 0: it is recorded early, the instruction at
    that offset executing (replay.pxi's _run).
    """
    cdef int32_t *r = fr.plan.recs + rec
    cdef int32_t sem = r[REC_SEM], nin = r[REC_NIN], nout = r[REC_NOUT], j, row, extra
    cdef int32_t *outs = r + 5 + nin
    cdef int64_t *ss = _stack(self, fr)
    cdef PyObject *v
    cdef int32_t *stored = NULL
    if fr.open_row >= 0:
        row = fr.open_row
        fr.open_row = -1
        # A call still open (C code that entered Python frames) ends here; one whose
        # body returned ended at its return (what ran since, a finalizer of its
        # frame, is recorded beside it).
        if self.trace.kind_[row] == K_NESTED and self.trace.flags_[row] & F_OPEN:
            self.trace.aux_[row] = self.trace.n
    elif raised == NULL and nout == 1:
        return _record_primitive(self, fr, r, known)
    elif raised == NULL and nout == 0 and (fr.hooks & ~<uint32_t>ROW_NEUTRAL_HOOKS) == 0 \
            and fr.subst_pc != fr.pc and _no_result_row(self, fr, r,
                                                        (fr.plan.ops + fr.pc * OP_WORDS)[OP_OFFSET],
                                                        self.trace.value_policy):
        # An op with no result (a store into a subscript, a slice or an
        # attribute, a delete) and no per-row hooks: its row written at once,
        # value None, as below.
        return 0
    else:
        row = _open(self, fr, rec, K_SPECIAL if sem == R_SPECIAL else K_PRIMITIVE)
    self.trace.flags_[row] &= ~F_OPEN
    if raised != NULL:
        self.trace.flags_[row] |= F_RAISED
        self.trace.set_value(row, raised)
        fr.exc_row = row
        if fr.subst_pc == fr.pc:
            if fr.subst_args == NULL:
                _patch_callee(self, fr, row)
            _clear_substitution(fr)
        return _run_node_hook(self, fr, row)
    if nout == 0:
        self.trace.set_value(row, <PyObject *>None)
        return _run_node_hook(self, fr, row)
    if nout > 1 and known == NULL:
        stored = fr.plan.ops + fr.pc * OP_WORDS
        if stored[OP_CODE] != M_RECORD or stored[OP_A] != rec or stored[OP_C] != READ_STORED:
            stored = NULL
    if known != NULL:
        v = known
    elif stored != NULL:
        v = _stored_output(fr, stored, outs[0], stop)
    else:
        v = tracer_frame_stack_item(fr.frame, outs[0])
    self.trace.set_value(row, v)
    ss[outs[0]] = (<int64_t>row) << 2
    if fr.hooks:
        _recorded(self, fr, r, row, outs[0] if known == NULL and nout == 1 else -1,
                  fr.plan.rec_iv[rec])
    for j in range(1, nout):
        v = _stored_output(fr, stored, outs[j], stop) if stored != NULL \
            else tracer_frame_stack_item(fr.frame, outs[j])
        if fr.hooks & H_SNAP_ANY:
            v = _kept(self, fr, v)
        extra = self.trace.add_row(K_SPECIAL, 0, fr.call_row, self.trace.offset_[row], j, v)
        self.trace.add_ref(row)
        ss[outs[j]] = (<int64_t>extra) << 2
        _run_node_hook(self, fr, extra)
    return 0


cdef PyObject *_stored_output(FrameRec *fr, int32_t *op, int32_t slot, int32_t stop) noexcept:
    """Output `slot` of READ_STORED record `op` (an UNPACK_SEQUENCE whose outputs
    the STORE_LOCAL ops right after it store in plain locals that nothing later
    in the segment assigns: tracer.analysis.plan stored_locals): read from its
    local once its store ran -- at the segment's end event (`stop` < 0), or
    before instruction `stop`, which is executing (it raised or entered a
    frame).  A store at or after `stop` has not finished: the value is still in
    its stack slot, read there only if the plan's depth at `stop` proves the
    slot live.  UNKNOWN if neither holds it (a debugger unbound the local)."""
    cdef int32_t *q = op + OP_WORDS
    cdef PyObject *v = NULL
    # (the plan's last op closes its segment, so the scan stops inside the ops)
    while q[OP_CODE] == M_STORE_LOCAL:
        if q[OP_A] == slot:
            if stop < 0 or q[OP_OFFSET] < stop:
                v = tracer_frame_local(fr.frame, q[OP_B])
            elif stop < 2 * fr.plan.nunits and slot < fr.plan.depth[stop >> 1]:
                v = tracer_frame_stack_item(fr.frame, slot)
            break
        q += OP_WORDS
    if v == NULL:
        return <PyObject *>UNKNOWN
    return v


cdef int _recorded(Recorder self, FrameRec *fr, int32_t *r, int32_t row, int32_t out,
                   int32_t iv) except -1:
    """A call or operator row is complete: its snapshot, the context's override,
    then its hook.

    `out` is the stack slot holding the value the program goes on with (live at
    this event), or -1 when it cannot be replaced; `iv` the record's IV_* class.
    """
    cdef int32_t k = -1
    if fr.hooks & H_SNAP_ANY:
        self.trace.set_value(row, _kept(self, fr, self.trace.value_[row]))
    if fr.hooks & H_FILTERED and fr.filters != NULL:
        # Matched before _substituted forgets the callable a substitute replaced.
        k = _match(<CallFilter>fr.filters, _row_callee(self, fr, r, row))
    if fr.subst_pc >= 0 and fr.subst_pc == fr.pc:
        _substituted(self, fr, row, out, iv)
    if k >= 0:
        _filtered_hooks(self, fr, k, row, out, iv)
    if out >= 0 and iv != IV_NONE and fr.hooks & H_OVERRIDE and not self.broken:
        _override(self, fr, row, out, iv)
    return _run_node_hook(self, fr, row)


cdef inline int32_t _put_jump(Recorder self, FrameRec *fr, Trace t, Rows *w, int32_t offset,
                              int32_t dest, int64_t cond, PyObject *value, int policy) except -1:
    """A JumpNode written through `w` (room reserved): to `dest`, on condition
    `cond` (a shadow; S_NULL for an unconditional jump)."""
    if cond & 3 == 0:
        w.refs[w.nrefs] = <int32_t>(cond >> 2)
        w.nrefs += 1
    elif cond != S_NULL and cond != S_UNKNOWN and cond != S_DYN:
        w.refs[w.nrefs] = _ref(self, fr, cond)
        w.nrefs += 1
    return _rows_add(t, w, K_JUMP, 0, fr.call_row, offset, dest, _row_value(policy, value))


cdef int _jump_row(Recorder self, FrameRec *fr, int32_t offset, int32_t dest, int64_t cond,
                   PyObject *value) except -1:
    cdef Rows w
    self.trace.open_rows(&w, 1, 1)
    return _run_node_hook(self, fr, _put_jump(self, fr, self.trace, &w, offset, dest, cond, value,
                                              self.trace.value_policy))


cdef int _close_call(Recorder self, FrameRec *fr, PyObject *value, uint8_t flags) except -1:
    cdef int32_t row = fr.call_row
    # Returned (not raised) as the body of its caller's open call op.
    cdef bint body = fr.body and flags == 0
    if self.trace.timing != NULL:
        _timing_return(self.trace.timing)
    self.trace.set_value(row, value)
    self.trace.flags_[row] = (self.trace.flags_[row] & ~F_OPEN) | flags
    self.trace.aux_[row] = self.trace.n
    _pop(self)
    if body and self.nframes > 0:
        _call_returned(self, &self.frames[self.nframes - 1], row)
    if self.trace.flags_[row] & F_FRAME and self.nframes > 0:
        # A frame entered from C is a node of its own, complete now; a direct
        # call's node is completed by the caller's op (_record).
        _run_node_hook(self, &self.frames[self.nframes - 1], row)
    return 0


cdef int _enter_handler(Recorder self, FrameRec *fr, int32_t offset, int32_t h) except -1:
    cdef int32_t depth = h >> 1, lasti = h & 1, i
    cdef int64_t *ss = _stack(self, fr)
    cdef Trace t = self.trace
    cdef PyObject *exc
    cdef int32_t row
    if fr.pending != P_EXC:
        # The raise was not seen: what ran before it is not known.
        _resync(self, fr)
        fr.exc_row = -1
    for i in range(depth, depth + lasti):
        ss[i] = S_UNKNOWN
    exc = tracer_frame_stack_item(fr.frame, depth + lasti)
    row = t.add_row(K_SPECIAL, F_EXCEPTION, fr.call_row, offset, 0, exc)
    if fr.exc_row >= 0:
        t.add_ref(fr.exc_row)
    ss[depth + lasti] = (<int64_t>row) << 2
    fr.exc_row = -1
    fr.open_row = -1
    return _run_node_hook(self, fr, row)


cdef bint _take_branch(Recorder self, FrameRec *fr, int32_t offset, int32_t dest) except -1:
    """Record the conditional jump at `offset` to `dest`, its segment replayed up to
    it (fr.pc at its RECORD_BOOL or BRANCH); False if that is not where fr is."""
    cdef int32_t *op = fr.plan.ops + fr.pc * OP_WORDS
    cdef bint taken, value
    cdef int32_t kind, branch_pc, rec
    cdef int32_t bool_pc = -1
    cdef int32_t *r
    cdef int64_t *ss
    cdef int64_t cond
    cdef PyObject *truth
    cdef Rows w
    cdef int policy
    cdef int32_t nrefs, row
    if op[OP_CODE] == M_RECORD_BOOL:
        bool_pc = fr.pc
        fr.pc += 1
        op += OP_WORDS
        if op[OP_CODE] != M_BRANCH:
            # Ops between the bool and its branch (rare: the branch follows at once).
            _run_to_end(self, fr)
            op = fr.plan.ops + fr.pc * OP_WORDS
    if op[OP_CODE] != M_BRANCH or op[OP_OFFSET] != offset:
        if op[OP_CODE] == M_FOR_ITER and op[OP_OFFSET] == offset and op[OP_B] > 0 \
                and bool_pc < 0:
            # A silent loop taken late (_take_silent_branch) where _run_ops could
            # not write its rows (a generator ran under the FOR_ITER, per-row
            # hooks): _for_iter's, the value read back from its local.
            _for_iter(self, fr, op, dest)
            _start_segment(self, fr, fr.plan.seg_from[dest >> 1])
            return True
        return False
    taken = dest == op[OP_C]
    kind = op[OP_B]
    # The truth the instruction tested: IF_FALSE/IF_TRUE test the value,
    # IF_NONE/IF_NOT_NONE test `value is None`.
    if kind == 0 or kind == 3:
        value = not taken
    else:
        value = taken
    truth = <PyObject *>(PY_TRUE if value else PY_FALSE)
    ss = _stack(self, fr)
    if (fr.hooks & ~<uint32_t>ROW_NEUTRAL_HOOKS) == 0 and fr.open_row < 0:
        # No per-row hooks: the bool's row and the jump's written at once.
        policy = self.trace.value_policy
        r = fr.plan.recs + (fr.plan.ops + bool_pc * OP_WORDS)[OP_A] if bool_pc >= 0 else NULL
        self.trace.open_rows(&w, 2, (r[REC_NIN] if r != NULL else 0) + 1)
        if r != NULL:
            # The bool the branch popped was this record's result.
            nrefs = _row_inputs(fr.plan, self.session, r, ss, w.refs, w.nrefs)
            if nrefs >= 0:
                w.nrefs = nrefs
                row = _rows_add(self.trace, &w, K_SPECIAL if r[REC_SEM] == R_SPECIAL else K_PRIMITIVE,
                                0, fr.call_row, (fr.plan.ops + bool_pc * OP_WORDS)[OP_OFFSET], 0,
                                _row_value(policy, truth))
                ss[r[REC_INPUTS + r[REC_NIN]]] = (<int64_t>row) << 2
            else:
                _primitive_row(self, fr, self.trace, &w, r,
                               (fr.plan.ops + bool_pc * OP_WORDS)[OP_OFFSET], truth, ss, policy)
        cond = ss[op[OP_A]]
        if cond & 3 == 0:
            w.refs[w.nrefs] = <int32_t>(cond >> 2)
            w.nrefs += 1
            _rows_add(self.trace, &w, K_JUMP, 0, fr.call_row, offset, dest, _row_value(policy, truth))
        else:
            _put_jump(self, fr, self.trace, &w, offset, dest, cond, truth, policy)
    else:
        if bool_pc >= 0:
            # The bool the branch popped was this record's result.
            branch_pc = fr.pc
            fr.pc = bool_pc
            rec = (fr.plan.ops + bool_pc * OP_WORDS)[OP_A]
            if fr.open_row < 0:
                _record_primitive(self, fr, fr.plan.recs + rec, truth)
            else:
                _record(self, fr, rec, NULL, truth)
            fr.pc = branch_pc
        _jump_row(self, fr, offset, dest, ss[op[OP_A]], truth)
    _start_segment(self, fr, fr.plan.seg_from[dest >> 1])
    return True


# How an event catches up with a silent branch (_catch_up): an event inside the
# segment the branch leads to whose instruction is executing (a frame entered,
# a raise: the caller runs up to it), an INSTRUCTION event at the end of that
# segment (run on to it), or an event at that segment's terminal op (a
# PY_RETURN, a JUMP: run on to it, the caller's _run_to_end then has nothing
# left: one op-loop run where there were two).
cdef enum:
    CATCH_INSIDE = 0
    CATCH_INSTRUCTION = 1
    CATCH_TO_END = 2


cdef inline int _catch_up(Recorder self, FrameRec *fr, int32_t here, int how) except -1:
    """Take the silent branch ending the pending segment if the event at
    instruction `here` lies past it (tracer.plan.silent_branches); `how`: a
    CATCH_* above."""
    # Inline: every event asks, few segments end in a silent branch.
    if fr.bool_end:
        _bool_call_caught(self, fr, here, how)   # (aftercall.pxi)
    if fr.pending < 0 or fr.plan.branch_sides_at[fr.pc] < 0:
        return 0
    return _take_silent_branch(self, fr, here, how)


cdef int32_t _silent_side(CPlan *plan, int32_t k, int32_t here, int how) noexcept:
    """Which side of the silent branch `k` (an index in plan.branch_sides) the
    event at instruction `here` lies on: 0 or 1, or -1 (in neither)."""
    cdef int32_t side, n, j
    cdef int32_t *p = plan.branch_sides + k + 3
    for side in range(2):
        n = p[1]
        if how == CATCH_INSTRUCTION:
            if p[0] == here:
                return side
        else:
            for j in range(n):
                if p[2 + 2 * j] <= here <= p[3 + 2 * j]:
                    return side
        p += 2 + 2 * n
    return -1


cdef int _take_silent_branch(Recorder self, FrameRec *fr, int32_t here, int how) except -1:
    cdef int32_t k, side, n, j, go_on_to, dest
    cdef int32_t *p
    k = fr.plan.branch_sides_at[fr.pc]
    p = fr.plan.branch_sides + k + 3
    for side in range(2):
        n = p[1]
        if how == CATCH_INSTRUCTION:
            if p[0] == here:
                break
        else:
            for j in range(n):
                if p[2 + 2 * j] <= here <= p[3 + 2 * j]:
                    break
            else:
                j = n
            if j < n:
                break
        p += 2 + 2 * n
    else:
        return 0  # `here` is in the pending segment itself (or the frame is lost)
    # One run up to the branch, its rows, and (an INSTRUCTION event, or an event
    # at the terminal op of the segment the branch leads to) on through that
    # segment; _take_branch when that run could not write them.
    if fr.pending < 0:
        return 0
    go_on_to = here if how == CATCH_INSTRUCTION else RUN_ON if how == CATCH_TO_END else -1
    dest = fr.plan.branch_sides[k + 1 + side]
    if dest < 0:
        # SIDE_STRAIGHT (the word's sign, loaded here anyway): the ops up to
        # the branch and through the segment it leads to are _straight_ops's
        # by their kinds (tracer.analysis.silent.straight_sides).  Called, not
        # inlined (through a pointer, replay.pxi): the other branches keep this
        # function's registers.  A tail call: the writer's -1 (an exception
        # set) is returned unchecked here (its pointer's type is noexcept) and
        # checked by this function's callers.
        return _straight_writer(self, fr, fr.plan.branch_sides[k], dest & SIDE_OFFSET, go_on_to)
    if not _run_ops(self, fr, fr.plan.branch_sides[k], dest, go_on_to):
        _take_branch(self, fr, fr.plan.branch_sides[k], dest)
    return 0


cdef int _for_iter(Recorder self, FrameRec *fr, int32_t *op, int32_t dest) except -1:
    # (a silent loop's next value, op's b > 0: read back from the local its body
    # stored it in, _loop_value; an evented one's off the stack, by _record)
    cdef int32_t *r = fr.plan.recs + op[OP_A]
    cdef int32_t iter_depth = r[REC_INPUTS]
    cdef int64_t it = _stack(self, fr)[iter_depth]
    cdef Trace t = self.trace
    cdef int32_t row
    if dest == op[OP_C]:
        _record(self, fr, op[OP_A], NULL, _loop_value(fr, op, -1) if op[OP_B] > 0 else NULL)
        _jump_row(self, fr, op[OP_OFFSET], dest, it, <PyObject *>PY_TRUE)
    else:
        if fr.open_row >= 0:
            row = fr.open_row
            fr.open_row = -1
            t.aux_[row] = t.n
            t.flags_[row] = (t.flags_[row] & ~F_OPEN) | F_STOPPED
            t.set_value(row, <PyObject *>None)
            _run_node_hook(self, fr, row)
        _jump_row(self, fr, op[OP_OFFSET], dest, it, <PyObject *>PY_FALSE)
    return 0


cdef int _lost_jump(Recorder self, FrameRec *fr, int32_t offset, int32_t dest) except -1:
    _jump_row(self, fr, offset, dest, S_UNKNOWN, <PyObject *>None)
    _resync(self, fr)
    _start_segment(self, fr, fr.plan.seg_from[dest >> 1])
    return 0


cdef int64_t _finish_send(Recorder self, FrameRec *fr, int32_t *op, PyObject *known) except? -1:
    """Record the SEND at op (known: its result, or NULL to read it off the
    stack at its target); the shadow of its result."""
    cdef int32_t *r = fr.plan.recs + op[OP_A]
    _record(self, fr, op[OP_A], NULL, known)
    return _stack(self, fr)[r[REC_INPUTS + r[REC_NIN]]]


cdef bint _send_returned(Recorder self, FrameRec *fr, int32_t offset) except -1:
    """At an INSTRUCTION event at `offset`: if the pending segment ends in a SEND
    whose target this is (its receiver returned), record it; whether it did."""
    cdef int32_t pc = fr.pc
    cdef int32_t *op
    if fr.plan.seg_end[pc] >= 0:
        return False
    while True:  # the segment's terminal op
        op = fr.plan.ops + pc * OP_WORDS
        if op[OP_CODE] >= M_RECORD and op[OP_CODE] != M_SILENT_JUMP and op[OP_CODE] != M_RECORD_BOOL:
            break
        pc += 1
    if op[OP_CODE] != M_SEND or op[OP_C] != offset:
        return False
    _run_to_end(self, fr)
    _finish_send(self, fr, op, NULL)
    return True
