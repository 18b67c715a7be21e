# The callbacks sys.monitoring calls: METH_FASTCALL builtins per tool id that feed
# the recorder active in the thread the event fired on.

# ---------------------------------------------------------------------------------
# The sys.monitoring callbacks
#
# C functions exposed as METH_FASTCALL builtins (no bound-method, CyFunction or
# argument-parsing layer).  sys.monitoring events are process-wide, so one tool id
# serves every thread that tracks: each callback hands its event to the Recorder
# active for that tool in the thread it fires on (a C thread-local slot), so
# threads record side by side without a lock.  Each calls its handler through a noexcept pointer, so no Python try/except
# runs per event; an error inside the recorder never reaches the traced program: it
# stops recording and track() reports it.

cdef extern from "Python.h":
    object PyErr_GetRaisedException()
    void PyErr_SetRaisedException(PyObject *exc)
    void PyErr_SetObject(object type, object value)
    int PyGC_Disable()
    int PyGC_Enable()
    ctypedef struct PyMethodDef:
        const char *ml_name
        void *ml_meth
        int ml_flags
        const char *ml_doc
    int METH_FASTCALL
    object PyCFunction_NewEx(PyMethodDef *ml, PyObject *self, PyObject *module)

ctypedef int (*code_handler)(Recorder, object, int) noexcept
ctypedef int (*dest_handler)(Recorder, object, int, int) noexcept
ctypedef int (*value_handler)(Recorder, object, int, object) noexcept

# The recorder each sys.monitoring tool id feeds in the current thread (NULL: none),
# one slot per tool id in C thread-local storage: the lookup is one TLS read, and
# another thread's events find its own recorder or nothing.  A slot owns a
# reference to its recorder (activate/deactivate).
cdef extern from *:
    """
    static _Thread_local PyObject *tracer_active[6];
    static inline PyObject *tracer_active_get(int tool) { return tracer_active[tool]; }
    static inline void tracer_active_set(int tool, PyObject *rec) { tracer_active[tool] = rec; }
    """
    PyObject *_active_get "tracer_active_get"(int tool) noexcept
    void _active_set "tracer_active_set"(int tool, PyObject *rec) noexcept

# Whether a callback may switch its location off (sys.monitoring.DISABLE): not
# while recorders of different plan modes share the tool id (allow_disable).
cdef bint ALLOW_DISABLE = True
# The code object of tracer.api.track: a call of it is one primitive call for the
# recorder that sees it (the nested track records its own trace).
cdef object TRACK_CODE = None


cdef inline PyObject *_reply(Recorder rec, int rc) noexcept:
    """What a callback returns for its handler's answer (a new reference, or NULL
    with an exception set to interrupt the program)."""
    # Inline for the common answer (go on, nothing to raise): one call less per event.
    if rc == EV_CONTINUE and rec.interrupt is None:
        Py_INCREF(None)
        return <PyObject *>None
    return _reply_slow(rec, rc)


cdef PyObject *_reply_slow(Recorder rec, int rc) noexcept:
    cdef PyObject *out = <PyObject *>None
    cdef object exc
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


cdef PyObject *_idle(Py_ssize_t nargs, Py_ssize_t expected) noexcept:
    # No recorder, a broken one, or a wrong call: do nothing (None) or say why.
    if nargs != expected:
        PyErr_SetObject(TypeError, f"tracer callback takes {expected} arguments, got {nargs}")
        return NULL
    Py_INCREF(None)
    return <PyObject *>None


# One C function per callback signature; the builtin's `self` is the index of its
# event's handler in that signature's table.
cdef code_handler CODE_HANDLERS[3]
cdef dest_handler DEST_HANDLERS[2]
cdef value_handler VALUE_HANDLERS[5]


# A callback builtin's `self` is tool << 4 | the index of its event's handler.
cdef inline PyObject *_active(int key) noexcept:
    return _active_get(key >> 4)


cdef PyObject *_cb_code(PyObject *k, PyObject **args, Py_ssize_t nargs) noexcept:
    # (code, offset): PY_START, PY_RESUME, INSTRUCTION
    cdef int key = _small_int(k)
    cdef PyObject *active = _active(key)
    if active == NULL or (<Recorder>active).broken or nargs != 2:
        return _idle(nargs, 2)
    cdef Recorder rec = <Recorder>active
    if TRACER_EVENT_LOG:
        _log_event(0, key, <object>args[0], _small_int(args[1]), None)
    return _reply(rec, CODE_HANDLERS[key & 15](rec, <object>args[0], _small_int(args[1])))


cdef PyObject *_cb_dest(PyObject *k, PyObject **args, Py_ssize_t nargs) noexcept:
    # (code, offset, destination): BRANCH, JUMP
    cdef int key = _small_int(k)
    cdef PyObject *active = _active(key)
    if active == NULL or (<Recorder>active).broken or nargs != 3:
        return _idle(nargs, 3)
    cdef Recorder rec = <Recorder>active
    if TRACER_EVENT_LOG:
        _log_event(1, key, <object>args[0], _small_int(args[1]), <object>args[2])
    return _reply(rec, DEST_HANDLERS[key & 15](rec, <object>args[0], _small_int(args[1]),
                                               _small_int(args[2])))


cdef PyObject *_cb_value(PyObject *k, PyObject **args, Py_ssize_t nargs) noexcept:
    # (code, offset, value): PY_RETURN, PY_YIELD, RAISE/RERAISE, PY_UNWIND, PY_THROW
    cdef int key = _small_int(k)
    cdef PyObject *active = _active(key)
    if active == NULL or (<Recorder>active).broken or nargs != 3:
        return _idle(nargs, 3)
    cdef Recorder rec = <Recorder>active
    if TRACER_EVENT_LOG:
        _log_event(2, key, <object>args[0], _small_int(args[1]), <object>args[2])
    return _reply(rec, VALUE_HANDLERS[key & 15](rec, <object>args[0], _small_int(args[1]),
                                                <object>args[2]))


cdef int _h_py_start(Recorder rec, object code, int offset) except -1:
    return _py_start(rec, code, offset)

cdef int _h_py_resume(Recorder rec, object code, int offset) except -1:
    return _py_resume(rec, code, offset)

cdef int _h_instruction(Recorder rec, object code, int offset) except -1:
    return _instruction(rec, code, offset)

cdef int _h_branch(Recorder rec, object code, int offset, int dest) except -1:
    return _branch(rec, code, offset, dest)

cdef int _h_jump(Recorder rec, object code, int offset, int dest) except -1:
    return _jump(rec, code, offset, dest)

cdef int _h_py_return(Recorder rec, object code, int offset, object value) except -1:
    return _py_return(rec, code, offset, value)

cdef int _h_py_yield(Recorder rec, object code, int offset, object value) except -1:
    return _py_yield(rec, code, offset, value)

cdef int _h_raise(Recorder rec, object code, int offset, object exc) except -1:
    return _raised(rec, code, offset, exc)

cdef int _h_py_unwind(Recorder rec, object code, int offset, object exc) except -1:
    return _py_unwind(rec, code, offset, exc)

cdef int _h_py_throw(Recorder rec, object code, int offset, object exc) except -1:
    return _py_throw(rec, code, offset, exc)


# Handlers are `except -1`; the tables hold them as noexcept pointers, so that no
# Python try/except runs per event (_reply turns -1 into a recorder failure).
CODE_HANDLERS[0] = <code_handler>_h_py_start
CODE_HANDLERS[1] = <code_handler>_h_py_resume
CODE_HANDLERS[2] = <code_handler>_h_instruction
DEST_HANDLERS[0] = <dest_handler>_h_branch
DEST_HANDLERS[1] = <dest_handler>_h_jump
VALUE_HANDLERS[0] = <value_handler>_h_py_return
VALUE_HANDLERS[1] = <value_handler>_h_py_yield
VALUE_HANDLERS[2] = <value_handler>_h_raise
VALUE_HANDLERS[3] = <value_handler>_h_py_unwind
VALUE_HANDLERS[4] = <value_handler>_h_py_throw

# The method table lives as long as the module; the builtins made from it (one set
# per tool id, differing in their `self`) are the callbacks tracer.api registers.
cdef PyMethodDef _CALLBACK_DEFS[10]
# Per callback: its name, the C function of its signature, its handler's index.
_CALLBACK_SPECS = (
    ("py_start", 0, 0), ("py_resume", 0, 1), ("instruction", 0, 2), ("branch", 1, 0),
    ("jump", 1, 1), ("py_return", 2, 0), ("py_yield", 2, 1), ("raise", 2, 2),
    ("py_unwind", 2, 3), ("py_throw", 2, 4),
)
cdef list _NAMES = [("on_" + name).encode() for name, _, _ in _CALLBACK_SPECS]  # kept: ml_name borrows


cdef void _fill_callback_defs():
    cdef void *shapes[3]
    shapes[0] = <void *>_cb_code
    shapes[1] = <void *>_cb_dest
    shapes[2] = <void *>_cb_value
    for k, (name, shape, handler) in enumerate(_CALLBACK_SPECS):
        _CALLBACK_DEFS[k].ml_name = <const char *>(<bytes>_NAMES[k])
        _CALLBACK_DEFS[k].ml_meth = shapes[shape]
        _CALLBACK_DEFS[k].ml_flags = METH_FASTCALL
        _CALLBACK_DEFS[k].ml_doc = NULL


_fill_callback_defs()
cdef list _CALLBACKS = [None] * 6   # per tool id: {name: builtin}, made on first use


def callbacks(int tool):
    """The callbacks for sys.monitoring tool id `tool`, by event name ("py_start",
    "instruction", ...): they feed the recorder `activate` gives that tool."""
    if not 0 <= tool < 6:
        raise ValueError(f"sys.monitoring tool ids are 0..5, not {tool}")
    made = _CALLBACKS[tool]
    if made is None:
        made = {}
        for k, (name, shape, handler) in enumerate(_CALLBACK_SPECS):
            key = tool << 4 | handler   # the builtin's self (it keeps a reference)
            made[name] = PyCFunction_NewEx(&_CALLBACK_DEFS[k], <PyObject *>key, NULL)
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
