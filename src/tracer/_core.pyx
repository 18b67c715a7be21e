# cython: freethreading_compatible = False
"""The compiled core: the node arena and the sys.monitoring recorder.

A Trace is a set of parallel columns, one row per node.  The Recorder receives
sys.monitoring events for the tracked thread and follows each code object's plan
(built by tracer.plan): at each event it replays the micro-ops of the segment that
just ran on the frame's shadow state and appends rows.  Values are read from the
frame's value stack through the _frame.c shim, only at slots the plan proves live.
"""

cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF, Py_XINCREF
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memset

import sys

cdef extern from "Python.h":
    ctypedef void (*freefunc)(void *)
    Py_ssize_t PyUnstable_Eval_RequestCodeExtraIndex(freefunc)
    int PyUnstable_Code_GetExtra(object code, Py_ssize_t index, void **extra)
    int PyUnstable_Code_SetExtra(object code, Py_ssize_t index, void *extra)
    void *PyThreadState_Get()
    bint PyCell_Check(PyObject *)
    PyObject *PyCell_GET(PyObject *)
    bint PyType_IS_GC(PyTypeObject *t)
    PyTypeObject *Py_TYPE(PyObject *o)

cdef extern from "_frame.h":
    void *tracer_current_frame()
    void *tracer_thread_state()
    void *tracer_thread_frame(void *tstate)
    void *tracer_frame_caller(void *frame)
    PyObject *tracer_frame_code(void *frame)
    PyObject *tracer_frame_function(void *frame)
    PyObject *tracer_frame_stack_item(void *frame, int index)
    void tracer_frame_stack_set(void *frame, int index, PyObject *value)
    PyObject *tracer_frame_local(void *frame, int index)
    int tracer_frame_lasti(void *frame)
    int tracer_code_nlocalsplus(PyObject *code)

# ---------------------------------------------------------------------------------
# Node kinds and flags (nodes.py mirrors the names)

cdef enum:
    K_ARGUMENT = 0
    K_CONSTANT = 1
    K_PRIMITIVE = 2
    K_NESTED = 3
    K_SPECIAL = 4
    K_JUMP = 5
    K_RETURN = 6

cdef enum:
    F_RAISED = 1      # the value is the exception the operation raised
    F_YIELD = 2       # a ReturnNode that is a generator's yield
    F_OPEN = 4        # the call has not finished (partial trace)
    F_STOPPED = 8     # FOR_ITER found the iterator exhausted
    F_CARRIED = 16    # an ArgumentNode for a value that entered mid-activation
    F_EXCEPTION = 32  # a SpecialCallNode holding the exception a handler caught
    F_FRAME = 64      # a NestedCallNode for a Python frame entered inside another call

KINDS = ("argument", "constant", "primitive", "nested", "special", "jump", "return")
FLAGS = {"raised": F_RAISED, "yield": F_YIELD, "open": F_OPEN, "stopped": F_STOPPED,
         "carried": F_CARRIED, "exception": F_EXCEPTION, "frame": F_FRAME}

# Micro-ops; the numbering is tracer.plan.MICRO_OPS (checked by a test).
cdef enum:
    M_END = 0
    M_LOAD_LOCAL = 1
    M_LOAD_CONST = 2
    M_SET = 3
    M_STORE_LOCAL = 4
    M_DELETE_LOCAL = 5
    M_COPY = 6
    M_SWAP = 7
    M_CAPTURE = 8
    M_CAPTURE_METHOD = 9
    M_RECORD = 10
    M_BRANCH = 11
    M_FOR_ITER = 12
    M_JUMP = 13
    M_RETURN = 14
    M_RETURN_CONST = 15
    M_YIELD = 16
    M_RAISE = 17
    M_LOST = 18
    M_RECORD_BOOL = 19  # recorded at the BRANCH event that pops it (see tracer.plan)
    M_SILENT_JUMP = 20  # a jump with no event: its JumpNode is written on replay
    M_SEND = 21         # yield from / await: b = the YIELD_VALUE after it, c = its target

MICRO_OPS = ("END", "LOAD_LOCAL", "LOAD_CONST", "SET", "STORE_LOCAL", "DELETE_LOCAL",
             "COPY", "SWAP", "CAPTURE", "CAPTURE_METHOD", "RECORD", "BRANCH", "FOR_ITER",
             "JUMP", "RETURN", "RETURN_CONST", "YIELD", "RAISE", "LOST", "RECORD_BOOL",
             "SILENT_JUMP", "SEND")

cdef enum:
    FIRST_ROWS = 1024   # the columns' first capacity, doubled as a trace grows
    FIRST_REFS = 2048
    OP_WORDS = 5
    POOL_CACHE = 256    # entries of Recorder._pool_ref's cache (a power of two)
    LF_SAFE = 1
    LF_CELL = 2
    LF_DYN = 4
    R_OP = 0
    R_CALL = 1
    R_CALL_EX = 2
    R_SPECIAL = 3
    IV_NONE = 0     # tracer.plan.IV_*: a record contexts may not substitute or override
    IV_ANY = 1
    IV_BOOL = 2     # ... may, keeping its result a bool
    JUMP_EVENT = 1      # tracer.plan.JUMP_EVENT: the jump at this unit fires JUMP
    SILENT_BRANCH = 2   # tracer.plan.SILENT_BRANCH: the branch here goes without BRANCH

# Shadow values: which node holds a local or stack slot, as a tagged int64.
#   row << 2          a node of the current call
#   k << 2 | 1        co_consts[k] of the frame's code
#   p << 2 | 2        the trace's constant pool entry p
#   3, 7, 11          NULL, unknown, an uncaptured constant
cdef enum:
    S_NULL = 3
    S_UNKNOWN = 7
    S_DYN = 11
cdef int64_t SPECIAL_SHADOW[3]
SPECIAL_SHADOW[0] = S_NULL
SPECIAL_SHADOW[1] = S_UNKNOWN
SPECIAL_SHADOW[2] = S_DYN

# Pending-segment states besides an op index.
# Context hook bits (tracer.context declares the same numbers; checked by a test).
cdef enum:
    H_CANRECUR = 1 << 0
    H_ENTER = 1 << 1
    H_NODE = 1 << 2          # << node kind: bits 2..8
    H_SUBSTITUTE = 1 << 9
    H_OVERRIDE = 1 << 10
    H_PRIMITIVES = 1 << 11
    H_SNAPSHOT = 1 << 12     # Context.snapshot overridden, or a function given: a Python call
    H_SNAP_COPY = 1 << 13    # snapshot="copy": mutable builtins copied in C
    H_SNAP_DEEP = 1 << 14    # snapshot="deepcopy"
    H_NODE_ALL = 127 << 2
    H_SNAP_ANY = H_SNAPSHOT | H_SNAP_COPY | H_SNAP_DEEP

# The per-node hook for each node kind (tracer.context.NODE_HOOKS, checked by a test).
NODE_HOOKS = ("trackedargument", "trackedconstant", "trackedprimitive", "trackednested",
              "trackedspecial", "trackedjump", "trackedreturn")

HOOK_BITS = {"canrecur": H_CANRECUR, "enter": H_ENTER, "node": H_NODE,
             "substitute": H_SUBSTITUTE, "override": H_OVERRIDE, "primitives": H_PRIMITIVES,
             "snapshot": H_SNAPSHOT, "snapshot_copy": H_SNAP_COPY,
             "snapshot_deepcopy": H_SNAP_DEEP}

# What an event handler tells its callback.
cdef enum:
    EV_CONTINUE = 0
    EV_DISABLE = 1

# How a frame is entered (Recorder._enter).
cdef enum:
    STARTED = 0     # a call starts it (PY_START)
    RESUMED = 1     # a generator or coroutine goes on after a yield (PY_RESUME)
    THROWN = 2      # ... with an exception thrown in at the yield (PY_THROW)

cdef enum:
    P_NONE = -1
    P_EXC = -2      # an exception is unwinding through the frame
    P_LOST = -3     # the frame ran something the plan cannot follow; resync at next event
    P_DONE = -4     # the segment was recorded to its end; the next one starts at this event

# Bytes of one row across the columns: kind, flags; parent, code, offset, aux,
# ref_start; value.
cdef Py_ssize_t ROW_BYTES = 2 * sizeof(uint8_t) + 5 * sizeof(int32_t) + sizeof(PyObject *)

cdef bint PY313 = sys.version_info >= (3, 13)
cdef object DISABLE = sys.monitoring.DISABLE
cdef object PY_TRUE = True
cdef object PY_FALSE = False


class _Unknown:
    """Stands for an input whose producer the recorder could not follow."""

    __slots__ = ()

    def __repr__(self):
        return "?"

    def __reduce__(self):
        return "UNKNOWN"


UNKNOWN = _Unknown()


# ---------------------------------------------------------------------------------
# The arena

@cython.final
cdef class Trace:
    """The recorded rows of one `track` call: parallel columns, one row per node.

    Row 0 is the root call.  Use `tracer.nodes` views to read it; the columns are
    exposed zero-copy as numpy arrays by `columns()`.
    """

    cdef int32_t n, cap, nrefs, refcap
    cdef uint8_t *kind_
    cdef uint8_t *flags_
    cdef int32_t *parent_
    cdef int32_t *code_
    cdef int32_t *offset_
    cdef int32_t *aux_
    cdef int32_t *ref_start_
    cdef PyObject **value_
    cdef int32_t *refs_
    cdef readonly list pool
    cdef readonly list codes
    cdef dict code_ids
    cdef readonly dict metadata
    cdef readonly dict functions   # row -> the replacement an operator was substituted by
    cdef readonly bint frozen
    cdef readonly bint stopped     # recording stopped early (a hook or recorder error)
    cdef readonly object exception
    cdef readonly long events      # sys.monitoring events the recorder handled for it
    cdef public tuple root_keywords
    cdef public object _cache
    cdef int exports

    def __cinit__(self):
        self.n = 0
        self.cap = 0
        self.nrefs = 0
        self.refcap = 0
        self.pool = [UNKNOWN]
        self.codes = []
        self.code_ids = {}
        self.metadata = {}
        self.functions = {}
        if not _take_spare(self):
            self._grow_rows(FIRST_ROWS)
            self._grow_refs(FIRST_REFS)
        self.ref_start_[0] = 0

    def __dealloc__(self):
        cdef int32_t i
        if self.value_ != NULL:
            for i in range(self.n):
                Py_XDECREF(self.value_[i])
        _give_spare(self)

    cdef int _grow_rows(self, int32_t need) except -1:
        cdef int32_t cap = self.cap if self.cap else FIRST_ROWS
        while cap < need:
            cap *= 2
        if cap == self.cap:
            return 0
        if self.exports:
            raise BufferError("the trace cannot grow while its columns are exported")
        self.kind_ = <uint8_t *>_realloc(self.kind_, cap * sizeof(uint8_t))
        self.flags_ = <uint8_t *>_realloc(self.flags_, cap * sizeof(uint8_t))
        self.parent_ = <int32_t *>_realloc(self.parent_, cap * sizeof(int32_t))
        self.code_ = <int32_t *>_realloc(self.code_, cap * sizeof(int32_t))
        self.offset_ = <int32_t *>_realloc(self.offset_, cap * sizeof(int32_t))
        self.aux_ = <int32_t *>_realloc(self.aux_, cap * sizeof(int32_t))
        self.ref_start_ = <int32_t *>_realloc(self.ref_start_, (cap + 1) * sizeof(int32_t))
        self.value_ = <PyObject **>_realloc(self.value_, cap * sizeof(PyObject *))
        self.cap = cap
        return 0

    cdef int _grow_refs(self, int32_t need) except -1:
        cdef int32_t cap = self.refcap if self.refcap else FIRST_REFS
        while cap < need:
            cap *= 2
        if cap == self.refcap:
            return 0
        if self.exports:
            raise BufferError("the trace cannot grow while its columns are exported")
        self.refs_ = <int32_t *>_realloc(self.refs_, cap * sizeof(int32_t))
        self.refcap = cap
        return 0

    cdef inline int32_t add_row(self, uint8_t kind, uint8_t flags, int32_t parent,
                                int32_t code, int32_t offset, int32_t aux,
                                PyObject *value) except -1:
        cdef int32_t r = self.n
        if r + 1 >= self.cap:
            self._grow_rows(r + 2)
        self.kind_[r] = kind
        self.flags_[r] = flags
        self.parent_[r] = parent
        self.code_[r] = code
        self.offset_[r] = offset
        self.aux_[r] = aux
        Py_XINCREF(value)
        self.value_[r] = value
        self.n = r + 1
        self.ref_start_[r + 1] = self.nrefs
        return r

    cdef inline int add_ref(self, int32_t ref) except -1:
        # Refs belong to the last row added (CSR layout).
        if self.nrefs >= self.refcap:
            self._grow_refs(self.nrefs + 1)
        self.refs_[self.nrefs] = ref
        self.nrefs += 1
        self.ref_start_[self.n] = self.nrefs
        return 0

    cdef inline int32_t pool_add(self, object value) except? -2:
        self.pool.append(value)
        return -<int32_t>len(self.pool)

    cdef inline void set_value(self, int32_t row, PyObject *value):
        Py_XINCREF(value)
        Py_XDECREF(self.value_[row])
        self.value_[row] = value

    cdef int32_t intern_code(self, object code) except -1:
        # By identity: equal code objects (the same source compiled twice) are
        # distinct codes.  `codes` keeps each alive, so its id stays its own.
        cdef object cid = self.code_ids.get(id(code))
        if cid is None:
            cid = len(self.codes)
            self.codes.append(code)
            self.code_ids[id(code)] = cid
        return cid

    # -- reading (the node views call these) ---------------------------------------
    def __len__(self):
        return self.n

    cdef inline int _check(self, int32_t row) except -1:
        if row < 0 or row >= self.n:
            raise IndexError(f"row {row} out of range for a trace of {self.n} nodes")
        return 0

    cpdef int kind(self, int32_t row) except -1:
        self._check(row)
        return self.kind_[row]

    cpdef int flags(self, int32_t row) except -1:
        self._check(row)
        return self.flags_[row]

    cpdef int parent(self, int32_t row) except -2:
        self._check(row)
        return self.parent_[row]

    cpdef int offset(self, int32_t row) except -2:
        self._check(row)
        return self.offset_[row]

    cpdef int aux(self, int32_t row) except? -2147483648:
        self._check(row)
        return self.aux_[row]

    cpdef object code(self, int32_t row):
        self._check(row)
        cdef int32_t c = self.code_[row]
        return self.codes[c] if c >= 0 else None

    cpdef object value(self, int32_t row):
        self._check(row)
        cdef PyObject *v = self.value_[row]
        if v == NULL:
            return None
        return <object>v

    cpdef int end(self, int32_t row) except -1:
        """One past the last row of the subtree under `row` (so far, if still open)."""
        self._check(row)
        return self._end(row)

    cdef inline int32_t _end(self, int32_t row) noexcept:
        if self.kind_[row] != K_NESTED:
            return row + 1
        if self.flags_[row] & F_OPEN and self.aux_[row] == 0:
            return self.n  # a call still being recorded (seen from a context hook)
        return self.aux_[row]

    cpdef list refs(self, int32_t row):
        """The inputs of a row in order: ints are rows, tuples ('const', value)."""
        self._check(row)
        cdef int32_t i, r
        cdef list out = []
        for i in range(self.ref_start_[row], self.ref_start_[row + 1]):
            r = self.refs_[i]
            if r >= 0:
                out.append(r)
            else:
                out.append(("const", self.pool[-r - 1]))
        return out

    cpdef list children(self, int32_t row):
        """Rows whose parent is `row`, in order."""
        self._check(row)
        cdef list out = []
        cdef int32_t c = row + 1
        cdef int32_t stop = self._end(row)
        while c < stop:
            out.append(c)
            c = self._end(c)
        return out

    @property
    def nbytes(self):
        """Bytes held by the columns (values themselves not counted)."""
        return self.n * ROW_BYTES + self.nrefs * sizeof(int32_t) + len(self.pool) * sizeof(PyObject *)

    @property
    def num_refs(self):
        """Number of entries in the refs column."""
        return self.nrefs

    def columns(self):
        """The columns as numpy arrays sharing the trace's memory (read-only)."""
        import numpy as np
        self.frozen = True
        out = {}
        for name in ("kind", "flags", "parent", "code", "offset", "aux", "ref_start", "refs"):
            arr = np.asarray(_Column(self, name))
            arr.flags.writeable = False
            out[name] = arr
        return out

    def values(self):
        """The values column as a list (a copy of the references)."""
        return [self.value(i) for i in range(self.n)]

    cdef int _finish(self, object exception) except -1:
        self.frozen = True
        self.exception = exception
        _fit_borrowed(self)
        return 0


# ---------------------------------------------------------------------------------
# Spare columns: the buffers of the last freed trace, reused by the next one.
#
# A trace's columns are large and freshly allocated memory costs a page fault per
# 4 KiB on first touch (about 2 us each on the measured machines: more than the
# recording itself for an op-dense trace).  Programs that trace repeatedly (an
# inference loop, a benchmark) free one trace and record the next of about the same
# size, so the freed buffers are kept, up to SPARE_LIMIT bytes, for the next Trace.

ctypedef struct Columns:
    int32_t cap, refcap
    uint8_t *kind_
    uint8_t *flags_
    int32_t *parent_
    int32_t *code_
    int32_t *offset_
    int32_t *aux_
    int32_t *ref_start_
    PyObject **value_
    int32_t *refs_

cdef Columns SPARE          # cap == 0: none kept
cdef Py_ssize_t SPARE_LIMIT = 64 << 20
memset(&SPARE, 0, sizeof(Columns))


cdef inline Py_ssize_t _columns_bytes(int32_t cap, int32_t refcap) noexcept:
    # Capacity, not use: pages of the capacity a trace never touched cost nothing.
    return (<Py_ssize_t>cap) * ROW_BYTES + (<Py_ssize_t>refcap) * sizeof(int32_t)


cdef void _free_columns(Columns *c) noexcept:
    free(c.kind_); free(c.flags_); free(c.parent_); free(c.code_); free(c.offset_)
    free(c.aux_); free(c.ref_start_); free(c.value_); free(c.refs_)
    memset(c, 0, sizeof(Columns))


cdef void _swap_columns(Columns *c, Trace t) noexcept:
    # Exchange the buffers of `c` and `t`.
    cdef Columns tmp
    tmp.cap = t.cap; tmp.refcap = t.refcap
    tmp.kind_ = t.kind_; tmp.flags_ = t.flags_; tmp.parent_ = t.parent_
    tmp.code_ = t.code_; tmp.offset_ = t.offset_; tmp.aux_ = t.aux_
    tmp.ref_start_ = t.ref_start_; tmp.value_ = t.value_; tmp.refs_ = t.refs_
    t.cap = c.cap; t.refcap = c.refcap
    t.kind_ = c.kind_; t.flags_ = c.flags_; t.parent_ = c.parent_
    t.code_ = c.code_; t.offset_ = c.offset_; t.aux_ = c.aux_
    t.ref_start_ = c.ref_start_; t.value_ = c.value_; t.refs_ = c.refs_
    c[0] = tmp


cdef bint _take_spare(Trace t) noexcept:
    """Give the new, empty trace `t` the spare columns, if any are kept."""
    if SPARE.cap == 0:
        return False
    _swap_columns(&SPARE, t)
    return True


cdef void _give_spare(Trace t) noexcept:
    """Free `t`'s columns or keep them as the spare (the larger set, within the limit)."""
    global SPARE
    cdef Columns mine
    memset(&mine, 0, sizeof(Columns))
    _swap_columns(&mine, t)
    cdef Py_ssize_t size = _columns_bytes(mine.cap, mine.refcap)
    if size <= SPARE_LIMIT and size > _columns_bytes(SPARE.cap, SPARE.refcap):
        _free_columns(&SPARE)
        SPARE = mine
    else:
        _free_columns(&mine)


cdef int _fit_borrowed(Trace t) except -1:
    """A finished trace that fills under a quarter of its columns (a small trace that
    took the spare of a big one) moves into right-sized columns and returns the big
    ones to the spare slot, so a long-lived small trace does not hold them."""
    global SPARE
    cdef Columns big, partial
    if t.exports or SPARE.cap != 0:
        return 0
    # Columns past their first capacity and under a quarter full regrow smaller.
    if not ((4 * <int64_t>t.n < t.cap and t.cap > FIRST_ROWS)
            or (4 * <int64_t>t.nrefs < t.refcap and t.refcap > FIRST_REFS)):
        return 0
    memset(&big, 0, sizeof(Columns))
    _swap_columns(&big, t)
    # Empty now, the trace grows columns for what it holds by its own rule.
    try:
        t._grow_rows(t.n + 1)
        t._grow_refs(t.nrefs)
    except MemoryError:
        # Keep the big columns: nothing is lost but memory.
        memset(&partial, 0, sizeof(Columns))
        _swap_columns(&partial, t)
        _free_columns(&partial)
        _swap_columns(&big, t)
        return 0
    memcpy(t.kind_, big.kind_, t.n * sizeof(uint8_t))
    memcpy(t.flags_, big.flags_, t.n * sizeof(uint8_t))
    memcpy(t.parent_, big.parent_, t.n * sizeof(int32_t))
    memcpy(t.code_, big.code_, t.n * sizeof(int32_t))
    memcpy(t.offset_, big.offset_, t.n * sizeof(int32_t))
    memcpy(t.aux_, big.aux_, t.n * sizeof(int32_t))
    memcpy(t.ref_start_, big.ref_start_, (t.n + 1) * sizeof(int32_t))
    memcpy(t.value_, big.value_, t.n * sizeof(PyObject *))
    memcpy(t.refs_, big.refs_, t.nrefs * sizeof(int32_t))
    SPARE = big             # their values moved to the trace, not owned
    return 0


def spare_columns_limit(limit=None):
    """Get or set how many bytes of freed trace columns are kept for the next trace.

    Returns the limit in force before the call.  ``0`` keeps none and frees the spare
    columns held now.
    """
    global SPARE_LIMIT
    cdef Py_ssize_t old = SPARE_LIMIT
    if limit is not None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise TypeError(f"the limit is a number of bytes (an int >= 0), not {limit!r}")
        SPARE_LIMIT = limit
        if _columns_bytes(SPARE.cap, SPARE.refcap) > SPARE_LIMIT:
            _free_columns(&SPARE)
    return old


def spare_columns_bytes():
    """The capacity in bytes of the spare trace columns kept now (0 if none)."""
    return _columns_bytes(SPARE.cap, SPARE.refcap) if SPARE.cap else 0


# The values column is a raw array the garbage collector cannot see on its own.  A
# trace can be part of a reference cycle (a recorded exception's traceback holds the
# frame of track(), which holds the recorder and its trace), so Trace's GC slots are
# extended to visit and clear the values too.
cdef extern from "Python.h":
    ctypedef int (*gc_visit "visitproc")(PyObject *, void *) noexcept
    ctypedef int (*gc_traverse "traverseproc")(PyObject *, gc_visit, void *) noexcept
    ctypedef int (*gc_clear "inquiry")(PyObject *) noexcept
    ctypedef struct TypeSlots "PyTypeObject":
        gc_traverse tp_traverse
        gc_clear tp_clear

cdef gc_traverse _trace_base_traverse = NULL
cdef gc_clear _trace_base_clear = NULL


cdef int _trace_traverse(PyObject *o, gc_visit visit, void *arg) noexcept:
    cdef Trace t = <Trace>o
    cdef int32_t i
    cdef int r
    cdef PyObject *v
    if t.value_ != NULL:
        for i in range(t.n):
            v = t.value_[i]
            # Only objects of collected types can be part of a cycle (the collector's
            # visitors ignore the others): skipping floats, ints and strings makes a
            # collection that meets a big trace several times cheaper.
            if v != NULL and PyType_IS_GC(Py_TYPE(v)):
                r = visit(v, arg)
                if r:
                    return r
    return _trace_base_traverse(o, visit, arg) if _trace_base_traverse != NULL else 0


cdef int _trace_clear(PyObject *o) noexcept:
    cdef Trace t = <Trace>o
    cdef int32_t i
    cdef PyObject *v
    if t.value_ != NULL:
        for i in range(t.n):
            v = t.value_[i]
            t.value_[i] = NULL
            Py_XDECREF(v)
    return _trace_base_clear(o) if _trace_base_clear != NULL else 0


_trace_base_traverse = (<TypeSlots *>Trace).tp_traverse
_trace_base_clear = (<TypeSlots *>Trace).tp_clear
(<TypeSlots *>Trace).tp_traverse = _trace_traverse
(<TypeSlots *>Trace).tp_clear = _trace_clear


cdef void *_realloc(void *p, size_t size) except NULL:
    cdef void *q = realloc(p, size)
    if q == NULL:
        raise MemoryError("tracer: out of memory growing the trace")
    return q


@cython.final
cdef class _Column:
    """A buffer-protocol view of one column, keeping its Trace alive."""

    cdef Trace trace
    cdef void *ptr
    cdef Py_ssize_t length
    cdef Py_ssize_t itemsize
    cdef bytes fmt
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __cinit__(self, Trace trace, str name):
        self.trace = trace
        n = trace.n
        if name == "kind":
            self.ptr, self.itemsize, self.fmt = trace.kind_, 1, b"B"
        elif name == "flags":
            self.ptr, self.itemsize, self.fmt = trace.flags_, 1, b"B"
        elif name == "parent":
            self.ptr, self.itemsize, self.fmt = trace.parent_, 4, b"i"
        elif name == "code":
            self.ptr, self.itemsize, self.fmt = trace.code_, 4, b"i"
        elif name == "offset":
            self.ptr, self.itemsize, self.fmt = trace.offset_, 4, b"i"
        elif name == "aux":
            self.ptr, self.itemsize, self.fmt = trace.aux_, 4, b"i"
        elif name == "ref_start":
            self.ptr, self.itemsize, self.fmt = trace.ref_start_, 4, b"i"
            n = n + 1
        elif name == "refs":
            self.ptr, self.itemsize, self.fmt = trace.refs_, 4, b"i"
            n = trace.nrefs
        else:
            raise ValueError(f"no column named {name!r}")
        self.length = n

    def __getbuffer__(self, Py_buffer *buf, int flags):
        self.shape[0] = self.length
        self.strides[0] = self.itemsize
        buf.buf = self.ptr
        buf.obj = self
        buf.len = self.length * self.itemsize
        buf.readonly = 1
        buf.itemsize = self.itemsize
        buf.format = self.fmt
        buf.ndim = 1
        buf.shape = self.shape
        buf.strides = self.strides
        buf.suboffsets = NULL
        buf.internal = NULL
        self.trace.exports += 1

    def __releasebuffer__(self, Py_buffer *buf):
        self.trace.exports -= 1


# ---------------------------------------------------------------------------------
# Per-code plans, cached on the code object (PEP 523 co_extra)

ctypedef struct CPlan:
    PyObject *owner          # the tracer.plan.CodePlan (strong reference)
    PyObject *consts         # code.co_consts (borrowed from owner)
    PyObject *statics        # list (borrowed from owner)
    int32_t *ops
    int32_t *recs
    int32_t *rec_iv          # per record start: IV_* (which records contexts may change)
    int32_t *seg_at
    int32_t *seg_from
    int32_t *depth
    int32_t *handler
    int32_t *istart
    int32_t *seg_end         # per op: offset of the END closing its segment, or -1
    int32_t *piece_lo        # per op: first offset of its straight-line piece
    int32_t *unit_flags      # per code unit: JUMP_EVENT | SILENT_BRANCH (tracer.plan)
    int32_t *sides           # the successors of silent branches (plan.silent_branches)
    int32_t *sides_at        # per op: index in sides of the silent branch ending its segment
    int32_t *carry           # per code unit: stack slots a generator resumed there brings (bits)
    int32_t nunits
    int32_t nlocalsplus
    int32_t stacksize
    int32_t nparams
    int64_t session          # the recording session that last used it
    int32_t code_id          # its code id in that session's trace
    int32_t ncellparams
    int32_t cellparams[8]
    # Pool refs of co_consts entries and statics already added to the current
    # session's pool (0: not yet), so each constant is pooled once per trace.
    int32_t nconsts
    int32_t nstatics
    int32_t *const_refs
    int32_t *static_refs


cdef void _free_plan(void *p) noexcept:
    cdef CPlan *plan = <CPlan *>p
    if plan != NULL:
        Py_XDECREF(plan.owner)
        free(plan.const_refs)
        free(plan.static_refs)
        free(plan.seg_end)
        free(plan)


# One co_extra slot per plan variant: the plain plan, and the one for contexts that
# substitute or override (tracer.plan.build_plan's `interventions`).
cdef Py_ssize_t CODE_EXTRA_INDEX = PyUnstable_Eval_RequestCodeExtraIndex(_free_plan)
cdef Py_ssize_t CODE_EXTRA_INDEX_IV = PyUnstable_Eval_RequestCodeExtraIndex(_free_plan)


cdef inline int32_t *_buffer_address(object arr):
    # array('i').buffer_info()[0] is the address of its items; the arrays are never
    # resized after the plan is built, and the CPlan keeps their owner alive.
    return <int32_t *><size_t>arr.buffer_info()[0]


cdef CPlan *_plan_for(object code, bint interventions=False) except NULL:
    cdef void *extra = NULL
    cdef Py_ssize_t index = CODE_EXTRA_INDEX_IV if interventions else CODE_EXTRA_INDEX
    if PyUnstable_Code_GetExtra(code, index, &extra) < 0:
        raise RuntimeError("tracer: cannot read the code object's extra slot")
    if extra != NULL:
        return <CPlan *>extra
    from tracer.plan import build_plan
    owner = build_plan(code, interventions)
    cdef CPlan *plan = <CPlan *>malloc(sizeof(CPlan))
    if plan == NULL:
        raise MemoryError()
    memset(plan, 0, sizeof(CPlan))
    Py_INCREF(owner)
    plan.owner = <PyObject *>owner
    plan.consts = <PyObject *>code.co_consts
    plan.statics = <PyObject *>owner.statics
    plan.ops = _buffer_address(owner.ops)
    plan.recs = _buffer_address(owner.recs) if len(owner.recs) else NULL
    plan.rec_iv = _buffer_address(owner.rec_iv) if len(owner.rec_iv) else NULL
    plan.seg_at = _buffer_address(owner.seg_at)
    plan.seg_from = _buffer_address(owner.seg_from)
    plan.depth = _buffer_address(owner.depth)
    plan.handler = _buffer_address(owner.handler)
    plan.istart = _buffer_address(owner.istart)
    plan.piece_lo = _buffer_address(owner.piece_lo)
    plan.unit_flags = _buffer_address(owner.unit_flags)
    plan.sides = _buffer_address(owner.sides) if len(owner.sides) else NULL
    plan.sides_at = _buffer_address(owner.sides_at)
    plan.carry = _buffer_address(owner.carry)
    plan.nunits = len(owner.seg_at)
    plan.nlocalsplus = tracer_code_nlocalsplus(<PyObject *>code)
    plan.stacksize = code.co_stacksize
    plan.nparams = owner.nparams
    plan.session = -1
    plan.nconsts = len(code.co_consts)
    plan.nstatics = len(owner.statics)
    plan.const_refs = <int32_t *>calloc(plan.nconsts + 1, sizeof(int32_t))
    plan.static_refs = <int32_t *>calloc(plan.nstatics + 1, sizeof(int32_t))
    if plan.const_refs == NULL or plan.static_refs == NULL:
        _free_plan(plan)
        raise MemoryError()
    plan.seg_end = _segment_ends(plan.ops, len(owner.ops) // OP_WORDS)
    if plan.seg_end == NULL:
        _free_plan(plan)
        raise MemoryError()
    cells = owner.param_cells[:8]
    plan.ncellparams = len(cells)
    for i, c in enumerate(cells):
        plan.cellparams[i] = c
    if PyUnstable_Code_SetExtra(code, index, plan) < 0:
        _free_plan(plan)
        raise RuntimeError("tracer: cannot store the plan on the code object")
    return plan


cdef int32_t *_segment_ends(int32_t *ops, Py_ssize_t nops) noexcept:
    # For each op, the offset of the END that closes its segment, or -1 when the
    # segment ends in a control op (BRANCH, JUMP, RETURN, ...) instead.
    cdef int32_t *ends = <int32_t *>malloc((nops + 1) * sizeof(int32_t))
    cdef int32_t end = -1
    cdef Py_ssize_t i
    cdef int32_t opc
    if ends == NULL:
        return NULL
    for i in range(nops - 1, -1, -1):
        opc = ops[i * OP_WORDS]
        if opc == M_END:
            end = ops[i * OP_WORDS + 1]
        elif opc >= M_BRANCH and opc != M_SILENT_JUMP:
            end = -1
        ends[i] = end
    return ends


def plan_of(code, interventions=False):
    """The analysis plan the recorder uses for `code` (for tests and tools)."""
    return <object>_plan_for(code, interventions).owner


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
    uint8_t direct_ok     # the opened op is a call whose callee's body may be its own
    uint8_t direct_done   # the opened op already used its first frame directly
    PyObject *ctx         # borrowed; kept alive by Recorder.contexts
    uint32_t hooks        # the hook mask of ctx (tracer.context.Context.hook_mask)
    int32_t subst_pc      # the op substituted at its start event, or -1
    PyObject *subst_new   # owned: the replacement callable
    PyObject *subst_orig  # owned: the callable it replaced
    PyObject *subst_args  # owned: an operator's operands (tuple), else NULL


@cython.final
cdef class Recorder:
    """Drives one `track` call: owns the trace and the sys.monitoring callbacks."""

    cdef readonly Trace trace
    cdef void *tstate
    cdef FrameRec *frames
    cdef int32_t nframes, framecap
    cdef int64_t *shadow
    cdef int64_t shadow_top, shadow_cap
    cdef int64_t session
    cdef readonly object root_code
    cdef readonly list contexts
    cdef readonly dict instrumented     # id(code) -> code: the code objects given local events
    cdef dict module_verdicts   # id(ctx.modules) -> {id(code): (code, bool)}
    cdef public object on_code          # (code, uses JUMP events): instrument a new code object
    cdef public object hook_error
    cdef public object on_stop          # called once when a hook error stops tracking
    cdef object interrupt               # a KeyboardInterrupt/SystemExit from a hook, to raise
    cdef readonly object internal_error
    cdef readonly bint broken
    cdef readonly long events
    cdef readonly bint interventions   # the session uses plans for substitute/override
    cdef PyObject *returning            # borrowed: the value of the PY_RETURN being handled
    cdef object kept                    # the last snapshot _kept made (until its row takes it)
    cdef int user_depth                 # hooks running (_user_code_starts)
    cdef PyObject *pool_cache_obj[POOL_CACHE]   # _pool_ref's cache (borrowed: the pool owns them)
    cdef int32_t pool_cache_ref[POOL_CACHE]
    cdef bint gc_was_enabled            # the collector's state before the outermost one
    cdef int tool

    def __cinit__(self, int64_t session):
        self.trace = Trace()
        self.session = session
        self.framecap = 64
        self.frames = <FrameRec *>malloc(self.framecap * sizeof(FrameRec))
        self.shadow_cap = 4096
        self.shadow = <int64_t *>malloc(self.shadow_cap * sizeof(int64_t))
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

    # -- setup -----------------------------------------------------------------------
    def begin_root(self, object f, tuple args, dict kwargs, object ctx):
        """Create the root row and the pseudo-frame of track()'s caller."""
        self.tstate = PyThreadState_Get()
        cdef Trace t = self.trace
        cdef int32_t root = t.add_row(K_NESTED, F_OPEN, -1, -1, -1, 0, NULL)
        t.add_ref(t.pool_add(f))
        for a in args:
            t.add_ref(t.pool_add(a))
        for k, v in kwargs.items():
            t.add_ref(t.pool_add(v))
        t.root_keywords = tuple(kwargs)
        self.root_code = getattr(f, "__code__", None)
        self.contexts.append(ctx)
        cdef uint32_t hooks = ctx.hook_mask()
        # Whether any context of this call may intervene is decided by the root's:
        # the plan variant is fixed for the whole call (see Context.enter).  The
        # same variant serves snapshots: it reads every value at an event right
        # after its instruction, before later code can change it.
        self.interventions = (hooks & (H_SUBSTITUTE | H_OVERRIDE | H_SNAP_ANY)) != 0
        cdef FrameRec *fr = self._push(tracer_current_frame(), NULL, -1, root, <PyObject *>ctx,
                                       hooks)
        fr.open_row = root
        fr.direct_ok = 1
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
        if exception is not None:
            t.flags_[0] |= F_RAISED
            t.set_value(0, <PyObject *>exception)
        else:
            t.set_value(0, <PyObject *>result)
        t.aux_[0] = t.n
        for i in range(self.nframes):
            if self.frames[i].subst_pc >= 0:
                _clear_substitution(&self.frames[i])
        self.nframes = 0
        t.stopped = self.broken
        t.events = self.events
        t._finish(exception)

    # -- frame stack -----------------------------------------------------------------
    cdef FrameRec *_push(self, void *frame, CPlan *plan, int32_t code_id, int32_t call_row,
                         PyObject *ctx, uint32_t hooks) except NULL:
        cdef FrameRec *fr
        cdef int64_t need, i
        if self.nframes == self.framecap:
            self.framecap *= 2
            self.frames = <FrameRec *>_realloc(self.frames, self.framecap * sizeof(FrameRec))
        need = 0 if plan == NULL else plan.nlocalsplus + plan.stacksize
        if self.shadow_top + need > self.shadow_cap:
            while self.shadow_top + need > self.shadow_cap:
                self.shadow_cap *= 2
            self.shadow = <int64_t *>_realloc(self.shadow, self.shadow_cap * sizeof(int64_t))
        fr = &self.frames[self.nframes]
        self.nframes += 1
        fr.frame = frame
        fr.code = NULL
        fr.plan = plan
        fr.code_id = code_id
        fr.call_row = call_row
        fr.pending = P_NONE
        fr.pc = 0
        fr.open_row = -1
        fr.exc_row = -1
        fr.shadow = <int32_t>self.shadow_top
        fr.open_primitive = 0
        fr.direct_done = 0
        fr.direct_ok = 0
        fr.ctx = ctx
        fr.hooks = hooks
        fr.subst_pc = -1
        fr.subst_new = fr.subst_orig = fr.subst_args = NULL
        for i in range(need):
            self.shadow[self.shadow_top + i] = S_UNKNOWN
        self.shadow_top += need
        return fr

    cdef inline void _pop(self):
        cdef FrameRec *fr = &self.frames[self.nframes - 1]
        cdef CPlan *plan = fr.plan
        if fr.subst_pc >= 0:
            _clear_substitution(fr)
        if plan != NULL:
            self.shadow_top -= plan.nlocalsplus + plan.stacksize
        self.nframes -= 1

    cdef inline FrameRec *_top_for(self, object code) noexcept:
        # The frame record an event belongs to, or NULL if the event is from another
        # thread or from a frame the recorder does not follow.
        if self.nframes == 0 or tracer_thread_state() != self.tstate:
            return NULL
        cdef FrameRec *fr = &self.frames[self.nframes - 1]
        if fr.code != <PyObject *>code or fr.frame != tracer_thread_frame(self.tstate):
            return NULL
        return fr

    # -- shadow helpers ---------------------------------------------------------------
    cdef inline int64_t *_locals(self, FrameRec *fr) noexcept:
        return self.shadow + fr.shadow

    cdef inline int64_t *_stack(self, FrameRec *fr) noexcept:
        return self.shadow + fr.shadow + fr.plan.nlocalsplus

    cdef int32_t _ref(self, FrameRec *fr, int64_t s) except? -2147483647:
        """The ref encoding of a shadow value (constants go to the pool)."""
        cdef int64_t tag = s & 3
        if tag == 0:
            return <int32_t>(s >> 2)
        if tag == 1:
            return self._const_ref(fr.plan, <int32_t>(s >> 2))
        if tag == 2:
            return -<int32_t>(s >> 2) - 1
        return -1  # pool[0] is UNKNOWN

    cdef void _own_refs(self, CPlan *plan) noexcept:
        # The plan's pooled constants are this session's from now on.
        plan.session = self.session
        memset(plan.const_refs, 0, plan.nconsts * sizeof(int32_t))
        memset(plan.static_refs, 0, plan.nstatics * sizeof(int32_t))

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
                self._own_refs(plan)

    cdef inline int32_t _const_ref(self, CPlan *plan, int32_t k) except? -2147483647:
        cdef int32_t ref = plan.const_refs[k]
        if ref == 0:
            ref = self.trace.pool_add(<object>PyTuple_GET_ITEM(<object>plan.consts, k))
            plan.const_refs[k] = ref
        return ref

    cdef inline int32_t _static_ref(self, CPlan *plan, int32_t k) except? -2147483647:
        cdef int32_t ref = plan.static_refs[k]
        if ref == 0:
            ref = self.trace.pool_add(<object>PyList_GET_ITEM(<object>plan.statics, k))
            plan.static_refs[k] = ref
        return ref

    cdef int32_t _constant_row(self, FrameRec *fr, int32_t offset, int32_t aux,
                               PyObject *value) except -1:
        if fr.hooks & H_SNAP_ANY:
            value = self._kept(fr, value)
        cdef int32_t r = self.trace.add_row(K_CONSTANT, 0, fr.call_row, fr.code_id, offset,
                                            aux, value)
        self._emit(fr, r)
        return r

    cdef PyObject *_shadow_value(self, FrameRec *fr, int64_t s) noexcept:
        """The value of a constant shadow (static or pool); NULL otherwise."""
        cdef int64_t tag = s & 3
        if tag == 1:
            return PyTuple_GET_ITEM(<object>fr.plan.consts, s >> 2)
        if tag == 2:
            return PyList_GET_ITEM(self.trace.pool, s >> 2)
        return NULL

    cdef inline PyObject *_frame_local(self, FrameRec *fr, int32_t i, int32_t flags) noexcept:
        cdef PyObject *v = tracer_frame_local(fr.frame, i)
        if v != NULL and (flags & LF_CELL) and PyCell_Check(v):
            v = PyCell_GET(v)
        return v

    # -- running segments ----------------------------------------------------------------
    cdef int _run_to_end(self, FrameRec *fr) except -1:
        """Run the pending segment's ops from fr.pc up to its END or terminal op.

        The hot path: the same as _run(fr, -1, False), as one switch per op.
        """
        cdef int32_t *ops = fr.plan.ops
        cdef int32_t *op
        cdef int32_t *r
        cdef int32_t pc = fr.pc
        cdef int32_t opc
        cdef int64_t *sl = self._locals(fr)
        cdef int64_t *ss = sl + fr.plan.nlocalsplus
        cdef int64_t s
        cdef PyObject *known
        if fr.pending < 0:
            return 0
        while True:
            op = ops + pc * OP_WORDS
            opc = op[0]
            # Loads come in runs before a record: they are taken in a loop of plain
            # conditional branches, which the CPU predicts from the segment's
            # pattern, instead of one trip each through the switch's single
            # indirect jump.
            while opc == M_LOAD_LOCAL or opc == M_LOAD_CONST:
                if opc == M_LOAD_LOCAL:
                    s = sl[op[3]]
                    if s == S_UNKNOWN and (op[4] & LF_SAFE):
                        s = self._carried(fr, op)
                    ss[op[2]] = s
                else:
                    ss[op[2]] = ((<int64_t>op[3]) << 2) | 1
                pc += 1
                op += OP_WORDS
                opc = op[0]
            # One comparison per case on a C variable: Cython emits a switch.
            if opc == M_STORE_LOCAL:
                s = ss[op[2]]
                sl[op[3]] = s if s & 3 == 0 else self._stored(fr, s, op[3], op[4], op[1])
            elif opc == M_RECORD:
                fr.pc = pc
                # its result went to a local or is returned (tracer.plan.deferral), or is
                # on the stack
                known = self._deferred_value(fr, op) if op[4] else NULL
                r = fr.plan.recs + op[2]
                if fr.open_row < 0 and r[3] == 1:
                    self._record_primitive(fr, r, known)
                else:
                    self._record(fr, op[2], NULL, known)
            elif opc == M_SET:
                ss[op[2]] = SPECIAL_SHADOW[op[3]]
            elif opc == M_DELETE_LOCAL:
                sl[op[2]] = S_UNKNOWN
            elif opc == M_COPY:
                ss[op[2]] = ss[op[3]]
            elif opc == M_SWAP:
                s = ss[op[2]]
                ss[op[2]] = ss[op[3]]
                ss[op[3]] = s
            elif opc == M_CAPTURE:
                ss[op[2]] = self._capture(fr, op[2])
            elif opc == M_CAPTURE_METHOD:
                self._capture_method(fr, op[2], op[3])
            elif opc == M_SILENT_JUMP:
                self._jump_row(fr, op[1], op[4], S_NULL, <PyObject *>None)
            else:
                break  # END or a terminal op, left for the caller
            pc += 1
        fr.pc = pc
        return 0

    cdef int64_t _carried(self, FrameRec *fr, int32_t *op) except? -1:
        # A local read before the recorder saw it stored (a generator resumed, a
        # resync): its current value enters as a carried ArgumentNode.
        cdef int32_t b = op[3]
        cdef PyObject *v = self._frame_local(fr, b, op[4])
        cdef int64_t s
        if v == NULL:
            return S_UNKNOWN
        if fr.hooks & H_SNAP_ANY:
            v = self._kept(fr, v)
        cdef int32_t row = self.trace.add_row(K_ARGUMENT, F_CARRIED, fr.call_row, fr.code_id,
                                              op[1], -b - 1, v)
        s = (<int64_t>row) << 2
        self._locals(fr)[b] = s
        self._emit(fr, row)
        return s

    cdef inline PyObject *_deferred_value(self, FrameRec *fr, int32_t *op) noexcept:
        # A RECORD's result read back from the local the next instruction stored it
        # in (the plan checked that nothing in the segment assigns that local again),
        # or the value the PY_RETURN being handled returns (tracer.plan.deferral).
        cdef PyObject *v = tracer_frame_local(fr.frame, op[4] - 1) if op[4] > 0 \
            else self.returning
        if v == NULL:
            # Unbound after all (a debugger rewrote the frame's locals): never fall
            # back to the stack slot, which the value has left.
            return <PyObject *>UNKNOWN
        return v

    cdef int32_t _executing(self, FrameRec *fr) noexcept:
        """The offset of the instruction fr's frame is executing (suspended in)."""
        cdef int32_t lasti = tracer_frame_lasti(fr.frame)
        if 0 <= lasti < 2 * fr.plan.nunits:
            return fr.plan.istart[lasti >> 1]
        return -1

    cdef int _run(self, FrameRec *fr, int32_t stop_offset, bint before_record) except -1:
        """Run the pending segment's ops from fr.pc up to instruction `stop_offset`.

        That instruction is executing now (it raised, or it started a Python frame):
        the ops of the instructions before it in the segment are replayed, including
        records whose result went to a local.  Stops at its first op, and anyway at
        a RECORD that reads the stack, an END or a terminal op (left for the
        caller); with `before_record` also before any stack capture.  Offsets grow
        along each straight-line piece of a segment (pieces are joined by silent
        jumps), so the stop is the first op at or after `stop_offset` in the piece
        that holds it.  Events at a segment's end use _run_to_end instead.
        """
        cdef int32_t *op
        cdef int32_t opc, a, b
        cdef int32_t *lo = fr.plan.piece_lo
        cdef int64_t *sl = self._locals(fr)
        cdef int64_t *ss = self._stack(fr)
        cdef int64_t s
        if fr.pending < 0:
            return 0
        while True:
            op = fr.plan.ops + fr.pc * OP_WORDS
            opc = op[0]
            if op[1] >= stop_offset and lo[fr.pc] <= stop_offset:
                return 0
            if opc == M_SILENT_JUMP:
                self._jump_row(fr, op[1], op[4], S_NULL, <PyObject *>None)
                fr.pc += 1
                continue
            if opc == M_RECORD and op[4] > 0 and stop_offset >= 0:
                self._record(fr, op[2], NULL, self._deferred_value(fr, op))
                fr.pc += 1
                continue
            if opc >= M_RECORD or opc == M_END:
                return 0  # its RECORD, END or terminal op is the caller's
            if before_record and (opc == M_CAPTURE or opc == M_CAPTURE_METHOD):
                return 0  # stack reads wait for the segment's end event
            a = op[2]
            b = op[3]
            if opc == M_LOAD_LOCAL:
                s = sl[b]
                if s == S_UNKNOWN and (op[4] & LF_SAFE):
                    s = self._carried(fr, op)
                ss[a] = s
            elif opc == M_LOAD_CONST:
                ss[a] = ((<int64_t>b) << 2) | 1
            elif opc == M_SET:
                ss[a] = SPECIAL_SHADOW[b]
            elif opc == M_STORE_LOCAL:
                sl[b] = self._stored(fr, ss[a], b, op[4], op[1])
            elif opc == M_DELETE_LOCAL:
                sl[a] = S_UNKNOWN
            elif opc == M_COPY:
                ss[a] = ss[b]
            elif opc == M_SWAP:
                s = ss[a]
                ss[a] = ss[b]
                ss[b] = s
            elif opc == M_CAPTURE:
                ss[a] = self._capture(fr, a)
            elif opc == M_CAPTURE_METHOD:
                self._capture_method(fr, a, b)
            fr.pc += 1

    cdef int64_t _capture(self, FrameRec *fr, int32_t depth) except? -1:
        cdef PyObject *v = tracer_frame_stack_item(fr.frame, depth)
        if v == NULL:
            return S_NULL
        return ((<int64_t>(-self._pool_ref(v) - 1)) << 2) | 2

    cdef inline int32_t _pool_ref(self, PyObject *v) except? -2:
        """The pool ref of a captured constant, added once per object and trace.

        A global function or a method descriptor is captured at every execution of
        its load; a small cache by address finds the entry made last time (the pool
        keeps the object alive, so its address cannot be reused meanwhile).
        """
        cdef size_t h = (<size_t>v >> 4) & (POOL_CACHE - 1)
        cdef int32_t ref
        if self.pool_cache_obj[h] == v:
            return self.pool_cache_ref[h]
        ref = self.trace.pool_add(<object>v)
        self.pool_cache_obj[h] = v
        self.pool_cache_ref[h] = ref
        return ref

    cdef int _capture_method(self, FrameRec *fr, int32_t a, int32_t b) except -1:
        # (callable, self) or, when the attribute is not a method, (NULL, attr) on
        # 3.12 and (attr, NULL) on 3.13.
        cdef int64_t *ss = self._stack(fr)
        cdef PyObject *va = tracer_frame_stack_item(fr.frame, a)
        cdef PyObject *vb = tracer_frame_stack_item(fr.frame, b)
        if va == NULL:
            ss[a] = S_NULL
            ss[b] = self._capture(fr, b)
            return 0
        ss[a] = self._capture(fr, a)
        if vb == NULL:
            ss[b] = S_NULL
        elif ss[b] == S_DYN or ss[b] == S_UNKNOWN:
            ss[b] = self._capture(fr, b)
        return 0

    cdef int64_t _stored(self, FrameRec *fr, int64_t s, int32_t local, int32_t flags,
                         int32_t offset) except? -1:
        """The shadow of a local after storing a value whose shadow is `s`."""
        cdef int64_t tag = s & 3
        cdef PyObject *v
        if tag == 0:
            return s
        if tag == 1 or tag == 2:
            v = self._shadow_value(fr, s)
        elif flags & LF_DYN:
            v = self._frame_local(fr, local, flags)
        else:
            return S_UNKNOWN
        if v == NULL:
            return S_UNKNOWN
        return (<int64_t>self._constant_row(fr, offset, local, v)) << 2

    cdef int32_t _open(self, FrameRec *fr, int32_t rec, uint8_t kind) except -1:
        """Append the row of recorded op `rec` with its inputs; its value comes later."""
        cdef int32_t *r = fr.plan.recs + rec
        cdef int32_t nin = r[2], i, x
        cdef int64_t *ss = self._stack(fr)
        cdef int64_t s
        cdef Trace t = self.trace
        cdef int32_t op_offset = (fr.plan.ops + fr.pc * OP_WORDS)[1]
        cdef int32_t row = t.add_row(kind, F_OPEN, fr.call_row, fr.code_id, op_offset, 0, NULL)
        for i in range(nin):
            x = r[5 + i]
            if x < 0:
                t.add_ref(self._static_ref(fr.plan, -x - 1))
                continue
            s = ss[x]
            if s == S_NULL:
                continue
            t.add_ref(self._ref(fr, s))
        if fr.subst_pc == fr.pc and fr.subst_args == NULL:
            self._patch_callee(fr, row)
        return row

    cdef int _record_primitive(self, FrameRec *fr, int32_t *r, PyObject *known) except -1:
        """The hot path of _record: an op that ran without a nested call, one output.

        Writes the whole row at once: kind, inputs and the value read from the
        output's stack slot (live at this event by the plan's check).
        """
        cdef Trace t = self.trace
        cdef int32_t nin = r[2], i, x, ref
        cdef int32_t out = r[5 + nin]
        cdef int64_t *ss = self._stack(fr)
        cdef int64_t s
        cdef int32_t row = t.n
        cdef PyObject *v = known if known != NULL else tracer_frame_stack_item(fr.frame, out)
        if row + 1 >= t.cap:
            t._grow_rows(row + 2)
        if t.nrefs + nin > t.refcap:
            t._grow_refs(t.nrefs + nin)
        # The inputs as _open writes them, inlined here: this is the per-node hot path.
        for i in range(nin):
            x = r[5 + i]
            if x < 0:
                ref = self._static_ref(fr.plan, -x - 1)
            else:
                s = ss[x]
                if s & 3 == 0:
                    ref = <int32_t>(s >> 2)
                elif s == S_NULL:
                    continue
                else:
                    ref = self._ref(fr, s)
            t.refs_[t.nrefs] = ref
            t.nrefs += 1
        t.kind_[row] = K_SPECIAL if r[0] == R_SPECIAL else K_PRIMITIVE
        t.flags_[row] = 0
        t.parent_[row] = fr.call_row
        t.code_[row] = fr.code_id
        t.offset_[row] = (fr.plan.ops + fr.pc * OP_WORDS)[1]
        t.aux_[row] = 0
        Py_XINCREF(v)
        t.value_[row] = v
        t.n = row + 1
        t.ref_start_[row + 1] = t.nrefs
        ss[out] = (<int64_t>row) << 2
        if fr.hooks:
            return self._recorded(fr, row, out if known == NULL else -1,
                                  fr.plan.rec_iv[r - fr.plan.recs])
        return 0

    cdef int _record(self, FrameRec *fr, int32_t rec, PyObject *raised,
                     PyObject *known=NULL) except -1:
        """Record op `rec` at its end event (or its failure, with `raised`).

        `known` is its one output's value when that is no longer on the stack (a
        RECORD_BOOL recorded at its branch).
        """
        cdef int32_t *r = fr.plan.recs + rec
        cdef int32_t sem = r[0], nin = r[2], nout = r[3], j, row, extra
        cdef int32_t *outs = r + 5 + nin
        cdef int64_t *ss = self._stack(fr)
        cdef Trace t = self.trace
        cdef PyObject *v
        if fr.open_row >= 0:
            row = fr.open_row
            fr.open_row = -1
            if t.kind_[row] == K_NESTED:
                t.aux_[row] = t.n
        elif raised == NULL and nout == 1:
            return self._record_primitive(fr, r, known)
        else:
            row = self._open(fr, rec, K_SPECIAL if sem == R_SPECIAL else K_PRIMITIVE)
        t.flags_[row] &= ~F_OPEN
        if raised != NULL:
            t.flags_[row] |= F_RAISED
            t.set_value(row, raised)
            fr.exc_row = row
            if fr.subst_pc == fr.pc:
                if fr.subst_args == NULL:
                    self._patch_callee(fr, row)
                _clear_substitution(fr)
            return self._emit(fr, row)
        if nout == 0:
            t.set_value(row, <PyObject *>None)
            return self._emit(fr, row)
        v = known if known != NULL else tracer_frame_stack_item(fr.frame, outs[0])
        t.set_value(row, v)
        ss[outs[0]] = (<int64_t>row) << 2
        if fr.hooks:
            self._recorded(fr, row, outs[0] if known == NULL and nout == 1 else -1,
                           fr.plan.rec_iv[rec])
        for j in range(1, nout):
            v = tracer_frame_stack_item(fr.frame, outs[j])
            if fr.hooks & H_SNAP_ANY:
                v = self._kept(fr, v)
            extra = t.add_row(K_SPECIAL, 0, fr.call_row, fr.code_id, t.offset_[row], j, v)
            t.add_ref(row)
            ss[outs[j]] = (<int64_t>extra) << 2
            self._emit(fr, extra)
        return 0

    cdef int _recorded(self, FrameRec *fr, int32_t row, int32_t out, int32_t iv) except -1:
        """A call or operator row is complete: its snapshot, the context's override,
        then its hook.

        `out` is the stack slot holding the value the program goes on with (live at
        this event), or -1 when it cannot be replaced; `iv` the record's IV_* class.
        """
        if fr.hooks & H_SNAP_ANY:
            self.trace.set_value(row, self._kept(fr, self.trace.value_[row]))
        if fr.subst_pc >= 0 and fr.subst_pc == fr.pc:
            self._substituted(fr, row, out, iv)
        if out >= 0 and iv != IV_NONE and fr.hooks & H_OVERRIDE and not self.broken:
            self._override(fr, row, out, iv)
        return self._emit(fr, row)

    cdef bint _bool_kept(self, object value, int32_t iv, str what) noexcept:
        # An IV_BOOL record's result feeds instructions that only accept a bool.
        if iv != IV_BOOL or value is True or value is False:
            return True
        self._stop_for_hook(TypeError(
            f"{what} must give a bool here (the result of a comparison, `in` or `is` "
            f"that a branch or `not` consumes), got {type(value).__name__}"))
        return False

    # -- snapshots --------------------------------------------------------------------------
    cdef PyObject *_kept(self, FrameRec *fr, PyObject *v) except? NULL:
        """What the trace keeps of a value just read: fr's context's snapshot of it
        (borrowed from self.kept, to be stored at once)."""
        if v == NULL:
            return NULL
        self.kept = self._snapshot(fr, <object>v)
        return <PyObject *>self.kept

    cdef object _snapshot(self, FrameRec *fr, object v):
        # Context(snapshot="copy") copies the mutable builtins in C; "deepcopy" and a
        # user's policy run Python code (as a hook: the collector waits, an error
        # stops tracking).  A value the policy cannot copy is kept itself.
        cdef type tp = type(v)
        cdef object fn
        if fr.hooks & H_SNAP_COPY:
            if tp is list:
                return list(<list>v)
            if tp is dict:
                return (<dict>v).copy()
            if tp is set:
                return set(<set>v)
            if tp is bytearray:
                return bytearray(v)
            return v
        if self.broken:
            return v
        self._user_code_starts()
        try:
            if fr.hooks & H_SNAP_DEEP:
                try:
                    return _deepcopy()(v)
                except Exception:
                    return v
            return (<object>fr.ctx).snapshot(v)
        except BaseException as exc:
            self._stop_for_hook(exc)
            return v
        finally:
            self._user_code_ran()

    # -- substitution -----------------------------------------------------------------------
    cdef int _substitute(self, FrameRec *fr, int32_t *op) except -1:
        """Ask the context for a replacement of the call or operator about to run.

        At the event before the instruction: its inputs are live on the stack.  A
        call's callee slot is replaced at once, so the replacement runs natively
        instead; an operator's operands are kept to call the replacement with once
        the operator has run (_substituted).
        """
        cdef int32_t *r = fr.plan.recs + op[2]
        cdef int32_t sem = r[0], nin = r[2], i, x, callee_slot = -1
        cdef PyObject *v
        cdef list values = []
        cdef object statics = <object>fr.plan.statics
        cdef object f, new
        cdef tuple args, parts
        cdef dict kwargs
        if fr.plan.rec_iv[op[2]] == IV_NONE:
            return 0
        for i in range(nin):
            x = r[5 + i]
            if x < 0:
                values.append(statics[-x - 1])
                continue
            v = tracer_frame_stack_item(fr.frame, x)
            if v == NULL:
                continue
            if callee_slot < 0:
                callee_slot = x
            values.append(<object>v)
        if sem != R_OP and not values:
            return 0
        parts = _split_call(r, statics, values)
        if parts is None:  # f(*it) with `it` not yet a tuple: reading it would consume it
            return 0
        f, args, kwargs = parts
        self._user_code_starts()
        try:
            from tracer.context import ask_substitute
            new = ask_substitute(<object>fr.ctx, f, args, kwargs)
        except BaseException as exc:
            self._stop_for_hook(exc)
            return 0
        finally:
            self._user_code_ran()
        if new is None:
            return 0
        if fr.subst_pc >= 0:
            _clear_substitution(fr)
        if sem != R_OP:
            tracer_frame_stack_set(fr.frame, callee_slot, <PyObject *>new)
        else:
            Py_INCREF(args)
            fr.subst_args = <PyObject *>args
        Py_INCREF(new)
        Py_INCREF(f)
        fr.subst_new = <PyObject *>new
        fr.subst_orig = <PyObject *>f
        fr.subst_pc = fr.pc
        return 0

    cdef int _patch_callee(self, FrameRec *fr, int32_t row) except -1:
        # The call's recorded callee is the replacement that ran.
        cdef Trace t = self.trace
        if t.ref_start_[row] < t.ref_start_[row + 1]:
            t.refs_[t.ref_start_[row]] = t.pool_add(<object>fr.subst_new)
        self._metadata(row)["substituted"] = <object>fr.subst_orig
        return 0

    cdef int _substituted(self, FrameRec *fr, int32_t row, int32_t out, int32_t iv) except -1:
        """Finish the substitution of the op just recorded at `row`."""
        cdef Trace t = self.trace
        cdef object result
        if fr.subst_args == NULL:
            self._patch_callee(fr, row)
        elif out >= 0 and not self.broken:
            # An operator ran itself; its replacement's result takes its place.
            self._user_code_starts()
            try:
                result = (<object>fr.subst_new)(*<tuple>fr.subst_args)
            except BaseException as exc:
                self._stop_for_hook(exc)
                _clear_substitution(fr)
                return 0
            finally:
                self._user_code_ran()
            if not self._bool_kept(result, iv, "a substitute for this operator"):
                _clear_substitution(fr)
                return 0
            md = self._metadata(row)
            md["substituted"] = <object>fr.subst_orig
            md["operator_result"] = t.value(row)
            t.functions[row] = <object>fr.subst_new
            tracer_frame_stack_set(fr.frame, out, <PyObject *>result)
            t.set_value(row, self._kept(fr, <PyObject *>result) if fr.hooks & H_SNAP_ANY
                        else <PyObject *>result)
        _clear_substitution(fr)
        return 0

    cdef dict _metadata(self, int32_t row):
        cdef dict md = self.trace.metadata.get(row)
        if md is None:
            md = self.trace.metadata[row] = {}
        return md

    cdef int _override(self, FrameRec *fr, int32_t row, int32_t out, int32_t iv) except -1:
        cdef Trace t = self.trace
        cdef object new, old
        self._user_code_starts()
        try:
            new = (<object>fr.ctx).override(_node_view(self.trace, row))
        except BaseException as exc:
            self._stop_for_hook(exc)
            return 0
        finally:
            self._user_code_ran()
        if new is _keep() or not self._bool_kept(new, iv, "override"):
            return 0
        old = t.value(row)
        tracer_frame_stack_set(fr.frame, out, <PyObject *>new)
        t.set_value(row, self._kept(fr, <PyObject *>new) if fr.hooks & H_SNAP_ANY
                    else <PyObject *>new)
        self._metadata(row)["original"] = old
        return 0

    cdef int _resync(self, FrameRec *fr, int32_t depth) except -1:
        """Forget what the shadow knows: the frame ran code the plan cannot follow."""
        cdef int32_t i
        cdef int64_t *sl = self._locals(fr)
        for i in range(fr.plan.nlocalsplus + fr.plan.stacksize):
            sl[i] = S_UNKNOWN
        fr.open_row = -1
        return 0

    cdef inline int _start_segment(self, FrameRec *fr, int32_t first_op) noexcept:
        if first_op < 0:
            fr.pending = P_LOST
        else:
            fr.pending = first_op
            fr.pc = first_op
        return 0

    cdef int _jump_row(self, FrameRec *fr, int32_t offset, int32_t dest, int64_t cond,
                       PyObject *value) except -1:
        cdef Trace t = self.trace
        cdef int32_t row = t.add_row(K_JUMP, 0, fr.call_row, fr.code_id, offset, dest, value)
        if cond & 3 == 0:
            t.add_ref(<int32_t>(cond >> 2))
        elif cond != S_NULL and cond != S_UNKNOWN and cond != S_DYN:
            t.add_ref(self._ref(fr, cond))
        return self._emit(fr, row)

    cdef int _close_call(self, FrameRec *fr, PyObject *value, uint8_t flags) except -1:
        cdef Trace t = self.trace
        cdef int32_t row = fr.call_row
        t.set_value(row, value)
        t.flags_[row] = (t.flags_[row] & ~F_OPEN) | flags
        t.aux_[row] = t.n
        self._pop()
        if t.flags_[row] & F_FRAME and self.nframes > 0:
            # A frame entered from C is a node of its own, complete now; a direct
            # call's node is completed by the caller's op (_record).
            self._emit(&self.frames[self.nframes - 1], row)
        return 0

    # -- sys.monitoring events ------------------------------------------------------------
    # The handlers return EV_CONTINUE or EV_DISABLE, or -1 with an exception set; the
    # module-level callbacks below turn that into what sys.monitoring expects.
    cdef void _fail(self, object exc) noexcept:
        self.broken = True
        if self.internal_error is None:
            self.internal_error = exc

    cdef int _py_start(self, object code, int offset) except -1:
        cdef void *frame
        cdef FrameRec *parent
        cdef FrameRec *fr
        if self.nframes == 0 or tracer_thread_state() != self.tstate:
            return EV_CONTINUE
        frame = tracer_thread_frame(self.tstate)
        parent = &self.frames[self.nframes - 1]
        if tracer_frame_caller(frame) != parent.frame:
            return EV_CONTINUE
        self._enter(parent, frame, code, offset, STARTED)
        return EV_CONTINUE

    cdef int _py_resume(self, object code, int offset) except -1:
        cdef void *frame
        cdef FrameRec *parent
        if self.nframes == 0 or tracer_thread_state() != self.tstate:
            return EV_CONTINUE
        frame = tracer_thread_frame(self.tstate)
        parent = &self.frames[self.nframes - 1]
        if tracer_frame_caller(frame) != parent.frame:
            return EV_CONTINUE
        self._enter(parent, frame, code, offset, RESUMED)
        return EV_CONTINUE

    cdef int _py_throw(self, object code, int offset, object exception) except -1:
        # A generator resumed by throw() (or close()): the exception is raised at
        # the yield it is suspended in; a RAISE event follows at once.
        cdef void *frame
        cdef FrameRec *parent
        if self.nframes == 0 or tracer_thread_state() != self.tstate:
            return EV_CONTINUE
        frame = tracer_thread_frame(self.tstate)
        parent = &self.frames[self.nframes - 1]
        if tracer_frame_caller(frame) != parent.frame:
            return EV_CONTINUE
        self._enter(parent, frame, code, offset, THROWN)
        return EV_CONTINUE

    cdef int _enter(self, FrameRec *parent, void *frame, object code, int offset,
                    int how) except -1:
        cdef CPlan *plan
        cdef Trace t = self.trace
        cdef int32_t call_row, i, code_id, rec
        cdef int32_t here = -1
        cdef bint resumed = how != STARTED
        cdef int32_t *op
        cdef FrameRec *fr
        cdef PyObject *func
        cdef PyObject *v
        cdef object ctx = <object>parent.ctx
        cdef object new_ctx
        cdef uint32_t hooks
        cdef int32_t row
        self.events += 1
        # Which node the new activation records into: the op of the instruction the
        # caller is executing, if that instruction is a recorded one.
        if parent.plan != NULL:
            here = self._executing(parent)
        if parent.plan != NULL and parent.pending >= 0:
            self._catch_up(parent, here, False)
            op = parent.plan.ops + parent.pc * OP_WORDS
            if parent.open_row < 0 or op[1] != here:
                # Ops before `here` have run, an op opened earlier among them.
                self._run(parent, here, True)
                op = parent.plan.ops + parent.pc * OP_WORDS
                if parent.open_row < 0 and here >= 0 and op[1] == here and _is_record(op[0]):
                    rec = op[2]
                    parent.open_row = self._open(parent, rec, K_NESTED)
                    parent.direct_ok = parent.plan.recs[rec] in (R_CALL, R_CALL_EX)
                    parent.direct_done = 0
                    parent.open_primitive = 0
                    if parent.hooks & (H_CANRECUR | H_PRIMITIVES) and \
                            not self._may_recur(parent, frame, code):
                        parent.open_primitive = 1
                        t.kind_[parent.open_row] = K_PRIMITIVE
        if code is TRACK_CODE:
            # A `track` inside the traced call records its own trace: for this one
            # it is a primitive call, nothing inside it is followed.
            if parent.open_row >= 0:
                parent.open_primitive = 1
                t.kind_[parent.open_row] = K_PRIMITIVE
            return 0
        if (parent.open_row >= 0 and parent.open_primitive) or self.broken:
            return 0
        # Analysing and instrumenting a new code object runs Python code (see
        # _user_code_starts for why the collector waits).
        self._user_code_starts()
        try:
            plan = _plan_for(code, self.interventions)
            if plan.session != self.session:
                plan.code_id = t.intern_code(code)
                self._own_refs(plan)
                if id(code) not in self.instrumented:
                    self.instrumented[id(code)] = code
                    self.on_code(code, bool((<object>plan.owner).jump_events))
        finally:
            self._user_code_ran()
        code_id = plan.code_id
        func = tracer_frame_function(frame)
        if parent.open_row >= 0 and parent.direct_ok and not parent.direct_done \
                and not resumed and t.n == parent.open_row + 1 \
                and self._is_callee(parent.open_row, func):
            call_row = parent.open_row
        else:
            # A frame entered from C (a key function, a dunder method, a generator
            # resumed by SEND), or any frame after the first: a nested call node of
            # its own, at the instruction that entered it.
            call_row = t.add_row(K_NESTED, F_OPEN | F_FRAME, parent.open_row if parent.open_row >= 0
                                 else parent.call_row,
                                 parent.code_id, t.offset_[parent.open_row]
                                 if parent.open_row >= 0 else here, 0, NULL)
            t.add_ref(self._pool_ref(func) if func != NULL else -1)
        parent.direct_done = 1
        hooks = parent.hooks
        if hooks & H_ENTER:
            new_ctx = self._enter_context(ctx, parent, call_row, frame, code)
            if self.broken:
                return 0
            if new_ctx is not ctx:
                ctx = new_ctx
                hooks = self._mask_of(ctx)
        fr = self._push(frame, plan, code_id, call_row, <PyObject *>ctx, hooks)
        fr.code = <PyObject *>code
        if not resumed:
            self._emit(fr, t.add_row(K_ARGUMENT, 0, call_row, code_id, -1, 0, func))
            for i in range(plan.nparams):
                v = tracer_frame_local(frame, i)
                if v != NULL and self._is_cell_param(plan, i) and PyCell_Check(v):
                    v = PyCell_GET(v)
                if hooks & H_SNAP_ANY:
                    v = self._kept(fr, v)
                row = t.add_row(K_ARGUMENT, 0, call_row, code_id, -1, i + 1, v)
                self._locals(fr)[i] = (<int64_t>row) << 2
                self._emit(fr, row)
            self._start_segment(fr, plan.seg_from[offset >> 1])
        elif how == RESUMED:
            self._carry_stack(fr, offset, plan.carry[offset >> 1])
            self._start_segment(fr, plan.seg_from[offset >> 1])
        else:
            # throw(): the RAISE event that follows finds the exception in flight.
            i = plan.depth[offset >> 1] - 1 if 0 <= offset < 2 * plan.nunits else 0
            self._carry_stack(fr, offset, (1 << i) - 1 if 0 < i < 31 else 0)
            fr.pending = P_EXC
        return 0

    cdef int _carry_stack(self, FrameRec *fr, int32_t offset, uint32_t slots) except -1:
        """Values a resumed generator frame kept on its stack across the yield (an
        iterator, a `yield from` receiver, the value sent in): each slot of `slots`
        (live at the resume, by the plan's depths) enters as a carried ArgumentNode,
        numbered after the locals (aux -1 - (nlocalsplus + slot))."""
        cdef int32_t k = 0, row
        cdef int64_t *ss = self._stack(fr)
        cdef PyObject *v
        while slots:
            if slots & 1:
                v = tracer_frame_stack_item(fr.frame, k)
                if v == NULL:
                    ss[k] = S_NULL
                else:
                    if fr.hooks & H_SNAP_ANY:
                        v = self._kept(fr, v)
                    row = self.trace.add_row(K_ARGUMENT, F_CARRIED, fr.call_row, fr.code_id,
                                             offset, -(fr.plan.nlocalsplus + k) - 1, v)
                    ss[k] = (<int64_t>row) << 2
                    self._emit(fr, row)
            slots >>= 1
            k += 1
        return 0

    cdef inline bint _is_cell_param(self, CPlan *plan, int32_t i) noexcept:
        cdef int32_t k
        for k in range(plan.ncellparams):
            if plan.cellparams[k] == i:
                return True
        return False

    cdef bint _is_callee(self, int32_t row, PyObject *func) except -1:
        """Whether `func` is what the call at `row` called (so its body is the row's)."""
        cdef object callee
        if func == NULL:
            return False
        callee = self._callee(row)
        if callee is None:
            return False
        if callee is <object>func:
            return True
        return getattr(callee, "__func__", None) is <object>func

    # -- contexts -------------------------------------------------------------------------
    # Only reached when the frame's context overrides the hook in question (its mask);
    # an exception from the user's code stops tracking (_stop_for_hook).
    cdef bint _may_recur(self, FrameRec *parent, void *frame, object code) except -1:
        """Whether to record inside the call opened at parent.open_row (whose first
        Python frame, running `code`, is starting)."""
        cdef object ctx = <object>parent.ctx
        cdef object verdict, callee
        cdef PyObject *func = tracer_frame_function(frame)
        cdef int32_t *r = self._open_rec(parent)
        self._user_code_starts()
        try:
            if parent.hooks & H_PRIMITIVES:
                prims = ctx.primitives
                if r[0] == R_OP or r[0] == R_SPECIAL:  # an operator: its function
                    callee = (<object>parent.plan.statics)[r[1]] if r[1] >= 0 else None
                else:
                    callee = self._callee(parent.open_row)
                if prims and (_member(callee, prims) or
                              (func != NULL and _member(<object>func, prims))):
                    return False
                if ctx.modules and func != NULL:
                    verdicts = self.module_verdicts.get(id(ctx.modules))
                    if verdicts is None:
                        verdicts = self.module_verdicts[id(ctx.modules)] = {}
                        self.contexts.append(ctx.modules)  # keeps the id valid
                    entry = verdicts.get(id(code))
                    if entry is None or entry[0] is not code:
                        entry = verdicts[id(code)] = (code, bool(ctx.is_primitive_module(
                            getattr(<object>func, "__module__", None))))
                    verdict = entry[1]
                    if verdict:
                        return False
            if parent.hooks & H_CANRECUR:
                f, args, kwargs = self._call_parts(parent.open_row, parent.plan, r, frame, code)
                return bool(ctx.canrecur(f, *args, **kwargs))
        except BaseException as exc:
            self._stop_for_hook(exc)
        finally:
            self._user_code_ran()
        return True

    cdef object _callee(self, int32_t row):
        """The value of a call row's first input (its callee), or None."""
        cdef Trace t = self.trace
        cdef int32_t first = t.ref_start_[row]
        cdef int32_t ref
        if first == t.ref_start_[row + 1]:
            return None
        ref = t.refs_[first]
        return t.value(ref) if ref >= 0 else t.pool[-ref - 1]

    cdef int32_t *_open_rec(self, FrameRec *fr) noexcept:
        # The record of the op whose row fr.open_row is (fr.pc is its RECORD), or
        # NULL for the root call, which track() itself made.
        if fr.plan == NULL:
            return NULL
        return fr.plan.recs + (fr.plan.ops + fr.pc * OP_WORDS)[2]

    cdef tuple _call_parts(self, int32_t row, CPlan *plan, int32_t *r, void *frame,
                           object code):
        """(f, args, kwargs) of the call recorded at `row` with record `r`, as values.

        Built from the row's inputs in C: a context's canrecur/enter get the call
        without any node view being made.  `frame` (running `code`) is the call's
        first Python frame, just starting: for f(*it) with `it` not a tuple or list
        (already consumed by CPython) the arguments are read off its parameters.
        """
        cdef Trace t = self.trace
        cdef int32_t i, ref, k
        cdef list values = []
        for i in range(t.ref_start_[row], t.ref_start_[row + 1]):
            ref = t.refs_[i]
            values.append(t.value(ref) if ref >= 0 else t.pool[-ref - 1])
        if r == NULL:  # the root: f, its positional arguments, then its keywords' values
            k = len(values) - len(t.root_keywords or ())
            return (values[0], tuple(values[1:k]), dict(zip(t.root_keywords or (), values[k:])))
        parts = _split_call(r, <object>plan.statics, values)
        if parts is not None:
            return parts
        # f(*it): CPython has consumed `it`.  If this frame is f's body its parameters
        # show the arguments; otherwise (a generator feeding `*` is running) they are
        # not known yet.
        if self._is_callee(row, tracer_frame_function(frame)):
            return (values[0],) + _frame_arguments(frame, code)
        return (values[0], (UNKNOWN,),
                values[2] if len(values) > 2 and type(values[2]) is dict else {})

    cdef object _enter_context(self, object ctx, FrameRec *parent, int32_t call_row,
                               void *frame, object code):
        cdef PyObject *func
        self._user_code_starts()
        try:
            if call_row == parent.open_row:
                parts = self._call_parts(call_row, parent.plan, self._open_rec(parent),
                                         frame, code)
            else:  # a frame entered from C: the call its parameters show
                func = tracer_frame_function(frame)
                parts = (<object>func if func != NULL else None,) + _frame_arguments(frame, code)
            from tracer.context import ask_enter
            new = ask_enter(ctx, parts)
        except BaseException as exc:
            self._stop_for_hook(exc)
            return ctx
        finally:
            self._user_code_ran()
        if new is not ctx:
            self.contexts.append(new)  # FrameRec.ctx borrows it
        return new

    cdef uint32_t _mask_of(self, object ctx) noexcept:
        cdef uint32_t mask
        try:
            mask = ctx.hook_mask()
            if mask & (H_SUBSTITUTE | H_OVERRIDE) and not self.interventions:
                raise TypeError(
                    f"{type(ctx).__name__} (returned by enter) overrides substitute or "
                    "override, but the context passed to track does not: interventions "
                    "are prepared for a whole call, so pass a root context whose class "
                    "overrides them (its own may return None / tracer.KEEP)")
            if mask & H_SNAP_ANY and not self.interventions:
                raise TypeError(
                    f"{type(ctx).__name__} (returned by enter) takes snapshots of values, "
                    "but the context passed to track does not: values are read for "
                    "snapshots by a plan chosen for the whole call, so give the root "
                    "context a snapshot policy too")
            return mask
        except BaseException as exc:
            self._stop_for_hook(exc)
            return 0

    cdef inline int _emit(self, FrameRec *fr, int32_t row) except -1:
        """Run the context's per-node hook for `row`, if its class has one."""
        if fr.hooks & H_NODE_ALL:
            return self._node_hook(fr, row)
        return 0

    cdef int _node_hook(self, FrameRec *fr, int32_t row) except -1:
        cdef int kind = self.trace.kind_[row]
        if not (fr.hooks & (H_NODE << kind)) or self.broken:
            return 0
        self._user_code_starts()
        try:
            getattr(<object>fr.ctx, NODE_HOOKS[kind])(_node_view(self.trace, row))
        except BaseException as exc:
            self._stop_for_hook(exc)
        self._user_code_ran()
        return 0

    cdef inline void _user_code_starts(self) noexcept:
        # A hook runs Python code in the middle of one of the program's instructions.
        # The garbage collector (and so __del__ methods of the program's objects)
        # must not run there: in the untraced program it could not, and a finalizer
        # run between a load and a store would lose its effect (`C.n -= 1` in a
        # __del__ racing `C.n += 1`).  A collection the hook makes due runs at the
        # program's next opportunity instead.
        if self.user_depth == 0:
            self.gc_was_enabled = PyGC_Disable()
        self.user_depth += 1

    cdef inline void _user_code_ran(self) noexcept:
        self.user_depth -= 1
        if self.user_depth == 0 and self.gc_was_enabled:
            PyGC_Enable()
        # Node views cache derived structures (child positions, reverse edges) on the
        # trace; a hook may have built them while the trace was still growing.
        self.trace._cache = None

    cdef void _stop_for_hook(self, object exc) noexcept:
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
        if self.on_stop is not None:
            try:
                self.on_stop()
            except BaseException as err:
                if self.internal_error is None:
                    self.internal_error = err

    cdef int _instruction(self, object code, int offset) except -1:
        cdef CPlan *plan
        cdef FrameRec *fr = self._top_for(code)
        cdef int32_t first, h
        cdef int32_t *op
        if fr != NULL:
            plan = fr.plan      # the frame being followed runs `code`
        else:
            plan = self._cached_plan(code)
            if plan == NULL or plan.seg_at[offset >> 1] < 0:
                return EV_DISABLE
            return EV_CONTINUE
        first = plan.seg_at[offset >> 1]
        if first < 0:
            return EV_DISABLE
        self.events += 1
        cdef bint sent = False
        if fr.pending >= 0 and not self._ends_at(fr, offset):
            self._catch_up(fr, offset, True)
            if fr.pending >= 0 and not self._ends_at(fr, offset):
                sent = self._send_returned(fr, offset)
        h = plan.handler[offset >> 1]
        if sent:
            pass  # the segment that led here is recorded (a SEND's target)
        elif h >= 0 and fr.pending == P_EXC:
            self._enter_handler(fr, offset, h)
        elif fr.pending >= 0 and self._ends_at(fr, offset):
            self._run_to_end(fr)
        elif h >= 0:
            self._enter_handler(fr, offset, h)
        else:
            self._resync(fr, plan.depth[offset >> 1])
        self._start_segment(fr, first)
        if fr.hooks & H_SUBSTITUTE and self.interventions and not self.broken:
            op = plan.ops + first * OP_WORDS
            if op[0] == M_RECORD and op[1] == offset:
                self._substitute(fr, op)
        return EV_CONTINUE

    cdef inline bint _ends_at(self, FrameRec *fr, int32_t offset) noexcept:
        # Whether the pending segment is the one that ends at INSTRUCTION `offset`.
        return fr.plan.seg_end[fr.pc] == offset

    cdef int _enter_handler(self, FrameRec *fr, int32_t offset, int32_t h) except -1:
        cdef int32_t depth = h >> 1, lasti = h & 1, i
        cdef int64_t *ss = self._stack(fr)
        cdef Trace t = self.trace
        cdef PyObject *exc
        cdef int32_t row
        if fr.pending != P_EXC:
            # The raise was not seen: what ran before it is not known.
            self._resync(fr, depth)
            fr.exc_row = -1
        for i in range(depth, depth + lasti):
            ss[i] = S_UNKNOWN
        exc = tracer_frame_stack_item(fr.frame, depth + lasti)
        row = t.add_row(K_SPECIAL, F_EXCEPTION, fr.call_row, fr.code_id, offset, 0, exc)
        if fr.exc_row >= 0:
            t.add_ref(fr.exc_row)
        ss[depth + lasti] = (<int64_t>row) << 2
        fr.exc_row = -1
        fr.open_row = -1
        return self._emit(fr, row)

    cdef int _branch(self, object code, int offset, int dest) except -1:
        cdef FrameRec *fr = self._top_for(code)
        cdef int32_t *op
        cdef int32_t flags = self._unit_flags(fr, code, offset)
        if flags >= 0 and flags & SILENT_BRANCH:
            # Taken at the frame's next event (_catch_up); it fires only at its first
            # execution or because its event was switched on again.
            return EV_DISABLE
        if fr == NULL:
            return EV_CONTINUE
        self.events += 1
        self._catch_up(fr, offset, False)
        if fr.pending >= 0:
            self._run_to_end(fr)
            if self._take_branch(fr, offset, dest):
                return EV_CONTINUE
            op = fr.plan.ops + fr.pc * OP_WORDS
            if op[0] == M_FOR_ITER and op[1] == offset:
                self._for_iter(fr, op, dest)
                self._start_segment(fr, fr.plan.seg_from[dest >> 1])
                return EV_CONTINUE
        self._lost_jump(fr, offset, dest)
        return EV_CONTINUE

    cdef CPlan *_cached_plan(self, object code) noexcept:
        # The plan this session's variant keeps on `code`, or NULL.
        cdef void *extra = NULL
        PyUnstable_Code_GetExtra(code, CODE_EXTRA_INDEX_IV if self.interventions
                                 else CODE_EXTRA_INDEX, &extra)
        return <CPlan *>extra

    cdef int32_t _unit_flags(self, FrameRec *fr, object code, int offset) noexcept:
        # The plan's JUMP_EVENT / SILENT_BRANCH bits at `offset` of `code` (followed
        # in `fr`, or by another thread), or -1 when no plan has been made for it.
        cdef CPlan *plan = fr.plan if fr != NULL else self._cached_plan(code)
        if plan == NULL or not 0 <= offset < 2 * plan.nunits:
            return -1
        return plan.unit_flags[offset >> 1]

    cdef bint _take_branch(self, FrameRec *fr, int32_t offset, int32_t dest) except -1:
        """Record the conditional jump at `offset` to `dest`, its segment replayed up to
        it (fr.pc at its RECORD_BOOL or BRANCH); False if that is not where fr is."""
        cdef int32_t *op = fr.plan.ops + fr.pc * OP_WORDS
        cdef int64_t cond
        cdef bint taken, value
        cdef int32_t kind, branch_pc, rec
        cdef int32_t bool_pc = -1
        cdef PyObject *known
        if op[0] == M_RECORD_BOOL:
            bool_pc = fr.pc
            fr.pc += 1
            self._run_to_end(fr)
            op = fr.plan.ops + fr.pc * OP_WORDS
        if op[0] != M_BRANCH or op[1] != offset:
            return False
        taken = dest == op[4]
        kind = op[3]
        # The truth the instruction tested: IF_FALSE/IF_TRUE test the value,
        # IF_NONE/IF_NOT_NONE test `value is None`.
        if kind == 0 or kind == 3:
            value = not taken
        else:
            value = taken
        if bool_pc >= 0:
            # The bool the branch popped was this record's result.
            branch_pc = fr.pc
            fr.pc = bool_pc
            rec = (fr.plan.ops + bool_pc * OP_WORDS)[2]
            known = <PyObject *>(PY_TRUE if value else PY_FALSE)
            if fr.open_row < 0:
                self._record_primitive(fr, fr.plan.recs + rec, known)
            else:
                self._record(fr, rec, NULL, known)
            fr.pc = branch_pc
        cond = self._stack(fr)[op[2]]
        self._jump_row(fr, offset, dest, cond, <PyObject *>(PY_TRUE if value else PY_FALSE))
        self._start_segment(fr, fr.plan.seg_from[dest >> 1])
        return True

    cdef int _catch_up(self, FrameRec *fr, int32_t here, bint instruction_event) except -1:
        """Take the silent branch ending the pending segment if the event at
        instruction `here` lies past it (tracer.plan.silent_branches)."""
        cdef int32_t k, side, n, j
        cdef int32_t *p
        if fr.pending < 0 or fr.plan.sides_at[fr.pc] < 0:
            return 0
        k = fr.plan.sides_at[fr.pc]
        p = fr.plan.sides + k + 3
        for side in range(2):
            n = p[1]
            if instruction_event:
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
        self._run_to_end(fr)
        self._take_branch(fr, fr.plan.sides[k], fr.plan.sides[k + 1 + side])
        return 0

    cdef int _for_iter(self, FrameRec *fr, int32_t *op, int32_t dest) except -1:
        cdef int32_t *r = fr.plan.recs + op[2]
        cdef int32_t iter_depth = r[5]
        cdef int64_t it = self._stack(fr)[iter_depth]
        cdef Trace t = self.trace
        cdef int32_t row
        if dest == op[4]:
            self._record(fr, op[2], NULL)
            self._jump_row(fr, op[1], dest, it, <PyObject *>PY_TRUE)
        else:
            if fr.open_row >= 0:
                row = fr.open_row
                fr.open_row = -1
                t.aux_[row] = t.n
                t.flags_[row] = (t.flags_[row] & ~F_OPEN) | F_STOPPED
                t.set_value(row, <PyObject *>None)
                self._emit(fr, row)
            self._jump_row(fr, op[1], dest, it, <PyObject *>PY_FALSE)
        return 0

    cdef int _lost_jump(self, FrameRec *fr, int32_t offset, int32_t dest) except -1:
        self._jump_row(fr, offset, dest, S_UNKNOWN, <PyObject *>None)
        self._resync(fr, fr.plan.depth[dest >> 1])
        self._start_segment(fr, fr.plan.seg_from[dest >> 1])
        return 0

    cdef int _jump(self, object code, int offset, int dest) except -1:
        cdef FrameRec *fr = self._top_for(code)
        cdef int32_t *op
        cdef int32_t flags = self._unit_flags(fr, code, offset)
        if flags >= 0 and not flags & JUMP_EVENT:
            # A silent jump (its JumpNode is written when the segment is replayed);
            # it fires only at its first execution or because its event was switched
            # on again.
            return EV_DISABLE
        if fr == NULL:
            return EV_CONTINUE
        self.events += 1
        self._catch_up(fr, offset, False)
        if fr.pending >= 0:
            self._run_to_end(fr)
            op = fr.plan.ops + fr.pc * OP_WORDS
            if op[0] == M_JUMP and op[1] == offset:
                self._jump_row(fr, offset, dest, S_NULL, <PyObject *>None)
                self._start_segment(fr, fr.plan.seg_from[dest >> 1])
                return EV_CONTINUE
        self._lost_jump(fr, offset, dest)
        return EV_CONTINUE

    cdef int _py_return(self, object code, int offset, object retval) except -1:
        return self._leave(code, offset, <PyObject *>retval, 0)

    cdef int _py_yield(self, object code, int offset, object retval) except -1:
        return self._leave(code, offset, <PyObject *>retval, F_YIELD)

    cdef int _leave(self, object code, int32_t offset, PyObject *retval, uint8_t flags) except -1:
        cdef FrameRec *fr = self._top_for(code)
        cdef object copy
        cdef int32_t *op
        cdef int64_t src = S_UNKNOWN
        cdef int32_t row, ref
        cdef Trace t = self.trace
        if fr == NULL:
            return 0
        self.events += 1
        self._catch_up(fr, offset, False)
        if fr.pending >= 0:
            self.returning = retval if flags == 0 else NULL
            self._run_to_end(fr)
            self.returning = NULL
            op = fr.plan.ops + fr.pc * OP_WORDS
            if (op[0] == M_RETURN or op[0] == M_YIELD) and op[1] == offset:
                src = self._stack(fr)[op[2]]
            elif op[0] == M_RETURN_CONST and op[1] == offset:
                src = ((<int64_t>op[2]) << 2) | 1
            elif op[0] == M_SEND and op[3] == offset and flags == F_YIELD:
                # The receiver of `yield from` / `await` yielded: its value is what
                # this frame's YIELD_VALUE passes on.
                src = self._finish_send(fr, op, retval)
        if fr.hooks & H_SNAP_ANY:
            copy = self._snapshot(fr, <object>retval)  # one snapshot for the return and the call
            retval = <PyObject *>copy
        if src & 3 == 0:
            ref = <int32_t>(src >> 2)
        else:
            ref = self._constant_row(fr, offset, -1, retval)
        row = t.add_row(K_RETURN, flags, fr.call_row, fr.code_id, offset, 0, retval)
        t.add_ref(ref)
        self._emit(fr, row)
        self._close_call(fr, retval, 0)
        return 0

    cdef int64_t _finish_send(self, FrameRec *fr, int32_t *op, PyObject *known) except? -1:
        """Record the SEND at op (known: its result, or NULL to read it off the
        stack at its target); the shadow of its result."""
        cdef int32_t *r = fr.plan.recs + op[2]
        self._record(fr, op[2], NULL, known)
        fr.pending = P_DONE
        return self._stack(fr)[r[5 + r[2]]]

    cdef bint _send_returned(self, FrameRec *fr, int32_t offset) except -1:
        """At an INSTRUCTION event at `offset`: if the pending segment ends in a SEND
        whose target this is (its receiver returned), record it; whether it did."""
        cdef int32_t pc = fr.pc
        cdef int32_t *op
        if fr.plan.seg_end[pc] >= 0:
            return False
        while True:  # the segment's terminal op
            op = fr.plan.ops + pc * OP_WORDS
            if op[0] >= M_RECORD and op[0] != M_SILENT_JUMP and op[0] != M_RECORD_BOOL:
                break
            pc += 1
        if op[0] != M_SEND or op[4] != offset:
            return False
        self._run_to_end(fr)
        self._finish_send(fr, op, NULL)
        return True

    cdef int _raise_(self, object code, int offset, object exception) except -1:
        cdef FrameRec *fr = self._top_for(code)
        cdef int32_t *op
        cdef int64_t src
        cdef Trace t = self.trace
        cdef int32_t row
        if fr == NULL:
            return EV_CONTINUE
        self.events += 1
        # The instruction that raised is the one the frame is executing: the event's
        # offset is not always inside it (3.13 reports an exception coming out of a
        # call at the code unit before the CALL).  The event's own offset stands in
        # should the frame's lasti ever be out of the code's range.
        cdef int32_t executing = self._executing(fr)
        if executing < 0 and 0 <= offset < 2 * fr.plan.nunits:
            executing = fr.plan.istart[offset >> 1]
        offset = executing
        self._catch_up(fr, offset, False)
        fr.exc_row = -1
        if fr.pending >= 0:
            self._run(fr, offset, False)
            op = fr.plan.ops + fr.pc * OP_WORDS
            if op[1] == offset and _is_record(op[0]):
                self._record(fr, op[2], <PyObject *>exception)
            elif op[1] == offset and op[0] == M_RAISE and op[2] >= 0:
                src = self._stack(fr)[op[2]]
                row = t.add_row(K_SPECIAL, F_RAISED, fr.call_row, fr.code_id, offset, 0,
                                <PyObject *>exception)
                if src & 3 == 0:
                    t.add_ref(<int32_t>(src >> 2))
                fr.exc_row = row
                self._emit(fr, row)
        if fr.open_row >= 0:
            # A nested call under an op that did not get to record itself.
            row = fr.open_row
            t.flags_[row] = (t.flags_[row] & ~F_OPEN) | F_RAISED
            t.set_value(row, <PyObject *>exception)
            t.aux_[row] = t.n
            fr.exc_row = row
            fr.open_row = -1
            self._emit(fr, row)
        fr.pending = P_EXC
        return EV_CONTINUE

    cdef int _py_unwind(self, object code, int offset, object exception) except -1:
        cdef FrameRec *fr = self._top_for(code)
        if fr == NULL:
            return EV_CONTINUE
        self.events += 1
        self._close_call(fr, <PyObject *>exception, F_RAISED)
        return EV_CONTINUE


# ---------------------------------------------------------------------------------
# The sys.monitoring callbacks
#
# C functions exposed as METH_FASTCALL builtins (no bound-method, CyFunction or
# argument-parsing layer) on the one active Recorder: track() runs one call at a
# time.  Each calls its handler through a noexcept pointer, so no Python try/except
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

# The recorder each sys.monitoring tool id feeds (None: none).  A `track` inside a
# traced call takes another tool id and records on its own.
cdef list ACTIVE = [None] * 6
# The code object of tracer.api.track: a call of it is one primitive call for the
# recorder that sees it (the nested track records its own trace).
cdef object TRACK_CODE = None


cdef PyObject *_reply(Recorder rec, int rc) noexcept:
    """What a callback returns for its handler's answer (a new reference, or NULL
    with an exception set to interrupt the program)."""
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
        out = <PyObject *>DISABLE
    else:
        rec._fail(PyErr_GetRaisedException())
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
# ACTIVE_PTR mirrors ACTIVE (which owns the references) for the callbacks.
cdef PyObject *ACTIVE_PTR[6]
for _i in range(6):
    ACTIVE_PTR[_i] = <PyObject *>None


cdef inline Recorder _active(int key) noexcept:
    return <Recorder>ACTIVE_PTR[key >> 4]


cdef PyObject *_cb_code(PyObject *k, PyObject **args, Py_ssize_t nargs) noexcept:
    # (code, offset): PY_START, PY_RESUME, INSTRUCTION
    cdef int key = _small_int(k)
    cdef Recorder rec = _active(key)
    if rec is None or rec.broken or nargs != 2:
        return _idle(nargs, 2)
    return _reply(rec, CODE_HANDLERS[key & 15](rec, <object>args[0], _small_int(args[1])))


cdef PyObject *_cb_dest(PyObject *k, PyObject **args, Py_ssize_t nargs) noexcept:
    # (code, offset, destination): BRANCH, JUMP
    cdef int key = _small_int(k)
    cdef Recorder rec = _active(key)
    if rec is None or rec.broken or nargs != 3:
        return _idle(nargs, 3)
    return _reply(rec, DEST_HANDLERS[key & 15](rec, <object>args[0], _small_int(args[1]),
                                               _small_int(args[2])))


cdef PyObject *_cb_value(PyObject *k, PyObject **args, Py_ssize_t nargs) noexcept:
    # (code, offset, value): PY_RETURN, PY_YIELD, RAISE/RERAISE, PY_UNWIND, PY_THROW
    cdef int key = _small_int(k)
    cdef Recorder rec = _active(key)
    if rec is None or rec.broken or nargs != 3:
        return _idle(nargs, 3)
    return _reply(rec, VALUE_HANDLERS[key & 15](rec, <object>args[0], _small_int(args[1]),
                                                <object>args[2]))


cdef int _h_py_start(Recorder rec, object code, int offset) except -1:
    return rec._py_start(code, offset)

cdef int _h_py_resume(Recorder rec, object code, int offset) except -1:
    return rec._py_resume(code, offset)

cdef int _h_instruction(Recorder rec, object code, int offset) except -1:
    return rec._instruction(code, offset)

cdef int _h_branch(Recorder rec, object code, int offset, int dest) except -1:
    return rec._branch(code, offset, dest)

cdef int _h_jump(Recorder rec, object code, int offset, int dest) except -1:
    return rec._jump(code, offset, dest)

cdef int _h_py_return(Recorder rec, object code, int offset, object value) except -1:
    return rec._py_return(code, offset, value)

cdef int _h_py_yield(Recorder rec, object code, int offset, object value) except -1:
    return rec._py_yield(code, offset, value)

cdef int _h_raise(Recorder rec, object code, int offset, object exc) except -1:
    return rec._raise_(code, offset, exc)

cdef int _h_py_unwind(Recorder rec, object code, int offset, object exc) except -1:
    return rec._py_unwind(code, offset, exc)

cdef int _h_py_throw(Recorder rec, object code, int offset, object exc) except -1:
    return rec._py_throw(code, offset, exc)


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
    """Make `rec` the recorder the callbacks of `tool` feed."""
    ACTIVE[tool] = rec
    ACTIVE_PTR[tool] = <PyObject *>rec


def deactivate(int tool):
    """Stop feeding any recorder from `tool`; its callbacks still registered do nothing."""
    ACTIVE_PTR[tool] = <PyObject *>None
    ACTIVE[tool] = None


def set_track_code(code):
    """Tell the core which code object is `track`'s (called once by tracer.api)."""
    global TRACK_CODE
    TRACK_CODE = code


cdef object _node_at = None
cdef object _KEEP = None


cdef object _node_view(Trace t, int32_t row):
    # tracer.nodes.node_at, looked up once (tracer.nodes imports this module).
    global _node_at
    if _node_at is None:
        from tracer.nodes import node_at
        _node_at = node_at
    return _node_at(t, row)


cdef object _DEEPCOPY = None


cdef object _deepcopy():
    global _DEEPCOPY
    if _DEEPCOPY is None:
        import copy
        _DEEPCOPY = copy.deepcopy
    return _DEEPCOPY


cdef object _keep():
    global _KEEP
    if _KEEP is None:
        from tracer.context import KEEP
        _KEEP = KEEP
    return _KEEP


cdef tuple _split_call(int32_t *r, object statics, list values):
    """(f, args, kwargs) of record `r`'s call from its input values in order (NULL
    slots left out), or None for f(*it) whose `it` is not a tuple or list yet
    (reading it would consume it)."""
    cdef Py_ssize_t k
    if r[0] == R_OP or r[0] == R_SPECIAL:
        return (statics[r[1]] if r[1] >= 0 else None, tuple(values), {})
    if not values:
        return (None, (), {})
    if r[0] == R_CALL_EX:
        if len(values) > 1 and not isinstance(values[1], (tuple, list)):
            return None
        return (values[0], tuple(values[1]) if len(values) > 1 else (),
                dict(values[2]) if len(values) > 2 and values[2] is not None else {})
    if r[4] >= 0:
        names = statics[r[4]]
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
    from tracer.context import call_from_parameters
    return call_from_parameters(code, values)


cdef inline bint _is_record(int32_t opc) noexcept:
    # Micro-ops that record the instruction they stand for (a call, an operator, a
    # FOR_ITER's next, a SEND): nested frames it starts record under its row.
    return opc == M_RECORD or opc == M_FOR_ITER or opc == M_RECORD_BOOL or opc == M_SEND


cdef void _clear_substitution(FrameRec *fr) noexcept:
    Py_XDECREF(fr.subst_new)
    Py_XDECREF(fr.subst_orig)
    Py_XDECREF(fr.subst_args)
    fr.subst_new = fr.subst_orig = fr.subst_args = NULL
    fr.subst_pc = -1


cdef bint _member(object value, frozenset prims) noexcept:
    # Set membership that treats an unhashable value as absent.
    try:
        return value in prims
    except Exception:
        return False


cdef int64_t _session_counter = 0


def new_recorder():
    """A Recorder for one track() call."""
    global _session_counter
    _session_counter += 1
    return Recorder(_session_counter)
