# The arena: Trace, the parallel columns one row per node, their growth, export
# (_Column, zero-copy buffers) and the garbage collector's view of the values column.

# ---------------------------------------------------------------------------------
# The arena

# The aux column, by node kind (one int32 whose meaning depends on the kind):
#   argument   its position: 0 the callee, 1.. the parameters; a carried one
#              (F_CARRIED) -1 - slot: a local (slot < co_nlocalsplus) or, past the
#              locals, a value-stack slot a resumed generator kept
#   constant   the local it was stored in; -1 a constant the call returned, -2 a
#              returned value whose producer was not followed (validate reports it)
#   primitive, special   which output of its instruction it is (0, then 1.. for the
#              extra rows of UNPACK_SEQUENCE and the like)
#   nested     one past the last row of its subtree (0 while the call is open)
#   jump       the offset it jumped to
#   return     0

# ---------------------------------------------------------------------------------
# A run of rows written at once (the op loop, replay.pxi)
#
# The column pointers and the counts in one local struct for a whole run of rows:
# through `self.trace` every store into an int32 or uint8 column made the compiler
# reload the Trace's fields (the stores may alias them), and every row checked the
# capacity.  A run reserves room for all the rows it may write once (Trace.open_rows),
# then each row is a handful of stores (_rows_add).  The trace's own counts are
# kept current row by row, so that anything called in between (a slow op, an
# exception) sees a consistent trace; after such a call the run opens the
# columns again (they may have grown and moved).

# A first trace grows its columns from FIRST_ROWS: each step copies the heap
# columns (realloc), so small columns grow fourfold (4 steps, not 8, from 1,024
# rows to 262,144: a copy of ~85k rows' columns where doubling copied ~260k),
# and from GROW_X4_ROWS rows on (128k: the values column 1 MiB) twofold, as
# columns of 4 MiB and more are mappings that grow by mremap without a copy
# (pages.pxi) and capacity should stay near use.  Capacity never touched costs
# no page.  (A trace that takes the spare columns of the last one does not grow.)
cdef enum:
    GROW_X4_ROWS = 1 << 17
    GROW_X4_REFS = 1 << 18
    # Rows whose aux and flags open_rows zeroes at once past a run's room
    # (Trace.zcap): 20 KiB of the two columns per trip to _zero_rows.
    ZERO_AHEAD = 4096


cdef extern from *:
    """
    /* `n` bytes at `p` set to 0, in 16-byte stores four at a time: what memset
       does, but as plain stores (glibc's memset of a few KiB is `rep stosb`,
       which callgrind counts as one instruction per byte, so the zeroing would
       look 30x its cost next to the rows it saves stores in).  The empty asm
       keeps gcc from turning the loop back into a memset call. */
    typedef unsigned char tracer_v16 __attribute__((vector_size(16), aligned(1)));
    static void tracer_zero_bytes(void *p, size_t n) {
        unsigned char *b = (unsigned char *)p;
        const tracer_v16 z = {0};
        size_t i = 0;
        for (; i + 64 <= n; i += 64) {
            *(tracer_v16 *)(b + i) = z;
            *(tracer_v16 *)(b + i + 16) = z;
            *(tracer_v16 *)(b + i + 32) = z;
            *(tracer_v16 *)(b + i + 48) = z;
            __asm__ volatile("" ::: "memory");
        }
        for (; i < n; i++) b[i] = 0;
    }
    """
    void _zero_bytes "tracer_zero_bytes"(void *p, size_t n) noexcept


ctypedef struct Rows:
    uint8_t *kind
    uint8_t *flags
    int32_t *parent
    int32_t *offset
    int32_t *aux
    int32_t *ref_start
    PyObject **value
    int32_t *refs
    int32_t n
    int32_t nrefs


# The cap of the trace recorder.pxi's new_recorder is making (0: none): Trace.__cinit__
# then takes no spare and grows its columns no further than the cap.
cdef int32_t NEW_TRACE_MAX_ROWS = 0
# The room a capped trace has past its cap (see _grow_rows; _row_slack sets it for
# the tests, which stop traces of a few nodes anywhere).
cdef enum:
    ROW_SLACK = 1024
cdef int32_t ROW_SLACK_ROWS = ROW_SLACK


def _row_slack(rows=None):
    """Get or set the room a capped trace has past its cap (1024 rows); for the
    tests."""
    global ROW_SLACK_ROWS
    old = ROW_SLACK_ROWS
    if rows is not None:
        if not 0 <= rows <= ROW_SLACK:
            raise ValueError(f"the slack is 0 to {ROW_SLACK} rows, got {rows!r}")
        ROW_SLACK_ROWS = rows
    return old


@cython.final
cdef class Trace:
    """The recorded rows of one `track` call: parallel columns, one row per node.

    Row 0 is the root call.  Use `tracer.nodes` views to read it; the columns are
    exposed zero-copy as numpy arrays by `columns()`.
    """

    cdef int32_t n, cap, nrefs, refcap
    # Rows [n, zcap) have aux and flags 0 (zcap <= cap): the op loop's rows of a
    # primitive or special op (aux 0, flags 0) store neither (open_rows keeps
    # room zeroed ahead of a run; _swap_columns resets it, spare columns hold
    # the rows of the trace before).
    cdef int32_t zcap
    # Rows (refs) below which the columns' pages may be resident (spare.pxi).
    cdef int32_t hw, refhw
    cdef uint8_t *kind_
    cdef uint8_t *flags_
    cdef int32_t *parent_
    cdef int32_t *offset_
    cdef int32_t *aux_        # by kind, see AUX below
    cdef int32_t *ref_start_
    cdef PyObject **value_
    cdef int32_t *refs_
    # The code each row was recorded in is not a column: it is the code of the frame
    # whose call row encloses it, and frames are few.  One int64 per frame: its call
    # row in the high half (so sorting sorts by row), its code id in the low half.
    cdef int64_t *frames_
    cdef int32_t nframes, framecap
    cdef bint frames_sorted
    cdef Timing *timing            # per-call times (timing.pxi), NULL unless timed
    cdef readonly list pool
    cdef readonly list codes
    cdef dict code_ids
    # The rows' metadata (metadata.pxi): row -> dict, and the substitutions kept
    # without a dict each: the rows (ascending) whose only metadata is
    # {"substituted": f}, per row an index into subst_fns (-1: moved into metadata_).
    cdef dict metadata_
    cdef int32_t *subst_row_
    cdef int32_t *subst_fn_
    cdef int32_t nsubst, substcap, subst_live, subst_last
    cdef list subst_fns            # the distinct callables substituted (by identity)
    cdef dict subst_fn_ids         # id -> index into subst_fns, once there are many
    cdef readonly dict substituted_operators   # row -> the replacement a context substituted an operator by
    cdef readonly bint stopped     # recording stopped early (a hook or recorder error)
    cdef readonly bint snapshots   # values are what a snapshot policy kept, not the objects
    cdef int value_policy          # VP_* (values.pxi) while recording; VP_KEEP once done
    cdef str _values_kept          # the value policy it was recorded with, if not "keep"
    cdef readonly object exception
    cdef readonly long events      # sys.monitoring events the recorder handled for it
    cdef public tuple root_keywords
    cdef public object _cache
    cdef int exports
    # A loaded trace's node columns are buffers it does not own (the Arrow buffers of
    # the file it was read from, or arrays a pickle carried): `borrowed_columns` holds
    # the arrays they belong to, alive as long as the trace.  Such a trace never
    # frees, reallocates or writes them, and cannot grow (see _grow_rows).  Its
    # values column is its own (references it took).
    cdef bint external
    cdef object borrowed_columns
    cdef object code_column      # the loaded code column, checked against the frames
    cdef readonly object source  # what the columns were loaded from (Arrow arrays by name), or None
    cdef object __weakref__      # tracer.last_trace() holds a returned call's trace weakly
    cdef bint values_hidden      # recording under track: the collector is not shown the values (_trace_recording)
    # A cap on the rows recorded (Context(max_nodes=...); 0: none) and the recorder
    # to stop when the columns must grow past it (borrowed; NULL once recorded).
    cdef readonly int32_t max_rows
    cdef PyObject *recorder

    def __cinit__(self):
        self.n = 0
        self.cap = 0
        self.nrefs = 0
        self.refcap = 0
        self.pool = [UNKNOWN]
        self.codes = []
        self.code_ids = {}
        self.frames_sorted = True
        self.metadata_ = {}
        self.substituted_operators = {}
        _arena_cache_ready()
        # (a capped trace starts small: a spare's room could hold more rows than
        # its cap, and the cap is checked where the columns grow)
        self.max_rows = NEW_TRACE_MAX_ROWS
        if self.max_rows:
            self._grow_rows(min(FIRST_ROWS, self.max_rows + ROW_SLACK_ROWS))
            self._grow_refs(FIRST_REFS)
        elif not _take_spare(self):
            self._grow_rows(FIRST_ROWS)
            self._grow_refs(FIRST_REFS)
        self.ref_start_[0] = 0

    def __dealloc__(self):
        cdef int32_t i
        if self.value_ != NULL:
            _arena_catch(1)
            for i in range(self.n):
                Py_XDECREF(self.value_[i])
            _arena_catch(0)
        free(self.frames_)
        free(self.subst_row_)
        free(self.subst_fn_)
        _timing_free(self.timing)
        if self.external:
            _drop_external(self)
        else:
            _give_spare(self)

    cdef int _refuse_growth(self) except -1:
        raise BufferError("this trace was loaded from a file or a pickle: its columns are "
                          "the loaded (read-only) buffers, so rows cannot be added to it; "
                          "record a new trace with tracer.track instead")

    cdef int _grow_rows(self, int32_t need) except -1:
        cdef int32_t cap = self.cap if self.cap else FIRST_ROWS
        cdef int32_t limit
        while cap < need:
            cap *= 4 if cap < GROW_X4_ROWS else 2
        if self.max_rows:
            # Room for max_rows rows and ROW_SLACK more, no further: a trace of
            # max_rows rows fits whatever room its events ask for ahead of
            # their rows (a row or two, a segment's run); past that room the
            # recorder stops at its next safe point, the rows of the event being
            # recorded still written.
            limit = self.max_rows + ROW_SLACK_ROWS
            if cap > limit:
                cap = limit if need <= limit else need
            if need > limit and self.recorder != NULL:
                _row_limit_reached(self.recorder)   # (recorder.pxi)
        if cap == self.cap:
            return 0
        if self.external:
            self._refuse_growth()
        if self.exports:
            raise BufferError("the trace cannot grow while its columns are exported")
        cdef size_t was = self.cap
        self.kind_ = <uint8_t *>_column_realloc(self.kind_, was, cap, sizeof(uint8_t))
        self.flags_ = <uint8_t *>_column_realloc(self.flags_, was, cap, sizeof(uint8_t))
        self.parent_ = <int32_t *>_column_realloc(self.parent_, was, cap, sizeof(int32_t))
        self.offset_ = <int32_t *>_column_realloc(self.offset_, was, cap, sizeof(int32_t))
        self.aux_ = <int32_t *>_column_realloc(self.aux_, was, cap, sizeof(int32_t))
        self.ref_start_ = <int32_t *>_column_realloc(self.ref_start_, was + 1 if was else 0,
                                                     cap + 1, sizeof(int32_t))
        self.value_ = <PyObject **>_column_realloc(self.value_, was, cap, sizeof(PyObject *))
        self.cap = cap
        return 0

    cdef int _grow_refs(self, int32_t need) except -1:
        cdef int32_t cap = self.refcap if self.refcap else FIRST_REFS
        while cap < need:
            cap *= 4 if cap < GROW_X4_REFS else 2
        if cap == self.refcap:
            return 0
        if self.external:
            self._refuse_growth()
        if self.exports:
            raise BufferError("the trace cannot grow while its columns are exported")
        self.refs_ = <int32_t *>_column_realloc(self.refs_, self.refcap, cap, sizeof(int32_t))
        self.refcap = cap
        return 0

    cdef int _zero_rows(self, int32_t need) except -1:
        """Room for rows up to `need` (grown if need be) with aux and flags 0
        from n up to zcap >= need: zeroed a chunk ahead (ZERO_AHEAD rows, so
        this runs once per chunk, not per run), only past what is zero already."""
        if self.external:
            self._refuse_growth()
        if need > self.cap:
            self._grow_rows(need)
        self._zero_ahead(need)
        return 0

    cdef void _zero_ahead(self, int32_t need) noexcept:
        # _zero_rows's zeroing, in capacity there already (need <= cap).
        cdef int32_t start, stop
        start = self.zcap if self.zcap > self.n else self.n
        stop = need + ZERO_AHEAD
        if stop > self.cap or stop < 0:
            stop = self.cap
        if stop > start:
            _zero_bytes(self.aux_ + start, (stop - start) * sizeof(int32_t))
            _zero_bytes(self.flags_ + start, (stop - start) * sizeof(uint8_t))
        self.zcap = stop

    cdef inline int32_t add_row(self, uint8_t kind, uint8_t flags, int32_t parent,
                                int32_t offset, int32_t aux, PyObject *value) except -1:
        # The common case only (room left, no value policy): small enough that gcc
        # inlines it into every caller on 3.12 too, whose Py_INCREF is longer.
        cdef int32_t r = self.n
        if r + 1 >= self.cap or self.value_policy:
            return self._add_row_slow(kind, flags, parent, offset, aux, value)
        self.kind_[r] = kind
        self.flags_[r] = flags
        self.parent_[r] = parent
        self.offset_[r] = offset
        self.aux_[r] = aux
        Py_XINCREF(value)
        self.value_[r] = value
        self.n = r + 1
        self.ref_start_[r + 1] = self.nrefs
        return r

    cdef int32_t _add_row_slow(self, uint8_t kind, uint8_t flags, int32_t parent,
                               int32_t offset, int32_t aux, PyObject *value) except -1:
        cdef int32_t r = self.n
        if r + 1 >= self.cap:
            self._grow_rows(r + 2)
        self.kind_[r] = kind
        self.flags_[r] = flags
        self.parent_[r] = parent
        self.offset_[r] = offset
        self.aux_[r] = aux
        if self.value_policy and value != NULL:
            value = _policy_value(self.value_policy, value)   # a new reference
        else:
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

    cdef inline int open_rows(self, Rows *w, int32_t rows, int32_t refs) except -1:
        """Point `w` at the columns, with room for `rows` more rows and `refs` more
        refs (a run of rows written at once: Rows, below), those rows' aux and
        flags already 0 (zcap: a writer may leave them unstored where they are 0)."""
        # A method: called on self.trace the attribute needs no reference of its own.
        if self.n + rows + 1 >= self.zcap:
            self._zero_rows(self.n + rows + 2)
        if self.nrefs + refs > self.refcap:
            self._grow_refs(self.nrefs + refs)
        w.kind = self.kind_
        w.flags = self.flags_
        w.parent = self.parent_
        w.offset = self.offset_
        w.aux = self.aux_
        w.ref_start = self.ref_start_
        w.value = self.value_
        w.refs = self.refs_
        w.n = self.n
        w.nrefs = self.nrefs
        return 0

    cdef int add_frame(self, int32_t call_row, int32_t code) except -1:
        """Record that the rows under `call_row` were recorded in code `code`."""
        cdef int32_t cap
        if self.nframes == self.framecap:
            cap = self.framecap * 2 if self.framecap else 64
            self.frames_ = <int64_t *>_realloc(self.frames_, cap * sizeof(int64_t))
            self.framecap = cap
        if self.nframes and (self.frames_[self.nframes - 1] >> 32) >= call_row:
            self.frames_sorted = False
        self.frames_[self.nframes] = ((<int64_t>call_row) << 32) | (<uint32_t>code)
        self.nframes += 1
        return 0

    cdef int32_t _frame_code(self, int32_t row) noexcept:
        # The code of the frame whose call row is `row`, or -2 when it has none.
        cdef int32_t lo = 0, hi = self.nframes, mid
        cdef int64_t key
        if not self.frames_sorted:
            _sort_frames(self)
        while lo < hi:
            mid = (lo + hi) >> 1
            key = self.frames_[mid] >> 32
            if key < row:
                lo = mid + 1
            elif key > row:
                hi = mid
            else:
                return <int32_t>(self.frames_[mid] & 0xFFFFFFFF)
        return -2

    cdef int32_t _code_of(self, int32_t row) noexcept:
        cdef int32_t p = self.parent_[row], c
        while p >= 0:
            c = self._frame_code(p)
            if c != -2:
                return c
            p = self.parent_[p]
        return -1

    cdef inline int32_t pool_add(self, object value) except? -2:
        cdef PyObject *kept
        if self.value_policy:
            kept = _policy_value(self.value_policy, <PyObject *>value)
            self.pool.append(<object>kept)
            Py_XDECREF(kept)
            return -<int32_t>len(self.pool)
        self.pool.append(value)
        return -<int32_t>len(self.pool)

    cdef inline void set_value(self, int32_t row, PyObject *value) noexcept:
        if self.value_policy and value != NULL:
            # (through a pointer: the policy's checks inlined here kept gcc from
            # inlining set_value into _close_open_call, every C call's path)
            value = _policy_value_out(self.value_policy, value)   # a new reference
        else:
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

    @property
    def values_kept(self):
        """The value policy the trace was recorded with: "keep" (the objects),
        "none", "summary" or "weak" (Context(values=...))."""
        return self._values_kept or "keep"

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
        """The code object the row was recorded in (None for the root)."""
        self._check(row)
        cdef int32_t c = self._code_of(row)
        return self.codes[c] if c >= 0 else None

    cpdef object value(self, int32_t row):
        self._check(row)
        cdef PyObject *v = self.value_[row]
        if v == NULL:
            return None
        if Py_TYPE(v) == <PyTypeObject *>WeakValue:   # values="weak"
            return (<WeakValue>v).get()
        return <object>v

    cdef object _ref_value(self, int32_t ref):
        # The value a ref names, a row's or a pool entry's, read as value() reads a
        # row's (a weakly kept one: the object while alive, else its summary).
        if ref >= 0:
            return self.value(ref)
        v = self.pool[-ref - 1]
        return (<WeakValue>v).get() if type(v) is WeakValue else v

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
                v = self.pool[-r - 1]
                if type(v) is WeakValue:   # values="weak": the root's callee, arguments
                    v = (<WeakValue>v).get()
                out.append(("const", v))
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
        return (self.n * ROW_BYTES + self.nrefs * sizeof(int32_t) + self.nframes * sizeof(int64_t)
                + len(self.pool) * sizeof(PyObject *))

    @property
    def capacity(self):
        """`(rows, refs)`: how many rows and refs the columns have room for now
        (grown as the trace grows; a trace that took a bigger trace's spare
        columns keeps them, their pages past its rows given back to the kernel)."""
        return self.cap, self.refcap

    @property
    def num_refs(self):
        """Number of entries in the refs column."""
        return self.nrefs

    def columns(self):
        """The columns as numpy arrays sharing the trace's memory (read-only).

        `code` (the code id each row was recorded in, -1 for the root) is not stored
        per row; it is computed from the frames, once per trace and cached.
        """
        import numpy as np
        out = {}
        for name in ("kind", "flags", "parent", "offset", "aux", "ref_start", "refs"):
            arr = np.asarray(_Column(self, name))
            arr.flags.writeable = False
            out[name] = arr
        out["code"] = self._code_column()
        return out

    def frames(self):
        """`(rows, codes)`: the call rows that had a frame, ascending, and the code id
        each frame ran (int32 arrays, copies)."""
        import numpy as np
        if not self.frames_sorted:
            _sort_frames(self)
        packed = np.empty(self.nframes, dtype=np.int64)
        cdef int64_t[::1] dst = packed
        if self.nframes:
            memcpy(&dst[0], self.frames_, self.nframes * sizeof(int64_t))
        return (packed >> 32).astype(np.int32), (packed & 0xFFFFFFFF).astype(np.int32)

    cdef object _code_column(self):
        if self.code_column is not None:
            return self.code_column
        import numpy as np
        cache = self._cache
        key = ("code", self.n)
        if cache is not None and key in cache:
            return cache[key]
        out = np.empty(self.n, dtype=np.int32)
        own = np.full(self.n, -2, dtype=np.int32)
        cdef int32_t[::1] code = out
        cdef int32_t[::1] frame = own
        cdef int32_t i, row, p
        for i in range(self.nframes):
            row = <int32_t>(self.frames_[i] >> 32)
            if 0 <= row < self.n:
                frame[row] = <int32_t>(self.frames_[i] & 0xFFFFFFFF)
        for row in range(self.n):
            p = self.parent_[row]
            code[row] = -1 if p < 0 else (frame[p] if frame[p] != -2 else code[p])
        out.flags.writeable = False
        if self.n and not self.flags_[0] & F_OPEN:   # a finished trace no longer changes
            if self._cache is None:
                self._cache = {}
            self._cache[key] = out
        return out

    @property
    def metadata(self):
        """Row -> the row's metadata dict, for the rows that have metadata (a dict,
        stored sparsely; see metadata.pxi).  A substitution's row keeps what it
        called without a dict of its own until this dict (or the node's
        `metadata`) is asked for: then it holds `{"substituted": f}` like any
        other row's."""
        return _metadata_all(self)

    def node_metadata(self, int32_t row):
        """The metadata dict of `row`, made (empty) if it has none: the one
        `trace.metadata[row]` then holds.  Leaves the other rows' substitutions
        without a dict."""
        if not 0 <= row < self.n:
            raise IndexError(f"row {row} out of range (the trace has {self.n} rows)")
        return _md(self, row)

    def metadata_get(self, int32_t row, key, default=None):
        """`trace.metadata[row][key]` if there is such an entry, else `default`,
        without making a dict for a substitution's row."""
        return _md_get(self, row, key, default)

    def metadata_items(self):
        """The (row, dict) pairs `trace.metadata.items()` holds, in its order, without
        making a dict to keep for a substitution's row: its dict here is a fresh
        `{"substituted": f}` (for reading: writing to it changes nothing)."""
        return _metadata_pairs(self)

    def substitutions(self):
        """`(rows, index, called)`: the rows whose metadata has "substituted",
        ascending (an int64 array), per row an index into the list `called` of what
        the program called there (`metadata[rows[i]]["substituted"] is
        called[index[i]]`), read without making a dict per row."""
        return _substitutions(self)

    def values(self):
        """The values column as a list (a copy of the references)."""
        return [self.value(i) for i in range(self.n)]

    def values_at(self, codes):
        """The values the entries of `codes` name, as a list: a row's value for a
        code >= 0, entry -1 - code of the constant pool below (the `refs` column's
        codes) -- reading a few columns of a big trace without the whole `values()`."""
        np = _np()
        cdef const int32_t[::1] c = np.ascontiguousarray(codes, dtype=np.int32)
        cdef Py_ssize_t i, m = c.shape[0]
        cdef Py_ssize_t npool = len(self.pool)
        cdef int32_t r
        cdef list out = [None] * m
        for i in range(m):
            r = c[i]
            if r >= 0:
                out[i] = self.value(r)
            elif -<Py_ssize_t>r - 1 < npool:
                v = self.pool[-r - 1]
                if type(v) is WeakValue:
                    v = (<WeakValue>v).get()
                out[i] = v
            else:
                raise IndexError(f"code {r} names no entry of a pool of {npool}")
        return out

    def table(self, values=False):
        """The whole trace as a mapping of numpy columns, one entry per node, with
        function, file, line and callee decoded (see `tracer.views.table.table`)."""
        return _host("table")(self, values=values)
    # Saving and pickling are tracer.persist's (the host's save and reduce).
    def save(self, path, **options):
        """Save the trace to `path` as one Parquet file: `tracer.save(trace, path)`."""
        return _persist_hook("save")(self, path, **options)

    def __reduce__(self):
        return _persist_hook("reduce")(self)

    cdef int _finish(self, object exception) except -1:
        self.exception = exception
        _fit_borrowed(self)
        return 0


cdef inline int32_t _rows_add(Trace t, Rows *w, uint8_t kind, uint8_t flags, int32_t parent,
                              int32_t offset, int32_t aux, PyObject *value) noexcept:
    """Append a row (room reserved by Trace.open_rows) whose refs the caller wrote at
    w.refs[t.nrefs:w.nrefs]; `value` is a reference the row takes over."""
    cdef int32_t r = w.n
    w.parent[r] = parent
    w.offset[r] = offset
    w.aux[r] = aux
    w.value[r] = value
    w.ref_start[r + 1] = w.nrefs
    # The byte columns last: a uint8 store may alias anything, so loads after it
    # are redone.
    w.kind[r] = kind
    w.flags[r] = flags
    w.n = r + 1
    t.n = r + 1
    t.nrefs = w.nrefs
    return r


cdef PyObject *_policy_value_any(int policy, PyObject *v) noexcept:
    return _policy_value(policy, v)


# Trace.set_value calls _policy_value_any through this pointer (gcc cannot see
# through it, so it stays a call there; values.pxi's _policy_fn).
cdef _policy_fn _policy_value_out = _policy_value_any


cdef inline PyObject *_row_value(int policy, PyObject *v) noexcept:
    """The reference a row of a trace recorded under `policy` holds for `v`."""
    if policy and v != NULL:
        return _policy_value(policy, v)   # a new reference (values.pxi)
    Py_XINCREF(v)
    return v


cdef int _policy_rows(Trace t, int32_t first, int32_t end) except -1:
    """Rows [first, end) of a trace recorded under a value policy, written
    with the program's objects (new references, as without a policy), made to
    hold what the policy keeps instead, in row order (the order add_row would
    have applied it in).  The program still holds each object (a parameter, a
    value returned), so dropping the row's reference frees nothing."""
    cdef int32_t i
    cdef int policy = t.value_policy
    cdef PyObject *v
    cdef PyObject *kept
    cdef PyObject **values = t.value_
    for i in range(first, end):
        v = values[i]
        if v == NULL:
            continue
        # What _policy_value gives, without a reference taken and dropped for
        # the values every policy decides alike (most of a call's rows; the rest,
        # strings mostly, go to _policy_value_slow, which asks the tables of
        # types itself).
        kept = _policy_scalar(policy, v)
        if kept == v:
            continue
        if kept != NULL:
            Py_INCREF(<object>kept)
        else:
            kept = _policy_value_slow(policy, v)   # a new reference
            if kept == v:
                Py_DECREF(<object>kept)
                continue
        values[i] = kept
        Py_DECREF(<object>v)
    return 0


cdef inline PyObject *_policy_scalar(int policy, PyObject *v) noexcept:
    """What every policy stores for None, True, False, a function, an int or a
    float (a borrowed reference): the value, but NOT_KEPT for an int or a float
    under "none"; NULL for any other value."""
    if v == <PyObject *>None or v == <PyObject *>PY_TRUE or v == <PyObject *>PY_FALSE \
            or PyFunction_Check(v):
        return v
    if PyLong_CheckExact(v) or PyFloat_CheckExact(v):
        return <PyObject *>_NOT_KEPT if policy == VP_NONE else v
    return NULL


cdef inline PyObject *_policy_plain(int policy, PyObject *v) noexcept:
    """What every policy stores for the values most of a call's rows hold (a
    borrowed reference): _policy_scalar's, a str's, and for an instance of a
    type "none", "summary" or "weak" decided before, what values.pxi's
    _none_decided, _summary_decided and _weak_decided answer (when held
    already); NULL for any other value (_policy_rows' or _policy_value's to
    decide).  Decided in line where a call's, a return's, a yield's and a
    resume's rows are written (events.pxi's _enter_plain, and through
    _policy_stored and _policy_rows_in_line below), where a call of
    _policy_rows cost more than its work."""
    cdef PyObject *kept = _policy_scalar(policy, v)
    if kept != NULL:
        return kept
    if Py_TYPE(v) == &PyUnicode_Type:
        # (a str: what _policy_value_slow decides for it first)
        if policy == VP_NONE:
            return <PyObject *>_NOT_KEPT
        if policy == VP_WEAK or PyUnicode_GET_LENGTH(v) <= SHORT_TEXT:
            return v
        return NULL
    if policy == VP_NONE and tracer_type_decided(DECIDED_NONE, Py_TYPE(v)):
        return <PyObject *>_NOT_KEPT   # (an instance of a type decided before: values.pxi)
    if policy == VP_SUMMARY and tracer_type_decided(DECIDED_SUMMARY, Py_TYPE(v)):
        return _summary_cached(Py_TYPE(v), -1)   # (NULL if not made: _policy_rows makes it)
    if policy == VP_WEAK and tracer_type_decided(DECIDED_WEAK, Py_TYPE(v)):
        return _weak_by_type(v)   # (NULL if not cached: _policy_rows makes it)
    return NULL


cdef inline int _policy_rows_in_line(Trace t, int32_t first, int32_t end) except -1:
    """_policy_rows(t, first, end) with the values _policy_plain decides (a
    generator's carried stack: a `yield from`'s receiver at each resume)
    decided in line, and _policy_rows called from the first other one on:
    where a call of it cost more than its work (resume.pxi's resume;
    events.pxi's _enter_plain writes it out for a call's parameters)."""
    cdef PyObject **values = t.value_
    cdef PyObject *v
    cdef PyObject *kept
    cdef int32_t i
    for i in range(first, end):
        v = values[i]
        if v == NULL:
            continue
        kept = _policy_plain(t.value_policy, v)
        if kept == NULL:
            return _policy_rows(t, i, end)
        if kept != v:
            Py_INCREF(<object>kept)
            values[i] = kept
            Py_DECREF(<object>v)
    return 0


cdef inline PyObject *_policy_stored(int policy, PyObject *v, bint *after) noexcept:
    """What a row written in line stores for `v` (borrowed): `v` itself under
    "keep" (and for NULL), what the policy keeps when _policy_plain decides it,
    else `v` with `*after` set: the writer then calls _policy_rows on the rows
    once the trace and the frames are consistent (a policy may allocate, and so
    run the collector and finalizers).  The one decision of events.pxi's
    _return_plain and resume.pxi's _yielded_row and _send_yielded."""
    cdef PyObject *kept
    if not policy or v == NULL:
        return v
    kept = _policy_plain(policy, v)
    if kept == NULL:
        after[0] = True
        return v
    return kept


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
    if t.value_ != NULL and not t.values_hidden:
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
        _arena_catch(1)
        for i in range(t.n):
            v = t.value_[i]
            t.value_[i] = NULL
            Py_XDECREF(v)
        _arena_catch(0)
    return _trace_base_clear(o) if _trace_base_clear != NULL else 0


_trace_base_traverse = (<TypeSlots *>Trace).tp_traverse
_trace_base_clear = (<TypeSlots *>Trace).tp_clear
(<TypeSlots *>Trace).tp_traverse = _trace_traverse
(<TypeSlots *>Trace).tp_clear = _trace_clear


def _trace_recording(Trace trace, bint recording):
    """Hide the values of the trace being recorded from the collector (True), and
    show them again when its recording ends (False): `track` calls it around the
    call.

    While recording, the trace is held by the Recorder, which `track`'s running
    frame holds: it is never garbage, and every object it refers to is reachable
    through it.  The collector not walking its values then changes no
    collection's outcome (an object only the trace refers to looks referenced from
    outside, which it is, by a live object), only what each collection walks: every
    young collection during a call met the trace and walked its whole values
    column twice (toolz's suite: 22 M of the collector's 135 M instructions a
    pass).  Code that runs while recording does not find the trace among the
    referrers of a value (gc.get_referrers), as untraced it does not exist.

    The trace itself stays in the collector's lists (as the Recorder is), so it
    ages as any object does: a trace whose call ran through collections is in an
    old generation when its recording ends, and young collections after the call
    do not walk its values again (taken out of the lists and put back, as before
    session 19, it came back young: the next young collection and the next
    middle one walked the whole column, ~2.5 ms each for toolz's 345,000-row
    trace, while the program held it).  After recording it is collected as any
    object (a trace kept in a cycle of the program's is found and freed by the
    collection of its generation)."""
    trace.values_hidden = recording


cdef int _cmp_int64(const void *a, const void *b) noexcept nogil:
    cdef int64_t x = (<const int64_t *>a)[0], y = (<const int64_t *>b)[0]
    return (x > y) - (x < y)


cdef void _sort_frames(Trace t) noexcept:
    # Frames are registered in row order except in rare orders of events; sorted once.
    qsort(t.frames_, t.nframes, sizeof(int64_t), _cmp_int64)
    t.frames_sorted = True


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
