# The rows' metadata: row -> dict (Trace.metadata_), and the substitutions kept
# without a dict each.
#
# A replay or condition run substitutes most of its draws, and each substituted row's
# metadata is {"substituted": f} (what the program called; the call's recorded callee
# is the substitute).  One GC-tracked dict per draw made 10^4 dicts per run of the
# regression and ~14 collections (bench/RESULTS.md, sessions 19 and 20).  Here such a
# row is two int32 entries in the trace's store: the row (ascending) and an index
# into `subst_fns`, the distinct callables substituted (by identity; a handful).  A
# row gets its dict when someone asks for it: `Trace.node_metadata(row)` (a node
# view's `metadata`) and the core's writers (`_md`) make that row's dict,
# `Trace.metadata` makes all of them, in place in the one dict, in the order the dict
# would have had.  The readers that only read (`Trace.metadata_get`,
# `metadata_items`, `substitutions`: the ppl scan, the incremental runs, saving)
# make none.
#
# Invariant: a row is either a key of metadata_ or live in the store (its index
# >= 0; -1 once moved into metadata_), never both.


cdef int _subst_grow(Trace t) except -1:
    cdef int32_t cap = t.substcap * 2 if t.substcap else 256
    cdef int32_t *rows = <int32_t *>realloc(t.subst_row_, cap * sizeof(int32_t))
    if rows == NULL:
        raise MemoryError()
    t.subst_row_ = rows
    cdef int32_t *fns = <int32_t *>realloc(t.subst_fn_, cap * sizeof(int32_t))
    if fns == NULL:
        raise MemoryError()
    t.subst_fn_ = fns
    t.substcap = cap
    return 0


cdef int32_t _subst_fn_index(Trace t, object f) except -1:
    # `f`'s index in t.subst_fns (by identity), appended if new: the last one found
    # first, then a scan of a short list, a dict of ids past 16 callables (a bound
    # method made per call is a new object per draw).
    cdef list fns = t.subst_fns
    cdef Py_ssize_t i, n
    if fns is None:
        fns = t.subst_fns = []
    n = PyList_GET_SIZE(fns)
    if t.subst_last < n and PyList_GET_ITEM(fns, t.subst_last) == <PyObject *>f:
        return t.subst_last
    if t.subst_fn_ids is None:
        for i in range(n):
            if PyList_GET_ITEM(fns, i) == <PyObject *>f:
                t.subst_last = <int32_t>i
                return t.subst_last
        if n >= 16:
            t.subst_fn_ids = {id(g): j for j, g in enumerate(fns)}
    else:
        ix = t.subst_fn_ids.get(id(f))
        if ix is not None:
            t.subst_last = ix
            return t.subst_last
    fns.append(f)
    if t.subst_fn_ids is not None:
        t.subst_fn_ids[id(f)] = n
    t.subst_last = <int32_t>n
    return t.subst_last


cdef int _note_substituted(Trace t, int32_t row, object f) except -1:
    """`metadata[row]["substituted"] = f` (row's call ran a substitute for `f`):
    in the store when the row has no dict and comes after the store's last row."""
    cdef dict d
    if t.metadata_:
        d = t.metadata_.get(row)
        if d is not None:
            d["substituted"] = f
            return 0
    if t.nsubst and t.subst_row_[t.nsubst - 1] >= row:
        if t.subst_row_[t.nsubst - 1] == row and t.subst_fn_[t.nsubst - 1] >= 0:
            # the same row again (a call's row is patched when opened and when done)
            t.subst_fn_[t.nsubst - 1] = _subst_fn_index(t, f)
            return 0
        _md(t, row)["substituted"] = f     # out of order: a dict (the store stays ascending)
        return 0
    if t.nsubst == t.substcap:
        _subst_grow(t)
    t.subst_fn_[t.nsubst] = _subst_fn_index(t, f)
    t.subst_row_[t.nsubst] = row
    t.nsubst += 1
    t.subst_live += 1
    return 0


cdef Py_ssize_t _subst_find(Trace t, int32_t row) noexcept:
    # The store's live entry of `row`, or -1 (binary search: the rows ascend).
    cdef Py_ssize_t lo = 0, hi = t.nsubst, mid
    if not t.subst_live:
        return -1
    while lo < hi:
        mid = (lo + hi) >> 1
        if t.subst_row_[mid] < row:
            lo = mid + 1
        else:
            hi = mid
    if lo < t.nsubst and t.subst_row_[lo] == row and t.subst_fn_[lo] >= 0:
        return lo
    return -1


cdef inline object _subst_fn(Trace t, Py_ssize_t i):
    return <object>PyList_GET_ITEM(t.subst_fns, t.subst_fn_[i])


cdef dict _md(Trace t, int32_t row):
    """metadata[row], made if it is not there (with the store's entry of the row)."""
    cdef dict d = t.metadata_.get(row)
    cdef Py_ssize_t i
    if d is None:
        d = {}
        i = _subst_find(t, row)
        if i >= 0:
            d["substituted"] = _subst_fn(t, i)
            t.subst_fn_[i] = -1
            t.subst_live -= 1
            if not t.subst_live:
                t.nsubst = 0
        t.metadata_[row] = d
    return d


cdef object _md_get(Trace t, int32_t row, object key, object default):
    """metadata[row][key], or `default` when there is no such entry (no dict made)."""
    cdef dict d
    cdef Py_ssize_t i
    if t.metadata_:
        d = t.metadata_.get(row)
        if d is not None:
            return d.get(key, default)
    i = _subst_find(t, row)
    if i >= 0 and key == "substituted":
        return _subst_fn(t, i)
    return default


cdef list _merged(Trace t):
    # metadata_'s (row, dict) pairs in its order with the store's live rows as fresh
    # dicts, each before the first row of metadata_ greater than it: the order the
    # dict would have had with every row given its dict as it was recorded.
    cdef list out = []
    cdef Py_ssize_t j = 0, n = t.nsubst, k
    for key, d in t.metadata_.items():
        k = key
        while j < n and t.subst_row_[j] < k:
            if t.subst_fn_[j] >= 0:
                out.append((t.subst_row_[j], {"substituted": _subst_fn(t, j)}))
            j += 1
        out.append((key, d))
    while j < n:
        if t.subst_fn_[j] >= 0:
            out.append((t.subst_row_[j], {"substituted": _subst_fn(t, j)}))
        j += 1
    return out


cdef dict _metadata_all(Trace t):
    """The metadata dict with every row's dict in it (the store's rows moved in)."""
    cdef list items
    if t.subst_live:
        items = _merged(t)
        t.nsubst = 0
        t.subst_live = 0
        t.metadata_.clear()
        t.metadata_.update(items)
    return t.metadata_


cdef list _metadata_pairs(Trace t):
    return _merged(t) if t.subst_live else list(t.metadata_.items())


cdef tuple _substitutions(Trace t):
    np = _np()
    rows = np.empty(t.subst_live, dtype=np.int64)
    index = np.empty(t.subst_live, dtype=np.int64)
    cdef int64_t[::1] r = rows
    cdef int64_t[::1] x = index
    cdef Py_ssize_t j, m = 0
    for j in range(t.nsubst):
        if t.subst_fn_[j] >= 0:
            r[m] = t.subst_row_[j]
            x[m] = t.subst_fn_[j]
            m += 1
    cdef list called = list(t.subst_fns) if t.subst_fns else []
    cdef list more_rows = [], more_index = []
    for key, d in t.metadata_.items():
        if "substituted" in d:
            more_rows.append(key)
            more_index.append(len(called))
            called.append(d["substituted"])
    if more_rows:
        rows = np.concatenate([rows, np.array(more_rows, dtype=np.int64)])
        index = np.concatenate([index, np.array(more_index, dtype=np.int64)])
        order = np.argsort(rows, kind="stable")
        rows = rows[order]
        index = index[order]
    return rows, index, called
