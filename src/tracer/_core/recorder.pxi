# The recorder: per-frame records (FrameRec), the Recorder of one track() call,
# its frame stack and the root call.

# ---------------------------------------------------------------------------------
# The recorder

ctypedef struct FrameRec:
    void *frame
    PyObject *code        # borrowed: the frame keeps its code alive
    CPlan *plan
    int32_t code_id
    int32_t call_row      # the node whose children this activation records
    int32_t pending       # first op of the pending segment, or a P_* state
    int32_t pc            # next op of the pending segment to run
    int32_t open_row      # the recorded op opened for nested calls, or -1
    int32_t exc_row       # the row that raised the exception in flight, or -1
    int32_t shadow        # index of this frame's shadow locals, then stack
    uint8_t open_primitive  # the opened op is primitive: its calls are not recorded
    uint8_t body_may_be_callee     # the opened op is a call whose callee's body may be its own
    uint8_t callee_body_entered   # the opened op already used its first frame directly
    uint8_t body          # entered for the very function its caller's open call op names:
                          # its return is that op's result (aftercall.pxi)
    uint8_t after_call    # the pending segment's last op, a call, was completed at its
                          # body's return; control goes on at its END (aftercall.pxi)
    uint8_t plain_ret     # 1: its return may take _return_plain as far as all but room
                          # goes (no snapshot or node hook, no timing,
                          # no substitution): decided once at entry (_frame_init),
                          # cleared by a substitution (_substitute); one test per return
    int32_t ret_to        # a body whose caller has no hooks: the caller's plan's ret_to
                          # at ret_pc, copied at entry (its return completes that op), or -1
    int32_t ret_pc        # the caller's pc (its open call op) when ret_to was copied
    int32_t bool_end      # the END offset of a pending call of builtin isinstance/issubclass
                          # whose result its branch's direction gives if that END's
                          # event is off (aftercall.pxi), else 0
    PyObject *ctx         # borrowed; kept alive by Recorder.contexts
    uint32_t hooks        # the hook mask of ctx (tracer.context.Context.hook_mask)
    PyObject *filters     # borrowed: ctx's CallFilter (filters.pxi), or NULL
    int32_t subst_pc      # the op substituted at its start event, or -1
    PyObject *subst_new   # owned: the replacement callable
    PyObject *subst_orig  # owned: the callable it replaced
    PyObject *subst_args  # owned: an operator's operands (tuple), else NULL


# Entries of Recorder's cache of callee verdicts by module (_may_recur_cached), a
# power of two.  Slots of the shadow allocated past its capacity (shadow_cap):
# _shadow_fill writes a frame's slots four at a time, past its last.
cdef enum:
    VERDICT_CACHE = 64
    SHADOW_SLACK = 4


@cython.final
cdef class Recorder:
    """Drives one `track` call: owns the trace and the sys.monitoring callbacks."""

    cdef readonly Trace trace
    cdef void *tstate
    cdef void **tstate_cell     # where events read whether they run on tstate's thread
    cdef FrameRec *frames
    cdef int32_t nframes, framecap
    cdef int64_t *shadow
    cdef int64_t shadow_top, shadow_cap
    cdef int64_t session
    cdef readonly list contexts
    cdef readonly dict instrumented     # id(code) -> code: the code objects given local events
    cdef dict module_verdicts   # id(ctx.modules) -> {id(code): (code, bool)}
    cdef public object on_code          # (code, uses JUMP events): instrument a new code object
    cdef public object hook_error
    cdef public object on_stop          # called once when a hook error stops tracking
    cdef object interrupt               # a KeyboardInterrupt/SystemExit from a hook, to raise
    cdef readonly object internal_error
    cdef readonly bint broken
    cdef readonly bint row_limit_reached   # stopped by its trace's max_rows (Context.max_nodes)
    cdef readonly long events
    cdef public bint follow_own        # record tracer's code under OWN_FOLLOWED (set_own_files)
    cdef readonly int plan_mode        # the plan variant of this session (PlanMode)
    cdef PyObject *returning            # borrowed: the value of the PY_RETURN/PY_YIELD being handled
    cdef object kept                    # the last snapshot _kept made (until its row takes it)
    cdef int user_depth                 # hooks running (_user_code_starts)
    cdef PyObject *pool_cache_obj[POOL_CACHE]   # _pool_ref's cache (borrowed: the pool owns them)
    cdef int32_t pool_cache_ref[POOL_CACHE]
    # _may_recur's answer for a code object under a context that only names
    # primitive modules, by code address: the code (owned), the context
    # (borrowed: `contexts` keeps it) and the answer.
    cdef PyObject *verdict_code[VERDICT_CACHE]
    cdef PyObject *verdict_ctx[VERDICT_CACHE]
    cdef uint8_t verdict_recur[VERDICT_CACHE]
    # The function _call_returns_here last found certain to return to its call
    # op, and its code then (both owned: their addresses cannot be reused while
    # kept; a function's __code__ may be replaced).
    cdef PyObject *returns_fn
    cdef PyObject *returns_code

    def __cinit__(self, int64_t session):
        self.trace = Trace()
        self.session = session
        self.framecap = 64
        self.frames = <FrameRec *>malloc(self.framecap * sizeof(FrameRec))
        self.shadow_cap = 4096
        self.shadow = <int64_t *>malloc((self.shadow_cap + SHADOW_SLACK) * sizeof(int64_t))
        if self.frames == NULL or self.shadow == NULL:
            raise MemoryError()
        self.nframes = 0
        self.shadow_top = 0
        self.contexts = []
        self.instrumented = {}
        self.module_verdicts = {}
        self.events = 0

    def __dealloc__(self):
        cdef int32_t i
        for i in range(self.nframes):
            if self.frames[i].subst_pc >= 0:
                _clear_substitution(&self.frames[i])
        free(self.frames)
        free(self.shadow)
        for i in range(VERDICT_CACHE):
            Py_XDECREF(self.verdict_code[i])
        Py_XDECREF(self.returns_fn)
        Py_XDECREF(self.returns_code)
        if self.trace is not None and self.trace.recorder == <PyObject *>self:
            self.trace.recorder = NULL

    # -- setup -----------------------------------------------------------------------
    def begin_root(self, object f, tuple args, dict kwargs, object ctx):
        """Create the root row and the pseudo-frame of track()'s caller."""
        self.tstate = PyThreadState_Get()
        self.tstate_cell = tracer_thread_cell(self.tstate)
        cdef Trace t = self.trace
        cdef int32_t root = t.add_row(K_NESTED, F_OPEN, -1, -1, 0, NULL)
        # The callee is what the caller gave track, kept while recording under every
        # value policy: a bound method made for the call would be dead when its
        # frame starts, and its body would not be known as the root's (end_root
        # then keeps what the policy keeps of it: _release_root_callee).
        t.add_ref(t.pool_add(f))
        _set_value_policy(t, ctx)
        for a in args:
            t.add_ref(t.pool_add(a))
        for k, v in kwargs.items():
            t.add_ref(t.pool_add(v))
        t.root_keywords = tuple(kwargs)
        self.contexts.append(ctx)
        cdef uint32_t hooks = ctx.hook_mask()
        t.snapshots = (hooks & H_SNAP_ANY) != 0 or t.value_policy != VP_KEEP
        # The plan variant is fixed for the whole call by the root's context (see
        # Context.enter): contexts that intervene need an event before each call
        # (and operator, unless they name only callables), and snapshots need
        # every value read at an event right after its instruction, before later
        # code can change it (filters.pxi, _plan_mode_of).
        self.plan_mode = _plan_mode_of(ctx, hooks)
        cdef FrameRec *fr = _push(self, tracer_current_frame(), NULL, -1, root, <PyObject *>ctx,
                                       hooks)
        fr.open_row = root
        fr.filters = _filters_of(ctx)
        fr.body_may_be_callee = 1
        fr.pending = P_NONE
        return root

    def end_root(self, object result, object exception):
        cdef Trace t = self.trace
        cdef int32_t i = 0, j, stop
        cdef uint64_t flags8
        # Frames still open (an exception escaped) are closed with what is known.
        # The scan tests eight rows' flags at a time: open rows are rare, and a
        # row-by-row scan of a big trace was a visible part of tracking time.
        while i < t.n:
            if i + 8 <= t.n:
                memcpy(&flags8, t.flags_ + i, 8)
                if not flags8 & (<uint64_t>F_OPEN * <uint64_t>0x0101010101010101):
                    i += 8
                    continue
            stop = i + 8 if i + 8 <= t.n else t.n
            for j in range(i, stop):
                if t.flags_[j] & F_OPEN and t.kind_[j] == K_NESTED and t.aux_[j] == 0:
                    t.aux_[j] = t.n
            i = stop
        t.flags_[0] &= ~F_OPEN
        if t.timing != NULL:
            _timing_close_all(t.timing)
        _release_root_callee(t)
        if exception is not None:
            t.flags_[0] |= F_RAISED
            t.set_value(0, <PyObject *>exception)
            if t.value_policy != VP_KEEP:
                exception = <object>t.value_[0]   # what the policy kept (values.pxi)
        else:
            t.value_policy = VP_KEEP   # the call's result is the caller's (root.value)
            t.set_value(0, <PyObject *>result)
        t.value_policy = VP_KEEP
        t.aux_[0] = t.n
        for i in range(self.nframes):
            if self.frames[i].subst_pc >= 0:
                _clear_substitution(&self.frames[i])
        self.nframes = 0
        t.recorder = NULL   # (recorded: nothing grows it now)
        t.stopped = self.broken
        t.events = self.events
        t._finish(exception)

    def reclaim_plans(self):
        """A `track` nested in this one has finished: it ran its own session over
        the same plans, so the plans of the frames this recorder follows are this
        session's again (their constants are pooled anew; code ids are kept by the
        frames).  Plans of other code are reclaimed when a frame enters them."""
        cdef int32_t i
        cdef CPlan *plan
        for i in range(self.nframes):
            plan = self.frames[i].plan
            if plan != NULL and plan.session != self.session:
                plan.code_id = self.frames[i].code_id
                _own_refs(self, plan)


# -- frame stack -----------------------------------------------------------------
cdef extern from *:
    """
    /* A fresh shadow: every slot S_UNKNOWN (7), four stores a step, which the
       compiler pairs into vector stores, up to the next multiple of four past
       n: the shadow has SHADOW_SLACK slots of room past its capacity for the
       last step (a loop for the remainder cost more than the steps: ~30
       instructions a frame of fib's 6 slots; a memset cannot write a 7 in
       every int64). */
    static inline void tracer_shadow_fill(int64_t *p, Py_ssize_t n, int64_t v) {
        Py_ssize_t i = 0;
        do {
            p[i] = v; p[i + 1] = v; p[i + 2] = v; p[i + 3] = v;
            i += 4;
        } while (i < n);
    }
    """
    void _shadow_fill "tracer_shadow_fill"(int64_t *p, Py_ssize_t n, int64_t v) noexcept


cdef inline FrameRec *_frame_init(Recorder self, void *frame, PyObject *code, CPlan *plan,
                                  int32_t code_id, int32_t call_row, PyObject *ctx,
                                  uint32_t hooks, int64_t need, bint plain_ret) noexcept:
    """The next frame record on the stack, set up for `frame` (running `code`
    under `plan`, recorded under `call_row`, context `ctx` with mask `hooks`)
    with a fresh shadow of `need` slots, all S_UNKNOWN; the caller has checked
    the room in both.  `plain_ret`: whether its return may take _return_plain
    but for room (FrameRec.plain_ret), which each caller knows.  The one set-up
    of a frame record: _push (the general path), _enter_plain and resume.pxi's
    _resume_plain.  No filters (a caller whose context has call filters sets
    them), no timing (_push's)."""
    cdef FrameRec *fr = &self.frames[self.nframes]
    cdef int64_t top = self.shadow_top
    self.nframes += 1
    # Every field stored once, in the struct's order (no segment pending,
    # nothing open, no substitution): gcc merges the constant neighbours, and
    # drops the stores a caller overwrites right after (_enter_plain's
    # ret_to, body, pending); a copy of a blank record was ~16 instructions
    # per frame on top of the stores of the per-frame fields.
    fr.frame = frame
    fr.code = code
    fr.plan = plan
    fr.code_id = code_id
    fr.call_row = call_row
    fr.pending = P_NONE
    fr.pc = 0
    fr.open_row = -1
    fr.exc_row = -1
    fr.shadow = <int32_t>top
    fr.open_primitive = 0
    fr.body_may_be_callee = 0
    fr.callee_body_entered = 0
    fr.body = 0
    fr.after_call = 0
    fr.plain_ret = plain_ret
    fr.ret_to = -1
    fr.ret_pc = 0
    fr.bool_end = 0
    fr.ctx = ctx
    fr.hooks = hooks
    fr.filters = NULL
    fr.subst_pc = -1
    fr.subst_new = NULL
    fr.subst_orig = NULL
    fr.subst_args = NULL
    # Through a local pointer: stores through self.shadow could alias
    # self.shadow_top (both int64), which kept the compiler from vectorising.
    _shadow_fill(self.shadow + top, need, S_UNKNOWN)
    self.shadow_top = top + need
    return fr


cdef FrameRec *_push(Recorder self, void *frame, CPlan *plan, int32_t code_id, int32_t call_row,
                     PyObject *ctx, uint32_t hooks) except NULL:
    cdef FrameRec *fr
    cdef int64_t need
    if self.nframes == self.framecap:
        self.framecap *= 2
        self.frames = <FrameRec *>_realloc(self.frames, self.framecap * sizeof(FrameRec))
    need = 0 if plan == NULL else plan.nlocalsplus + plan.stacksize
    if self.shadow_top + need > self.shadow_cap:
        while self.shadow_top + need > self.shadow_cap:
            self.shadow_cap *= 2
        self.shadow = <int64_t *>_realloc(self.shadow,
                                          (self.shadow_cap + SHADOW_SLACK) * sizeof(int64_t))
    # (_return_plain's guard but room, in one byte: the trace's timing is fixed
    # before any followed frame starts, the hooks are ctx's)
    fr = _frame_init(self, frame, NULL, plan, code_id, call_row, ctx, hooks, need,
                     _plain_return_ok(hooks) and self.trace.timing == NULL)
    if self.trace.timing != NULL:
        _timing_call(self.trace.timing, call_row)
    return fr


cdef inline void _pop(Recorder self) noexcept:
    cdef FrameRec *fr = &self.frames[self.nframes - 1]
    if fr.subst_pc >= 0:
        _clear_substitution(fr)
    self.shadow_top = fr.shadow   # (frames are popped in the order pushed)
    self.nframes -= 1


cdef inline FrameRec *_top_for(Recorder self, object code) noexcept:
    # The frame record an event belongs to, or NULL if the event is from another
    # thread or from a frame the recorder does not follow.
    if self.nframes == 0 or not tracer_on_thread(self.tstate_cell, self.tstate):
        return NULL
    cdef FrameRec *fr = &self.frames[self.nframes - 1]
    if fr.code != <PyObject *>code or fr.frame != tracer_thread_frame(self.tstate):
        return NULL
    return fr


def _thread_state_reads():
    """The calling thread's state as two ints: as libpython's thread-local read
    gives it, and as the events read it (tracer_on_thread: the GIL's last holder
    where there is a GIL).  For the tests, which check the two agree on every
    thread."""
    cdef void *ts = tracer_thread_state()
    cdef void **cell = tracer_thread_cell(ts)
    return <size_t>ts, <size_t>(cell[0] if cell != NULL else ts)


# -- shadow helpers ---------------------------------------------------------------
cdef inline int64_t *_locals(Recorder self, FrameRec *fr) noexcept:
    return self.shadow + fr.shadow


cdef inline int64_t *_stack(Recorder self, FrameRec *fr) noexcept:
    return self.shadow + fr.shadow + fr.plan.nlocalsplus


# -- sys.monitoring events ------------------------------------------------------------
# The handlers return EV_CONTINUE or EV_DISABLE, or -1 with an exception set; the
# module-level callbacks below turn that into what sys.monitoring expects.
cdef void _fail(Recorder self, object exc) noexcept:
    """A handler failed: recording stops, and the instrumentation goes once it has
    (contexts.pxi), so that the program runs on at its own speed."""
    if self.internal_error is None:
        self.internal_error = exc
    if not self.broken:
        self.broken = True
        _release_instrumentation(self)


cdef int64_t _session_counter = 0


def new_recorder(int32_t cap=0):
    """A Recorder for one track() call; `cap` (0: none, else a max_nodes that
    tracer.context checked): recording stops once the trace would outgrow it."""
    global _session_counter, NEW_TRACE_MAX_ROWS
    cdef Recorder rec
    _session_counter += 1
    NEW_TRACE_MAX_ROWS = cap
    try:
        rec = Recorder(_session_counter)
    finally:
        NEW_TRACE_MAX_ROWS = 0
    if cap:
        rec.trace.recorder = <PyObject *>rec
    return rec


# The largest cap a trace takes: its rows are counted in int32 (a few spare).
MAX_NODES_CAP = (1 << 31) - 4 * ROW_SLACK


cdef void _row_limit_reached(PyObject *recorder) noexcept:
    """The trace must grow past its cap: recording stops.  The event being handled
    completes its rows (its writes were checked for room, and get it); the
    callback stops the recording when the handler returns (_reply's check of
    `interrupt`, ROW_LIMIT), as a hook error stops it."""
    cdef Recorder self = <Recorder>recorder
    if self.broken:
        return
    self.broken = True
    self.row_limit_reached = True
    if self.interrupt is None:
        self.interrupt = ROW_LIMIT


cdef object ROW_LIMIT = object()   # Recorder.interrupt: stop at the row cap (not raised)
