# A Trace rebuilt from saved columns (tracer.persist: a file, a pickle).  The columns
# are copied into the trace's own buffers (one memcpy each: the trace frees and
# reuses its buffers by the arena's rules, so it cannot borrow Arrow's).  Everything
# that would make a reader loop, crash or read out of bounds is checked first: the
# columns may come from a file someone crafted.

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


def trace_from_columns(const uint8_t[::1] kind, const uint8_t[::1] flags,
                       const int32_t[::1] parent, const int32_t[::1] code,
                       const int32_t[::1] offset, const int32_t[::1] aux,
                       const int32_t[::1] ref_start, const int32_t[::1] refs,
                       const int32_t[::1] value_index, list objects, list pool,
                       list codes, dict metadata, dict substituted_operators,
                       bint stopped, bint snapshots, object exception, long events,
                       object root_keywords):
    """A Trace holding the given columns (copied), for tracer.persist.

    `value_index[row]` is the row's value as an index into `objects` (-1: no value);
    `pool` holds the constants negative refs name; `codes` the code objects (or
    stand-ins) the code column indexes.  Raises ValueError for columns that do not
    form a trace.
    """
    cdef int32_t n = <int32_t>kind.shape[0]
    cdef int32_t nrefs = <int32_t>refs.shape[0]
    cdef int32_t r, v
    cdef object obj
    for name, col in (("flags", flags), ("parent", parent), ("code", code),
                      ("offset", offset), ("aux", aux), ("value_index", value_index)):
        if len(col) != n:
            raise ValueError(f"column {name} has {len(col)} rows, kind has {n}")
    if ref_start.shape[0] != n + 1:
        raise ValueError(f"ref_start has {ref_start.shape[0]} entries, not rows + 1 = {n + 1}")
    _check_loaded(n, nrefs, len(pool), len(codes), len(objects), kind, flags, parent, code,
                  aux, ref_start, refs, value_index)
    cdef Trace t = Trace()
    t._grow_rows(n + 1)
    t._grow_refs(nrefs if nrefs > 0 else 1)
    memcpy(t.kind_, &kind[0], n * sizeof(uint8_t))
    memcpy(t.flags_, &flags[0], n * sizeof(uint8_t))
    memcpy(t.parent_, &parent[0], n * sizeof(int32_t))
    memcpy(t.code_, &code[0], n * sizeof(int32_t))
    memcpy(t.offset_, &offset[0], n * sizeof(int32_t))
    memcpy(t.aux_, &aux[0], n * sizeof(int32_t))
    memcpy(t.ref_start_, &ref_start[0], (n + 1) * sizeof(int32_t))
    if nrefs > 0:
        memcpy(t.refs_, &refs[0], nrefs * sizeof(int32_t))
    for r in range(n):
        v = value_index[r]
        if v >= 0:
            obj = objects[v]
            Py_INCREF(obj)
            t.value_[r] = <PyObject *>obj
        else:
            t.value_[r] = NULL
        t.n = r + 1   # rows past n hold no reference the trace would release
    t.nrefs = nrefs
    t.pool = pool
    t.codes = codes
    t.code_ids = {id(c): i for i, c in enumerate(codes)}
    t.metadata = metadata
    t.substituted_operators = substituted_operators
    t.stopped = stopped
    t.snapshots = snapshots
    t.exception = exception
    t.events = events
    t.root_keywords = root_keywords
    return t


# tracer.persist's functions behind Trace.save and Trace.__reduce__ (the core
# imports no tracer module: the package registers them when it is imported).
_PERSIST_HOOKS = {}


def set_persist_hooks(**hooks):
    """Register tracer.persist's `save(trace, path, **options)` and `reduce(trace)`."""
    _PERSIST_HOOKS.update(hooks)


def _persist_hook(name):
    hook = _PERSIST_HOOKS.get(name)
    if hook is None:
        raise TypeError(f"Trace.{'save' if name == 'save' else '__reduce__'} needs "
                        "tracer.persist, which `import tracer` loads")
    return hook
