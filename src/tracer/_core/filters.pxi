# Call filters: the hooks a context asks for by callee (Context(on_call=...,
# substitute=..., override=...)), matched in C by the identity of what a call or
# operator calls, so that calls nobody asked about run no Python code at all.

cdef extern from "Python.h":
    # Only the method-table pointer of each (a key shared by every builtin bound
    # from one method): void *, so as not to redeclare PyMethodDef (callbacks.pxi).
    ctypedef struct PyCFunctionObject:
        void *m_ml
    ctypedef struct PyMethodDescrObject:
        void *d_method
    bint PyCFunction_Check(PyObject *)
    PyObject *PyMethod_GET_FUNCTION(PyObject *)
    void PyObject_GC_UnTrack(void *)
    PyTypeObject PyMethodDescr_Type


cdef inline size_t _slot_of(size_t key, size_t mask) noexcept:
    # Addresses are 16-byte aligned: drop the low bits, then mix (Fibonacci hashing).
    return ((key >> 4) * <size_t>11400714819323198485ULL) >> 20 & mask


@cython.final
cdef class CallFilter:
    """What a context asks for by callee: for each callable, the hook called with
    its call nodes (on_call), the callable run in its place (substitute) and the
    hook asked for a replacement of its value (override); matched in C.

    A callable matches itself; a bound method also matches calls of its function
    through any instance (method calls push the function), and a builtin method
    (`list.append`, `Generator.normal`) every bound builtin made from it.  Made
    by tracer.context.Context from its `on_call`, `substitute` and `override`
    arguments (names already resolved to objects).
    """

    cdef size_t *keys          # open addressing: an address, or 0 for a free slot
    cdef int32_t *entries      # the entry index of each key
    cdef size_t mask           # capacity - 1
    cdef readonly tuple callables   # entry -> the callable given (kept alive here)
    cdef readonly tuple on_call     # entry -> hook(node) or None
    cdef readonly tuple substitute  # entry -> replacement callable or None
    cdef readonly tuple override    # entry -> hook(node) -> value | KEEP, or None
    cdef list alive                 # every object whose address is a key
    cdef readonly uint32_t bits     # the hook bits this filter needs (H_ON_CALL ...)
    cdef readonly bint operators    # a substitute or override names an operator's function
    cdef readonly bint copies       # an on_call hook is a CopyAtCall (needs PLAN_EXACT)

    def __cinit__(self, entries):
        cdef size_t cap = 16
        cdef Py_ssize_t k
        rows = list(entries.items()) if isinstance(entries, dict) else list(entries)
        self.callables = tuple(r[0] for r in rows)
        self.on_call = tuple(r[1][0] for r in rows)
        self.substitute = tuple(r[1][1] for r in rows)
        self.override = tuple(r[1][2] for r in rows)
        while cap < 4 * (len(rows) + 1):
            cap *= 2
        self.mask = cap - 1
        self.keys = <size_t *>calloc(cap, sizeof(size_t))
        self.entries = <int32_t *>malloc(cap * sizeof(int32_t))
        if self.keys == NULL or self.entries == NULL:
            raise MemoryError()
        self.alive = []
        self.bits = 0
        for k in range(len(rows)):
            f = self.callables[k]
            if self.on_call[k] is not None:
                self.bits |= H_ON_CALL
                if isinstance(self.on_call[k], CopyAtCall):
                    self.copies = True
            if self.substitute[k] is not None:
                self.bits |= H_SUBST_BY
            if self.override[k] is not None:
                self.bits |= H_OVERRIDE_BY
            if (self.substitute[k] is not None or self.override[k] is not None) and \
                    _names_an_operator(f):
                self.operators = True
            self._add(<PyObject *>f, k)
            if PyMethod_Check(<PyObject *>f):
                self._add(PyMethod_GET_FUNCTION(<PyObject *>f), k)
            elif isinstance(f, (classmethod, staticmethod)):
                self._add(<PyObject *>f.__func__, k)
            elif PyCFunction_Check(<PyObject *>f):
                self._add_address(<size_t>(<PyCFunctionObject *>f).m_ml, k)
            elif Py_TYPE(<PyObject *>f) == &PyMethodDescr_Type:
                self._add_address(<size_t>(<PyMethodDescrObject *>f).d_method, k)

    def __dealloc__(self):
        free(self.keys)
        free(self.entries)

    cdef void _add(self, PyObject *obj, int32_t k):
        self.alive.append(<object>obj)
        self._add_address(<size_t>obj, k)

    cdef void _add_address(self, size_t key, int32_t k) noexcept:
        cdef size_t i = _slot_of(key, self.mask)
        while self.keys[i] != 0 and self.keys[i] != key:
            i = (i + 1) & self.mask
        if self.keys[i] == 0:   # the first callable given for a key wins
            self.keys[i] = key
            self.entries[i] = k

    cdef int32_t match(self, PyObject *callee) noexcept:
        """The entry for `callee`, or -1 (no Python code runs)."""
        return _match(self, callee)

    def find(self, f):
        """The index of the entry `f` matches, or -1 (for tests and tools)."""
        return _match(self, <PyObject *>f)

    def __len__(self):
        return len(self.callables)


cdef inline int32_t _probe(CallFilter f, size_t key) noexcept:
    cdef size_t i = _slot_of(key, f.mask)
    while f.keys[i] != 0:
        if f.keys[i] == key:
            return f.entries[i]
        i = (i + 1) & f.mask
    return -1


cdef inline int32_t _match(CallFilter f, PyObject *callee) noexcept:
    # Inlined into the recorder's per-row path: a miss is a probe or two.
    cdef int32_t k
    cdef size_t key
    if callee == NULL:
        return -1
    k = _probe(f, <size_t>callee)
    if k >= 0:
        return k
    if PyMethod_Check(callee):
        return _probe(f, <size_t>PyMethod_GET_FUNCTION(callee))
    if PyCFunction_Check(callee):
        return _probe(f, <size_t>(<PyCFunctionObject *>callee).m_ml)
    key = _summary_key(callee)   # a callee a value policy summarised
    return _probe(f, key) if key != 0 else -1


cdef inline bint _no_filtered_hook(Recorder self, FrameRec *fr, int32_t *r, int32_t row) noexcept:
    # Whether a row can skip _recorded: its frame's context has no hook run for
    # every row (snapshots, override, node hooks), no substitution is pending and
    # the row's callee matches none of its filters (most rows).
    return (fr.hooks & (H_SNAP_ANY | H_OVERRIDE | H_NODE_ALL | H_SUBSTITUTE)) == 0 and \
        fr.subst_pc < 0 and (fr.filters == NULL or
                             _match(<CallFilter>fr.filters, _row_callee(self, fr, r, row)) < 0)


# The one-routine call paths (events.pxi: _enter_plain, _close_open_call,
# _return_plain) under a context with hooks: what each may leave out.  A frame
# entered by a call whose callee no filter of the context names, under a context
# whose only hooks are primitives and filters, is entered as under no hooks (its
# callee's verdict kept, _may_recur_cached: _plain_entry_ok, contexts.pxi); so is a call's row completed whose
# callee no filter names (_no_filtered_hook), and a frame's return under a context
# with no snapshots or node hooks.  Filtered callees take the general paths, which
# run their hooks.
cdef enum:
    H_PLAIN_ENTRY = H_PRIMITIVES | H_ON_CALL | H_OVERRIDE_BY | H_SUBST_BY


cdef inline bint _plain_close_ok(Recorder self, FrameRec *fr) noexcept:
    """Whether the row of the call open in `fr` (fr.open_row, its op at fr.pc) may
    be completed by _close_open_call: no hook of fr's context runs for it."""
    cdef int32_t *op
    if fr.hooks == 0:
        return True
    op = fr.plan.ops + fr.pc * OP_WORDS
    if op[OP_CODE] != M_RECORD:
        return False
    return _no_filtered_hook(self, fr, fr.plan.recs + op[OP_A], fr.open_row)


cdef inline bint _plain_return_ok(uint32_t hooks) noexcept:
    """Whether a frame whose context has hook mask `hooks` may return through
    _return_plain: its context takes no snapshot of the value and has no node
    hook (filters act on the caller's row).  Asked once per frame, at its entry
    (recorder.pxi's _frame_init: FrameRec.plain_ret)."""
    return (hooks & (H_SNAP_ANY | H_NODE_ALL)) == 0


cdef PyObject *_row_callee(Recorder self, FrameRec *fr, int32_t *r, int32_t row) noexcept:
    """What the call or operator recorded at `row` (record `r`) called, borrowed:
    an operator's function, or a call's first input (the original callable when a
    substitute ran instead)."""
    cdef Trace t = self.trace
    cdef int32_t ref
    if r != NULL and (r[REC_SEM] == R_OP or r[REC_SEM] == R_SPECIAL):
        if r[REC_FN] < 0:
            return NULL
        return PyList_GET_ITEM(<object>fr.plan.statics, r[REC_FN])
    if fr.subst_pc >= 0 and fr.subst_pc == fr.pc and fr.subst_orig != NULL:
        return fr.subst_orig
    if t.ref_start_[row] == t.ref_start_[row + 1]:
        return NULL
    ref = t.refs_[t.ref_start_[row]]
    if ref >= 0:
        return t.value_[ref]
    return PyList_GET_ITEM(t.pool, -ref - 1)


cdef object _untracked_if_atomic(list c):
    # A copy holding only numbers, strings and None can be in no reference cycle:
    # untracked, the cycle collector never visits it (tracked, the copies of a run
    # of 10^4 draws doubled its time in collections).  CPython does the same for
    # tuples and dicts of such items.  (Should a user later put a container into
    # such a copy, e.g. a Choice's params list, a cycle through it could leak; never
    # worse.)
    cdef object x
    cdef type t
    for x in c:
        t = type(x)
        if t is not float and t is not int and t is not str and t is not bool and \
                x is not None:
            return c
    PyObject_GC_UnTrack(<void *>c)
    return c


# CopyAtCall's copies of short lists of numbers, strings and None are shared: a
# list equal item for item (the same objects, in order) to a copy made before is
# that copy (an HMM's weights `trans[z]`, three lists drawn from 5,000 times, and
# its one-item results).  Such a copy is untracked and holds only immutable
# objects: what it shows can never change, so one copy serves every draw that saw
# those items.  SHARE_ITEMS: the longest list shared; SHARE_SLOTS: the table's size.
cdef enum:
    SHARE_ITEMS = 8
    SHARE_SLOTS = 64


cdef inline bint _atomic_item(PyObject *x) noexcept:
    cdef PyTypeObject *t = Py_TYPE(x)
    return t == <PyTypeObject *>float or t == <PyTypeObject *>int or \
        t == <PyTypeObject *>str or t == <PyTypeObject *>bool or x == <PyObject *>None


@cython.final
@cython.auto_pickle(False)
cdef class CopyAtCall:
    """An on_call hook run in C: copies the mutable inputs and value of each call it
    matches, as they are right after the call, so that a list or array the program
    changes in place later can be read as it was then (tracer.ppl scores draws so).

    The copies are kept flat, in the order they were made (no dict per call, which
    the collector would track; the rows and input positions in C arrays): input
    `input_ks[j]` of the call at row `input_rows[j]` (0 the callee, then the
    arguments as the trace's refs hold them) was `input_copies[j]`; the value of the
    call at `value_rows[j]` was `value_copies[j]` (tracer.ppl reads them as
    columns: `columns()`).  `inputs` ({row: {k: copy}}) and `values` ({row: copy})
    give the same as dicts, made when asked.
    Copied: exact lists, dicts, sets, bytearrays (shallow) and exact instances of
    `array_type` (its `copy()`; numpy.ndarray for tracer.ppl), and the elements
    of a tuple that are such; other values are not kept.  A list of at most
    eight numbers, strings or None whose items are those of a copy made before
    (the same objects) gets that copy (one object for both: it cannot change;
    `share=False`: a copy of its own, for tests).  No Python code of the program
    runs.
    """

    cdef int32_t *in_rows
    cdef int32_t *in_ks
    cdef Py_ssize_t nin, incap
    cdef int32_t *val_rows
    cdef Py_ssize_t nval, valcap
    cdef readonly list input_copies
    cdef readonly list value_copies
    cdef readonly object array_type
    cdef readonly bint share
    cdef PyObject *shared[SHARE_SLOTS]     # owned: a copy of a short atomic list, or NULL

    def __cinit__(self, *args, **kwargs):
        self.in_rows = self.in_ks = self.val_rows = NULL
        self.nin = self.incap = self.nval = self.valcap = 0
        memset(self.shared, 0, sizeof(self.shared))

    def __init__(self, array_type=None, bint share=True):
        self.input_copies, self.value_copies = [], []
        self.array_type = array_type
        self.share = share

    def __dealloc__(self):
        cdef int i
        free(self.in_rows)
        free(self.in_ks)
        free(self.val_rows)
        for i in range(SHARE_SLOTS):
            Py_XDECREF(self.shared[i])
            self.shared[i] = NULL

    @property
    def input_rows(self):
        """The call row of each input copy (a list of ints)."""
        return [self.in_rows[i] for i in range(self.nin)]

    @property
    def input_ks(self):
        """The input position of each input copy (a list of ints)."""
        return [self.in_ks[i] for i in range(self.nin)]

    @property
    def value_rows(self):
        """The call row of each value copy (a list of ints)."""
        return [self.val_rows[i] for i in range(self.nval)]

    def columns(self):
        """`(input_rows, input_ks, input_copies, value_rows, value_copies)`, the
        rows and positions as int64 arrays (no int object made per copy)."""
        np = _np()
        rows = np.empty(self.nin, dtype=np.int64)
        ks = np.empty(self.nin, dtype=np.int64)
        vrows = np.empty(self.nval, dtype=np.int64)
        cdef int64_t[::1] r = rows
        cdef int64_t[::1] k = ks
        cdef int64_t[::1] v = vrows
        cdef Py_ssize_t i
        for i in range(self.nin):
            r[i] = self.in_rows[i]
            k[i] = self.in_ks[i]
        for i in range(self.nval):
            v[i] = self.val_rows[i]
        return rows, ks, self.input_copies, vrows, self.value_copies

    def values_of(self, Trace trace, rows):
        """The values of call rows `rows` (ascending, an int64 array: a scan's
        draws) as a list: the copy of a row's value where one was made, else the
        value `trace` holds (as `Trace.values_at` reads it).  One merge in C of
        the two ascending row lists (no dict, no int object per row); None when
        `rows` or the copies' rows are not ascending (the caller sorts)."""
        np = _np()
        cdef const int64_t[::1] r = np.ascontiguousarray(rows, dtype=np.int64)
        cdef Py_ssize_t m = r.shape[0], i, j = 0
        cdef int64_t row
        cdef PyObject *v
        cdef object got
        cdef list out
        for i in range(1, m):
            if r[i] <= r[i - 1]:
                return None
        for i in range(1, self.nval):
            if self.val_rows[i] <= self.val_rows[i - 1]:
                return None
        for i in range(m):
            if not 0 <= r[i] < trace.n:
                raise IndexError(f"row {r[i]} is not in a trace of {trace.n} rows")
        if len(self.value_copies) != self.nval:
            return None
        out = _new_list(m)
        for i in range(m):
            row = r[i]
            while j < self.nval and self.val_rows[j] < row:
                j += 1
            if j < self.nval and self.val_rows[j] == row:
                v = PyList_GET_ITEM(self.value_copies, j)
            else:
                v = trace.value_[row]
                if v == NULL:
                    v = <PyObject *>None
                elif Py_TYPE(v) == <PyTypeObject *>WeakValue:   # values="weak"
                    got = (<WeakValue>v).get()
                    v = <PyObject *>got
            Py_INCREF(<object>v)
            _list_set(out, i, v)
        return out

    @property
    def inputs(self):
        """{row: {k: copy of input k}} (made from the flat lists when asked)."""
        cdef dict out = {}
        for row, k, c in zip(self.input_rows, self.input_ks, self.input_copies):
            out.setdefault(row, {})[k] = c
        return out

    @property
    def values(self):
        """{row: copy of the value} (made from the flat lists when asked)."""
        return dict(zip(self.value_rows, self.value_copies))

    def __call__(self, node):
        """The same copies for a node (when run as a plain hook)."""
        self._take(node._trace, node._row)

    cdef object _list_copy(self, list o):
        # a copy of exact list o: a shared one where its items are those of one
        cdef Py_ssize_t n = PyList_GET_SIZE(o), i
        cdef size_t h
        cdef PyObject *x
        cdef PyObject *c
        cdef list got
        if n == 0 or n > SHARE_ITEMS or not self.share:
            return _untracked_if_atomic(list(o))
        h = <size_t>n
        for i in range(n):
            x = PyList_GET_ITEM(o, i)
            if not _atomic_item(x):
                return list(o)          # (tracked: an item may hold a cycle)
            h = (h ^ (<size_t>x >> 4)) * <size_t>11400714819323198485ULL
        i = <Py_ssize_t>((h >> 32) & (SHARE_SLOTS - 1))
        c = self.shared[i]
        if c != NULL and PyList_GET_SIZE(<object>c) == n and \
                memcmp((<ListStruct *>c).ob_item, (<ListStruct *>o).ob_item,
                       n * sizeof(PyObject *)) == 0:
            return <object>c
        got = list(o)
        PyObject_GC_UnTrack(<void *>got)
        Py_INCREF(got)
        Py_XDECREF(c)
        self.shared[i] = <PyObject *>got
        return got

    cdef object _copied(self, PyObject *v):
        # a copy of v, or None if it is not copied
        cdef Py_ssize_t i, n
        cdef object o, c, x
        cdef list out
        cdef bint changed
        if v == NULL:
            return None
        o = <object>v
        if type(o) is list:
            return self._list_copy(<list>o)
        if type(o) is dict:
            return dict(o)
        if type(o) is set:
            return set(o)
        if type(o) is bytearray:
            return bytearray(o)
        if self.array_type is not None and type(o) is self.array_type:
            return o.copy()
        if type(o) is tuple:
            n = len(<tuple>o)
            out = list(<tuple>o)
            changed = False
            for i in range(n):
                x = out[i]
                c = self._copied(<PyObject *>x)
                if c is not None:
                    out[i] = c
                    changed = True
            return tuple(out) if changed else None
        return None

    cdef int _grow(self, bint value) except -1:
        cdef Py_ssize_t cap
        cdef int32_t *a
        cdef int32_t *b
        if value:
            cap = 2 * self.valcap if self.valcap else 1024
            a = <int32_t *>realloc(self.val_rows, cap * sizeof(int32_t))
            if a == NULL:
                raise MemoryError()
            self.val_rows = a
            self.valcap = cap
            return 0
        cap = 2 * self.incap if self.incap else 1024
        a = <int32_t *>realloc(self.in_rows, cap * sizeof(int32_t))
        if a == NULL:
            raise MemoryError()
        self.in_rows = a
        b = <int32_t *>realloc(self.in_ks, cap * sizeof(int32_t))
        if b == NULL:
            raise MemoryError()
        self.in_ks = b
        self.incap = cap
        return 0

    cdef int _take(self, Trace t, int32_t row) except -1:
        cdef int32_t i, r, start = t.ref_start_[row]
        cdef object c
        for i in range(start + 1, t.ref_start_[row + 1]):
            r = t.refs_[i]
            if r < 0:
                continue        # a constant of the code: immutable
            c = self._copied(t.value_[r])
            if c is not None:
                if self.nin == self.incap:
                    self._grow(False)
                self.input_copies.append(c)
                self.in_rows[self.nin] = row
                self.in_ks[self.nin] = i - start
                self.nin += 1
        c = self._copied(t.value_[row])
        if c is not None:
            if self.nval == self.valcap:
                self._grow(True)
            self.value_copies.append(c)
            self.val_rows[self.nval] = row
            self.nval += 1
        return 0


@cython.final
@cython.auto_pickle(False)
cdef class NextValue:
    """A replacement callable run in C (`Context(substitute={sampler: NextValue(...)})`):
    each call returns the next item of `values`, whatever its arguments, and raises
    `exhausted()` once they are used up.  An exact list is returned as a fresh copy
    and an exact instance of `array_type` as its `__copy__()` (the program may change
    what it drew in place).  tracer.ppl replays a run by position with one: no
    Python frame, so no monitoring event and no Python code per draw.  `count`: the
    calls answered so far."""

    cdef readonly list values
    cdef readonly Py_ssize_t count
    cdef readonly object exhausted
    cdef readonly object array_type

    def __init__(self, list values not None, exhausted, array_type=None):
        self.values = values
        self.count = 0
        self.exhausted = exhausted
        self.array_type = array_type

    def __call__(self, *args, **kwargs):
        cdef object v
        if self.count >= len(self.values):
            raise self.exhausted()
        v = self.values[self.count]
        self.count += 1
        if type(v) is list:
            return list(<list>v)
        if self.array_type is not None and type(v) is self.array_type:
            return v.__copy__()
        return v


cdef extern from "_frame.h":
    PyObject *tracer_frame_code(void *frame)

cdef extern from "Python.h":
    bint PyCode_Check(PyObject *)
    PyObject *PyEval_GetFrame()
    char *PyBytes_AS_STRING(PyObject *)
    Py_ssize_t PyBytes_GET_SIZE(PyObject *)


@cython.final
@cython.auto_pickle(False)
cdef class _FixCount:
    """A SiteFix entry's count in C: `n`, the next draw's count at its line, and
    the counts that are fixed (the keys of the entry's `wanted` dict, sorted, read
    once: tracer.ppl never changes it during a run), met in order since `n` only
    goes up by one."""
    cdef readonly int64_t n
    cdef int64_t *wanted
    cdef Py_ssize_t nwanted, at

    def __dealloc__(self):
        free(self.wanted)

    @staticmethod
    cdef object of(object k, object wanted):
        # A _FixCount at count k, or None where k or a key of `wanted` is not an
        # exact int within int64 (the entry keeps its int count).
        cdef _FixCount fc
        cdef list keys
        cdef Py_ssize_t i
        if type(k) is not int or not (0 <= k < (<int64_t>1) << 62):
            return None
        if wanted is not None and type(wanted) is not dict:
            return None
        keys = list(<dict>wanted) if wanted is not None else []
        for x in keys:
            if type(x) is not int or not (-((<int64_t>1) << 62) < x < (<int64_t>1) << 62):
                return None
        keys.sort()
        fc = _FixCount.__new__(_FixCount)
        fc.n = k
        fc.nwanted = len(keys)
        fc.at = 0
        if fc.nwanted:
            fc.wanted = <int64_t *>malloc(fc.nwanted * sizeof(int64_t))
            if fc.wanted == NULL:
                raise MemoryError()
            for i in range(fc.nwanted):
                fc.wanted[i] = keys[i]
        return fc

    cdef inline bint fixes(self, int64_t k) noexcept:
        # whether count k is a fixed one (k: this count's values, ascending)
        while self.at < self.nwanted and self.wanted[self.at] < k:
            self.at += 1
        return self.at < self.nwanted and self.wanted[self.at] == k

    def __index__(self):
        return self.n

    def __int__(self):
        return self.n

    def __repr__(self):
        return f"_FixCount({self.n})"


@cython.final
@cython.auto_pickle(False)
cdef class DrawCount:
    """The calls the SiteGates sharing it have taken (`n`)."""
    cdef public Py_ssize_t n

    def __init__(self, Py_ssize_t n=0):
        self.n = n


@cython.final
@cython.auto_pickle(False)
cdef class SiteGate:
    """A replacement callable run in C (`Context(substitute={f: SiteGate(...)})`) that
    sends a call to `dispatcher` only when it is made at a chosen place, and to
    `original` otherwise, with the call's arguments either way.

    The place is the calling frame's code unit: `places(code)` (a Python callable,
    asked once per code object) gives a bytes object with a non-zero byte, the
    unit's slot, for each chosen code unit of `code` (empty: none).  With
    `generators` (a tuple of types), a call whose first argument is not one of them
    goes to `dispatcher` too (it was made through a bound method: `original`, an
    unbound method, cannot take it); `everywhere`: every call goes to `dispatcher`.
    `count.n` counts every call taken.

    With `acts` (id of a frame object -> an object whose `_sites` dict the
    dispatcher fills), a call at a chosen unit is counted here when the calling
    frame's `_sites` has a list `[k, base, wanted]` under `slot << 16 | site_id`
    and k is not a key of `wanted` (None: no key): `k` goes up by one and
    `original` runs.  Slot 255: always the dispatcher.  tracer.ppl conditions with one per sampler: only the first
    draw of a call at a line of a fixed address, and the fixed draws, run Python
    code (the dispatcher).
    """

    cdef readonly object original
    cdef readonly object dispatcher
    cdef readonly object places
    cdef readonly object generators
    cdef readonly bint everywhere
    cdef readonly DrawCount count
    cdef readonly dict acts
    cdef readonly long site_id
    cdef dict known                 # id(code) -> (code, bytes)
    cdef PyObject *last_code        # the code of the last lookup (kept alive by known)
    cdef object last_units

    def __init__(self, original, dispatcher, places, DrawCount count not None,
                 generators=None, bint everywhere=False, dict acts=None, long site_id=0):
        self.acts = acts
        self.site_id = site_id
        self.original = original
        self.dispatcher = dispatcher
        self.places = places
        self.count = count
        self.generators = generators
        self.everywhere = everywhere
        self.known = {}
        self.last_code = NULL
        self.last_units = None

    cdef object _units(self, PyObject *code):
        cdef object got
        if code == self.last_code:
            return self.last_units
        got = self.known.get(<size_t>code)
        if got is None:
            units = self.places(<object>code)
            if not isinstance(units, bytes):
                raise TypeError("SiteGate: places(code) must return bytes")
            got = (<object>code, units)
            self.known[<size_t>code] = got
        self.last_code = code
        self.last_units = (<tuple>got)[1]
        return self.last_units

    def __call__(self, *args, **kwargs):
        cdef void *frame
        cdef PyObject *code
        cdef object units
        cdef int lasti
        cdef long slot
        self.count.n += 1
        if self.everywhere:
            return self.dispatcher(*args, **kwargs)
        if self.generators is not None and not (args and isinstance(args[0], self.generators)):
            return self.dispatcher(*args, **kwargs)
        frame = tracer_current_frame()
        if frame != NULL:
            code = tracer_frame_code(frame)
            if code != NULL and PyCode_Check(code):
                units = self._units(code)
                lasti = tracer_frame_lasti(frame) >> 1
                if 0 <= lasti < PyBytes_GET_SIZE(<PyObject *>units):
                    slot = <unsigned char>PyBytes_AS_STRING(<PyObject *>units)[lasti]
                    if slot != 0:
                        if self.acts is not None and slot != 255 and self._counted(slot):
                            return self.original(*args, **kwargs)
                        return self.dispatcher(*args, **kwargs)
        return self.original(*args, **kwargs)

    cdef bint _counted(self, long slot) except -1:
        # Whether the call was counted here (not fixed: the original runs); else
        # the dispatcher takes it (and counts it).
        cdef PyObject *f = PyEval_GetFrame()
        cdef object act, sites, entry, k, wanted
        if f == NULL:
            return False
        act = self.acts.get(<size_t>f)
        if act is None:
            return False
        sites = getattr(act, "_sites", None)
        if type(sites) is not dict:
            return False
        entry = (<dict>sites).get((slot << 16) | self.site_id)
        if type(entry) is not list or len(<list>entry) != 3:
            return False
        k = (<list>entry)[0]
        wanted = (<list>entry)[2]
        if wanted is not None and k in wanted:
            return False
        (<list>entry)[0] = k + 1
        return True


@cython.final
@cython.auto_pickle(False)
cdef class SiteFix:
    """An override hook run in C (`Context(override={sampler: SiteFix(...)})`) that
    fixes chosen draws of a sampler by their place, and runs no Python code for the
    others: the sampler has run (the program called it itself), and at the event
    after the call the fixed value takes the place of its result.

    A draw is a candidate when its frame's code unit is one of `places(code)`'s
    (a Python callable asked once per code object: bytes with a non-zero slot per
    chosen code unit; empty: none).  The frame's context keeps, in its `_sites`
    dict, a list `[k, base, wanted]` under `slot << 16 | site_id` (made by
    `first(ctx, code, offset, key)` at the first candidate of a call): the next
    count, the address without a count, and the fixed counts of that base (a dict,
    or None).  The count goes up in C; when it is a key of `wanted`,
    `fixed(entry, k, trace, row)` (Python) gives the value (or
    tracer.context.KEEP).  `everywhere` (tracer.ppl.sample: the name is an
    argument): every call asks `named(ctx, code, trace, row)` instead.  `root_only`: only draws made by the root call's own
    frame are candidates (no fixed address is deeper, so no context per call is
    needed: the frames below share the root's).  tracer.ppl conditions with one
    per sampler.
    """

    cdef readonly object places
    cdef readonly long site_id
    cdef readonly object first
    cdef readonly object fixed
    cdef readonly object named
    cdef readonly bint everywhere
    cdef readonly bint root_only
    cdef dict known                 # id(code) -> (code, bytes)
    cdef PyObject *last_code        # the code of the last lookup (kept alive by known)
    cdef object last_units
    cdef PyObject *last_ctx         # the context whose _sites dict is last_sites
    cdef object last_ctx_ref        # keeps last_ctx alive
    cdef object last_sites
    cdef long last_slot             # the slot of last_entry, in last_ctx
    cdef object last_entry          # the last candidate's entry (None: none)

    def __init__(self, places, first, fixed, named=None, long site_id=0,
                 bint everywhere=False, bint root_only=False):
        self.places = places
        self.first = first
        self.fixed = fixed
        self.named = named
        self.site_id = site_id
        self.everywhere = everywhere
        self.root_only = root_only
        self.known = {}
        self.last_code = NULL
        self.last_units = None
        self.last_ctx = NULL
        self.last_ctx_ref = None
        self.last_sites = None
        self.last_slot = 0
        self.last_entry = None

    def __call__(self, node):
        raise TypeError("a SiteFix is run by the recorder as an override filter, "
                        "not called")

    cdef object _units(self, PyObject *code):
        cdef object got
        if code == self.last_code:
            return self.last_units
        got = self.known.get(<size_t>code)
        if got is None:
            units = self.places(<object>code)
            if not isinstance(units, bytes):
                raise TypeError("SiteFix: places(code) must return bytes")
            got = (<object>code, units)
            self.known[<size_t>code] = got
        self.last_code = code
        self.last_units = (<tuple>got)[1]
        return self.last_units

    cdef object _sites(self, PyObject *ctx):
        if ctx != self.last_ctx:
            sites = getattr(<object>ctx, "_sites")
            if type(sites) is not dict:
                raise TypeError("SiteFix: the context's _sites must be a dict")
            self.last_ctx_ref = <object>ctx
            self.last_ctx = ctx
            self.last_sites = sites
            self.last_entry = None
        return self.last_sites

    cdef object decide(self, Recorder rec, FrameRec *fr, int32_t row):
        """The value fixed for the draw recorded at `row`, or None (not fixed).
        Only the Python callables run the user-code guard (_user_code_starts): the
        counting in between calls none of the program's code."""
        cdef Trace t = rec.trace
        cdef object units, entry, k, wanted, key, new
        cdef int32_t unit
        cdef long slot
        if fr.code == NULL or (self.root_only and t.parent_[fr.call_row] >= 0):
            return None
        if self.everywhere:
            _user_code_starts(rec)
            try:
                new = self.named(<object>fr.ctx, <object>fr.code, t, row)
            finally:
                _user_code_ran(rec)
            return None if new is _keep() else new
        if fr.code == self.last_code:
            units = self.last_units
        else:
            _user_code_starts(rec)
            try:
                units = self._units(fr.code)
            finally:
                _user_code_ran(rec)
        unit = t.offset_[row] >> 1
        if not 0 <= unit < PyBytes_GET_SIZE(<PyObject *>units):
            return None
        slot = <unsigned char>PyBytes_AS_STRING(<PyObject *>units)[unit]
        if slot == 0:
            return None
        if fr.ctx == self.last_ctx and slot == self.last_slot and self.last_entry is not None:
            # The same line's entry as the last candidate's, in the same context
            # (a loop drawing at one line): no key made, no lookup.  (An entry,
            # once first() made it, stays its key's in its context's _sites.)
            return self._counted(rec, t, row, self.last_entry)
        key = (slot << 16) | self.site_id
        entry = (<dict>self._sites(fr.ctx)).get(key) if fr.ctx == self.last_ctx else None
        if entry is None:
            _user_code_starts(rec)
            try:
                if fr.ctx != self.last_ctx:
                    self._sites(fr.ctx)
                entry = (<dict>self.last_sites).get(key)
                if entry is None:
                    entry = self.first(<object>fr.ctx, <object>fr.code, t.offset_[row], key)
            finally:
                _user_code_ran(rec)
        if type(entry) is not list or len(<list>entry) != 3:
            raise TypeError("SiteFix: first() must give a list [k, base, wanted]")
        if fr.ctx == self.last_ctx and slot != 255:   # (slot 255: lines share it)
            self.last_slot = slot
            self.last_entry = entry
        return self._counted(rec, t, row, entry)

    cdef object _counted(self, Recorder rec, Trace t, int32_t row, object entry):
        # The draw at `row` counted in its line's entry [k, base, wanted]; the
        # value fixed for it, or None.  The count becomes a _FixCount at the
        # line's first candidate (C counts; no int object made per draw).
        cdef object k, wanted, new, c
        cdef _FixCount fc
        cdef int64_t n
        c = (<list>entry)[0]
        if type(c) is not _FixCount:
            got = _FixCount.of(c, (<list>entry)[2])
            if got is not None:
                (<list>entry)[0] = c = got
        if type(c) is _FixCount:
            fc = <_FixCount>c
            n = fc.n
            fc.n += 1
            if not fc.fixes(n):
                return None
            k = n
        else:
            k = c
            (<list>entry)[0] = k + 1
            wanted = (<list>entry)[2]
            if wanted is None or k not in wanted:
                return None
        _user_code_starts(rec)
        try:
            new = self.fixed(entry, k, t, row)
        finally:
            _user_code_ran(rec)
        return None if new is _keep() else new


cdef int _site_fix(Recorder self, FrameRec *fr, SiteFix hook, int32_t row, int32_t out,
                   int32_t iv) except -1:
    # A SiteFix override: decided in C; Python runs only for the fixed draws (and
    # the first candidate of a call).
    cdef object new
    try:
        new = hook.decide(self, fr, row)
    except BaseException as exc:
        _stop_for_hook(self, exc)
        return 0
    if new is None:
        return 0
    if out < 0 or iv == IV_NONE:
        _stop_for_hook(self, TypeError(
            "tracer cannot replace the value of this call here (its result is not on "
            "the stack at the event after it); fix the draw by another address"))
        return 0
    if not _bool_kept(self, new, iv, "a fixed draw"):
        return 0
    return _replace_value(self, fr, row, out, new)


cdef int _filtered_hooks(Recorder self, FrameRec *fr, int32_t k, int32_t row, int32_t out,
                         int32_t iv) except -1:
    """The override and on_call hooks of entry `k` of the frame's context's
    filter, which the call recorded at `row` matched."""
    cdef CallFilter flt = <CallFilter>fr.filters
    cdef object hook, new
    if self.broken:
        return 0
    hook = flt.override[k]
    if hook is not None and type(hook) is SiteFix and self.plan_mode != PLAN_PLAIN:
        _site_fix(self, fr, <SiteFix>hook, row, out, iv)
        hook = None
    if hook is not None and out >= 0 and iv != IV_NONE and self.plan_mode != PLAN_PLAIN:
        _user_code_starts(self)
        try:
            new = hook(_node_view(self.trace, row))
        except BaseException as exc:
            _stop_for_hook(self, exc)
            return 0
        finally:
            _user_code_ran(self)
        if new is not _keep() and _bool_kept(self, new, iv, "an override hook"):
            _replace_value(self, fr, row, out, new)
    hook = flt.on_call[k]
    if hook is not None and type(hook) is CopyAtCall and not self.broken:
        _user_code_starts(self)     # copies allocate: no collection (finalizers) here
        try:
            (<CopyAtCall>hook)._take(self.trace, row)
        except BaseException as exc:
            _stop_for_hook(self, exc)
        finally:
            _user_code_ran(self)
        return 0
    if hook is not None and not self.broken:
        _user_code_starts(self)
        try:
            hook(_node_view(self.trace, row))
        except BaseException as exc:
            _stop_for_hook(self, exc)
        finally:
            _user_code_ran(self)
    return 0


cdef object _filtered_substitute(Recorder self, FrameRec *fr, PyObject *callee):
    """The replacement the frame's context's filter gives `callee`, or None."""
    cdef int32_t k
    if not (fr.hooks & H_SUBST_BY) or fr.filters == NULL:
        return None
    k = _match(<CallFilter>fr.filters, callee)
    return None if k < 0 else (<CallFilter>fr.filters).substitute[k]


# The modules of the functions an operator's record calls (its static callee: the
# analysis's BINARY_OPS, COMPARE_OPS, ...: `operator.mul` is _operator's, `x not in
# y` and slices tracer.callables').  A filter naming one of them may replace an
# operator, which needs an event before every operator (PLAN_INTERVENE).
cdef tuple OPERATOR_MODULES = ("_operator", "operator", "tracer.callables")


cdef bint _names_an_operator(object f) except -1:
    # (A builtin method's __module__ is None; an object whose __module__ raises is
    # not one of those functions either.)
    cdef object module
    try:
        module = getattr(f, "__module__", None)
    except Exception:
        return False
    return isinstance(module, str) and module in OPERATOR_MODULES


cdef int _plan_mode_of(object ctx, uint32_t hooks) except -1:
    """The plan variant (PlanMode) a context with hook bits `hooks` needs.

    A context that substitutes or overrides through its methods is asked at every
    call and operator: an event before each (PLAN_INTERVENE).  One that does so only
    through its substitute=/override= filters, none of them naming an operator's
    function, needs an event before each call only (PLAN_INTERVENE_CALLS: the
    operators run without one, a third of the events of an operator-heavy loop);
    snapshots, and CopyAtCall hooks (copies of a call's arguments), need values read
    right after their instructions (PLAN_EXACT).
    """
    cdef object flt
    if hooks & (H_SUBSTITUTE | H_OVERRIDE):
        return PLAN_INTERVENE
    if hooks & (H_SUBST_BY | H_OVERRIDE_BY):
        flt = getattr(ctx, "_call_filter", None)
        if type(flt) is CallFilter and not (<CallFilter>flt).operators:
            # An override replaces a call's value at the event right after it,
            # which every PLAN_EXACT plan has: no event before the call is needed.
            return PLAN_INTERVENE_CALLS if hooks & H_SUBST_BY else PLAN_EXACT
        return PLAN_INTERVENE
    if hooks & H_SNAP_ANY:
        return PLAN_EXACT
    if hooks & H_ON_CALL:
        # A CopyAtCall copies a call's arguments when its row is recorded: in a plain
        # plan that is at the next event, after whatever stores follow the call with
        # no event of their own (`b = r.choices(xs, weights=w); w[0] = 7.0`).  A
        # PLAN_EXACT plan records the call at the event right after it.
        flt = getattr(ctx, "_call_filter", None)
        if type(flt) is CallFilter and (<CallFilter>flt).copies:
            return PLAN_EXACT
    return PLAN_PLAIN


cdef bint _plan_serves(int have, int need) noexcept:
    # Whether a session recording with plans `have` can serve a context needing
    # `need`: PLAN_INTERVENE serves all, PLAN_INTERVENE_CALLS all but operators'
    # interventions, PLAN_EXACT snapshots, PLAN_PLAIN nothing more.
    if have == need or have == PLAN_INTERVENE:
        return True
    if have == PLAN_INTERVENE_CALLS:
        return need == PLAN_EXACT or need == PLAN_PLAIN
    return have == PLAN_EXACT and need == PLAN_PLAIN


def plan_mode_for(ctx):
    """The plan variant (a PlanMode) a call tracked with root context `ctx` is
    recorded with (for tests and tools)."""
    return _plan_mode_of(ctx, ctx.hook_mask())


cdef PyObject *_filters_of(object ctx) except? NULL:
    # The CallFilter of a context (borrowed: the context keeps it), or NULL.
    flt = getattr(ctx, "_call_filter", None)
    if flt is None:
        return NULL
    if not isinstance(flt, CallFilter):
        raise TypeError(f"{type(ctx).__name__}._call_filter must be a tracer._core.CallFilter")
    return <PyObject *>flt
