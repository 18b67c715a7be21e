# Context dispatch: the primitive boundary, enter, per-node hooks, hook errors.

cdef bint _is_callee(Recorder self, int32_t row, PyObject *func) except -1:
    """Whether `func` is what the call at `row` called (so its body is the row's)."""
    cdef object callee
    if func == NULL:
        return False
    callee = _callee(self, row)
    if callee is None:
        return False
    if callee is <object>func:
        return True
    if type(callee) is ValueSummary:
        # What a value policy keeps of a bound method: its function (code, kept
        # under every policy), not its instance.
        return (<ValueSummary>callee).function is <object>func
    return getattr(callee, "__func__", None) is <object>func


# tracer's own code: files under OWN_PREFIX (tracer's package directory), a
# verdict kept per code object in a co_extra slot of its own (1: own, 2: not, 3:
# own but under one of OWN_FOLLOWED, which a recorder that asks (follow_own)
# records like the program's: a gradient taken inside a differentiated function
# runs tracer.ad's code, which the outer gradient's trace must see).
cdef str OWN_PREFIX = None
cdef tuple OWN_FOLLOWED = ()
cdef Py_ssize_t OWN_EXTRA_INDEX = PyUnstable_Eval_RequestCodeExtraIndex(NULL)


cdef int _own_verdict(object code) except -1:
    cdef void *extra = NULL
    cdef int verdict
    if PyUnstable_Code_GetExtra(code, OWN_EXTRA_INDEX, &extra) == 0 and extra != NULL:
        return <int><size_t>extra
    filename = code.co_filename
    if OWN_PREFIX is None or not isinstance(filename, str) or not filename.startswith(OWN_PREFIX):
        verdict = 2
    elif OWN_FOLLOWED and filename.startswith(OWN_FOLLOWED):
        verdict = 3
    else:
        verdict = 1
    PyUnstable_Code_SetExtra(code, OWN_EXTRA_INDEX, <void *>(<size_t>verdict))
    return verdict


cdef inline bint _own_by_verdict(Recorder self, int verdict) noexcept:
    # What _own_verdict's answer means for this recorder (3: followed unless asked).
    return verdict == 1 or (verdict == 3 and not self.follow_own)


cdef bint _own_code(Recorder self, object code) except -1:
    """Whether `code` is tracer's own (primitive inside any trace) for this recorder."""
    return _own_by_verdict(self, _own_verdict(code))


# -- contexts -------------------------------------------------------------------------
# Only reached when the frame's context overrides the hook in question (its mask);
# an exception from the user's code stops tracking (_stop_for_hook).
cdef bint _may_recur(Recorder self, FrameRec *parent, void *frame, object code) except -1:
    """Whether to record inside the call opened at parent.open_row (whose first
    Python frame, running `code`, is starting)."""
    cdef object ctx = <object>parent.ctx
    cdef object verdict, callee
    cdef PyObject *func = tracer_frame_function(frame)
    cdef int32_t *r = _open_rec(self, parent)
    _user_code_starts(self)
    try:
        if parent.hooks & H_PRIMITIVES:
            prims = ctx.primitives
            if r[REC_SEM] == R_OP or r[REC_SEM] == R_SPECIAL:  # an operator: its function
                callee = (<object>parent.plan.statics)[r[REC_FN]] if r[REC_FN] >= 0 else None
            else:
                callee = _callee(self, parent.open_row)
            if prims and (_member(callee, prims) or
                          (func != NULL and _member(<object>func, prims))):
                return False
            if _module_primitive(self, ctx, func, code):
                return False
        if parent.hooks & H_CANRECUR:
            f, args, kwargs = _call_parts(self, parent.open_row, parent.plan, r, frame, code)
            return bool(ctx.canrecur(f, *args, **kwargs))
    except BaseException as exc:
        _stop_for_hook(self, exc)
    finally:
        _user_code_ran(self)
    return True


cdef bint _module_primitive(Recorder self, object ctx, PyObject *func, object code) except -1:
    """Whether the function `func` running `code` is primitive by its module under
    `ctx` (ctx.modules), kept per code object (raises what is_primitive_module
    raises: the callers run it as user code)."""
    if not ctx.modules or func == NULL:
        return False
    verdicts = self.module_verdicts.get(id(ctx.modules))
    if verdicts is None:
        verdicts = self.module_verdicts[id(ctx.modules)] = {}
        self.contexts.append(ctx.modules)  # keeps the id valid
    entry = verdicts.get(id(code))
    if entry is None or entry[0] is not code:
        entry = verdicts[id(code)] = (code, bool(ctx.is_primitive_module(
            getattr(<object>func, "__module__", None))))
    return entry[1]


# _may_recur's answers kept per code object and context (Recorder.verdict_*, read
# by _may_recur_cached and _plain_entry_ok) when no canrecur hook asks: 0 the call
# is primitive (by its module: whatever was called), 1 it is followed (a context
# with no primitive callables), V_MEMBERS it is followed unless what was called is
# one of the context's primitive callables (not primitive by module; a context
# naming callables, as every tracer.ppl run's does: a set lookup, not _may_recur's
# Python per call).
cdef enum:
    V_MEMBERS = 2


cdef int _verdict_to_keep(Recorder self, FrameRec *parent, void *frame, object code,
                          bint recur) except -2:
    """What _may_recur_cached keeps for `code` under parent's context after
    _may_recur answered `recur` (0, 1 or V_MEMBERS; -1: nothing)."""
    cdef object ctx = <object>parent.ctx
    cdef bint by_module
    if not ctx.primitives:
        return recur            # the answer is the module's alone
    _user_code_starts(self)
    try:
        by_module = _module_primitive(self, ctx, tracer_frame_function(frame), code)
    except BaseException as exc:
        _stop_for_hook(self, exc)
        return -1
    finally:
        _user_code_ran(self)
    return 0 if by_module else V_MEMBERS


cdef bint _kept_verdict(Recorder self, FrameRec *parent, void *frame, object code,
                        int verdict) except -1:
    """The answer of a kept verdict for the call opened at parent.open_row, whose
    first Python frame is `frame`: under V_MEMBERS, whether neither what the call
    called nor the frame's function is one of the context's primitive callables
    (as _may_recur tests them, with no Python code of tracer's)."""
    cdef object prims, callee
    cdef int32_t *r
    cdef PyObject *func
    if verdict != V_MEMBERS:
        return verdict
    prims = (<object>parent.ctx).primitives
    if type(prims) is not frozenset:
        return _may_recur(self, parent, frame, code)
    r = _open_rec(self, parent)
    if r[REC_SEM] == R_OP or r[REC_SEM] == R_SPECIAL:  # an operator: its function
        callee = (<object>parent.plan.statics)[r[REC_FN]] if r[REC_FN] >= 0 else None
    else:
        callee = _callee(self, parent.open_row)
    func = tracer_frame_function(frame)
    _user_code_starts(self)    # (a callee's __hash__ may be the program's)
    try:
        return not (_member(callee, <frozenset>prims) or
                    (func != NULL and _member(<object>func, <frozenset>prims)))
    finally:
        _user_code_ran(self)


cdef bint _plain_entry_ok(Recorder self, FrameRec *parent, void *frame, object code) except -1:
    """Whether the frame `frame` (running `code`), entered by the call parent's
    pending op records, may be entered by _enter_plain as far as parent's context
    goes: no hooks, or only primitives and call filters, with the callee (the
    frame's function: _enter_plain checks they are the same) named by no filter
    and its verdict kept as followed."""
    cdef uint32_t hooks = parent.hooks
    cdef PyObject *func
    cdef size_t h
    cdef int verdict
    cdef object prims
    if hooks == 0:
        return True
    if hooks & ~(<uint32_t>H_PLAIN_ENTRY) or self.broken:
        return False
    func = tracer_frame_function(frame)
    if func == NULL:
        return False
    if hooks & (H_FILTERED | H_SUBST_BY) and parent.filters != NULL and \
            _match(<CallFilter>parent.filters, func) >= 0:
        return False
    if hooks & H_PRIMITIVES:
        h = (<size_t>(<PyObject *>code) >> 4) & (VERDICT_CACHE - 1)
        if self.verdict_code[h] != <PyObject *>code or self.verdict_ctx[h] != parent.ctx:
            return False        # not asked yet: _enter asks (and keeps the answer)
        verdict = self.verdict_recur[h]
        if verdict == 0:
            return False
        if verdict == V_MEMBERS:
            # A function hashes by identity: no Python code runs for the lookup.
            prims = (<object>parent.ctx).primitives
            if type(prims) is not frozenset or _member(<object>func, <frozenset>prims):
                return False
    return True


cdef object _callee(Recorder self, int32_t row):
    """The value of a call row's first input (its callee), or None."""
    cdef Trace t = self.trace
    cdef int32_t first = t.ref_start_[row]
    if first == t.ref_start_[row + 1]:
        return None
    return t._ref_value(t.refs_[first])


cdef int32_t *_open_rec(Recorder self, FrameRec *fr) noexcept:
    # The record of the op whose row fr.open_row is (fr.pc is its RECORD), or
    # NULL for the root call, which track() itself made.
    if fr.plan == NULL:
        return NULL
    return fr.plan.recs + (fr.plan.ops + fr.pc * OP_WORDS)[OP_A]


cdef tuple _call_parts(Recorder self, int32_t row, CPlan *plan, int32_t *r, void *frame,
                       object code):
    """(f, args, kwargs) of the call recorded at `row` with record `r`, as values.

    Built from the row's inputs in C: a context's canrecur/enter get the call
    without any node view being made.  `frame` (running `code`) is the call's
    first Python frame, just starting: for f(*it) with `it` not a tuple or list
    (already consumed by CPython) the arguments are read off its parameters.
    """
    cdef Trace t = self.trace
    cdef int32_t i, k
    cdef list values = []
    cdef PyObject *func
    for i in range(t.ref_start_[row], t.ref_start_[row + 1]):
        values.append(t._ref_value(t.refs_[i]))
    if t.value_policy and r != NULL:
        if _stand_ins(values):
            # The rows hold what the policy keeps, not the arguments: a hook
            # gets the call as its body's parameters show it (the arguments
            # bound, defaults included, as for f(*it) below).
            func = tracer_frame_function(frame)
            if _is_callee(self, row, func):
                args, kwargs = _frame_arguments(frame, code)
                callee = values[0]
                if callee is not <object>func and args:
                    # A bound method called: its instance is not an argument,
                    # and where the policy kept a summary of the method, the
                    # hook gets one bound to the same instance and function
                    # (equal to the program's, which the trace does not hold).
                    if type(callee) is ValueSummary:
                        callee = PyMethod_New(<object>func, args[0])
                    args = args[1:]
                return (callee, args, kwargs)
    if r == NULL:  # the root: f, its positional arguments, then its keywords' values
        k = len(values) - len(t.root_keywords or ())
        return (values[0], tuple(values[1:k]), dict(zip(t.root_keywords or (), values[k:])))
    parts = _split_call(r, <object>plan.statics, values)
    if parts is not None:
        return parts
    # f(*it): CPython has consumed `it`.  If this frame is f's body its parameters
    # show the arguments; otherwise (a generator feeding `*` is running) they are
    # not known yet.
    if _is_callee(self, row, tracer_frame_function(frame)):
        return (values[0],) + _frame_arguments(frame, code)
    return (values[0], (UNKNOWN,),
            values[2] if len(values) > 2 and type(values[2]) is dict else {})


cdef extern from "Python.h":
    int PyCode_Addr2Line(PyObject *code, int byte_offset)


@cython.final
@cython.auto_pickle(False)
cdef class CallPaths:
    """Names calls in C for a family of contexts that give a call on a chosen path
    a context of its own and every other call one shared context (tracer.ppl's
    fixing runs below the model's own calls: ppl/_hooks.py's _CallNaming).

    A context whose `_call_paths` is a CallPaths is asked no `enter` (Python) for
    a frame when its `_below` is a dict: the recorder counts the call in the
    context's `_calls` dict under (name, line) (`name_of(code)`, asked once per
    code object; the line of the call in its caller, as the caller frame's
    f_lineno gives it), and when `_below[(name, line)]` holds that count `k`, the
    frame's context is `child(ctx, _below[(name, line)][k])` (Python), else `off`.
    A context whose `_below` is not a dict is asked `enter` as any other."""

    cdef readonly object off
    cdef readonly object child
    cdef readonly object name_of
    cdef dict names                 # code -> name_of(code)

    def __init__(self, off, child, name_of):
        self.off = off
        self.child = child
        self.name_of = name_of
        self.names = {}

    cdef object _enter(self, object ctx, void *frame, object code):
        # (run between _user_code_starts and _user_code_ran: allocates, and may
        # run name_of or child; None: ask `enter`)
        cdef object below = getattr(ctx, "_below", None)
        cdef void *caller
        cdef int lasti
        if type(below) is not dict:
            return None
        caller = tracer_frame_caller(frame)
        if caller == NULL:
            return None
        lasti = tracer_frame_lasti(caller)
        if lasti < 0:
            return None
        name = self.names.get(code)
        if name is None:
            name = self.names[code] = self.name_of(code)
        key = (name, PyCode_Addr2Line(tracer_frame_code(caller), lasti))
        calls = getattr(ctx, "_calls")
        if type(calls) is not dict:
            raise TypeError("CallPaths: the context's _calls must be a dict")
        k = (<dict>calls).get(key, 0)
        (<dict>calls)[key] = k + 1
        ks = (<dict>below).get(key)
        if ks is None:
            return self.off
        prefix = ks.get(k)
        if prefix is None:
            return self.off
        return self.child(ctx, prefix)


cdef object _enter_context(Recorder self, object ctx, FrameRec *parent, int32_t call_row,
                           void *frame, object code):
    cdef PyObject *func
    _user_code_starts(self)
    try:
        new = None
        paths = getattr(ctx, "_call_paths", None)
        if type(paths) is CallPaths:
            new = (<CallPaths>paths)._enter(ctx, frame, code)
        if new is None:
            if call_row == parent.open_row:
                parts = _call_parts(self, call_row, parent.plan, _open_rec(self, parent),
                                    frame, code)
            else:  # a frame entered from C: the call its parameters show
                func = tracer_frame_function(frame)
                parts = (<object>func if func != NULL else None,) + _frame_arguments(frame, code)
            new = _host("ask_enter")(ctx, parts)
    except BaseException as exc:
        _stop_for_hook(self, exc)
        return ctx
    finally:
        _user_code_ran(self)
    if new is not ctx:
        self.contexts.append(new)  # FrameRec.ctx borrows it
    return new


cdef uint32_t _mask_of(Recorder self, object ctx) noexcept:
    cdef uint32_t mask
    try:
        mask = ctx.hook_mask()
        if mask & (H_SUBSTITUTE | H_OVERRIDE | H_SUBST_BY | H_OVERRIDE_BY) and \
                not _plan_serves(self.plan_mode, _plan_mode_of(ctx, mask)):
            raise TypeError(
                f"{type(ctx).__name__} (returned by enter) overrides substitute or "
                "override (or has substitute=/override= filters), but the context "
                "passed to track does not, or only for callables while this one "
                "names an operator's function (operator.mul, ...): interventions are "
                "prepared for a whole call, so pass a root context that intervenes "
                "the same way (its own hooks may return None / tracer.context.KEEP)")
        if mask & H_SNAP_ANY and self.plan_mode == PLAN_PLAIN:
            raise TypeError(
                f"{type(ctx).__name__} (returned by enter) takes snapshots of values, "
                "but the context passed to track does not: values are read for "
                "snapshots by a plan chosen for the whole call, so give the root "
                "context a snapshot policy too")
        return mask
    except BaseException as exc:
        _stop_for_hook(self, exc)
        return 0


cdef inline int _run_node_hook(Recorder self, FrameRec *fr, int32_t row) except -1:
    """Run the context's per-node hook for `row`, if its class has one."""
    if fr.hooks & H_NODE_ALL:
        return _node_hook(self, fr, row)
    return 0


cdef int _node_hook(Recorder self, FrameRec *fr, int32_t row) except -1:
    cdef int kind = self.trace.kind_[row]
    if not (fr.hooks & (H_NODE << kind)) or self.broken:
        return 0
    _user_code_starts(self)
    try:
        getattr(<object>fr.ctx, NODE_HOOKS[kind])(_node_view(self.trace, row))
    except BaseException as exc:
        _stop_for_hook(self, exc)
    _user_code_ran(self)
    return 0


cdef int GC_HOLDS = 0              # recorders running a hook now, in all threads
cdef bint GC_WAS_ENABLED = False   # the collector's state before the first of them


cdef inline void _user_code_starts(Recorder self) noexcept:
    # A hook runs Python code in the middle of one of the program's instructions.
    # The garbage collector (and so __del__ methods of the program's objects)
    # must not run there: in the untraced program it could not, and a finalizer
    # run between a load and a store would lose its effect (`C.n -= 1` in a
    # __del__ racing `C.n += 1`).  A collection the hook makes due runs at the
    # program's next opportunity instead.
    # The collector is one for all threads: the first hook to start (in any
    # thread) switches it off, the last to end switches it back on.
    global GC_HOLDS, GC_WAS_ENABLED
    if self.user_depth == 0:
        if GC_HOLDS == 0:
            GC_WAS_ENABLED = PyGC_Disable()
        GC_HOLDS += 1
    self.user_depth += 1


cdef inline void _user_code_ran(Recorder self) noexcept:
    global GC_HOLDS
    self.user_depth -= 1
    if self.user_depth == 0:
        GC_HOLDS -= 1
        if GC_HOLDS == 0 and GC_WAS_ENABLED:
            PyGC_Enable()
    # Node views cache derived structures (child positions, reverse edges) on the
    # trace; a hook may have built them while the trace was still growing.
    self.trace._cache = None


cdef void _stop_for_hook(Recorder self, object exc) noexcept:
    """A user hook raised: stop recording now and remove the instrumentation."""
    if self.hook_error is None:
        self.hook_error = exc
        if not isinstance(exc, Exception):
            # KeyboardInterrupt, SystemExit: the user wants the program stopped,
            # so the callback raises it into the program (_reply).
            self.interrupt = exc
    if self.broken:
        return
    self.broken = True
    _release_instrumentation(self)


cdef void _release_instrumentation(Recorder self) noexcept:
    """Recording stopped: the code objects' local events go (`on_stop`, api's),
    so that the program runs on at its own speed."""
    if self.on_stop is not None:
        try:
            self.on_stop()
        except BaseException as err:
            if self.internal_error is None:
                self.internal_error = err


cdef object _node_view(Trace t, int32_t row):
    # The node view a hook is called with (tracer.nodes.node_at).
    return _host("node_at")(t, row)


cdef bint _stand_ins(list values) noexcept:
    # Whether any of a call row's input values (weak ones read) is what a value
    # policy kept in the argument's place: NOT_KEPT or a summary.
    for v in values:
        if type(v) is NotKept or type(v) is ValueSummary:
            return True
    return False


cdef tuple _split_call(int32_t *r, object statics, list values):
    """(f, args, kwargs) of record `r`'s call from its input values in order (NULL
    slots left out), or None for f(*it) whose `it` is not a tuple or list yet
    (reading it would consume it)."""
    cdef Py_ssize_t k
    if r[REC_SEM] == R_OP or r[REC_SEM] == R_SPECIAL:
        return (statics[r[REC_FN]] if r[REC_FN] >= 0 else None, tuple(values), {})
    if not values:
        return (None, (), {})
    if r[REC_SEM] == R_CALL_EX:
        if len(values) > 1 and not isinstance(values[1], (tuple, list)):
            return None
        return (values[0], tuple(values[1]) if len(values) > 1 else (),
                dict(values[2]) if len(values) > 2 and values[2] is not None else {})
    if r[REC_KW] >= 0:
        names = statics[r[REC_KW]]
        k = len(values) - len(names)
        return (values[0], tuple(values[1:k]), dict(zip(names, values[k:])))
    return (values[0], tuple(values[1:]), {})


cdef tuple _frame_arguments(void *frame, object code):
    """(args, kwargs) of a call, from the parameters of its frame, just started."""
    cdef int32_t n = code.co_argcount + code.co_kwonlyargcount
    cdef int32_t i
    cdef PyObject *v
    cdef list values = []
    flags = code.co_flags
    n += (1 if flags & 0x04 else 0) + (1 if flags & 0x08 else 0)  # *args, **kwargs
    for i in range(n):
        v = tracer_frame_local(frame, i)
        if v != NULL and PyCell_Check(v):  # a parameter captured by a closure
            v = PyCell_GET(v)
        values.append(<object>v if v != NULL else None)
    return _host("call_from_parameters")(code, values)


cdef bint _member(object value, frozenset prims) noexcept:
    # Set membership that treats an unhashable value as absent.
    try:
        return value in prims
    except Exception:
        return False
