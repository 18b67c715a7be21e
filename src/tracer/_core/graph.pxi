# Whole-trace graph walks on the columns, in C: who reads each row (reverse edges as
# compressed rows), what a set of rows reaches backward or forward (optionally across
# call boundaries), and the children of a row.  Results are numpy int32 arrays of rows;
# views are made only for what the caller asks to see (tracer.views.query).

cdef extern from "Python.h":
    ctypedef struct ListStruct "PyListObject":
        PyObject **ob_item

cdef object _numpy_module = None

from types import MethodType as _MethodType


cdef object _np():
    # numpy is a dependency of the package, but importing it with the core would cost
    # every `import tracer` the time of importing numpy before any query is asked.
    global _numpy_module
    if _numpy_module is None:
        import numpy
        _numpy_module = numpy
    return _numpy_module


def reverse_edges(Trace t):
    """Who reads each row, as compressed rows: `(starts, readers)`, int32 arrays.

    The readers of row r are `readers[starts[r]:starts[r + 1]]`, ascending, one entry
    per reference (a row that reads r twice appears twice).  Built in two linear
    passes over the refs column (a counting sort): 4 bytes per reference plus 4 per
    row, about 10^8 references per second.
    """
    np = _np()
    cdef int32_t n = t.n, m = t.nrefs, row, e, r
    # Counted two places ahead, so that after the prefix sum starts[r + 1] is where
    # r's readers begin, and after the scatter (which advances it) where they end:
    # starts[0..n] are then the offsets, with no second array of fill positions.
    starts_arr = np.zeros(n + 2, dtype=np.int32)
    cdef int32_t[::1] starts = starts_arr
    with nogil:
        for e in range(m):
            r = t.refs_[e]
            if r >= 0:
                starts[r + 2] += 1
        for row in range(n):
            starts[row + 2] += starts[row + 1]
    readers_arr = np.empty(starts[n + 1], dtype=np.int32)
    cdef int32_t[::1] readers = readers_arr
    with nogil:
        for row in range(n):
            for e in range(t.ref_start_[row], t.ref_start_[row + 1]):
                r = t.refs_[e]
                if r >= 0:
                    readers[starts[r + 1]] = row
                    starts[r + 1] += 1
    return starts_arr[:n + 1], readers_arr


cdef struct RowStack:
    int32_t *items
    Py_ssize_t n, cap


cdef int _stack_push(RowStack *s, int32_t row) except -1 nogil:
    cdef int32_t *grown
    if s.n == s.cap:
        s.cap = s.cap * 2 if s.cap else 1024
        grown = <int32_t *>realloc(s.items, s.cap * sizeof(int32_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        s.items = grown
    s.items[s.n] = row
    s.n += 1
    return 0


cdef inline int32_t _return_of(Trace t, int32_t call) noexcept nogil:
    # The finished return of a nested call (its last child), or -1: a call that raised,
    # is still open, or only yielded (a generator's value is not its yields).
    cdef int32_t end, last
    if t.kind_[call] != K_NESTED or t.flags_[call] & F_OPEN:
        return -1
    end = t.aux_[call]
    if end <= call + 1:
        return -1
    last = end - 1
    while t.parent_[last] != call:        # the last child: climb out of its subtree
        last = t.parent_[last]
    if t.kind_[last] == K_RETURN and not t.flags_[last] & F_YIELD:
        return last
    return -1


cdef inline bint _enters_callee(Trace t, int32_t call) noexcept nogil:
    # Whether the arguments of `call` are bound to ArgumentNodes of a recorded body:
    # a call its caller's code made (not a frame entered from C) whose body was
    # followed.  The root's inputs are not rows.
    return (t.kind_[call] == K_NESTED and t.parent_[call] >= 0
            and not t.flags_[call] & F_FRAME
            and call + 1 < t.n and t.parent_[call + 1] == call
            and t.kind_[call + 1] == K_ARGUMENT and not t.flags_[call + 1] & F_CARRIED)


cdef inline bint _passes(Trace t, PyObject **pool, int32_t call, int32_t i,
                         int32_t arg) noexcept nogil:
    # Whether input i of `call` is the very object parameter `arg` holds (binding
    # passes objects, it does not copy them).
    cdef int32_t ref
    if i < 0 or i >= t.ref_start_[call + 1] - t.ref_start_[call]:
        return False
    ref = t.refs_[t.ref_start_[call] + i]
    if ref >= 0:
        return t.value_[ref] == t.value_[arg]
    return pool[-ref - 1] == t.value_[arg]


cdef struct Bindings:
    # The binding table of a trace (tracer.views.binding): the parameter rows that
    # have an entry, ascending, and each one's entry.  Without a table (`given`
    # false) parameters bind by position.
    bint given
    const int32_t *rows
    const int32_t *sources
    Py_ssize_t n


cdef inline int32_t _bound_source(const Bindings *b, int32_t arg) noexcept nogil:
    # The table's entry for `arg` (binary search), -2 (no source) if it has none.
    cdef Py_ssize_t lo = 0, hi = b.n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if b.rows[mid] < arg:
            lo = mid + 1
        else:
            hi = mid
    return b.sources[lo] if lo < b.n and b.rows[lo] == arg else -2


cdef inline int32_t _arg_source(Trace t, const Bindings *sources, PyObject **pool,
                                int32_t arg) noexcept nogil:
    # Which input of its call an ArgumentNode was bound from: an index into the call's
    # refs, -1 when not known (every input counts), -2 none (a default value), -3
    # gathered from several arguments (*args, **kwargs, a star call).  The binding
    # table (from the call site and the callee's signature) is checked against the
    # objects: a bound method called through a variable binds `self` from the callee
    # and shifts the other parameters by one; a snapshot copy is not the object.
    cdef int32_t call = t.parent_[arg]
    cdef int32_t pos = t.aux_[arg]
    cdef int32_t nin = t.ref_start_[call + 1] - t.ref_start_[call]
    cdef int32_t src
    cdef PyObject *callee
    cdef int32_t callee_ref
    if pos == 0:
        return 0
    if sources.given:
        src = _bound_source(sources, arg)
    else:
        src = pos if pos < nin else -2
    if src == -1 or src == -3:
        return src
    if t.snapshots and sources.given:
        # The values are what a value policy or a snapshot kept, not the objects
        # (under "none" every one is the same NOT_KEPT): no binding can be checked
        # against them.  The table is made for the callee each call's row holds
        # (tracer.views.binding: a bound method's self from the callee).
        return src
    if src >= 0 and _passes(t, pool, call, src, arg):
        return src
    callee_ref = t.refs_[t.ref_start_[call]] if nin else -1
    callee = t.value_[callee_ref] if callee_ref >= 0 else (pool[-callee_ref - 1] if nin else NULL)
    if callee != NULL and PyMethod_Check(callee):
        if pos == 1:
            return 0 if PyMethod_GET_SELF(callee) == t.value_[arg] else -1
        if _passes(t, pool, call, pos - 1, arg):
            return pos - 1
    return src if src == -2 else -1


def reach(Trace t, seeds, bint forward, bint across_calls=False, arg_sources=None):
    """The rows reached from `seeds` by following references, as a sorted int32 array.

    Backward follows what each row read; forward follows who read it (from
    `reverse_edges`, which the caller passes cached in `t._cache`).  Seeds are in the
    result only if reached from another seed.  Every reference stays inside one
    activation; with `across_calls` the walk also crosses call boundaries: backward
    from a call's value to its return and from a parameter to the caller's argument
    it was bound from, forward from an argument to the callee's parameter and from a
    return to its call.  `arg_sources`, `(rows, sources)` (int32 arrays, rows
    ascending; see `_arg_source`), says which input each parameter row was bound from
    (rows not listed: none); without it binding is taken as positional.
    """
    np = _np()
    cdef int32_t n = t.n
    cdef Py_ssize_t i
    seeds_arr = np.ascontiguousarray(seeds, dtype=np.int32)
    cdef const int32_t[::1] seed_rows = seeds_arr
    cdef const int32_t[::1] starts
    cdef const int32_t[::1] readers
    cdef const int32_t[::1] bound_rows
    cdef const int32_t[::1] bound_sources
    cdef Bindings sources
    sources.given = arg_sources is not None
    sources.rows = NULL
    sources.sources = NULL
    sources.n = 0
    cdef const int32_t *rstart = NULL
    cdef const int32_t *rread = NULL
    if forward:
        starts, readers = _reverse_cached(t)
        rstart = &starts[0]
        rread = &readers[0] if readers.shape[0] else NULL
    if arg_sources is not None:
        bound_rows, bound_sources = arg_sources
        if bound_rows.shape[0] != bound_sources.shape[0]:
            raise ValueError("arg_sources: rows and sources differ in length")
        for i in range(bound_rows.shape[0]):
            if not 0 <= bound_rows[i] < n or (i and bound_rows[i] <= bound_rows[i - 1]):
                raise ValueError("arg_sources: rows must be ascending rows of the trace")
        if bound_rows.shape[0]:
            sources.rows = &bound_rows[0]
            sources.sources = &bound_sources[0]
            sources.n = bound_rows.shape[0]
    for i in range(seed_rows.shape[0]):
        if seed_rows[i] < 0 or seed_rows[i] >= n:
            raise IndexError(f"row {seed_rows[i]} out of range for a trace of {n} nodes")
    cdef uint8_t *seen = <uint8_t *>calloc(n if n else 1, 1)
    if seen == NULL:
        raise MemoryError()
    cdef RowStack todo
    cdef RowStack found
    # The constants' pool, read without the GIL by the walks: the list does not change
    # while they run (the walks run on a finished trace, and `t` is held here).
    cdef PyObject **pool = (<ListStruct *><PyObject *>t.pool).ob_item
    todo.items = NULL; todo.n = 0; todo.cap = 0
    found.items = NULL; found.n = 0; found.cap = 0
    try:
        for i in range(seed_rows.shape[0]):
            _stack_push(&todo, seed_rows[i])
        with nogil:
            if forward:
                _walk_forward(t, &todo, &found, seen, rstart, rread, across_calls, &sources,
                              pool)
            else:
                _walk_backward(t, &todo, &found, seen, across_calls, &sources, pool)
        out = np.empty(found.n, dtype=np.int32)
        if found.n * 16 >= n:
            # Many rows: mark them and read the marks in order, linear where a sort
            # of 4·10^7 rows takes seconds.
            _sorted_by_marks(out, found.items, found.n, seen, n)
        elif found.n:
            _copy_rows(out, found.items, found.n)
            out.sort()
        return out
    finally:
        free(seen)
        free(todo.items)
        free(found.items)


cdef int _sorted_by_marks(object out, int32_t *rows, Py_ssize_t count, uint8_t *marks,
                          int32_t n) except -1:
    # `out` gets the `count` distinct rows of `rows` in ascending order; `marks` (n
    # bytes, overwritten) is scratch.
    cdef int32_t[::1] dst = out
    cdef Py_ssize_t i, k = 0
    cdef int32_t r
    with nogil:
        memset(marks, 0, n)
        for i in range(count):
            marks[rows[i]] = 1
        for r in range(n):
            if marks[r]:
                dst[k] = r
                k += 1
    return 0


cdef int _copy_rows(object out, int32_t *rows, Py_ssize_t n) except -1:
    cdef int32_t[::1] dst = out
    memcpy(&dst[0], rows, n * sizeof(int32_t))
    return 0


cdef object _reverse_cached(Trace t):
    cache = t._cache
    if cache is None:
        cache = t._cache = {}
    rev = cache.get("reverse_edges")
    if rev is None:
        rev = cache["reverse_edges"] = reverse_edges(t)
    return rev


cdef int _found(RowStack *todo, RowStack *found, uint8_t *seen, int32_t row) except -1 nogil:
    if row >= 0 and not seen[row]:
        seen[row] = 1
        _stack_push(todo, row)
        _stack_push(found, row)
    return 0


cdef int _walk_backward(Trace t, RowStack *todo, RowStack *found, uint8_t *seen,
                        bint across, const Bindings *sources, PyObject **pool) except -1 nogil:
    cdef int32_t row, e, ret, call, src
    while todo.n:
        todo.n -= 1
        row = todo.items[todo.n]
        if across:
            ret = _return_of(t, row) if t.parent_[row] >= 0 else -1
            if ret >= 0 and _enters_callee(t, row):
                # The call's value is what its body returned: follow the body.
                _found(todo, found, seen, ret)
                continue
            if t.kind_[row] == K_ARGUMENT and not t.flags_[row] & F_CARRIED:
                call = t.parent_[row]
                if _enters_callee(t, call):
                    src = _arg_source(t, sources, pool, row)
                    if src >= 0:
                        _found(todo, found, seen, t.refs_[t.ref_start_[call] + src])
                    elif src == -1 or src == -3:   # gathered: the arguments, not the callee
                        for e in range(t.ref_start_[call] + (src == -3), t.ref_start_[call + 1]):
                            _found(todo, found, seen, t.refs_[e])
                continue
        for e in range(t.ref_start_[row], t.ref_start_[row + 1]):
            _found(todo, found, seen, t.refs_[e])
    return 0


cdef int _walk_forward(Trace t, RowStack *todo, RowStack *found, uint8_t *seen,
                       const int32_t *rstart, const int32_t *rread, bint across,
                       const Bindings *sources, PyObject **pool) except -1 nogil:
    cdef int32_t row, e, reader, arg, src, e0
    cdef bint entered
    while todo.n:
        todo.n -= 1
        row = todo.items[todo.n]
        if across and t.kind_[row] == K_RETURN and not t.flags_[row] & F_YIELD:
            if t.parent_[t.parent_[row]] >= 0 and _return_of(t, t.parent_[row]) == row:
                _found(todo, found, seen, t.parent_[row])
        for e in range(rstart[row], rstart[row + 1]):
            reader = rread[e]
            if across and _enters_callee(t, reader) and _return_of(t, reader) >= 0:
                # Into the body: the parameters bound from this input.
                entered = False
                e0 = t.ref_start_[reader]
                arg = reader + 1
                while arg < t.n and t.parent_[arg] == reader and t.kind_[arg] == K_ARGUMENT:
                    src = _arg_source(t, sources, pool, arg)
                    if (src >= 0 and t.refs_[e0 + src] == row) or src == -1 or (
                            src == -3 and _is_argument_of(t, reader, row)):
                        _found(todo, found, seen, arg)
                        entered = True
                    arg += 1
                continue
            _found(todo, found, seen, reader)
    return 0


cdef inline bint _is_argument_of(Trace t, int32_t call, int32_t row) noexcept nogil:
    # Whether `row` is one of the call's inputs after the callee.
    cdef int32_t e
    for e in range(t.ref_start_[call] + 1, t.ref_start_[call + 1]):
        if t.refs_[e] == row:
            return True
    return False


cdef int32_t _count_children(Trace t, int32_t row) noexcept:
    # Children are found by jumping over each one's subtree.
    cdef int32_t c = row + 1, stop = t._end(row), k = 0
    while c < stop:
        k += 1
        c = t._end(c)
    return k


def callee_kinds(Trace t, calls):
    """For each call row in `calls` (int32), what its callee (first input) was,
    as the trace holds it: 1 a bound method (the object, or what a value policy
    kept of one: its summary, alive or dead under "weak"), 2 not known (NOT_KEPT,
    a summary of another type, no input), 0 anything else (a function, a class).
    For the binding table of a trace whose values are not the objects
    (tracer.views.binding)."""
    np = _np()
    cdef int32_t[::1] rows = np.ascontiguousarray(calls, dtype=np.int32)
    out = np.zeros(rows.shape[0], dtype=np.int8)
    cdef int8_t[::1] kinds = out
    cdef Py_ssize_t i
    cdef int32_t call
    cdef object v
    for i in range(rows.shape[0]):
        call = rows[i]
        if call < 0 or call >= t.n or t.ref_start_[call] == t.ref_start_[call + 1]:
            kinds[i] = 2
            continue
        v = t._ref_value(t.refs_[t.ref_start_[call]])
        if PyMethod_Check(<PyObject *>v):
            kinds[i] = 1
        elif type(v) is ValueSummary:
            # (a loaded trace's summary keeps the type, not the function)
            kinds[i] = 1 if (<ValueSummary>v).type is _MethodType else 2
        elif v is NOT_KEPT:
            kinds[i] = 2
    return out


def child_rows(Trace t, int32_t row):
    """The rows whose parent is `row`, in order, as an int32 array."""
    np = _np()
    t._check(row)
    out = np.empty(_count_children(t, row), dtype=np.int32)
    cdef int32_t[::1] dst = out
    cdef int32_t c = row + 1, stop = t._end(row), k = 0
    while c < stop:
        dst[k] = c
        k += 1
        c = t._end(c)
    return out


def ancestor_rows(Trace t, int32_t row):
    """The rows enclosing `row`, innermost first (the root last), as an int32 array."""
    np = _np()
    t._check(row)
    cdef list up = []
    cdef int32_t p = t.parent_[row]
    while p >= 0:
        up.append(p)
        p = t.parent_[p]
    return np.array(up, dtype=np.int32)


def depths(Trace t, int32_t lo=0, int32_t hi=-1):
    """How deep each row of [lo, hi) is nested below row `lo` (`lo` itself 0), as
    int32; by default the whole trace below the root.  One pass: a parent comes
    before its children."""
    np = _np()
    if hi < 0:
        hi = t.n
    if not 0 <= lo <= hi <= t.n:
        raise IndexError(f"rows [{lo}, {hi}) out of range for a trace of {t.n} nodes")
    cdef int32_t row, p
    out = np.zeros(hi - lo, dtype=np.int32)
    cdef int32_t[::1] d = out
    with nogil:
        for row in range(lo, hi):
            p = t.parent_[row]
            d[row - lo] = d[p - lo] + 1 if lo <= p < row else 0
    return out


def value_addresses(Trace t, rows):
    """The address of each row's value (0 for none), as int64: equal addresses are
    the same object, so values can be grouped with numpy without touching them."""
    np = _np()
    rows_arr = np.ascontiguousarray(rows, dtype=np.int32)
    cdef const int32_t[::1] r = rows_arr
    out = np.zeros(r.shape[0], dtype=np.int64)
    cdef int64_t[::1] a = out
    cdef Py_ssize_t i
    cdef int32_t n = t.n
    for i in range(r.shape[0]):
        if r[i] < 0 or r[i] >= n:
            raise IndexError(f"row {r[i]} out of range for a trace of {n} nodes")
        a[i] = <int64_t>t.value_[r[i]]
    return out
