# Per-call timing (Context(timing=True)): a timestamp when each followed frame starts
# and when it returns, yields or unwinds, one entry per activation.
#
# Not a node column: only call rows are timed and they are a small part of a trace,
# so the entries are a table of their own, allocated only when timing is on (a trace
# without timing pays one NULL pointer).  The recorder fills it with two inline calls
# (_timing_call in _push, _timing_return in _close_call, each behind `timing != NULL`);
# the entries of open activations form a stack, as the recorder's frames do, so the
# entry a return closes is the top one and each entry knows its enclosing one.

cdef extern from *:
    """
    #include <stdint.h>
    #include <time.h>
    #include "Python.h"
    /* Nanoseconds of CLOCK_MONOTONIC: the clock of time.monotonic_ns() on Linux and
       macOS, read through the vDSO (no system call).  Where there is none, Python's
       own monotonic clock (PyTime_MonotonicRaw from 3.13; the internal one before). */
    static inline int64_t tracer_now_ns(void) {
    #if defined(CLOCK_MONOTONIC)
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
    #elif PY_VERSION_HEX >= 0x030D0000
        PyTime_t t = 0;
        (void)PyTime_MonotonicRaw(&t);
        return (int64_t)t;
    #else
        return (int64_t)_PyTime_GetMonotonicClock();
    #endif
    }
    /* The stamps of calls: on x86-64 the time-stamp counter (about half the cost of
       clock_gettime, which reads it too and scales it; two stamps per call are a
       visible part of recording a small function), scaled to the monotonic clock's
       nanoseconds when the table is read (tracer_ticks_are_ns == 0); elsewhere the
       monotonic clock itself. */
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    #include <x86intrin.h>
    static inline int64_t tracer_ticks(void) { return (int64_t)__rdtsc(); }
    #define tracer_ticks_are_ns 0
    #else
    static inline int64_t tracer_ticks(void) { return tracer_now_ns(); }
    #define tracer_ticks_are_ns 1
    #endif
    """
    int64_t _now_ns "tracer_now_ns"() noexcept nogil
    int64_t _ticks "tracer_ticks"() noexcept nogil
    bint TICKS_ARE_NS "tracer_ticks_are_ns"


# Ticks to nanoseconds: the counter and the clock read together once when the first
# timed trace starts (the anchor), and again whenever a timed trace ends; the rate is
# taken over the whole span since the anchor, so it gets more exact as the process
# runs (over 1 ms the error is below 1e-4).
cdef int64_t _anchor_ticks = 0, _anchor_ns = 0
cdef double _ns_per_tick = 1.0


cdef void _calibrate() noexcept:
    global _anchor_ticks, _anchor_ns, _ns_per_tick
    cdef int64_t ticks, ns
    if TICKS_ARE_NS:
        return
    ticks, ns = _ticks(), _now_ns()
    if _anchor_ticks == 0:
        _anchor_ticks, _anchor_ns = ticks, ns
    elif ticks > _anchor_ticks and ns > _anchor_ns:
        _ns_per_tick = <double>(ns - _anchor_ns) / <double>(ticks - _anchor_ticks)


ctypedef struct TimedCall:
    int32_t row        # the call row of the activation
    int32_t parent     # the entry of the enclosing timed activation, -1 for none
    int64_t start      # ticks (tracer_ticks) when its frame started or resumed
    int64_t end        # ticks when it returned, yielded or unwound; -1 while open


ctypedef struct Timing:
    TimedCall *calls
    int32_t n, cap
    int32_t *open      # the entries of open activations, innermost last
    int32_t nopen, opencap
    bint in_ns         # start and end are nanoseconds already (a loaded table)
    # Ticks to nanoseconds as the trace ended (fixed then: reading the table later
    # gives the same numbers): ns = base_ns + (ticks - base_ticks) * ns_per_tick.
    double ns_per_tick  # 0 while the trace records
    int64_t base_ticks, base_ns


cdef Timing *_timing_new() except NULL:
    cdef Timing *tm = <Timing *>calloc(1, sizeof(Timing))
    if tm == NULL:
        raise MemoryError("tracer: out of memory for the timing table")
    tm.in_ns = TICKS_ARE_NS
    return tm


cdef void _timing_free(Timing *tm) noexcept:
    if tm != NULL:
        free(tm.calls)
        free(tm.open)
        free(tm)


cdef int _timing_grow(Timing *tm) except -1:
    cdef int32_t cap
    if tm.n == tm.cap:
        cap = tm.cap * 2 if tm.cap else 1024
        tm.calls = <TimedCall *>_realloc(tm.calls, cap * sizeof(TimedCall))
        tm.cap = cap
    if tm.nopen == tm.opencap:
        cap = tm.opencap * 2 if tm.opencap else 64
        tm.open = <int32_t *>_realloc(tm.open, cap * sizeof(int32_t))
        tm.opencap = cap
    return 0


cdef inline int _timing_call(Timing *tm, int32_t row) except -1:
    """A followed frame starts (or resumes) as call row `row`."""
    cdef int32_t k = tm.n
    if k == tm.cap or tm.nopen == tm.opencap:
        _timing_grow(tm)
    cdef TimedCall *c = tm.calls + k
    c.row = row
    c.parent = tm.open[tm.nopen - 1] if tm.nopen else -1
    c.end = -1
    tm.open[tm.nopen] = k
    tm.nopen += 1
    tm.n = k + 1
    c.start = _ticks()   # last: the bookkeeping above is not the call's time
    return 0


cdef inline void _timing_return(Timing *tm) noexcept:
    """The innermost open activation returned, yielded or unwound."""
    cdef int64_t now = _ticks()
    if tm.nopen:
        tm.nopen -= 1
        tm.calls[tm.open[tm.nopen]].end = now


cdef void _timing_close_all(Timing *tm) noexcept:
    # The traced call ended with activations still open (recording stopped early):
    # they end when the call did.  (Called once per timed trace, at its end.)
    cdef int64_t now = _ticks()
    while tm.nopen:
        tm.nopen -= 1
        tm.calls[tm.open[tm.nopen]].end = now
    _calibrate()
    tm.ns_per_tick, tm.base_ticks, tm.base_ns = _ns_per_tick, _anchor_ticks, _anchor_ns


# -- read and set from Python -------------------------------------------------------------
TIMING_DTYPE = [("row", "<i4"), ("parent", "<i4"), ("start", "<i8"), ("end", "<i8")]


def start_timing(trace):
    """Time the activations recorded from now on in trace `t` (tracer.track does this
    for Context(timing=True), after the root row and before the call)."""
    cdef Trace t = <Trace?>trace
    if t.timing == NULL:
        _calibrate()
        t.timing = _timing_new()


def timing_table(trace):
    """The timed activations of `t` as a numpy structured array (a copy; fields row,
    parent, start, end: nanoseconds of the monotonic clock), in the order their
    frames started; None when `t` was not timed."""
    cdef Trace t = <Trace?>trace
    if t.timing == NULL:
        return None
    np = _np()
    cdef Timing *tm = t.timing
    out = np.empty(tm.n, dtype=TIMING_DTYPE)
    cdef unsigned char[::1] raw = out.view(np.uint8)
    if tm.n:
        memcpy(&raw[0], tm.calls, tm.n * sizeof(TimedCall))
    cdef double rate = tm.ns_per_tick
    cdef int64_t base_ticks = tm.base_ticks, base_ns = tm.base_ns
    if not tm.in_ns:
        if rate == 0:   # read while recording: the rate so far
            _calibrate()
            rate, base_ticks, base_ns = _ns_per_tick, _anchor_ticks, _anchor_ns
        for field in ("start", "end"):
            ticks = out[field]
            ns = base_ns + np.rint((ticks - base_ticks) * rate).astype(np.int64)
            out[field] = np.where(ticks == -1, -1, ns)
        # A thread moved to a core whose counter lags (where the counters are not
        # synchronised) would end a call before it started: it took no time.
        closed = out["end"] != -1
        out["end"][closed] = np.maximum(out["end"][closed], out["start"][closed])
    return out


def set_timing_table(trace, table):
    """Give a loaded trace `t` the timing table a saved trace carried (what
    `timing_table` returned for it).  Checked: rows in range and call rows, parents
    earlier entries, ends not before starts."""
    cdef Trace t = <Trace?>trace
    np = _np()
    arr = np.ascontiguousarray(table, dtype=TIMING_DTYPE)
    if arr.ndim != 1:
        raise ValueError("a timing table is one-dimensional")
    cdef Py_ssize_t n = arr.shape[0], i
    rows, parents = arr["row"], arr["parent"]
    if n and ((rows < 0).any() or (rows >= t.n).any()):
        raise ValueError(f"the timing table names rows outside the trace's {t.n} rows")
    if n and (t.columns()["kind"][rows] != K_NESTED).any():
        raise ValueError("the timing table times a row that is no call")
    if n and ((parents < -1).any() or (parents >= np.arange(n)).any()):
        raise ValueError("the timing table's parent entries are not earlier entries")
    if n and (arr["end"] < arr["start"]).any():
        raise ValueError("the timing table has a call that ends before it starts")
    cdef Timing *tm = _timing_new()
    tm.calls = <TimedCall *>malloc(max(n, 1) * sizeof(TimedCall))
    if tm.calls == NULL:
        _timing_free(tm)
        raise MemoryError("tracer: out of memory for the timing table")
    tm.n = tm.cap = <int32_t>n
    cdef const unsigned char[::1] raw = arr.view(np.uint8)
    if n:
        memcpy(tm.calls, &raw[0], n * sizeof(TimedCall))
    tm.in_ns = True
    _timing_free(t.timing)
    t.timing = tm


def timing_parents(rows, aux):
    """For timed call rows `rows` (ascending) of a trace whose aux column is `aux` (a
    call's aux: one past its subtree): the entry of each one's innermost timed
    ancestor, -1 for none (int32).  Calls' row ranges nest as their activations did,
    so a saved file need not carry these."""
    np = _np()
    rows_arr = np.ascontiguousarray(rows, dtype=np.int32)
    aux_arr = np.ascontiguousarray(aux, dtype=np.int32)
    cdef const int32_t[::1] r = rows_arr
    cdef const int32_t[::1] end = aux_arr
    cdef Py_ssize_t n = r.shape[0], i, nrows = end.shape[0]
    out = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] parent = out
    stack_arr = np.empty(max(n, 1), dtype=np.int32)
    cdef int32_t[::1] stack = stack_arr
    cdef Py_ssize_t top = 0
    for i in range(n):
        if r[i] < 0 or r[i] >= nrows or (i and r[i] <= r[i - 1]):
            raise ValueError("timed rows must be ascending rows of the trace")
        while top and end[r[stack[top - 1]]] <= r[i]:
            top -= 1
        parent[i] = stack[top - 1] if top else -1
        stack[top] = <int32_t>i
        top += 1
    return out
