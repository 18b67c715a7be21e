# Per-row lookups for trace.table(): one linear pass each over the columns, no
# temporaries.  The tables they read (line or callee name per code unit of each code
# object, end to end) are built in Python once per code object (views/table.py).

cdef inline int32_t _unit_value(int32_t c, int32_t off, const int32_t[::1] table,
                                const int32_t[::1] start, const int32_t[::1] length,
                                int32_t fill) noexcept nogil:
    # The entry of the code unit at `off` in code `c`; past the table's end the last
    # entry (an offset inside the last instruction), `fill` without a site.
    cdef int32_t unit, size
    if c < 0 or off < 0 or c >= start.shape[0]:
        return fill
    size = length[c]
    if size <= 0:
        return fill
    unit = off >> 1
    if unit >= size:
        unit = size - 1
    return table[start[c] + unit]


cdef int _check_unit_table(object code, object table, object start, object length,
                           Py_ssize_t n) except -1:
    if len(code) != n:
        raise ValueError(f"code has {len(code)} entries for a trace of {n} rows")
    if len(start) != len(length):
        raise ValueError("start and length must have one entry per code object")
    np = _np()
    if len(start) and len(table) < int(np.max(np.asarray(start, dtype=np.int64)
                                           + np.asarray(length, dtype=np.int64))):
        raise ValueError("a code's entries run past the end of the table")
    return 0


def unit_lookup(Trace t, code, table, start, length, int32_t fill=-1):
    """Per row, the entry of its code unit in a per-code table: `table[start[c] +
    min(offset // 2, length[c] - 1)]` for the row's code `c` (the `code` column) and
    offset; `fill` where either is -1 or the code has no entries.  int32."""
    np = _np()
    _check_unit_table(code, table, start, length, t.n)
    cdef const int32_t[::1] cd = np.ascontiguousarray(code, dtype=np.int32)
    cdef const int32_t[::1] tb = np.ascontiguousarray(table, dtype=np.int32)
    cdef const int32_t[::1] st = np.ascontiguousarray(start, dtype=np.int32)
    cdef const int32_t[::1] ln = np.ascontiguousarray(length, dtype=np.int32)
    out = np.empty(t.n, dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef int32_t row
    with nogil:
        for row in range(t.n):
            o[row] = _unit_value(cd[row], t.offset_[row], tb, st, ln, fill)
    return out


def callee_ids(Trace t, code, table, start, length, by_code):
    """What each call row called, as an int32 name id, in one pass:

    - not a call: 0;
    - a nested call whose body was recorded (its first child is the body's first
      ArgumentNode): the name id of the body's code, `by_code[code[row + 1]]`; a C
      callable that ran Python code (sorted with a key) starts with the frame it
      entered instead and is named like a primitive;
    - else the id its call site has in the per-code-unit `table` (an operator, a
      special), when that is > 0;
    - else the callee is the call's first input: ``-2 - k`` for entry k of the
      trace's constant pool, -1 for another row's value (the caller names those).
    """
    np = _np()
    _check_unit_table(code, table, start, length, t.n)
    cdef const int32_t[::1] cd = np.ascontiguousarray(code, dtype=np.int32)
    cdef const int32_t[::1] tb = np.ascontiguousarray(table, dtype=np.int32)
    cdef const int32_t[::1] st = np.ascontiguousarray(start, dtype=np.int32)
    cdef const int32_t[::1] ln = np.ascontiguousarray(length, dtype=np.int32)
    cdef const int32_t[::1] named = np.ascontiguousarray(by_code, dtype=np.int32)
    out = np.zeros(t.n, dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef int32_t row, k, site, ref, child
    cdef int32_t n = t.n, ncodes = <int32_t>named.shape[0]
    with nogil:
        for row in range(n):
            k = t.kind_[row]
            if k != K_PRIMITIVE and k != K_NESTED and k != K_SPECIAL:
                continue
            child = row + 1
            if k == K_NESTED and child < n and t.parent_[child] == row \
                    and t.kind_[child] == K_ARGUMENT and 0 <= cd[child] < ncodes:
                o[row] = named[cd[child]]
                continue
            site = _unit_value(cd[row], t.offset_[row], tb, st, ln, -1)
            if site > 0:
                o[row] = site
            elif t.ref_start_[row + 1] > t.ref_start_[row]:
                ref = t.refs_[t.ref_start_[row]]
                o[row] = ref - 1 if ref < 0 else -1
    return out
