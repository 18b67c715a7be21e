# Segment replay: the micro-ops run on a frame's shadow locals and stack, and the
# shadow helpers (constants pooled once per trace, values read off the frame).

cdef inline int32_t _ref(Recorder self, FrameRec *fr, int64_t s) except? -2147483647:
    """The ref encoding of a shadow value (constants go to the pool)."""
    cdef int64_t tag = s & 3
    if tag == 0:
        return <int32_t>(s >> 2)
    if tag == 1:
        return _const_ref(self, fr.plan, <int32_t>(s >> 2))
    if tag == 2:
        return -<int32_t>(s >> 2) - 1
    return -1  # pool[0] is UNKNOWN


cdef void _own_refs(Recorder self, CPlan *plan) noexcept:
    # The plan's pooled constants are this session's from now on.
    plan.session = self.session
    plan.plain_session = -1   # (its code id and verdicts to be checked again)
    memset(plan.const_refs, 0, plan.nconsts * sizeof(int32_t))
    memset(plan.static_refs, 0, plan.nstatics * sizeof(int32_t))


cdef void _reown_refs(Recorder self, CPlan *plan) noexcept:
    # Another recorder (a thread tracking the same code) pooled into this plan
    # since: its refs are into that trace's pool.  The code id is re-interned at
    # the next frame entry (_enter sees -1).
    _own_refs(self, plan)
    plan.code_id = -1


cdef inline int32_t _const_ref(Recorder self, CPlan *plan, int32_t k) except? -2147483647:
    if plan.session != self.session:
        _reown_refs(self, plan)
    cdef int32_t ref = plan.const_refs[k]
    if ref == 0:
        ref = self.trace.pool_add(<object>PyTuple_GET_ITEM(<object>plan.consts, k))
        plan.const_refs[k] = ref
    return ref


cdef inline int32_t _static_ref(Recorder self, CPlan *plan, int32_t k) except? -2147483647:
    if plan.session != self.session:
        _reown_refs(self, plan)
    cdef int32_t ref = plan.static_refs[k]
    if ref == 0:
        ref = self.trace.pool_add(<object>PyList_GET_ITEM(<object>plan.statics, k))
        plan.static_refs[k] = ref
    return ref


cdef PyObject *_shadow_value(Recorder self, FrameRec *fr, int64_t s) noexcept:
    """The value of a constant shadow (static or pool); NULL otherwise."""
    cdef int64_t tag = s & 3
    if tag == 1:
        return PyTuple_GET_ITEM(<object>fr.plan.consts, s >> 2)
    if tag == 2:
        return PyList_GET_ITEM(self.trace.pool, s >> 2)
    return NULL


cdef inline PyObject *_frame_local(Recorder self, FrameRec *fr, int32_t i, int32_t flags) noexcept:
    cdef PyObject *v = tracer_frame_local(fr.frame, i)
    if v != NULL and (flags & LF_CELL) and PyCell_Check(v):
        v = PyCell_GET(v)
    return v


# -- running segments ----------------------------------------------------------------
cdef extern from *:
    # Cython's own branch hint (defined in every module it generates): gcc lays
    # a rare case's block out of the hot path and gives the common case's
    # values the registers.
    bint _rare "unlikely"(bint) noexcept nogil

# Hooks whose bits do not concern rows once they are written (they act when a frame
# is entered): a frame with no other hook bits writes its rows in the op loop itself.
cdef enum:
    ROW_NEUTRAL_HOOKS = H_CANRECUR | H_ENTER | H_PRIMITIVES
    # Hooks that concern only the rows whose callee a filter names (on_call=,
    # override=, substitute=: tracer.ppl's contexts): _run_ops writes the other
    # rows itself and sends those to _recorded (`filtered`).
    ROW_FILTER_HOOKS = H_ON_CALL | H_OVERRIDE_BY | H_SUBST_BY


cdef bint ROWS_UNDER_FILTERS = True   # (filtered_rows_in_loop)


def filtered_rows_in_loop(enabled=None):
    """Whether the op loop writes the rows of a frame whose context has call
    filters (Context(on_call=, override=, substitute=): tracer.ppl's contexts)
    itself, sending only the rows whose callee a filter names to their hooks
    (True, the default), or sends every row of such a frame down the general
    path (False: for tests comparing the two).  Returns the setting before;
    `None` only reads it."""
    global ROWS_UNDER_FILTERS
    old = ROWS_UNDER_FILTERS
    if enabled is not None:
        ROWS_UNDER_FILTERS = bool(enabled)
    return old


cdef inline bint _static_unfiltered(FrameRec *fr, int32_t *r) noexcept:
    """Whether record `r`'s row is one no filter of fr's context names, known
    before it is written: an operator or special op whose static callee (or
    none) the filter does not match; a special op's static is its name, a str,
    which no filter's key is.  (A call's callee is known once its row is:
    _row_filtered.)"""
    cdef PyObject *fn
    if r[REC_SEM] != R_OP and r[REC_SEM] != R_SPECIAL:
        return False
    if r[REC_FN] < 0:
        return True
    fn = PyList_GET_ITEM(<object>fr.plan.statics, r[REC_FN])
    return PyUnicode_CheckExact(fn) or _match(<CallFilter>fr.filters, fn) < 0


cdef inline bint _row_filtered(Recorder self, FrameRec *fr, int32_t *r, int32_t row) noexcept:
    # Whether the row just written at `row` (record `r`) has a callee a filter
    # of fr's context names: its hooks run (_recorded), as _record_primitive's.
    # An operator's or special op's callee is its static one (_static_unfiltered);
    # a call's, its first input (_row_callee).
    if r[REC_SEM] == R_OP or r[REC_SEM] == R_SPECIAL:
        return not _static_unfiltered(fr, r)
    return _match(<CallFilter>fr.filters, _row_callee(self, fr, r, row)) >= 0


cdef inline bint _runs_on(int32_t opc) noexcept:
    # The ops _run_to_end takes in its loop; any other ends the run.
    return (M_END < opc <= M_RECORD) or opc == M_SILENT_JUMP


cdef void _run_budget(CPlan *plan, Py_ssize_t nops) noexcept:
    """The most rows, and refs, that one run of _run_ops's loop can write
    itself: a RECORD one row and its inputs, a silent jump one row; and a run
    that takes a branch on its way (two runs, the RECORD_BOOL's row and inputs,
    the jump's row and its condition)."""
    cdef Py_ssize_t i
    cdef int32_t opc, rows = 0, refs = 0, bool_refs = 0
    cdef int32_t *op
    plan.run_rows = 0
    plan.run_refs = 0
    for i in range(nops):
        op = plan.ops + i * OP_WORDS
        opc = op[OP_CODE]
        if opc == M_RECORD_BOOL and plan.recs[op[OP_A] + REC_NIN] > bool_refs:
            bool_refs = plan.recs[op[OP_A] + REC_NIN]
        if not _runs_on(opc):
            rows = refs = 0
            continue
        if opc == M_RECORD:
            rows += 1
            refs += plan.recs[op[OP_A] + REC_NIN]
        elif opc == M_SILENT_JUMP:
            rows += 1
        if rows > plan.run_rows:
            plan.run_rows = rows
        if refs > plan.run_refs:
            plan.run_refs = refs
    plan.branch_run_rows = 2 * plan.run_rows + 2
    plan.branch_run_refs = 2 * plan.run_refs + bool_refs + 1


cdef inline int32_t _row_inputs(CPlan *plan, int64_t session, int32_t *r, int64_t *ss, int32_t *refs,
                                int32_t nrefs) noexcept:
    """Write record r's input refs at refs[nrefs:] and return the new count, or -1
    if one of them needs _ref (a constant not pooled yet, a plan another recorder
    pooled into): then the row is _record_primitive's.  `session`: the recorder's;
    the plan's pooled constants are its own if the plan's session is that one
    (asked only of an input that is a constant: rows of the call are most)."""
    # No calls: the op loop keeps its registers around it.
    cdef int32_t i, x, ref
    cdef int64_t s
    for i in range(REC_INPUTS, REC_INPUTS + r[REC_NIN]):
        x = r[i]
        if x >= 0:
            s = ss[x]
            if s & 3 == 0:
                refs[nrefs] = <int32_t>(s >> 2)
                nrefs += 1
                continue
            if s == S_NULL:
                continue
            if s & 3 == 2:
                # A value pooled already (a captured method descriptor, a
                # callable read off the frame): _ref's encoding of tag 2.  No
                # session test: the shadow is this recorder's, as is its pool.
                refs[nrefs] = -<int32_t>(s >> 2) - 1
                nrefs += 1
                continue
            if s & 3 != 1 or plan.session != session:
                return -1
            ref = plan.const_refs[s >> 2]
        elif plan.session == session:
            ref = plan.static_refs[-x - 1]
        else:
            return -1
        if ref == 0:
            return -1
        refs[nrefs] = ref
        nrefs += 1
    return nrefs


cdef inline int _run_to_end(Recorder self, FrameRec *fr) except -1:
    """Run the pending segment's ops from fr.pc up to its END or terminal op
    (_run_ops, with no branch to take).  A segment already at its END (the op
    loop of the event before ran up to it) costs no call; with no call row
    open, a single RECORD and its END or the return it feeds costs not the
    loop's set-up either (_single_row, the cheaper writer for that shape),
    nor, with no per-row hooks, another straight-line one (_straight_ops:
    fib's segment before its second call), _run_ops going on only from an op
    that writer does not take."""
    cdef int32_t *op
    if fr.pending < 0:
        return 0
    op = fr.plan.ops + fr.pc * OP_WORDS
    if not _runs_on(op[OP_CODE]):
        # At its END or terminal op already: the run would stop at once.
        if TRACER_EVENT_LOG:
            _log_segment(fr, fr.pc, fr.pc, "to end")
        return 0
    if fr.open_row < 0:
        if op[OP_CODE] == M_RECORD and _single_row_at_return(op[OP_WORDS + OP_CODE]):
            if _single_row(self, fr, op):
                return 0
        elif op[OP_CODE] == M_SET and (fr.hooks & ~<uint32_t>ROW_NEUTRAL_HOOKS) == 0 \
                and not _runs_on(_straight_ops(self, fr)):
            # (only a segment that sets up a call's callable, fib's before its
            # second call: segments of other shapes (stores, methods) stop the
            # writer part-way more often than not, and the loop then costs twice)
            return 0
    _run_ops(self, fr, -1, -1, -1)
    return 0


# _run_ops's go_on_to for an event at the terminal op of the segment a branch
# leads to (a PY_RETURN, a JUMP): the run goes on to that segment's end.
cdef enum:
    RUN_ON = -2


cdef inline bint _single_row_at_return(int32_t next_opc) noexcept:
    # Whether a RECORD followed by op `next_opc` is a segment _single_row writes:
    # its END, or the RETURN_VALUE it feeds (the return-event case: fib's `+`
    # after its second call, whose result the PY_RETURN hands over, READ_RETURNED;
    # the loop stops at M_RETURN as at M_END, leaving fr.pc there).
    return next_opc == M_END or next_opc == M_RETURN


cdef inline int32_t _row_room(Recorder self, Trace t, FrameRec *fr, int32_t *r, int64_t *ss) noexcept:
    """The first half of a one-row commit (_single_row, aftercall.pxi's
    _bool_row, _straight_ops): room checked for record `r`'s row (no growth
    here; below zcap, so its aux and flags are 0 already: zeroed ahead if
    not) and its input refs written past the refs in use (_row_inputs); the
    new refs count, or -1 with nothing committed (the columns must grow, an
    input to pool first): the caller leaves the row to the general path.
    (`t` is self.trace, borrowed: no reference taken per row.)"""
    if t.nrefs + r[REC_NIN] > t.refcap:
        return -1
    if _rare(t.n + 2 >= t.zcap):
        if t.n + 2 >= t.cap or t.external:
            return -1
        t._zero_ahead(t.n + 3)
    return _row_inputs(fr.plan, self.session, r, ss, t.refs_, t.nrefs)


cdef inline void _commit_row(Trace t, FrameRec *fr, int32_t *op, int32_t *r, int64_t *ss,
                             int32_t nrefs, PyObject *v) noexcept:
    """The second half: record `r`'s row (op `op`, value `v`, its refs up to
    `nrefs` written by _row_room) committed as _run_ops's loop writes a
    primitive's, its result's shadow slot set, and fr.pc moved past the op."""
    cdef int32_t row = t.n
    t.parent_[row] = fr.call_row
    t.offset_[row] = op[OP_OFFSET]
    t.value_[row] = _row_value(t.value_policy, v)
    t.ref_start_[row + 1] = nrefs
    t.kind_[row] = K_SPECIAL if r[REC_SEM] == R_SPECIAL else K_PRIMITIVE
    t.n = row + 1   # (aux and flags: 0 already below zcap, _row_room)
    t.nrefs = nrefs
    ss[r[REC_INPUTS + r[REC_NIN]]] = (<int64_t>row) << 2
    fr.pc += 1


cdef bint _single_row(Recorder self, FrameRec *fr, int32_t *op) noexcept:
    """The pending segment is RECORD `op` and its END or return (a result read where the
    instruction that consumes it waits: nbody's `b1[3] -= dx * m2` before its
    STORE_SUBSCR, the `+` before `** -1.5`): its row written as _run_ops's loop
    writes a primitive's, without the loop's set-up (its prologue, the columns
    opened into locals, its epilogue: ~2/3 of such a run).  False, with nothing
    written, wherever the loop would not write the row itself (per-row hooks, a
    call's row open, not one result, an input to pool first) or the columns
    must grow first: _run_ops's then.  Under call filters alone (tracer.ppl's
    contexts: _run_ops's `filtered`), a row whose callee a filter names is
    left to _run_ops too (its hooks run there: _recorded)."""
    cdef CPlan *plan = fr.plan
    cdef int32_t *r = plan.recs + op[OP_A]
    cdef Trace t = self.trace
    cdef int32_t nrefs, ref
    cdef int64_t *ss
    cdef PyObject *callee
    cdef uint32_t row_hooks = fr.hooks & ~<uint32_t>ROW_NEUTRAL_HOOKS
    cdef bint filtered = False
    if row_hooks != 0:
        if (row_hooks & ~<uint32_t>ROW_FILTER_HOOKS) != 0 or fr.subst_pc >= 0 \
                or not ROWS_UNDER_FILTERS:
            return False
        filtered = fr.filters != NULL and (fr.hooks & H_FILTERED) != 0
    if fr.open_row >= 0 or r[REC_NOUT] != 1:
        return False
    ss = _locals(self, fr) + plan.nlocalsplus
    nrefs = _row_room(self, t, fr, r, ss)
    if nrefs < 0:
        return False
    if filtered:
        # _row_filtered's question before the row is committed: an operator's
        # static callee, or a call's first input (its refs are written from
        # t.nrefs on, not yet counted)
        if r[REC_SEM] == R_OP or r[REC_SEM] == R_SPECIAL:
            if not _static_unfiltered(fr, r):
                return False
        else:
            callee = NULL
            if nrefs > t.nrefs:
                ref = t.refs_[t.nrefs]
                callee = t.value_[ref] if ref >= 0 else PyList_GET_ITEM(t.pool, -ref - 1)
            if _match(<CallFilter>fr.filters, callee) >= 0:
                return False
    if TRACER_EVENT_LOG:
        _log_segment(fr, fr.pc, fr.pc + 1, "to end")
    _commit_row(t, fr, op, r, ss, nrefs, _deferred_value(self, fr, op) if op[OP_C] else
                tracer_frame_local(fr.frame, plan.nlocalsplus + r[REC_INPUTS + r[REC_NIN]]))
    return True


cdef int32_t _straight_ops(Recorder self, FrameRec *fr) noexcept:
    """The pending segment run from fr.pc as _run_ops's loop runs it, without
    the loop's set-up (its budget and hook tests, the columns opened into
    locals, the branch machinery), while its ops are straight-line ones this
    writer knows: SET, LOAD_LOCAL, LOAD_CONST, COPY, SWAP, CAPTURE with its
    callable in _pool_ref's cache, and RECORDs of one result, each row written
    by _row_room and _commit_row as _single_row writes it.  fib's segment
    before its second call (SET, SET, LOAD_LOCAL, LOAD_CONST, RECORD `n - 2`,
    CAPTURE, END) is the shape it is for.  Returns the op it stopped at, with
    fr.pc there and every op before it done (rows committed): its END or
    terminal op (not _runs_on: where _run_ops would stop), or an op it does not
    take (a value carried in, a callable to pool, a row that needs the columns
    grown or an input pooled, a store...), from which _run_ops goes on.  Only
    with no per-row hooks and no call row open (the callers ask)."""
    cdef CPlan *plan = fr.plan
    cdef int32_t pc = fr.pc, first = fr.pc
    cdef int32_t *op = plan.ops + pc * OP_WORDS
    cdef int64_t *sl = _locals(self, fr)
    cdef int64_t *ss = sl + plan.nlocalsplus
    cdef int32_t *r
    cdef int32_t opc, nrefs
    cdef int64_t s
    cdef PyObject *v
    cdef size_t cache_at
    while True:
        opc = op[OP_CODE]
        if opc == M_LOAD_LOCAL:
            s = sl[op[OP_B]]
            if s == S_UNKNOWN and (op[OP_C] & LF_SAFE):
                break   # (a value carried in: _carried, the loop's)
            ss[op[OP_A]] = s
        elif opc == M_LOAD_CONST:
            ss[op[OP_A]] = ((<int64_t>op[OP_B]) << 2) | 1
        elif opc == M_SET:
            ss[op[OP_A]] = SPECIAL_SHADOW[op[OP_B]]
        elif opc == M_RECORD:
            r = plan.recs + op[OP_A]
            if r[REC_NOUT] != 1:
                break
            nrefs = _row_room(self, self.trace, fr, r, ss)
            if nrefs < 0:
                break
            fr.pc = pc
            _commit_row(self.trace, fr, op, r, ss, nrefs,
                        _deferred_value(self, fr, op) if op[OP_C] else
                        tracer_frame_local(fr.frame, plan.nlocalsplus + r[REC_INPUTS + r[REC_NIN]]))
        elif opc == M_CAPTURE:
            v = tracer_frame_local(fr.frame, plan.nlocalsplus + op[OP_A])
            cache_at = _pool_home(v)
            if v == NULL or self.pool_cache_obj[cache_at] != v:
                break   # (_capture pools it, or finds it away from home: the loop's)
            ss[op[OP_A]] = ((<int64_t>(-self.pool_cache_ref[cache_at] - 1)) << 2) | 2
        elif opc == M_COPY:
            ss[op[OP_A]] = ss[op[OP_B]]
        elif opc == M_SWAP:
            s = ss[op[OP_A]]
            ss[op[OP_A]] = ss[op[OP_B]]
            ss[op[OP_B]] = s
        else:
            break   # its END or terminal op, or one for the loop
        pc += 1
        op += OP_WORDS
    if TRACER_EVENT_LOG:
        _log_segment(fr, first, pc, "to end, straight")
    fr.pc = pc
    return opc


cdef int _straight_branch(Recorder self, FrameRec *fr, int32_t branch_at, int32_t dest,
                          int32_t go_on_to) except -1:
    """_take_silent_branch's run (_run_ops(fr, branch_at, dest, go_on_to), then
    _take_branch if that could not write the branch) for a side marked
    SIDE_STRAIGHT (tracer.analysis.silent.straight_sides: the ops of the
    branch's segments and of the segment `dest` starts are all of the kinds
    _straight_ops takes): fib's `n < 2` and its silent branch, at both of its
    late runs per call (a leaf's return, the first call's event).  The ops up
    to the branch run by _straight_ops, the bool's row and the jump's written
    as the loop writes them, the segment the branch leads to started, and,
    where the loop would run on through it (go_on_to), run by _straight_ops.
    Called, not inlined, and only for a marked side: every other branch taken
    late (h's loop's) pays one test of the word it loads anyway, not this
    writer's registers (session 20's v1: h +2 instructions per node).  Where
    the writer cannot go on (per-row hooks, a call row open, a condition or an
    input to pool, no room, a value carried in, a callable to pool), the loop
    goes on from where it stopped: nothing of the branch is written twice.
    (call18's writer, session 20's gated variants: bench/RESULTS.md.)"""
    cdef CPlan *plan = fr.plan
    cdef int32_t *op
    cdef int32_t *bop
    cdef int32_t *r = NULL
    cdef int64_t *sl
    cdef int64_t *ss
    cdef int64_t c
    cdef int32_t opc, pc, nrefs, row, out = -1
    cdef bint taken
    cdef PyObject *truth
    cdef Trace t = self.trace
    if (fr.hooks & ~<uint32_t>ROW_NEUTRAL_HOOKS) != 0 or fr.open_row >= 0:
        return _branch_by_loop(self, fr, branch_at, dest, go_on_to)
    sl = _locals(self, fr)
    ss = sl + plan.nlocalsplus
    # The loads before the compare (fib's `n < 2`) here, the rest (if any) by
    # _straight_ops: a call of it costs more than the loads.
    pc = fr.pc
    fr.pc = _loads_ahead(sl, ss, plan.ops, pc)
    if TRACER_EVENT_LOG and fr.pc > pc:
        _log_segment(fr, pc, fr.pc, "to end, loads (straight)")
    op = plan.ops + fr.pc * OP_WORDS
    opc = op[OP_CODE]
    if opc != M_RECORD_BOOL and opc != M_BRANCH:
        opc = _straight_ops(self, fr)
        op = plan.ops + fr.pc * OP_WORDS
    bop = op + OP_WORDS if opc == M_RECORD_BOOL else op
    if bop[OP_CODE] != M_BRANCH or bop[OP_OFFSET] != branch_at:
        return _branch_by_loop(self, fr, branch_at, dest, go_on_to)
    if opc == M_RECORD_BOOL:
        r = plan.recs + op[OP_A]
        if r[REC_NOUT] != 1:
            return _branch_by_loop(self, fr, branch_at, dest, go_on_to)
        out = r[REC_INPUTS + r[REC_NIN]]
    # The jump's condition: a row (the bool's, written below, or another), or
    # none; a constant or a pooled value is _ref's, the loop's.
    c = ss[bop[OP_A]]
    if bop[OP_A] != out and c & 3 != 0 and not (c == S_NULL or c == S_UNKNOWN or c == S_DYN):
        return _branch_by_loop(self, fr, branch_at, dest, go_on_to)
    # Room for two rows (their aux and flags 0 already below zcap: only the
    # jump's aux is stored) and their refs.
    if t.nrefs + (r[REC_NIN] if r != NULL else 0) + 1 > t.refcap:
        return _branch_by_loop(self, fr, branch_at, dest, go_on_to)
    if _rare(t.n + 3 >= t.zcap):
        if t.n + 3 >= t.cap or t.external:
            return _branch_by_loop(self, fr, branch_at, dest, go_on_to)
        t._zero_ahead(t.n + 4)
    # The truth the instruction tested: IF_FALSE/IF_TRUE test the value,
    # IF_NONE/IF_NOT_NONE test `value is None`.
    taken = dest == bop[OP_C]
    if bop[OP_B] == 0 or bop[OP_B] == 3:
        taken = not taken
    truth = <PyObject *>(PY_TRUE if taken else PY_FALSE)
    row = t.n
    nrefs = t.nrefs
    if r != NULL:
        # The bool the branch popped was this record's result.
        nrefs = _row_inputs(plan, self.session, r, ss, t.refs_, nrefs)
        if nrefs < 0:
            return _branch_by_loop(self, fr, branch_at, dest, go_on_to)   # an input to pool first
        t.parent_[row] = fr.call_row
        t.offset_[row] = op[OP_OFFSET]
        t.value_[row] = _immortal_value(t.value_policy, truth)
        t.ref_start_[row + 1] = nrefs
        t.kind_[row] = K_SPECIAL if r[REC_SEM] == R_SPECIAL else K_PRIMITIVE
        ss[out] = (<int64_t>row) << 2
        row += 1
        c = ss[bop[OP_A]]
    if c & 3 == 0:
        t.refs_[nrefs] = <int32_t>(c >> 2)
        nrefs += 1
    t.parent_[row] = fr.call_row
    t.offset_[row] = branch_at
    t.aux_[row] = dest
    t.value_[row] = _immortal_value(t.value_policy, truth)
    t.ref_start_[row + 1] = nrefs
    t.kind_[row] = K_JUMP
    t.n = row + 1
    t.nrefs = nrefs
    if TRACER_EVENT_LOG:
        _log_segment(fr, fr.pc, fr.pc + (2 if r != NULL else 1), "to end, branch taken (straight)")
    pc = plan.seg_from[dest >> 1]
    if pc < 0:
        fr.pending = P_LOST
        return 0
    fr.pending = pc
    fr.pc = pc
    if go_on_to != RUN_ON and (go_on_to < 0 or plan.seg_end[pc] != go_on_to):
        if _guards_start(plan, pc):
            # (3.12: a compare ends it, checked before it runs)
            _compare_guard(self, fr, plan.cmp_guard[pc])
        return 0
    # On through the segment the branch leads to, as the loop runs on (its ops
    # _straight_ops's by their kinds: the loop only from an op it stopped at);
    # its leading loads here (a leaf's `return n`).
    fr.pc = _loads_ahead(sl, ss, plan.ops, pc)
    if TRACER_EVENT_LOG and fr.pc > pc:
        _log_segment(fr, pc, fr.pc, "to end, loads (straight)")
    if _runs_on(plan.ops[fr.pc * OP_WORDS + OP_CODE]) and _runs_on(_straight_ops(self, fr)):
        _run_ops(self, fr, -1, -1, -1)
    return 0


cdef inline int32_t _loads_ahead(int64_t *sl, int64_t *ss, int32_t *ops, int32_t pc) noexcept:
    # The LOAD_LOCAL and LOAD_CONST ops from op `pc` on, run on the shadows as
    # _straight_ops runs them; the index of the first op that is not one, or a
    # load of a value carried in (_carried's, the loop's).  (An index kept, not
    # found from a pointer afterwards: _pc_at's division cost ~10 a run.)
    cdef int64_t s
    cdef int32_t *op = ops + pc * OP_WORDS
    while True:
        if op[OP_CODE] == M_LOAD_LOCAL:
            s = sl[op[OP_B]]
            if s == S_UNKNOWN and (op[OP_C] & LF_SAFE):
                return pc
            ss[op[OP_A]] = s
        elif op[OP_CODE] == M_LOAD_CONST:
            ss[op[OP_A]] = ((<int64_t>op[OP_B]) << 2) | 1
        else:
            return pc
        op += OP_WORDS
        pc += 1


# _take_silent_branch calls _straight_branch through this pointer: gcc inlines a
# static function called once, and inlined there the writer's registers were
# saved and restored on every branch taken late (h's loop's, never marked:
# +1.3 instructions per node on 3.13).  (Set once, below; gcc cannot see
# through it.)  Its type says noexcept, the writer is `except -1`: the caller
# returns what it returns without a check of its own (a tail call), and its
# -1, the exception set, is checked by _take_silent_branch's callers.
ctypedef int (*_writer_fn)(Recorder, FrameRec *, int32_t, int32_t, int32_t) noexcept
cdef _writer_fn _straight_writer
_straight_writer = <_writer_fn>_straight_branch


cdef int _branch_by_loop(Recorder self, FrameRec *fr, int32_t branch_at, int32_t dest,
                         int32_t go_on_to) except -1:
    # _take_silent_branch's general run, from fr.pc (where _straight_branch
    # stopped, every op before it done).
    if not _run_ops(self, fr, branch_at, dest, go_on_to):
        _take_branch(self, fr, branch_at, dest)
    return 0


cdef inline PyObject *_immortal_value(int policy, PyObject *v) noexcept:
    """_row_value for None, True or False: immortal on every Python tracer
    supports (3.12+, PEP 683), so with no policy the row holds it without a
    reference counted (a decref of an immortal object changes nothing).  Every
    policy keeps them too, so `policy` changes nothing in what is stored; but a
    test of it with a call behind it stays: without one (session 27) gcc laid
    the op loop out otherwise, and words took 7 % longer with every value kept
    (4.2-4.4x against 3.9-4.1x untraced), with fewer instructions; with
    _policy_value behind it, fib under a policy took 6 % longer."""
    if policy and v != <PyObject *>None and v != <PyObject *>PY_TRUE and v != <PyObject *>PY_FALSE:
        return _policy_value_slow(policy, v)   # (never: `v` is one of them)
    return v


cdef extern from *:
    """
    #define TRACER_PC_AT(ops, op) ((int32_t)(((op) - (ops)) / __pyx_e_6tracer_5_core_OP_WORDS))
    """
    # The index of op `op` in `ops` (a C division by the constant OP_WORDS).
    int32_t _pc_at "TRACER_PC_AT"(int32_t *ops, int32_t *op) noexcept


cdef int _run_ops(Recorder self, FrameRec *fr, int32_t branch_at, int32_t dest,
                  int32_t go_on_to) except -1:
    """Run the pending segment's ops from fr.pc up to its END or terminal op;
    1 if it took the conditional jump at offset `branch_at` to `dest` on the way.

    The hot path: the same as _run(fr, -1, False), as one switch per op.  In a
    frame whose context has no per-row hooks (`fast`), the rows of primitive ops
    and silent jumps are written here, through column pointers and counts held
    in locals, into room reserved once for the whole run at its first row; any
    other op that writes rows goes through _record and friends, after which the
    columns are opened again (`reopen`: they may have grown and moved).

    `branch_at` >= 0: the segment ends in the conditional jump at that offset,
    which the event being handled showed going to `dest` (a silent branch taken
    late, _take_silent_branch, or a BRANCH event).  Its rows (the bool it popped,
    if a RECORD_BOOL, and the jump) are written here as _take_branch writes them,
    and the segment it leads to is started; for an INSTRUCTION event at offset
    `go_on_to` (>= 0) that this segment ends at, its ops run in the same loop:
    one run where there were two, with _take_branch between.  A FOR_ITER at
    `branch_at` (the loop's BRANCH event) is taken the same way: its rows by
    _loop_rows, the segment it leads to started.  When not fast, or anything
    else stands in the way (a generator resumed under the FOR_ITER: its row is
    open), the run stops before the branch and returns 0: the caller's
    _take_branch or _for_iter writes it.
    """
    cdef CPlan *plan = fr.plan
    cdef int32_t *ops = plan.ops
    cdef int32_t *op
    cdef int32_t *bop
    cdef int32_t *r
    # The op's index is not kept in the loop (one live value and an add per op
    # fewer): fr.pc is set from `op` where a call out or the run's end needs it.
    cdef int32_t pc = fr.pc
    cdef int32_t opc, nin, row, kind
    cdef int64_t *sl = _locals(self, fr)
    cdef int64_t *ss = sl + plan.nlocalsplus
    # The frame's fast locals and its value stack past them (tracer_frame_local's
    # and tracer_frame_stack_item's slots: the plan's nlocalsplus is its code's),
    # found once per run: the frame stays where it is while its event is handled.
    cdef PyObject **fl = <PyObject **>(<char *>fr.frame + tracer_localsplus_offset)
    cdef PyObject **fs = fl + plan.nlocalsplus
    cdef int32_t c
    cdef int64_t s
    cdef PyObject *v
    cdef PyObject *truth
    cdef bint taken
    cdef int32_t first = pc
    cdef int policy = self.trace.value_policy
    cdef int64_t session = self.session
    cdef int32_t call_row = fr.call_row
    cdef uint32_t row_hooks = fr.hooks & ~<uint32_t>ROW_NEUTRAL_HOOKS
    cdef bint fast = row_hooks == 0
    # Under filters alone (no substitution pending: it is set only between
    # runs), the rows are written here too, and each row whose callee a filter
    # names then gets its hooks (_recorded) as _record_primitive gives them.
    cdef bint filtered = False
    cdef bint reopen = True   # the columns are opened at the run's first row
    # A run that takes a branch writes the rows of two runs and the branch's.
    cdef int32_t budget_rows = plan.run_rows if branch_at < 0 else plan.branch_run_rows
    cdef int32_t budget_refs = plan.run_refs if branch_at < 0 else plan.branch_run_refs
    # The columns, in locals: never through a pointer to a struct that escapes,
    # so that stores into them do not make the compiler reload the counts.  No
    # flags column: every row written here has flags 0, and a primitive's aux 0,
    # which open_rows's room holds already (Trace.zcap): neither is stored.
    cdef Rows w
    cdef uint8_t *kinds
    cdef int32_t *parents
    cdef int32_t *offsets
    cdef int32_t *auxes
    cdef int32_t *ref_starts
    cdef PyObject **values
    cdef int32_t *refs
    cdef int32_t n, nrefs, next_refs
    cdef size_t cache_at
    if not fast and (row_hooks & ~<uint32_t>ROW_FILTER_HOOKS) == 0 and fr.subst_pc < 0 \
            and ROWS_UNDER_FILTERS:
        fast = True
        filtered = fr.filters != NULL and (fr.hooks & H_FILTERED) != 0
    # `op` walks the ops (its index: _pc_at, where needed).
    op = ops + pc * OP_WORDS
    while True:
        opc = op[OP_CODE]
        # Loads come in runs before a record: they are taken in a loop of plain
        # conditional branches, which the CPU predicts from the segment's
        # pattern, instead of one trip each through the switch's single
        # indirect jump.
        while opc == M_LOAD_LOCAL or opc == M_LOAD_CONST:
            if opc == M_LOAD_LOCAL:
                s = sl[op[OP_B]]
                if s == S_UNKNOWN and (op[OP_C] & LF_SAFE):
                    fr.pc = _pc_at(ops, op)
                    s = _carried(self, fr, op)
                    reopen = True
                ss[op[OP_A]] = s
            else:
                ss[op[OP_A]] = ((<int64_t>op[OP_B]) << 2) | 1
            op += OP_WORDS
            opc = op[OP_CODE]
        # One comparison per case on a C variable: Cython emits a switch.
        if opc == M_RECORD:
            r = plan.recs + op[OP_A]
            if fast and fr.open_row < 0 and r[REC_NOUT] == 1:
                # _record_primitive's row (_primitive_row), written here.  Its
                # result went to a local or is returned (tracer.plan.deferral), or
                # is on the stack.
                if reopen:
                    self.trace.open_rows(&w, budget_rows, budget_refs)
                    kinds, parents, offsets = w.kind, w.parent, w.offset
                    auxes, ref_starts, values, refs = w.aux, w.ref_start, w.value, w.refs
                    n, nrefs = w.n, w.nrefs
                    reopen = False
                nin = r[REC_NIN]
                # The result: on the stack, or deferred (_deferred_value: in the
                # local the next instruction stored it in, or returned).
                c = op[OP_C]
                if c == 0:
                    v = fs[r[REC_INPUTS + nin]]
                elif c > 0:
                    v = fl[c - 1]
                    if v == NULL:
                        v = <PyObject *>UNKNOWN
                else:
                    v = _deferred_value(self, fr, op)
                next_refs = _row_inputs(plan, session, r, ss, refs, nrefs)
                if next_refs >= 0:
                    nrefs = next_refs
                    row = n
                    parents[row] = call_row
                    offsets[row] = op[OP_OFFSET]
                    values[row] = _row_value(policy, v)
                    ref_starts[row + 1] = nrefs
                    kinds[row] = K_SPECIAL if r[REC_SEM] == R_SPECIAL else K_PRIMITIVE
                    n = row + 1
                    self.trace.n = n
                    self.trace.nrefs = nrefs
                    ss[r[REC_INPUTS + nin]] = (<int64_t>row) << 2
                    if filtered and _row_filtered(self, fr, r, row):
                        # (the value's stack slot, or -1 for a deferred one, as
                        # _record_primitive gives it)
                        fr.pc = _pc_at(ops, op)
                        _recorded(self, fr, r, row, -1 if op[OP_C] else r[REC_INPUTS + nin],
                                  plan.rec_iv[op[OP_A]])
                        reopen = True
                else:
                    # An input to pool first (a constant's first use in this trace).
                    # (A value on the stack is read there again: a filter's
                    # override replaces it in its slot.)
                    fr.pc = _pc_at(ops, op)
                    _record_primitive(self, fr, r, v if op[OP_C] else NULL)
                    reopen = True
            elif _rare(fast and fr.open_row < 0 and r[REC_NOUT] == 0):
                # An op with no result (a store into a subscript, a slice or an
                # attribute, a delete): _record's row, value None.
                if reopen:
                    self.trace.open_rows(&w, budget_rows, budget_refs)
                    kinds, parents, offsets = w.kind, w.parent, w.offset
                    auxes, ref_starts, values, refs = w.aux, w.ref_start, w.value, w.refs
                    n, nrefs = w.n, w.nrefs
                    reopen = False
                next_refs = _row_inputs(plan, session, r, ss, refs, nrefs)
                if next_refs >= 0:
                    nrefs = next_refs
                    row = n
                    parents[row] = call_row
                    offsets[row] = op[OP_OFFSET]
                    values[row] = _immortal_value(policy, <PyObject *>None)
                    ref_starts[row + 1] = nrefs
                    kinds[row] = K_SPECIAL if r[REC_SEM] == R_SPECIAL else K_PRIMITIVE
                    n = row + 1
                    self.trace.n = n
                    self.trace.nrefs = nrefs
                else:
                    fr.pc = _pc_at(ops, op)
                    _record(self, fr, op[OP_A], NULL)
                    reopen = True
            else:
                # (a READ_STORED record's outputs: _record reads them from their locals)
                fr.pc = _pc_at(ops, op)
                _record(self, fr, op[OP_A], NULL,
                        _deferred_value(self, fr, op) if op[OP_C] and op[OP_C] != READ_STORED
                        else NULL)
                reopen = True
        elif opc == M_STORE_LOCAL:
            s = ss[op[OP_A]]
            if s & 3 != 0:
                fr.pc = _pc_at(ops, op)
                s = _stored(self, fr, s, op[OP_B], op[OP_C], op[OP_OFFSET])
                reopen = True
            sl[op[OP_B]] = s
        elif opc == M_SILENT_JUMP:
            if fast:
                # _jump_row's row, unconditional.
                if reopen:
                    self.trace.open_rows(&w, budget_rows, budget_refs)
                    kinds, parents, offsets = w.kind, w.parent, w.offset
                    auxes, ref_starts, values, refs = w.aux, w.ref_start, w.value, w.refs
                    n, nrefs = w.n, w.nrefs
                    reopen = False
                row = n
                parents[row] = call_row
                offsets[row] = op[OP_OFFSET]
                auxes[row] = op[OP_C]
                values[row] = _immortal_value(policy, <PyObject *>None)
                ref_starts[row + 1] = nrefs
                kinds[row] = K_JUMP
                n = row + 1
                self.trace.n = n
            else:
                fr.pc = _pc_at(ops, op)
                _jump_row(self, fr, op[OP_OFFSET], op[OP_C], S_NULL, <PyObject *>None)
        elif opc == M_SET:
            ss[op[OP_A]] = SPECIAL_SHADOW[op[OP_B]]
        elif opc == M_DELETE_LOCAL:
            sl[op[OP_A]] = S_UNKNOWN
        elif opc == M_COPY:
            ss[op[OP_A]] = ss[op[OP_B]]
        elif opc == M_SWAP:
            s = ss[op[OP_A]]
            ss[op[OP_A]] = ss[op[OP_B]]
            ss[op[OP_B]] = s
        elif opc == M_CAPTURE:
            # A callable read off the stack (a global function, a builtin):
            # inline when _pool_ref's cache has it (captured before in this
            # trace), as _capture gives it; else _capture pools it.
            v = fs[op[OP_A]]
            cache_at = _pool_home(v)
            if v != NULL and self.pool_cache_obj[cache_at] == v:
                ss[op[OP_A]] = ((<int64_t>(-self.pool_cache_ref[cache_at] - 1)) << 2) | 2
            else:
                ss[op[OP_A]] = _capture(self, fr, op[OP_A])
        elif opc == M_CAPTURE_METHOD:
            # A method and its self (`word.lower`): inline in the common case,
            # both there, the self's shadow known and the method in _pool_ref's
            # cache, where _capture_method would write the method's pool ref
            # and leave the self's shadow as it is.
            v = fs[op[OP_A]]
            cache_at = _pool_home(v)
            s = ss[op[OP_B]]
            if v != NULL and self.pool_cache_obj[cache_at] == v and s != S_DYN and s != S_UNKNOWN \
                    and fs[op[OP_B]] != NULL:
                ss[op[OP_A]] = ((<int64_t>(-self.pool_cache_ref[cache_at] - 1)) << 2) | 2
            else:
                _capture_method(self, fr, op[OP_A], op[OP_B])
        elif (opc == M_RECORD_BOOL or opc == M_BRANCH) and branch_at >= 0:
            # The branch the event showed taken: _take_branch's rows, written here.
            bop = op + OP_WORDS if opc == M_RECORD_BOOL else op
            if not fast or fr.open_row >= 0 or bop[OP_CODE] != M_BRANCH \
                    or bop[OP_OFFSET] != branch_at:
                break
            if filtered and opc == M_RECORD_BOOL and \
                    not _static_unfiltered(fr, plan.recs + op[OP_A]):
                break   # a row a filter may name: _take_branch's
            # The truth the instruction tested: IF_FALSE/IF_TRUE test the value,
            # IF_NONE/IF_NOT_NONE test `value is None`.
            taken = dest == bop[OP_C]
            kind = bop[OP_B]
            if kind == 0 or kind == 3:
                taken = not taken
            truth = <PyObject *>(PY_TRUE if taken else PY_FALSE)
            if reopen:
                self.trace.open_rows(&w, budget_rows, budget_refs)
                kinds, parents, offsets = w.kind, w.parent, w.offset
                auxes, ref_starts, values, refs = w.aux, w.ref_start, w.value, w.refs
                n, nrefs = w.n, w.nrefs
                reopen = False
            if opc == M_RECORD_BOOL:
                # The bool the branch popped was this record's result.
                r = plan.recs + op[OP_A]
                next_refs = _row_inputs(plan, session, r, ss, refs, nrefs)
                if next_refs < 0:
                    break   # an input to pool first: nothing written, _take_branch's
                nrefs = next_refs
                row = n
                parents[row] = call_row
                offsets[row] = op[OP_OFFSET]
                values[row] = _immortal_value(policy, truth)
                ref_starts[row + 1] = nrefs
                kinds[row] = K_SPECIAL if r[REC_SEM] == R_SPECIAL else K_PRIMITIVE
                n = row + 1
                self.trace.n = n
                self.trace.nrefs = nrefs
                ss[r[REC_INPUTS + r[REC_NIN]]] = (<int64_t>row) << 2
            s = ss[bop[OP_A]]
            if s & 3 == 0:
                refs[nrefs] = <int32_t>(s >> 2)
                nrefs += 1
            elif s != S_NULL and s != S_UNKNOWN and s != S_DYN:
                # (_ref pools a constant: the pool, never the columns)
                refs[nrefs] = _ref(self, fr, s)
                nrefs += 1
            row = n
            parents[row] = call_row
            offsets[row] = branch_at
            auxes[row] = dest
            values[row] = _immortal_value(policy, truth)
            ref_starts[row + 1] = nrefs
            kinds[row] = K_JUMP
            n = row + 1
            self.trace.n = n
            self.trace.nrefs = nrefs
            if TRACER_EVENT_LOG:
                _log_segment(fr, first, _pc_at(ops, op) + 1, "to end, branch taken")
            branch_at = -1
            pc = plan.seg_from[dest >> 1]
            if pc < 0:
                fr.pending = P_LOST
                return 1
            fr.pending = first = pc
            if go_on_to != RUN_ON and (go_on_to < 0 or plan.seg_end[pc] != go_on_to):
                fr.pc = pc
                if _guards_start(plan, pc):
                    # (3.12: a compare ends it, checked before it runs)
                    _compare_guard(self, fr, plan.cmp_guard[pc])
                return 1
            op = ops + pc * OP_WORDS
            continue   # the next segment, up to the event's instruction
        else:
            break  # END or a terminal op, left for the caller
        op += OP_WORDS
    if TRACER_EVENT_LOG:
        _log_segment(fr, first, _pc_at(ops, op), "to end")
    fr.pc = _pc_at(ops, op)
    if opc == M_FOR_ITER and op[OP_OFFSET] == branch_at and fast and fr.open_row < 0 \
            and (not filtered or _static_unfiltered(fr, plan.recs + op[OP_A])):
        # The loop's BRANCH event, or a silent loop's (op's b > 0) first event
        # past it (_take_silent_branch): _for_iter's rows, written by
        # _loop_rows, and the segment the FOR_ITER leads to started.  (After the
        # loop, not in it: the loop's registers stay the common case's; the
        # segment a silent loop leads to is run by the caller, as the event
        # asks.)  A generator resumed under the FOR_ITER opened its row
        # (fr.open_row): _for_iter's.
        if _loop_rows(self, fr, op, dest, policy):
            _start_segment(self, fr, plan.seg_from[dest >> 1])
            return 1
    return branch_at < 0 and dest >= 0


cdef bint _no_result_row(Recorder self, FrameRec *fr, int32_t *r, int32_t offset,
                         int policy) except -1:
    """The row of record `r`, an op with no result that ran without a nested
    call (no per-row hooks), as _record writes it: inputs, value None.  False,
    with nothing written, if an input must be pooled first (_record's then)."""
    cdef Rows w
    cdef int32_t nrefs
    self.trace.open_rows(&w, 1, r[REC_NIN])
    nrefs = _row_inputs(fr.plan, self.session, r, _stack(self, fr), w.refs, w.nrefs)
    if nrefs < 0:
        return False
    w.nrefs = nrefs
    _rows_add(self.trace, &w, K_SPECIAL if r[REC_SEM] == R_SPECIAL else K_PRIMITIVE, 0,
              fr.call_row, offset, 0, _row_value(policy, <PyObject *>None))
    return True


cdef bint _loop_rows(Recorder self, FrameRec *fr, int32_t *op, int32_t dest, int policy) except -1:
    """FOR_ITER `op` at its BRANCH event to `dest`, no frame run under it and no
    per-row hooks: its rows as _for_iter writes them.  Going on, FOR_ITER pushed
    the next value above the iterator (its record's output slot, live at this
    event): the next value's row, then the jump's; exhausted, it popped the
    iterator, whose shadow is still the jump's condition: the jump's alone.
    False, with nothing written, if an input must be pooled first."""
    cdef CPlan *plan = fr.plan
    cdef int32_t *r = plan.recs + op[OP_A]
    cdef int64_t *ss = _stack(self, fr)
    cdef int64_t it = ss[r[REC_INPUTS]]
    cdef int32_t nin = r[REC_NIN], nrefs, row
    cdef PyObject *truth = <PyObject *>PY_FALSE
    cdef Rows w
    if r[REC_NOUT] != 1:
        return False
    self.trace.open_rows(&w, 2, nin + 1)
    if dest == op[OP_C]:
        nrefs = _row_inputs(plan, self.session, r, ss, w.refs, w.nrefs)
        if nrefs < 0:
            return False
        w.nrefs = nrefs
        row = _rows_add(self.trace, &w, K_SPECIAL if r[REC_SEM] == R_SPECIAL else K_PRIMITIVE, 0,
                        fr.call_row, op[OP_OFFSET], 0,
                        _row_value(policy, _loop_value(fr, op, r[REC_INPUTS + nin])))
        ss[r[REC_INPUTS + nin]] = (<int64_t>row) << 2
        truth = <PyObject *>PY_TRUE
    _put_jump(self, fr, self.trace, &w, op[OP_OFFSET], dest, it, truth, policy)
    return True


cdef PyObject *_loop_value(FrameRec *fr, int32_t *op, int32_t slot) noexcept:
    # A FOR_ITER's next value: an evented loop's off the stack (`slot`, live at
    # its BRANCH event); a silent loop's (b > 0: tracer.analysis.silent), at the
    # frame's first event past the FOR_ITER, from local b - 1, where the body's
    # first instruction stored it and nothing in the body's segment assigns it
    # again.  Unbound after all (a debugger rewrote the frame's locals): never
    # the stack slot, which the value has left.  (Not inline, one call for both:
    # the op loop that inlines _loop_rows keeps its size, and on 3.12 gcc keeps
    # _row_inputs inlined in it.)
    cdef PyObject *v
    if op[OP_B] <= 0:
        return tracer_frame_stack_item(fr.frame, slot)
    v = tracer_frame_local(fr.frame, op[OP_B] - 1)
    if v == NULL:
        return <PyObject *>UNKNOWN
    return v


cdef int64_t _carried(Recorder self, FrameRec *fr, int32_t *op) except? -1:
    # A local read before the recorder saw it stored (a generator resumed, a
    # resync): its current value enters as a carried ArgumentNode.
    cdef int32_t b = op[OP_B]
    cdef PyObject *v = _frame_local(self, fr, b, op[OP_C])
    cdef int64_t s
    if v == NULL:
        return S_UNKNOWN
    if fr.hooks & H_SNAP_ANY:
        v = _kept(self, fr, v)
    cdef int32_t row = self.trace.add_row(K_ARGUMENT, F_CARRIED, fr.call_row,
                                          op[OP_OFFSET], -b - 1, v)
    s = (<int64_t>row) << 2
    _locals(self, fr)[b] = s
    _run_node_hook(self, fr, row)
    return s


cdef inline PyObject *_deferred_value(Recorder self, FrameRec *fr, int32_t *op) noexcept:
    # A RECORD's result read back from the local the next instruction stored it
    # in (the plan checked that nothing in the segment assigns that local again),
    # or the value the PY_RETURN being handled returns (tracer.plan.deferral).
    cdef PyObject *v = tracer_frame_local(fr.frame, op[OP_C] - 1) if op[OP_C] > 0 \
        else self.returning
    if v == NULL:
        # Unbound after all (a debugger rewrote the frame's locals): never fall
        # back to the stack slot, which the value has left.
        return <PyObject *>UNKNOWN
    return v


cdef int32_t _executing(Recorder self, FrameRec *fr) noexcept:
    """The offset of the instruction fr's frame is executing (suspended in)."""
    cdef int32_t lasti = tracer_frame_lasti(fr.frame)
    if 0 <= lasti < 2 * fr.plan.nunits:
        return fr.plan.istart[lasti >> 1]
    return -1


cdef int _run(Recorder self, FrameRec *fr, int32_t stop_offset, bint before_record) except -1:
    """Run the pending segment's ops from fr.pc up to instruction `stop_offset`.

    That instruction is executing now (it raised, or it started a Python frame):
    the ops of the instructions before it in the segment are replayed, including
    records whose result went to a local or waits on the stack.  Stops at its first op, and anyway at
    a RECORD that reads the stack, an END or a terminal op (left for the
    caller); with `before_record` also before any stack capture.  Offsets grow
    along each straight-line piece of a segment (pieces are joined by silent
    jumps), so the stop is the first op at or after `stop_offset` in the piece
    that holds it.  Events at a segment's end use _run_to_end instead.
    """
    cdef int32_t *op
    cdef int32_t opc, a, b
    cdef int32_t *lo = fr.plan.piece_start
    cdef int64_t *sl = _locals(self, fr)
    cdef int64_t *ss = _stack(self, fr)
    cdef int64_t s
    if fr.pending < 0:
        return 0
    if TRACER_EVENT_LOG:
        _log_segment(fr, fr.pc, -1, f"up to offset {stop_offset}")
    while True:
        op = fr.plan.ops + fr.pc * OP_WORDS
        opc = op[OP_CODE]
        if op[OP_OFFSET] >= stop_offset and lo[fr.pc] <= stop_offset:
            return 0
        if opc == M_SILENT_JUMP:
            _jump_row(self, fr, op[OP_OFFSET], op[OP_C], S_NULL, <PyObject *>None)
            fr.pc += 1
            continue
        if opc == M_RECORD and op[OP_C] >= 0 and stop_offset >= 0 and (
                op[OP_C] > 0 or fr.plan.seg_end[fr.pc] < 0 or stop_offset < fr.plan.seg_end[fr.pc]):
            # A record before the executing instruction whose result went to a
            # local, or waits on the stack for the segment's end (plain plans: the
            # plan's later reads): no instruction since has touched its slot, and
            # the executing one (it entered a frame or raised) does not either.
            _record(self, fr, op[OP_A], NULL,
                    _deferred_value(self, fr, op) if op[OP_C] > 0 else NULL)
            fr.pc += 1
            continue
        if opc == M_RECORD and op[OP_C] == READ_STORED and stop_offset >= 0:
            # An UNPACK_SEQUENCE before the executing instruction whose outputs
            # go to locals: each from its local if its store ran, else from its
            # slot, which the executing store has not left yet (_stored_output).
            _record(self, fr, op[OP_A], NULL, NULL, stop_offset)
            fr.pc += 1
            continue
        if opc >= M_RECORD or opc == M_END:
            return 0  # its RECORD, END or terminal op is the caller's
        if before_record and (opc == M_CAPTURE or opc == M_CAPTURE_METHOD):
            return 0  # stack reads wait for the segment's end event
        a = op[OP_A]
        b = op[OP_B]
        if opc == M_LOAD_LOCAL:
            s = sl[b]
            if s == S_UNKNOWN and (op[OP_C] & LF_SAFE):
                s = _carried(self, fr, op)
            ss[a] = s
        elif opc == M_LOAD_CONST:
            ss[a] = ((<int64_t>b) << 2) | 1
        elif opc == M_SET:
            ss[a] = SPECIAL_SHADOW[b]
        elif opc == M_STORE_LOCAL:
            sl[b] = _stored(self, fr, ss[a], b, op[OP_C], op[OP_OFFSET])
        elif opc == M_DELETE_LOCAL:
            sl[a] = S_UNKNOWN
        elif opc == M_COPY:
            ss[a] = ss[b]
        elif opc == M_SWAP:
            s = ss[a]
            ss[a] = ss[b]
            ss[b] = s
        elif opc == M_CAPTURE:
            ss[a] = _capture(self, fr, a)
        elif opc == M_CAPTURE_METHOD:
            _capture_method(self, fr, a, b)
        fr.pc += 1


cdef int64_t _capture(Recorder self, FrameRec *fr, int32_t depth) except? -1:
    cdef PyObject *v = tracer_frame_stack_item(fr.frame, depth)
    if v == NULL:
        return S_NULL
    return ((<int64_t>(-_pool_ref(self, v) - 1)) << 2) | 2


cdef inline size_t _pool_home(PyObject *v) noexcept:
    # The entry v is looked for first: the address's bits 4..12 (objects are
    # 16-byte aligned), as cheap as a cache index can be.  The op loops'
    # inline captures look only there (their code as before); an object away
    # from home is found by _pool_ref, through _capture.
    return (<size_t>v >> 4) & (POOL_CACHE - 1)


cdef inline size_t _pool_away(PyObject *v) noexcept:
    # The entry v moves to when another object takes its home: a multiplicative
    # hash of the whole address, so that objects sharing a home (the allocator
    # places them at page-periodic addresses) are spread apart.  Never the home
    # itself (one object in 512 hashes there): such an object had nowhere to
    # move, so one sharing its home evicted it and it was added to the pool
    # again; the entry next to home is its away instead.
    cdef size_t away = <size_t>(((<uint64_t>v) * <uint64_t>0x9E3779B97F4A7C15ULL) >> (64 - POOL_CACHE_BITS))
    if away == _pool_home(v):
        away ^= 1
    return away


cdef inline int32_t _pool_ref(Recorder self, PyObject *v) except? -2:
    """The pool ref of a captured constant, added once per object and trace.

    A global function or a method descriptor is captured at every execution of
    its load; a small cache by address finds the entry made last time (the pool
    keeps the object alive, so its address cannot be reused meanwhile).  Each
    object has two possible entries, its home (cheap to find: every hit of the
    common case is there, inline) and an entry away from it (_pool_ref_away):
    a new object takes its home and moves the one there to that one's entry
    away.  Two hot callables that share a home then both stay cached, where a
    single entry made them evict each other on every call and the pool grew by
    an entry per capture.
    """
    cdef size_t h = _pool_home(v)
    if self.pool_cache_obj[h] == v:
        return self.pool_cache_ref[h]
    return _pool_ref_away(self, v)


cdef int32_t _pool_ref_away(Recorder self, PyObject *v) except? -2:
    # _pool_ref's rest (not inline: the hit at home stays small where it is
    # inlined): the entry away from home, else a new pool entry cached at home.
    cdef size_t h = _pool_away(v)
    cdef size_t away
    cdef PyObject *was
    cdef int32_t ref
    if self.pool_cache_obj[h] == v:
        return self.pool_cache_ref[h]
    ref = self.trace.pool_add(<object>v)
    if self.trace.value_policy and PyList_GET_ITEM(self.trace.pool, -ref - 1) != v:
        return ref   # a value policy kept something else: v may die and its address recur
    h = _pool_home(v)
    was = self.pool_cache_obj[h]
    if was != NULL:
        away = _pool_away(was)
        if away != h:   # else was sits here away from its own home: dropped
            self.pool_cache_obj[away] = was
            self.pool_cache_ref[away] = self.pool_cache_ref[h]
    self.pool_cache_obj[h] = v
    self.pool_cache_ref[h] = ref
    return ref


cdef int _capture_method(Recorder self, FrameRec *fr, int32_t a, int32_t b) except -1:
    # (callable, self) or, when the attribute is not a method, (NULL, attr) on
    # 3.12 and (attr, NULL) on 3.13.
    cdef int64_t *ss = _stack(self, fr)
    cdef PyObject *va = tracer_frame_stack_item(fr.frame, a)
    cdef PyObject *vb = tracer_frame_stack_item(fr.frame, b)
    if va == NULL:
        ss[a] = S_NULL
        ss[b] = _capture(self, fr, b)
        return 0
    ss[a] = _capture(self, fr, a)
    if vb == NULL:
        ss[b] = S_NULL
    elif ss[b] == S_DYN or ss[b] == S_UNKNOWN:
        ss[b] = _capture(self, fr, b)
    return 0


cdef int64_t _stored(Recorder self, FrameRec *fr, int64_t s, int32_t local, int32_t flags,
                     int32_t offset) except? -1:
    """The shadow of a local after storing a value whose shadow is `s`."""
    cdef int64_t tag = s & 3
    cdef PyObject *v
    if tag == 0:
        return s
    if tag == 1 or tag == 2:
        v = _shadow_value(self, fr, s)
    elif flags & LF_DYN:
        v = _frame_local(self, fr, local, flags)
    else:
        return S_UNKNOWN
    if v == NULL:
        return S_UNKNOWN
    return (<int64_t>_constant_row(self, fr, offset, local, v)) << 2


cdef int _resync(Recorder self, FrameRec *fr) except -1:
    """Forget what the shadow knows: the frame ran code the plan cannot follow."""
    cdef int32_t i
    cdef int64_t *sl = _locals(self, fr)
    for i in range(fr.plan.nlocalsplus + fr.plan.stacksize):
        sl[i] = S_UNKNOWN
    fr.open_row = -1
    return 0


cdef inline int _start_segment(Recorder self, FrameRec *fr, int32_t first_op) noexcept:
    if first_op < 0:
        fr.pending = P_LOST
    else:
        fr.pending = first_op
        fr.pc = first_op
        if _guards_start(fr.plan, first_op):
            # (3.12: a compare ends it, checked before it runs: compare312.pxi)
            _compare_guard(self, fr, fr.plan.cmp_guard[first_op])
    return 0


cdef int _carry_stack(Recorder self, FrameRec *fr, int32_t offset, uint32_t slots) except -1:
    """Values a resumed generator frame kept on its stack across the yield (an
    iterator, a `yield from` receiver, the value sent in): each slot of `slots`
    (live at the resume, by the plan's depths) enters as a carried ArgumentNode,
    numbered after the locals (aux -1 - (nlocalsplus + slot))."""
    cdef int32_t k = 0, row
    cdef int64_t *ss = _stack(self, fr)
    cdef PyObject *v
    while slots:
        if slots & 1:
            v = tracer_frame_stack_item(fr.frame, k)
            if v == NULL:
                ss[k] = S_NULL
            else:
                if fr.hooks & H_SNAP_ANY:
                    v = _kept(self, fr, v)
                row = self.trace.add_row(K_ARGUMENT, F_CARRIED, fr.call_row,
                                         offset, -(fr.plan.nlocalsplus + k) - 1, v)
                ss[k] = (<int64_t>row) << 2
                _run_node_hook(self, fr, row)
        slots >>= 1
        k += 1
    return 0


cdef inline bint _is_cell_param(Recorder self, CPlan *plan, int32_t i) noexcept:
    cdef int32_t k
    for k in range(plan.ncellparams):
        if plan.cellparams[k] == i:
            return True
    return False


cdef inline bint _ends_at(Recorder self, FrameRec *fr, int32_t offset) noexcept:
    # Whether the pending segment is the one that ends at INSTRUCTION `offset`.
    return fr.plan.seg_end[fr.pc] == offset


cdef CPlan *_cached_plan(Recorder self, object code) noexcept:
    # The plan this session's variant keeps on `code`, or NULL.
    cdef void *extra = NULL
    PyUnstable_Code_GetExtra(code, _extra_index(self.plan_mode), &extra)
    return <CPlan *>extra


cdef int32_t _unit_flags(Recorder self, FrameRec *fr, object code, int offset) noexcept:
    # The plan's JUMP_EVENT / SILENT_BRANCH bits at `offset` of `code` (followed
    # in `fr`, or by another thread), or -1 when no plan has been made for it.
    cdef CPlan *plan = fr.plan if fr != NULL else _cached_plan(self, code)
    if plan == NULL or not 0 <= offset < 2 * plan.nunits:
        return -1
    return plan.unit_flags[offset >> 1]
