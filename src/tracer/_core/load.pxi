# A Trace rebuilt from saved columns (tracer.persist: a file, a pickle).  The node
# columns are not copied: the trace points into the buffers it is given (for a file,
# the Arrow buffers pyarrow read or memory-mapped) and keeps them alive; it marks
# itself `external`, so it never frees, reallocates or writes them and cannot grow.
# Everything that would make a reader loop, crash or read out of bounds is checked
# first: the columns may come from a file someone crafted.

cdef int _check_loaded(int32_t n, int32_t nrefs, Py_ssize_t npool, Py_ssize_t ncodes,
                       Py_ssize_t nobjects, const uint8_t[::1] kind,
                       const uint8_t[::1] flags, const int32_t[::1] parent,
                       const int32_t[::1] code, const int32_t[::1] aux,
                       const int32_t[::1] ref_start, const int32_t[::1] refs,
                       const int32_t[::1] value_index) except -1:
    cdef int32_t r, i, a
    if n < 1:
        raise ValueError("a saved trace has at least its root row; this one has none")
    if ref_start[0] != 0 or ref_start[n] != nrefs:
        raise ValueError(f"ref_start runs from {ref_start[0]} to {ref_start[n]}, "
                         f"not from 0 to the {nrefs} refs")
    if parent[0] != -1:
        raise ValueError("row 0 (the root) has a parent")
    for r in range(n):
        if kind[r] > K_RETURN:
            raise ValueError(f"row {r}: unknown node kind {kind[r]}")
        if r > 0 and not (0 <= parent[r] < r and kind[parent[r]] == K_NESTED):
            raise ValueError(f"row {r}: parent {parent[r]} is not an earlier call")
        if not (-1 <= code[r] < ncodes):
            raise ValueError(f"row {r}: code {code[r]} is not one of the {ncodes} codes")
        if not (-1 <= value_index[r] < nobjects):
            raise ValueError(f"row {r}: value {value_index[r]} is not one of the {nobjects} values")
        if ref_start[r + 1] < ref_start[r]:
            raise ValueError(f"row {r}: ref_start decreases")
        for i in range(ref_start[r], ref_start[r + 1]):
            a = refs[i]
            if not (-npool <= a < n):
                raise ValueError(f"row {r}: reference {a} is neither a row nor a constant")
        if kind[r] == K_NESTED:
            a = aux[r]
            if not ((r < a <= n) or (a == 0 and flags[r] & F_OPEN)):
                raise ValueError(f"row {r}: its subtree ends at row {a}, outside ({r}, {n}]")
    return 0


cdef int32_t _NO_REFS[1]   # what an external trace without refs points at


cdef const void *_column_address(object view, str name, Py_ssize_t itemsize) except NULL:
    """The address of a loaded column's first item (a dummy for an empty column),
    refusing one that is not aligned for its type (it would be read as if it were)."""
    cdef const uint8_t[::1] raw = view.cast("B")
    if raw.shape[0] == 0:
        return <const void *>_NO_REFS
    cdef size_t address = <size_t>&raw[0]
    if address % itemsize:
        raise ValueError(f"column {name} is not aligned for its type: pass aligned arrays "
                         "(numpy.require(column, requirements='A'))")
    return <const void *>&raw[0]


def trace_from_columns(kind, flags, parent, code, offset, aux, ref_start, refs,
                       const int32_t[::1] value_index, list objects, list pool,
                       list codes, dict metadata, dict substituted_operators,
                       bint stopped, bint snapshots, object exception, long events,
                       object root_keywords, object source=None, str values_kept=None):
    """A Trace whose node columns are the given buffers, for tracer.persist.

    The columns (uint8 `kind` and `flags`, int32 others, C-contiguous and aligned)
    are not copied: the trace points into them and keeps them alive, so the caller
    must not change them afterwards (Arrow buffers never change).  `columns()` then
    returns views of them; the trace cannot grow.  `value_index[row]` is the row's
    value as an index into `objects` (-1: no value); `pool` holds the constants
    negative refs name; `codes` the code objects (or stand-ins) the code column
    indexes; `source` is kept as the trace's `source` (what the columns came from);
    `values_kept` the value policy the trace was recorded with (None: "keep").
    Raises ValueError for columns that do not form a trace.
    """
    # Python memoryviews hold an export of each buffer for the trace's lifetime:
    # a resizable exporter (a bytearray) then cannot move its memory under the trace.
    views = {}
    for name, col, fmt in (("kind", kind, "B"), ("flags", flags, "B"), ("parent", parent, "i"),
                           ("code", code, "i"), ("offset", offset, "i"), ("aux", aux, "i"),
                           ("ref_start", ref_start, "i"), ("refs", refs, "i")):
        try:
            view = memoryview(col)
        except TypeError:
            raise ValueError(f"column {name} is not an array ({type(col).__name__})") from None
        if (view.ndim != 1 or not view.c_contiguous
                or view.itemsize != (1 if fmt == "B" else 4)
                or view.format.lstrip("@=") not in (("B",) if fmt == "B" else ("i", "l"))):
            raise ValueError(f"column {name} must be a contiguous 1-d array of "
                             f"{'uint8' if fmt == 'B' else 'int32'}, not format "
                             f"{view.format!r} with {view.ndim} dimensions")
        views[name] = view
    cdef const uint8_t[::1] kind_v = views["kind"]
    cdef const uint8_t[::1] flags_v = views["flags"]
    cdef const int32_t[::1] parent_v = views["parent"]
    cdef const int32_t[::1] code_v = views["code"]
    cdef const int32_t[::1] offset_v = views["offset"]
    cdef const int32_t[::1] aux_v = views["aux"]
    cdef const int32_t[::1] ref_start_v = views["ref_start"]
    cdef const int32_t[::1] refs_v = views["refs"]
    cdef int32_t n = <int32_t>kind_v.shape[0]
    cdef int32_t nrefs = <int32_t>refs_v.shape[0]
    cdef int32_t r, v
    cdef object obj
    for name, length in (("flags", flags_v.shape[0]), ("parent", parent_v.shape[0]),
                         ("code", code_v.shape[0]), ("offset", offset_v.shape[0]),
                         ("aux", aux_v.shape[0]), ("value_index", value_index.shape[0])):
        if length != n:
            raise ValueError(f"column {name} has {length} rows, kind has {n}")
    if ref_start_v.shape[0] != n + 1:
        raise ValueError(f"ref_start has {ref_start_v.shape[0]} entries, not rows + 1 = {n + 1}")
    _check_loaded(n, nrefs, len(pool), len(codes), len(objects), kind_v, flags_v, parent_v,
                  code_v, aux_v, ref_start_v, refs_v, value_index)
    addresses = {name: <size_t>_column_address(view, name, 1 if name in ("kind", "flags") else 4)
                 for name, view in views.items()}
    cdef Trace t = Trace()
    _give_spare(t)         # the fresh trace's own columns: back to the spare slot
    t.external = True      # from here on, dealloc frees only the values column
    t.borrowed_columns = tuple(views.values())
    t.source = source
    t.value_ = <PyObject **>calloc(n, sizeof(PyObject *))
    if t.value_ == NULL:
        raise MemoryError("tracer: out of memory loading a trace")
    t.kind_ = <uint8_t *><size_t>addresses["kind"]
    t.flags_ = <uint8_t *><size_t>addresses["flags"]
    t.parent_ = <int32_t *><size_t>addresses["parent"]
    t.offset_ = <int32_t *><size_t>addresses["offset"]
    t.aux_ = <int32_t *><size_t>addresses["aux"]
    t.ref_start_ = <int32_t *><size_t>addresses["ref_start"]
    t.refs_ = <int32_t *><size_t>addresses["refs"]
    t.cap = n
    t.refcap = nrefs
    t.n = n                # the values column is all NULL until filled below
    t.nrefs = nrefs
    for r in range(n):
        v = value_index[r]
        if v >= 0:
            obj = objects[v]
            Py_INCREF(obj)
            t.value_[r] = <PyObject *>obj
    # The code column is kept once per frame: each call row whose first child is
    # in its subtree ran the code of that child.  The column must be what those
    # frames imply, or views would place rows in the wrong code.
    for r in range(n - 1):
        if kind_v[r] == K_NESTED and parent_v[r + 1] == r:
            t.add_frame(r, code_v[r + 1])
    implied = t._code_column()
    t._cache = None
    cdef const int32_t[::1] derived = implied
    for r in range(n):
        if derived[r] != code_v[r]:
            raise ValueError(f"row {r}: code {code_v[r]} differs from its call's ({derived[r]})")
    import numpy as np
    loaded_code = np.asarray(views["code"]).view()
    loaded_code.flags.writeable = False
    t.code_column = loaded_code   # the loaded buffer serves columns()["code"] too
    t.pool = pool
    t.codes = codes
    t.code_ids = {id(c): i for i, c in enumerate(codes)}
    t.metadata_ = metadata
    t.substituted_operators = substituted_operators
    t.stopped = stopped
    t.snapshots = snapshots
    if values_kept is not None and values_kept != "keep":
        if values_kept not in _POLICY_NAMES:
            raise ValueError(f"unknown value policy {values_kept!r} (one of "
                             f"{', '.join(_POLICY_NAMES)})")
        t._values_kept = values_kept
    t.exception = exception
    t.events = events
    t.root_keywords = root_keywords
    return t


cdef void _drop_external(Trace t) noexcept:
    # An external trace's node columns belong to the buffers it borrowed (released
    # with it); only its values column is its own.
    free(t.value_)
    t.value_ = NULL
    t.kind_ = NULL; t.flags_ = NULL; t.parent_ = NULL; t.offset_ = NULL
    t.aux_ = NULL; t.ref_start_ = NULL; t.refs_ = NULL
    t.cap = 0
    t.refcap = 0


# tracer.persist's functions behind Trace.save and Trace.__reduce__: the host's
# save and reduce (handed.pxi), which tracer.persist sets when it is imported.
def _persist_hook(name):
    hook = getattr(HOST, name, None) if HOST is not None else None
    if hook is None:
        raise TypeError(f"Trace.{'save' if name == 'save' else '__reduce__'} needs "
                        "tracer.persist, which `import tracer` loads")
    return hook
