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
