# Plain scalars of a list of objects as columns, for tracer.persist's value encoding:
# each object's address and type's address, and the number a float, int or bool holds.
# Read in C, so that encoding a trace's 10^6 values groups and fills them with numpy
# instead of visiting each in Python.

from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.long cimport PyLong_AsLongLongAndOverflow


def scalar_columns(list objects):
    """`(address, type_address, real, integer, big, group, firsts)`, the first five
    one entry per object of `objects`: its address and its type's (int64; equal
    addresses are the same object), a float's value (float64, else 0), an int's or
    bool's value (int64, else 0) and whether an int is beyond int64 (bool; its
    `integer` is then 0).  `group[i]` numbers the distinct objects in order of first
    sight, `firsts[g]` is where group g was first seen (int64 arrays)."""
    np = _np()
    cdef Py_ssize_t n = len(objects), i
    address_arr = np.empty(n, dtype=np.int64)
    type_arr = np.empty(n, dtype=np.int64)
    real_arr = np.zeros(n, dtype=np.float64)
    integer_arr = np.zeros(n, dtype=np.int64)
    big_arr = np.zeros(n, dtype=bool)
    cdef int64_t[::1] address = address_arr
    cdef int64_t[::1] tp = type_arr
    cdef double[::1] real = real_arr
    cdef int64_t[::1] integer = integer_arr
    cdef uint8_t[::1] big = big_arr.view(np.uint8)
    cdef PyObject *o
    cdef PyTypeObject *t
    cdef int overflow
    cdef long long v
    group_arr = np.empty(n, dtype=np.int64)
    firsts_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] group = group_arr
    cdef int64_t[::1] firsts = firsts_arr
    cdef int64_t count = 0
    # An address set sized once (at most half full): slot j is (address, group) at
    # 2j, 2j + 1 (address 0: empty; no object lives there), one cache line a probe.
    cdef Py_ssize_t cap = 16, j
    while cap < 2 * n:
        cap *= 2
    cdef uint64_t mask = cap - 1, key
    seen_arr = np.zeros(2 * cap, dtype=np.uint64)
    cdef uint64_t[::1] seen = seen_arr
    for i in range(n):
        o = PyList_GET_ITEM(objects, i)
        t = Py_TYPE(o)
        address[i] = <int64_t>o
        key = <uint64_t>o
        j = <Py_ssize_t>(((key >> 4) * <uint64_t>0x9E3779B97F4A7C15 >> 20) & mask)
        while seen[2 * j] != 0 and seen[2 * j] != key:
            j = (j + 1) & mask
        if seen[2 * j] == 0:
            seen[2 * j] = key
            seen[2 * j + 1] = <uint64_t>count
            firsts[count] = i
            count += 1
        group[i] = <int64_t>seen[2 * j + 1]
        tp[i] = <int64_t>t
        if t == <PyTypeObject *>float:
            real[i] = PyFloat_AS_DOUBLE(<object>o)
        elif t == <PyTypeObject *>int or t == <PyTypeObject *>bool:
            overflow = 0
            v = PyLong_AsLongLongAndOverflow(<object>o, &overflow)
            if overflow:
                big[i] = 1
            else:
                integer[i] = v
    return address_arr, type_arr, real_arr, integer_arr, big_arr, group_arr, firsts_arr[:count]


# tracer.ppl's scoring of categorical draws (ppl/densities.py) reads a site's
# weight lists, drawn items and `range` populations as columns: one C pass each
# instead of numpy.fromiter over a chain of the lists (about 300 instructions a
# number: a float object made and converted per item).  The numbers themselves are
# what numpy's conversion gives (a float's value, float(int), float(bool)); the
# arithmetic on them stays numpy's and scipy's.

from cpython.object cimport PyObject_RichCompareBool, Py_EQ


cdef int64_t _EXACT = (<int64_t>1) << 53   # ints whose float is exact


cdef extern from *:
    """
    /* A compact int (one digit: |v| < 2**30) read inline (3.12+'s unstable API,
       as callbacks.pxi's tracer_small_int); 0 for any other int. */
    static inline int tracer_compact_int(PyObject *o, long long *v) {
        if (PyUnstable_Long_IsCompact((PyLongObject *)o)) {
            *v = (long long)PyUnstable_Long_CompactValue((PyLongObject *)o);
            return 1;
        }
        return 0;
    }
    """
    bint _compact_int "tracer_compact_int"(PyObject *o, long long *v) noexcept


def number_lists(list lists):
    """`(lens, flat, ints, all_lists)` of `lists`, a list of lists or tuples of
    numbers: each entry's length (int64 array), their items in order in one
    float64 array (a float's value, an int's or bool's as float(x)), whether every
    item is an int (not a bool), and whether every entry is a list (not a tuple).
    None when an entry is neither a list nor a tuple, or an item is not exactly a
    float, an int within +-2**53 (where its float is exact) or a bool.  No Python
    code runs."""
    np = _np()
    cdef Py_ssize_t n = len(lists), i, j, m, total = 0, at = 0
    cdef PyObject *o
    cdef PyObject *x
    cdef PyTypeObject *t
    cdef bint ints = True, all_lists = True, is_list
    cdef int overflow
    cdef long long v
    lens_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] lens = lens_arr
    for i in range(n):
        o = PyList_GET_ITEM(lists, i)
        t = Py_TYPE(o)
        if t == <PyTypeObject *>list:
            m = PyList_GET_SIZE(<object>o)
        elif t == <PyTypeObject *>tuple:
            m = len(<tuple>o)
            all_lists = False
        else:
            return None
        lens[i] = m
        total += m
    flat_arr = np.empty(total, dtype=np.float64)
    cdef double[::1] flat = flat_arr
    for i in range(n):
        o = PyList_GET_ITEM(lists, i)
        is_list = Py_TYPE(o) == <PyTypeObject *>list
        m = lens[i]
        if (PyList_GET_SIZE(<object>o) if is_list else len(<tuple>o)) != m:
            return None        # (no Python code runs in between: never so)
        for j in range(m):
            x = PyList_GET_ITEM(<object>o, j) if is_list else PyTuple_GET_ITEM(<object>o, j)
            t = Py_TYPE(x)
            if t == <PyTypeObject *>float:
                flat[at] = PyFloat_AS_DOUBLE(<object>x)
            elif t == <PyTypeObject *>int:
                if _compact_int(x, &v):      # most counts and indices: no call
                    flat[at] = <double>v
                    at += 1
                    continue
                overflow = 0
                v = PyLong_AsLongLongAndOverflow(<object>x, &overflow)
                if overflow or v > _EXACT or v < -_EXACT:
                    return None
                flat[at] = <double>v
            elif t == <PyTypeObject *>bool:
                flat[at] = 1.0 if (<object>x) is True else 0.0
                ints = False
            else:
                return None
            at += 1
    return lens_arr, flat_arr, ints, all_lists


def range_columns(list ranges):
    """`(starts, lens, steps)` (int64 arrays) of `ranges`, a list of non-empty
    `range` objects; None when an entry is not a range, is empty, or has a bound
    beyond int64.  An entry equal to the one before it (as sequences: for
    non-empty ranges, the same start, length and step) is not read again."""
    np = _np()
    cdef Py_ssize_t n = len(ranges), i
    cdef PyObject *o
    cdef PyObject *prev = NULL
    cdef int overflow
    cdef long long a, b, c
    starts_arr = np.empty(n, dtype=np.int64)
    lens_arr = np.empty(n, dtype=np.int64)
    steps_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] starts = starts_arr
    cdef int64_t[::1] lens = lens_arr
    cdef int64_t[::1] steps = steps_arr
    for i in range(n):
        o = PyList_GET_ITEM(ranges, i)
        if Py_TYPE(o) != <PyTypeObject *>range:
            return None
        if prev != NULL and (o == prev or PyObject_RichCompareBool(<object>o, <object>prev, Py_EQ)):
            starts[i], lens[i], steps[i] = starts[i - 1], lens[i - 1], steps[i - 1]
            prev = o
            continue
        overflow = 0
        a = PyLong_AsLongLongAndOverflow((<object>o).start, &overflow)
        if overflow:
            return None
        b = PyLong_AsLongLongAndOverflow((<object>o).step, &overflow)
        if overflow:
            return None
        try:
            c = len(<object>o)
        except OverflowError:
            return None
        if c == 0:
            return None
        starts[i], lens[i], steps[i] = a, c, b
        prev = o
    return starts_arr, lens_arr, steps_arr


def float_column(list items):
    """`items`, a non-empty list of exact floats, as a float64 array (what
    numpy.asarray makes of it); None when an item is anything else (an int, a
    float subclass such as numpy.float64) or the list is empty.  One C pass, no
    Python code run (tracer.ppl's scoring reads a site's values and parameter
    columns so)."""
    cdef Py_ssize_t n = len(items), i
    cdef PyObject *x
    if n == 0:
        return None
    for i in range(n):
        if Py_TYPE(PyList_GET_ITEM(items, i)) != <PyTypeObject *>float:
            return None
    np = _np()
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] col = out
    for i in range(n):
        x = PyList_GET_ITEM(items, i)
        col[i] = PyFloat_AS_DOUBLE(<object>x)
    return out


def take_items(list items, idx):
    """`[items[i] for i in idx]` as a new list, `idx` an int64 array of positions
    (0 <= i < len(items); IndexError otherwise): one C pass, no int object made
    per position (tracer.ppl picks a site's values out of a run's so)."""
    np = _np()
    cdef const int64_t[::1] at = np.ascontiguousarray(idx, dtype=np.int64)
    cdef Py_ssize_t m = at.shape[0], n = len(items), i
    cdef int64_t k
    for i in range(m):
        k = at[i]
        if not 0 <= k < n:
            raise IndexError(f"position {k} is not in a list of {n} items")
    cdef list out = _new_list(m)
    cdef PyObject *x
    for i in range(m):
        x = PyList_GET_ITEM(items, at[i])
        Py_INCREF(<object>x)
        _list_set(out, i, x)
    return out


cdef extern from "Python.h":
    # (a new list's slots are NULL until set; each set steals the reference
    # taken for it)
    list _new_list "PyList_New"(Py_ssize_t)
    void _list_set "PyList_SET_ITEM"(object, Py_ssize_t, PyObject *)
