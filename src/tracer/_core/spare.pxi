# Spare columns: the buffers of the last freed trace, kept for the next one.

# ---------------------------------------------------------------------------------
# Spare columns: the buffers of the last freed trace, reused by the next one.
#
# A trace's columns are large and freshly allocated memory costs a page fault per
# 4 KiB on first touch (about 2 us each on the measured machines: more than the
# recording itself for an op-dense trace).  Programs that trace repeatedly (an
# inference loop, a benchmark) free one trace and record the next of about the same
# size, so the freed buffers are kept, up to SPARE_LIMIT bytes, for the next Trace.
#
# Bigger sets (a trace of millions of rows: its big columns are mappings, pages.pxi)
# are kept too, up to SPARE_LAZY_LIMIT bytes: SPARE_LIMIT bytes of them resident
# (each column's first rows), the rest given back to the kernel lazily (MADV_FREE):
# that memory is the kernel's to take whenever it needs it, and until it does, the
# next big trace writes its rows into pages that are already there instead of
# faulting and zeroing 1.9 GB of fresh pages (h at 10^7 iterations).

ctypedef struct Columns:
    int32_t cap, refcap
    # Rows (refs) below which pages may be resident: what the traces that had the
    # columns wrote, since their pages were last given back (_release_unused).
    int32_t hw, refhw
    uint8_t *kind_
    uint8_t *flags_
    int32_t *parent_
    int32_t *offset_
    int32_t *aux_
    int32_t *ref_start_
    PyObject **value_
    int32_t *refs_

cdef Columns SPARE          # cap == 0: none kept
cdef Py_ssize_t SPARE_LIMIT = 64 << 20
# 4 GiB where Py_ssize_t has 64 bits (the columns of ~10^8 rows); none elsewhere.
cdef Py_ssize_t SPARE_LAZY_LIMIT = (<Py_ssize_t>1 << 32) if sizeof(Py_ssize_t) >= 8 else 0
cdef bint SPARE_LAZY = False  # the spare set is bigger than SPARE_LIMIT: given back lazily
memset(&SPARE, 0, sizeof(Columns))


cdef inline Py_ssize_t _columns_bytes(int32_t cap, int32_t refcap) noexcept:
    # Capacity, not use: pages of the capacity a trace never touched cost nothing.
    return (<Py_ssize_t>cap) * ROW_BYTES + (<Py_ssize_t>refcap) * sizeof(int32_t)


cdef void _free_columns(Columns *c) noexcept:
    _column_free(c.kind_); _column_free(c.flags_); _column_free(c.parent_)
    _column_free(c.offset_); _column_free(c.aux_); _column_free(c.ref_start_)
    _column_free(c.value_); _column_free(c.refs_)
    memset(c, 0, sizeof(Columns))


cdef inline Columns _columns_of(Trace t) noexcept:
    # `t`'s buffers, capacities and marks (a copy of the pointers: still t's).
    cdef Columns c
    c.cap = t.cap; c.refcap = t.refcap; c.hw = t.hw; c.refhw = t.refhw
    c.kind_ = t.kind_; c.flags_ = t.flags_; c.parent_ = t.parent_
    c.offset_ = t.offset_; c.aux_ = t.aux_
    c.ref_start_ = t.ref_start_; c.value_ = t.value_; c.refs_ = t.refs_
    return c


cdef void _swap_columns(Columns *c, Trace t) noexcept:
    # Exchange the buffers of `c` and `t`.
    cdef Columns tmp = _columns_of(t)
    t.cap = c.cap; t.refcap = c.refcap; t.hw = c.hw; t.refhw = c.refhw
    t.kind_ = c.kind_; t.flags_ = c.flags_; t.parent_ = c.parent_
    t.offset_ = c.offset_; t.aux_ = c.aux_
    t.ref_start_ = c.ref_start_; t.value_ = c.value_; t.refs_ = c.refs_
    t.zcap = 0   # (the rows of the trace that had them: nothing known zero)
    c[0] = tmp


cdef bint _take_spare(Trace t) noexcept:
    """Give the new, empty trace `t` the spare columns, if any are kept."""
    if SPARE.cap == 0:
        return False
    _swap_columns(&SPARE, t)
    return True


cdef inline int _give_back(void *p, size_t start, size_t stop, bint mapped_only) noexcept:
    return _column_lazy_free(p, start, stop) if mapped_only else _column_release(p, start, stop)


cdef int _give_back_past(Columns *c, int64_t rows, int64_t refs, bint mapped_only) noexcept:
    # The pages of `c`'s columns past `rows` rows and `refs` refs, up to what was
    # written (c.hw, c.refhw), given back lazily (MADV_FREE), and the marks lowered
    # to match; with `mapped_only`, the mapped columns only (heap ones, under 4 MiB
    # each, stay as they are).  0 when done, -1 when the kernel refused.
    cdef void *cols[6]
    cdef size_t item[6]
    cols[0] = c.kind_; cols[1] = c.flags_; cols[2] = c.parent_; cols[3] = c.offset_
    cols[4] = c.aux_; cols[5] = c.value_
    item[0] = sizeof(uint8_t); item[1] = sizeof(uint8_t); item[2] = sizeof(int32_t)
    item[3] = sizeof(int32_t); item[4] = sizeof(int32_t); item[5] = sizeof(PyObject *)
    cdef int64_t hw = c.hw, refhw = c.refhw
    cdef int i
    if hw > rows:
        for i in range(6):
            if _give_back(cols[i], rows * item[i], hw * item[i], mapped_only) < 0:
                return -1
        if _give_back(c.ref_start_, (rows + 1) * sizeof(int32_t), (hw + 1) * sizeof(int32_t),
                      mapped_only) < 0:
            return -1
        c.hw = <int32_t>rows
    if refhw > refs:
        if _give_back(c.refs_, refs * sizeof(int32_t), refhw * sizeof(int32_t), mapped_only) < 0:
            return -1
        c.refhw = <int32_t>refs
    return 0


cdef int _lazy_free_columns(Columns *c) noexcept:
    # The pages of `c`'s mapped columns past SPARE_LIMIT bytes given back lazily:
    # every column keeps its first rows (refs) resident in the proportion the limit
    # is of the whole set, so a set just over the limit keeps nearly all of it, and
    # the next trace of its size writes into resident pages (rewriting a lazily
    # freed page costs ~0.25 us: fib's 71 MB set, all lazy, made its next run 10 %
    # slower).  Only pages written since they were last given back are advised.
    # 0 when done, -1 when the kernel refused (then the set is not worth keeping).
    cdef Py_ssize_t size = _columns_bytes(c.cap, c.refcap)
    cdef int64_t rows = (<int64_t>c.cap * SPARE_LIMIT) // size if size > SPARE_LIMIT else c.cap
    cdef int64_t refs = (<int64_t>c.refcap * SPARE_LIMIT) // size if size > SPARE_LIMIT else c.refcap
    return _give_back_past(c, rows, refs, True)


cdef inline bint _lazy_keepable(Py_ssize_t size) noexcept:
    # Within the lazy limit, and only where a limit of 0 has not said "keep none".
    return SPARE_LIMIT > 0 and size <= SPARE_LAZY_LIMIT


cdef void _give_spare(Trace t) noexcept:
    """Free `t`'s columns or keep them as the spare (the larger set, within the
    limits: resident up to SPARE_LIMIT, the rest lazily given back up to
    SPARE_LAZY_LIMIT)."""
    global SPARE, SPARE_LAZY
    cdef Columns mine
    memset(&mine, 0, sizeof(Columns))
    _note_written(t)
    _swap_columns(&mine, t)
    cdef Py_ssize_t size = _columns_bytes(mine.cap, mine.refcap)
    if size <= _columns_bytes(SPARE.cap, SPARE.refcap):
        _free_columns(&mine)
    elif size <= SPARE_LIMIT:
        _free_columns(&SPARE)
        SPARE = mine
        SPARE_LAZY = False
    elif (_lazy_keepable(size) and _column_is_mapped(mine.value_)
          and _lazy_free_columns(&mine) == 0):
        _free_columns(&SPARE)
        SPARE = mine
        SPARE_LAZY = True
    else:
        _free_columns(&mine)


cdef Py_ssize_t RELEASE_MIN_BYTES = 1 << 20


cdef inline void _note_written(Trace t) noexcept:
    # Fold what `t` wrote (its rows, the rows zeroed ahead, its refs) into the
    # columns' high-water marks.
    if t.n > t.hw:
        t.hw = t.n
    if t.zcap > t.hw:
        t.hw = t.zcap
    if t.nrefs > t.refhw:
        t.refhw = t.nrefs


cdef int _fit_borrowed(Trace t) except -1:
    """A finished trace whose rows are under a quarter of what its columns hold
    resident (one that took the spare columns of a bigger trace) gives the pages
    past its rows and refs back to the kernel lazily (MADV_FREE), in place: nothing
    is copied and no fresh page is touched, and a long-lived small trace does not
    keep a big one's memory resident.  It keeps the columns, which go back to the
    spare slot when it is freed, so the next trace of any size up to theirs writes
    into pages already there.

    (The rule before moved such a trace into right-sized columns and returned the
    big ones at once: every run then faulted in the small trace's worth of fresh
    memory, and a benchmark that traced geom (7·10^5 rows) after fib (2·10^6) took
    34-36 ms a run where it took 24 ms when nothing bigger had run before it.)"""
    if t.external or t.exports:
        return 0
    _note_written(t)
    # (Worth the system calls only for a MiB or more: not for the rows a small
    # trace's own growth zeroed ahead.)
    if ((4 * <int64_t>t.n < t.hw or 4 * <int64_t>t.nrefs < t.refhw)
            and (<int64_t>(t.hw - t.n) * ROW_BYTES
                 + <int64_t>(t.refhw - t.nrefs) * sizeof(int32_t)) >= RELEASE_MIN_BYTES):
        _release_unused(t)
    return 0


cdef void _release_unused(Trace t) noexcept:
    # The pages of `t`'s columns past its rows and refs, up to what was written,
    # given back lazily; the columns and their capacity stay (a row written there
    # later is valid: rows past n are read only once written, and those past n
    # that zcap says are zero read as zero whether the kernel took them or not).
    # A refusal by the kernel only leaves the pages resident.
    cdef Columns c = _columns_of(t)
    _give_back_past(&c, t.n, t.nrefs, False)
    t.hw = c.hw
    t.refhw = c.refhw


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
        _drop_spare_over_limits()
    return old


cdef void _drop_spare_over_limits() noexcept:
    global SPARE_LAZY
    cdef Py_ssize_t size = _columns_bytes(SPARE.cap, SPARE.refcap)
    if size > SPARE_LIMIT and not (SPARE_LAZY and _lazy_keepable(size)
                                   and _lazy_free_columns(&SPARE) == 0):
        _free_columns(&SPARE)
        SPARE_LAZY = False


def spare_columns_lazy_limit(limit=None):
    """Get or set how many bytes of a freed big trace's columns are kept, beyond
    `spare_columns_limit`, given back to the kernel lazily (Linux's MADV_FREE).

    The kernel takes such memory back whenever it needs it (it stays in the
    process's resident size until then); until it does, the next big trace writes
    its rows into pages already there instead of faulting in fresh ones.  Returns
    the limit in force before the call; ``0`` keeps no such set and frees the one
    held now.  Only columns of 4 MiB and more are given back lazily (they are
    their own mappings); elsewhere than Linux no set is kept this way.
    """
    global SPARE_LAZY_LIMIT
    cdef Py_ssize_t old = SPARE_LAZY_LIMIT
    if limit is not None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise TypeError(f"the limit is a number of bytes (an int >= 0), not {limit!r}")
        SPARE_LAZY_LIMIT = min(limit, PY_SSIZE_T_MAX)
        _drop_spare_over_limits()
    return old


def spare_columns_bytes():
    """The capacity in bytes of the spare trace columns kept now (0 if none)."""
    return _columns_bytes(SPARE.cap, SPARE.refcap) if SPARE.cap else 0


# The values column is a raw array the garbage collector cannot see on its own.  A
# trace can be part of a reference cycle (a recorded exception's traceback holds the
# frame of track(), which holds the recorder and its trace), so Trace's GC slots are
# extended to visit and clear the values too.
