# The callbacks sys.monitoring calls: small vectorcall objects per tool id and
# event that feed the recorder active in the thread the event fired on.

# ---------------------------------------------------------------------------------
# The sys.monitoring callbacks
#
# Objects of a static C type whose instances are called by vectorcall straight
# into one of three C functions (one per callback signature): no builtin-function
# layer (its recursion check and flag dispatch), no bound-method, CyFunction or
# argument-parsing layer.  Each object carries its tool id, its handler and its
# key.  sys.monitoring events are process-wide, so one tool id serves every
# thread that tracks: each callback hands its event to the Recorder active for
# that tool in the thread it fires on (a C thread-local slot), so threads record
# side by side without a lock.  Each calls its handler through a noexcept
# pointer, so no Python try/except runs per event; an error inside the recorder
# never reaches the traced program: it stops recording and track() reports it.

cdef extern from "Python.h":
    object PyErr_GetRaisedException()
    void PyErr_SetRaisedException(PyObject *exc)
    void PyErr_SetObject(object type, object value)
    int PyGC_Disable()
    int PyGC_Enable()
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)

# The handlers' signatures as the callbacks call them: the recorder and the code
# object borrowed from the callback's caller as plain pointers (a handler's
# `Recorder` and `object` parameters are the same pointers in C), so that no
# reference is taken and dropped per event; `noexcept` because _reply turns a
# handler's -1 into a recorder failure (no Python try/except runs per event).
ctypedef PyObject *(*vectorcall_fn)(PyObject *, PyObject **, size_t, PyObject *) noexcept
ctypedef int (*code_handler)(PyObject *, PyObject *, int) noexcept
ctypedef int (*dest_handler)(PyObject *, PyObject *, int, int) noexcept
ctypedef int (*value_handler)(PyObject *, PyObject *, int, PyObject *) noexcept
ctypedef int (*fast_leave_fn)(PyObject *, PyObject *, int32_t, PyObject *, signed char) noexcept

# The recorder each sys.monitoring tool id feeds in the current thread (NULL: none),
# one slot per tool id in C thread-local storage: the lookup is one TLS read, and
# another thread's events find its own recorder or nothing.  A slot owns a
# reference to its recorder (activate/deactivate).
#
# While exactly one recorder is live in the whole process (LIVE_RECORDERS, the
# common case), it is also kept in a plain global with its tool id, and the
# callbacks read that instead: a thread-local read from a shared library is a
# call into the dynamic loader (__tls_get_addr, ~10 instructions per event).
# Events of other threads then reach that recorder, whose handlers ignore them
# (their frames are not its thread's: _frame_entered, _top_for) as they ignore
# frames of its own thread it does not follow.
cdef extern from *:
    """
    static _Thread_local PyObject *tracer_active[6];
    static PyObject *tracer_only_rec = NULL;   /* borrowed: its thread's slot owns it */
    static int tracer_only_tool = -1;
    static inline PyObject *tracer_active_get(int tool) { return tracer_active[tool]; }
    static inline void tracer_active_set(int tool, PyObject *rec) { tracer_active[tool] = rec; }
    static inline void tracer_only_set(int tool, PyObject *rec) {
        tracer_only_rec = rec;
        tracer_only_tool = tool;
    }
    /* The only live recorder if it is fed by `tool` and the call has `nargs`
       positional arguments and no keywords, else NULL (the callbacks' fast path:
       the rest, this thread's slot, _idle, is the generic callback's). */
    static inline PyObject *tracer_only_for(int tool, size_t nargsf, Py_ssize_t nargs,
                                            PyObject *kwnames) {
        PyObject *rec = tracer_only_rec;
        if (rec != NULL && tool == tracer_only_tool && PyVectorcall_NARGS(nargsf) == nargs
                && kwnames == NULL) {
            return rec;
        }
        return NULL;
    }
    /* The recorder a callback of `tool` feeds: the only live one, or this thread's. */
    static inline PyObject *tracer_active_for(int tool) {
        if (tracer_only_rec != NULL) {
            return tool == tracer_only_tool ? tracer_only_rec : NULL;
        }
        return tracer_active[tool];
    }
    """
    PyObject *_active_get "tracer_active_get"(int tool) noexcept
    void _active_set "tracer_active_set"(int tool, PyObject *rec) noexcept
    void _only_set "tracer_only_set"(int tool, PyObject *rec) noexcept
    PyObject *_active_for_tool "tracer_active_for"(int tool) noexcept
    PyObject *_only_for "tracer_only_for"(int tool, size_t nargsf, Py_ssize_t nargs,
                                          PyObject *kwnames) noexcept

# Whether a callback may switch its location off (sys.monitoring.DISABLE): not
# while recorders of different plan modes share the tool id (allow_disable).
cdef bint ALLOW_DISABLE = True
# The code object of tracer.api.track: a call of it is one primitive call for the
# recorder that sees it (the nested track records its own trace).
cdef object TRACK_CODE = None


cdef inline PyObject *_reply(PyObject *rec, int rc) noexcept:
    """What a callback returns for its handler's answer (a new reference, or NULL
    with an exception set to interrupt the program)."""
    # Inline for the common answer (go on, nothing to raise): one call less per
    # event.  None is immortal on every Python tracer supports (3.12+, PEP 683):
    # the reference handed back needs no count.
    if rc == EV_CONTINUE and (<Recorder>rec).interrupt is None:
        return <PyObject *>None
    return _reply_slow(<Recorder>rec, rc)


cdef PyObject *_reply_slow(Recorder rec, int rc) noexcept:
    cdef PyObject *out = <PyObject *>None
    cdef object exc
    if rec.interrupt is ROW_LIMIT:
        # The trace reached its cap during this event: the instrumentation goes
        # now (recorder.pxi's _row_limit_reached), the program runs on.
        rec.interrupt = None
        _release_instrumentation(rec)
    if rc == EV_CONTINUE:
        if rec.interrupt is not None:
            # A KeyboardInterrupt/SystemExit from a hook: raise it into the program.
            exc = rec.interrupt
            rec.interrupt = None
            Py_INCREF(exc)
            PyErr_SetRaisedException(<PyObject *>exc)
            return NULL
    elif rc == EV_DISABLE:
        if ALLOW_DISABLE:
            out = <PyObject *>DISABLE
    else:
        _fail(rec, PyErr_GetRaisedException())
    Py_INCREF(<object>out)
    return out


cdef extern from *:
    """
    /* Offsets are small non-negative ints: read one without a conversion call. */
    static inline int tracer_small_int(PyObject *o) {
        if (PyLong_CheckExact(o) && PyUnstable_Long_IsCompact((PyLongObject *)o)) {
            return (int)PyUnstable_Long_CompactValue((PyLongObject *)o);
        }
        return -1;
    }
    """
    int _small_int "tracer_small_int"(PyObject *o) noexcept


cdef PyObject *_idle(Py_ssize_t nargs, Py_ssize_t expected, PyObject *kwnames) noexcept:
    # No recorder, a broken one, or a wrong call: do nothing (None) or say why.
    if kwnames != NULL:
        PyErr_SetObject(TypeError, "tracer callbacks take no keyword arguments")
        return NULL
    if nargs != expected:
        PyErr_SetObject(TypeError, f"tracer callback takes {expected} arguments, got {nargs}")
        return NULL
    Py_INCREF(None)
    return <PyObject *>None


# The callback objects: a static type with vectorcall (CPython calls the C
# function in `vectorcall` directly, PEP 590), its instances made by callbacks().
cdef extern from *:
    """
    typedef PyObject *(*tracer_vectorcall)(PyObject *, PyObject *const *, size_t, PyObject *);
    typedef struct {
        PyObject_HEAD
        tracer_vectorcall vectorcall;
        int tool;
        int key;              /* tool << 4 | the handler's index in its signature's list */
        void *handler;        /* a code_handler, dest_handler or value_handler */
        PyObject *name;       /* "on_py_start", ... (owned) */
    } tracer_callback;

    static void tracer_callback_dealloc(PyObject *self) {
        Py_XDECREF(((tracer_callback *)self)->name);
        PyObject_Free(self);
    }
    static PyObject *tracer_callback_repr(PyObject *self) {
        tracer_callback *cb = (tracer_callback *)self;
        return PyUnicode_FromFormat("<tracer callback %U for tool %d>", cb->name, cb->tool);
    }
    static PyTypeObject tracer_callback_type = {
        PyVarObject_HEAD_INIT(NULL, 0)
        .tp_name = "tracer._core.Callback",
        .tp_basicsize = sizeof(tracer_callback),
        .tp_dealloc = tracer_callback_dealloc,
        .tp_repr = tracer_callback_repr,
        .tp_vectorcall_offset = offsetof(tracer_callback, vectorcall),
        .tp_call = PyVectorcall_Call,
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
        .tp_doc = "A tracer sys.monitoring callback (tracer._core.callbacks).",
    };
    static PyObject *tracer_callback_new(void *vc, int tool, int key, void *handler,
                                         PyObject *name) {
        tracer_callback *cb;
        if (!(tracer_callback_type.tp_flags & Py_TPFLAGS_READY)
                && PyType_Ready(&tracer_callback_type) < 0) {
            return NULL;
        }
        cb = PyObject_New(tracer_callback, &tracer_callback_type);
        if (cb == NULL) {
            return NULL;
        }
        cb->vectorcall = (tracer_vectorcall)vc;
        cb->tool = tool;
        cb->key = key;
        cb->handler = handler;
        Py_INCREF(name);
        cb->name = name;
        return (PyObject *)cb;
    }
    """
    ctypedef struct _Callback "tracer_callback":
        int tool
        int key
        void *handler
    object _callback_new "tracer_callback_new"(void *vc, int tool, int key, void *handler,
                                                object name)


cdef inline PyObject *_active_for(PyObject *k, Py_ssize_t nargs, Py_ssize_t expected,
                                  PyObject *kwnames) noexcept:
    # The recorder the callback `k` feeds in this thread, borrowed (its slot owns
    # it), or NULL: none, a broken one, or a call with the wrong arguments.
    cdef PyObject *active = _active_for_tool((<_Callback *>k).tool)
    if active == NULL or nargs != expected or kwnames != NULL or (<Recorder>active).broken:
        return NULL
    return active


cdef inline PyObject *_code_event(PyObject *k, PyObject **args, size_t nargsf,
                                  PyObject *kwnames, code_handler handler) noexcept:
    # (code, offset): PY_START, PY_RESUME, INSTRUCTION.  Inline: a callback that
    # passes a constant handler calls it directly (_cb_py_start, below).
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    cdef PyObject *rec = _active_for(k, nargs, 2, kwnames)
    if rec == NULL:
        return _idle(nargs, 2, kwnames)
    cdef int offset = _small_int(args[1])
    if TRACER_EVENT_LOG:
        _log_event(0, (<_Callback *>k).key, <object>args[0], offset, None)
    return _reply(rec, handler(rec, args[0], offset))


cdef PyObject *_cb_code(PyObject *k, PyObject **args, size_t nargsf, PyObject *kwnames) noexcept:
    return _code_event(k, args, nargsf, kwnames, <code_handler>(<_Callback *>k).handler)


cdef PyObject *_cb_dest(PyObject *k, PyObject **args, size_t nargsf, PyObject *kwnames) noexcept:
    # (code, offset, destination): BRANCH, JUMP
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    cdef PyObject *rec = _active_for(k, nargs, 3, kwnames)
    if rec == NULL:
        return _idle(nargs, 3, kwnames)
    cdef int offset = _small_int(args[1])
    if TRACER_EVENT_LOG:
        _log_event(1, (<_Callback *>k).key, <object>args[0], offset, <object>args[2])
    return _reply(rec, (<dest_handler>(<_Callback *>k).handler)(rec, args[0], offset,
                                                              _small_int(args[2])))


cdef inline PyObject *_value_event(PyObject *k, PyObject **args, size_t nargsf,
                                   PyObject *kwnames, value_handler handler) noexcept:
    # (code, offset, value): PY_RETURN, PY_YIELD, RAISE/RERAISE, PY_UNWIND, PY_THROW
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    cdef PyObject *rec = _active_for(k, nargs, 3, kwnames)
    if rec == NULL:
        return _idle(nargs, 3, kwnames)
    cdef int offset = _small_int(args[1])
    if TRACER_EVENT_LOG:
        _log_event(2, (<_Callback *>k).key, <object>args[0], offset, <object>args[2])
    return _reply(rec, handler(rec, args[0], offset, args[2]))


cdef PyObject *_cb_value(PyObject *k, PyObject **args, size_t nargsf, PyObject *kwnames) noexcept:
    return _value_event(k, args, nargsf, kwnames, <value_handler>(<_Callback *>k).handler)


# The three events of every followed call (PY_START, INSTRUCTION, PY_RETURN) have
# callbacks of their own whose handler is a constant, not the callback's pointer
# (cast to the noexcept signature, as the pointers are: _reply handles -1): the
# compiler calls it directly and inlines its first layer (_py_start's
# _frame_entered, _py_return's _leave), one call fewer per event.
#
# Their fast path is the common case only: the one live recorder (tracer_only_rec)
# fed by this callback's tool, the arguments as CPython passes them, the recorder
# not broken.  Anything else (a thread's own slot, no recorder, a wrong call) goes
# to the generic callback of the signature (_cb_code, _cb_value: the callback's
# handler pointer is this same handler), a tail call through _SHAPES (a pointer
# the compiler cannot see through, so it does not inline that callback here and
# give the fast path its register saves back).  So the only value the fast
# path keeps across the handler's call is the recorder (for _reply): the compiler
# saves one register, not five (session 19: the thread-local read and _idle's
# arguments kept four more alive on every event).
cdef PyObject *_cb_py_start(PyObject *k, PyObject **args, size_t nargsf,
                            PyObject *kwnames) noexcept:
    cdef PyObject *rec = _only_for((<_Callback *>k).tool, nargsf, 2, kwnames)
    if rec == NULL or (<Recorder>rec).broken or TRACER_EVENT_LOG:
        return (<vectorcall_fn>_SHAPES[0])(k, args, nargsf, kwnames)   # _cb_code
    return _reply(rec, (<code_handler><void *>_py_start)(rec, args[0], _small_int(args[1])))


cdef PyObject *_cb_instruction(PyObject *k, PyObject **args, size_t nargsf,
                               PyObject *kwnames) noexcept:
    cdef PyObject *rec = _only_for((<_Callback *>k).tool, nargsf, 2, kwnames)
    if rec == NULL or (<Recorder>rec).broken or TRACER_EVENT_LOG:
        return (<vectorcall_fn>_SHAPES[0])(k, args, nargsf, kwnames)   # _cb_code
    return _reply(rec, (<code_handler><void *>_instruction)(rec, args[0], _small_int(args[1])))


cdef PyObject *_cb_py_return(PyObject *k, PyObject **args, size_t nargsf,
                             PyObject *kwnames) noexcept:
    cdef PyObject *rec = _only_for((<_Callback *>k).tool, nargsf, 3, kwnames)
    if rec == NULL or (<Recorder>rec).broken or TRACER_EVENT_LOG:
        return (<vectorcall_fn>_SHAPES[2])(k, args, nargsf, kwnames)   # _cb_value
    # (_leave's fast-return copy, called here only, so inlined: events.pxi's
    # _LeaveKind; through a noexcept pointer as the handlers are, _reply takes -1)
    return _reply(rec, (<fast_leave_fn><void *>_leave[_FastReturn])(rec, args[0],
                                                                    _small_int(args[1]),
                                                                    args[2], 0))


# The handlers are events.pxi's, called directly (they are `except -1`; the
# callbacks hold them as noexcept pointers: see code_handler).  Per callback: its
# name, its signature's shape, its handler's index in that shape's list.
cdef void *_HANDLERS[3][5]
_HANDLERS[0][0] = <void *>_py_start
_HANDLERS[0][1] = <void *>_py_resume
_HANDLERS[0][2] = <void *>_instruction
_HANDLERS[1][0] = <void *>_branch
_HANDLERS[1][1] = <void *>_jump
_HANDLERS[2][0] = <void *>_py_return
_HANDLERS[2][1] = <void *>_py_yield
_HANDLERS[2][2] = <void *>_raised
_HANDLERS[2][3] = <void *>_py_unwind
_HANDLERS[2][4] = <void *>_py_throw

# Per callback: its name, its signature's shape, its handler's index.
_CALLBACK_SPECS = (
    ("py_start", 0, 0), ("py_resume", 0, 1), ("instruction", 0, 2), ("branch", 1, 0),
    ("jump", 1, 1), ("py_return", 2, 0), ("py_yield", 2, 1), ("raise", 2, 2),
    ("py_unwind", 2, 3), ("py_throw", 2, 4),
)
cdef void *_SHAPES[3]
_SHAPES[0] = <void *>_cb_code
_SHAPES[1] = <void *>_cb_dest
_SHAPES[2] = <void *>_cb_value
# The callbacks with a handler of their own (above), by name.
cdef dict _OWN_CALLBACK = {"py_start": <size_t><void *>_cb_py_start,
                           "instruction": <size_t><void *>_cb_instruction,
                           "py_return": <size_t><void *>_cb_py_return}
cdef list _CALLBACKS = [None] * 6   # per tool id: {name: builtin}, made on first use


def callbacks(int tool):
    """The callbacks for sys.monitoring tool id `tool`, by event name ("py_start",
    "instruction", ...): they feed the recorder `activate` gives that tool."""
    if not 0 <= tool < 6:
        raise ValueError(f"sys.monitoring tool ids are 0..5, not {tool}")
    made = _CALLBACKS[tool]
    if made is None:
        made = {}
        for name, shape, handler in _CALLBACK_SPECS:
            made[name] = _callback_new(<void *><size_t>_OWN_CALLBACK[name]
                                       if name in _OWN_CALLBACK else _SHAPES[shape],
                                       tool, tool << 4 | handler,
                                       _HANDLERS[shape][handler], "on_" + name)
        _CALLBACKS[tool] = made
    return made


def activate(int tool, Recorder rec):
    """Make `rec` the recorder the callbacks of `tool` feed in the calling thread;
    return the one it replaces there (None), for deactivate to put back."""
    if not 0 <= tool < 6:
        raise ValueError(f"sys.monitoring tool ids are 0..5, not {tool}")
    global LIVE_RECORDERS
    cdef PyObject *old = _active_get(tool)
    Py_INCREF(rec)
    _active_set(tool, <PyObject *>rec)
    LIVE_RECORDERS += 1
    _only_set(tool, <PyObject *>rec if LIVE_RECORDERS == 1 else NULL)
    if old == NULL:
        return None
    previous = <object>old
    Py_DECREF(previous)   # the slot's reference; `previous` holds its own
    return previous


def deactivate(int tool, Recorder previous=None):
    """Stop feeding the calling thread's recorder from `tool`, putting back
    `previous` (what activate returned) or nothing; other threads are unaffected."""
    if not 0 <= tool < 6:
        raise ValueError(f"sys.monitoring tool ids are 0..5, not {tool}")
    global LIVE_RECORDERS
    cdef PyObject *old = _active_get(tool)
    if old != NULL:
        LIVE_RECORDERS -= 1
    if previous is not None:
        Py_INCREF(previous)
        _active_set(tool, <PyObject *>previous)
    else:
        _active_set(tool, NULL)
    # One recorder left: `previous` if this thread put one back (it is counted:
    # activated before and never deactivated), else unknown here (the slots of
    # other threads cannot be read): the thread-local slots then.
    _only_set(tool, <PyObject *>previous if LIVE_RECORDERS == 1 and previous is not None else NULL)
    if old != NULL:
        Py_DECREF(<object>old)


def active(int tool):
    """The recorder `tool` feeds in the calling thread, or None."""
    if not 0 <= tool < 6:
        raise ValueError(f"sys.monitoring tool ids are 0..5, not {tool}")
    cdef PyObject *rec = _active_get(tool)
    return None if rec == NULL else <object>rec


def allow_disable(bint allowed):
    """Whether callbacks may answer DISABLE for a location their recorder never
    needs: not while recorders whose plans differ (plan modes) share the tool id,
    as one's needless location may be another's needed one."""
    global ALLOW_DISABLE
    ALLOW_DISABLE = allowed


def set_own_files(str prefix, tuple followed=()):
    """Tell the core where tracer's own source files are (the package directory
    with a trailing separator): code from there is primitive inside any trace,
    but for code under one of `followed` (directories, with their separators)
    in a recorder whose `follow_own` is set."""
    global OWN_PREFIX, OWN_FOLLOWED
    OWN_PREFIX = prefix
    OWN_FOLLOWED = followed
