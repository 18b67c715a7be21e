# cython: language_level=3, boundscheck=False, wraparound=False
"""The plan cache's load path, typed (tracer.analysis.cache falls back to its Python
functions without it): a code object's key (its bytes written straight from the
code object's fields into one buffer, then blake2b), a pack file read by
open/read/close, and an entry's header, counts and int32 arrays decoded without
struct, array slicing or Python loops; and `untrack`, which takes plan data out of
the garbage collector's lists.

Each function gives exactly what its Python twin in cache.py gives
(`code_bytes` = b"".join of `_code_parts`, `code_key` = `_key`, `decode` =
`_decode`); tests/test_plan_cache_fast.py holds them to it, corrupt entries
included.  It imports nothing of tracer: cache.py hands over what it needs (`init`).
"""

from cpython cimport array as carray
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF
from libc.stdint cimport int32_t, uint32_t, uint8_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memcmp
from libc.stdio cimport snprintf
from posix.fcntl cimport open as c_open, O_RDONLY
from posix.unistd cimport read as c_read, close as c_close
from posix.stat cimport fstat, struct_stat

import sys
from array import array
from types import CodeType

cdef carray.array _INT_ARRAY = array("i")
cdef object _CORRUPT = None       # cache._Corrupt
cdef object _STATICS = None       # cache._decode_statics
cdef object _CRC = None           # zlib.crc32
cdef object _PROBLEM = None       # tracer._core.plan_problem
cdef tuple _ARRAYS = ()           # cache._ARRAYS
cdef tuple _LISTS = ()            # cache._LISTS
cdef bytes _MAGIC = b""
cdef uint32_t _FORMAT = 0
cdef object _INTS_PACK = None     # cache._CODE_INTS.pack
cdef bint _READY = False

# The header, "<8sI16siIIII" (cache._HEADER): magic, format, key digest, first
# line, co_code size, qualname size, payload size, payload checksum.
DEF HEADER_SIZE = 48
DEF MAX_ARRAYS = 32


def init(corrupt, decode_statics, crc32, plan_problem, tuple arrays, tuple lists,
         bytes magic, int fmt, int header_size, ints_pack):
    """Take cache.py's pieces (called once when cache.py is imported)."""
    global _CORRUPT, _STATICS, _CRC, _PROBLEM, _ARRAYS, _LISTS, _MAGIC, _FORMAT
    global _INTS_PACK, _READY
    if header_size != HEADER_SIZE or len(magic) != 8 or len(arrays) + len(lists) > MAX_ARRAYS:
        raise ValueError("tracer: the plan cache's entry format is not the one "
                         "_fastcache was compiled for")
    _CORRUPT, _STATICS, _CRC, _PROBLEM = corrupt, decode_statics, crc32, plan_problem
    _ARRAYS, _LISTS, _MAGIC, _FORMAT, _INTS_PACK = arrays, lists, magic, fmt, ints_pack
    _READY = sys.byteorder == "little"
    return _READY


# -- the key ----------------------------------------------------------------------------
# The key's bytes are cache._code_parts's, written into one C buffer straight from the
# code object's fields (no attribute lookups, no tuples of names made, no list of
# parts joined): co_varnames, co_cellvars and co_freevars are read as CPython makes
# them, from co_localsplusnames filtered by co_localspluskinds.

cdef extern from "Python.h":
    ctypedef struct PyCodeObject:
        PyObject *co_consts
        PyObject *co_names
        PyObject *co_exceptiontable
        int co_flags
        int co_argcount
        int co_posonlyargcount
        int co_kwonlyargcount
        int co_stacksize
        int co_firstlineno
        int co_nlocals
        PyObject *co_localsplusnames
        PyObject *co_localspluskinds
        PyObject *co_qualname
    PyObject *PyCode_GetCode(PyCodeObject *co) except NULL   # a new reference
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL
    int PyObject_IS_GC(object o)
    int PyObject_GC_IsTracked(object o)
    void PyObject_GC_UnTrack(void *o)

# pycore_code.h's kinds of a "local plus" (the same in 3.12 and 3.13).
DEF CO_FAST_LOCAL = 0x20
DEF CO_FAST_CELL = 0x40
DEF CO_FAST_FREE = 0x80

cdef struct _Buf:
    char *p
    Py_ssize_t n
    Py_ssize_t cap


cdef int _put(_Buf *b, const void *src, Py_ssize_t n) except -1:
    cdef Py_ssize_t cap
    cdef char *q
    if b.n + n > b.cap:
        cap = 2 * b.cap
        if cap < b.n + n + 256:
            cap = b.n + n + 256
        q = <char *>realloc(b.p, cap)
        if q == NULL:
            raise MemoryError()
        b.p = q
        b.cap = cap
    if n:
        memcpy(b.p + b.n, src, n)
    b.n += n
    return 0


cdef int _put_str(_Buf *b, str s) except -1:
    # UTF-8 with lone surrogates passed through (as "surrogatepass" encodes them).
    cdef Py_ssize_t size
    cdef const char *u
    try:
        u = PyUnicode_AsUTF8AndSize(s, &size)
    except UnicodeEncodeError:
        data = s.encode("utf-8", "surrogatepass")
        return _put(b, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    return _put(b, u, size)


cdef int _put_tag(_Buf *b, const char *tag, Py_ssize_t n, bint colon) except -1:
    # b"\1s%d:" / b"\1t%d": a tag and a decimal count.
    cdef char text[40]
    cdef int k = snprintf(text, sizeof(text), b"%s%zd%s", tag, n, b":" if colon else b"")
    return _put(b, text, k)


cdef int _put_names(_Buf *b, PyCodeObject *co, int kind) except -1:
    # The names of the locals plus of one kind, each after a NUL.
    cdef tuple names = <tuple><object>co.co_localsplusnames
    cdef bytes kinds = <bytes><object>co.co_localspluskinds
    cdef const uint8_t *k = <const uint8_t *>PyBytes_AS_STRING(kinds)
    cdef Py_ssize_t i
    for i in range(len(names)):
        if k[i] & kind:
            _put(b, b"\0", 1)
            _put_str(b, <str>names[i])
    return 0


cdef int _put_code(_Buf *b, object code) except -1:
    cdef PyCodeObject *co = <PyCodeObject *>code
    cdef object raw = <object>PyCode_GetCode(co)
    Py_DECREF(raw)   # (the reference PyCode_GetCode gave; `raw` holds its own)
    cdef bytes exc = <bytes><object>co.co_exceptiontable
    cdef tuple consts = <tuple><object>co.co_consts
    cdef tuple names = <tuple><object>co.co_names
    cdef int32_t ints[9]
    _put(b, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))
    _put(b, b"\0", 1)
    _put(b, PyBytes_AS_STRING(exc), PyBytes_GET_SIZE(exc))
    ints[0] = co.co_argcount
    ints[1] = co.co_posonlyargcount
    ints[2] = co.co_kwonlyargcount
    ints[3] = co.co_flags
    ints[4] = co.co_nlocals
    ints[5] = co.co_stacksize
    ints[6] = co.co_firstlineno
    ints[7] = <int32_t>PyBytes_GET_SIZE(raw)
    ints[8] = <int32_t>len(consts)
    _put(b, ints, sizeof(ints))   # struct "<9i" (little-endian machines only: init)
    _put_str(b, <str><object>co.co_qualname)
    _put(b, b"\0", 1)
    for x in names:
        _put(b, b"\0", 1)
        _put_str(b, <str>x)
    _put(b, b"\0", 1)
    _put_names(b, co, CO_FAST_LOCAL)
    _put(b, b"\0", 1)
    _put_names(b, co, CO_FAST_CELL)
    _put(b, b"\0", 1)
    _put_names(b, co, CO_FAST_FREE)
    for c in consts:
        _put_const(b, c)
    return 0


cdef int _put_const(_Buf *b, object c) except -1:
    kind = type(c)
    cdef Py_ssize_t start
    if kind is str:
        # the tag holds the UTF-8 length: written after the data is known
        data = (<str>c).encode("utf-8", "surrogatepass")
        _put_tag(b, b"\1s", PyBytes_GET_SIZE(data), True)
        _put(b, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    elif kind is tuple:
        _put_tag(b, b"\1t", len(<tuple>c), False)
        for x in <tuple>c:
            _put_const(b, x)
    elif kind is CodeType:
        _put(b, b"\1c", 2)
        _put_code(b, c)
    else:
        _put(b, b"\1o", 2)
        _put_str(b, (<type>kind).__qualname__)
    return 0


def code_bytes(code):
    """The bytes of `code`'s key (b"".join of what cache._code_parts appends)."""
    if type(code) is not CodeType:
        raise TypeError(f"code_bytes takes a code object, not {type(code).__name__}")
    cdef _Buf b
    b.p = NULL
    b.n = b.cap = 0
    try:
        _put_code(&b, code)
        return PyBytes_FromStringAndSize(b.p, b.n)
    finally:
        free(b.p)


# MurmurHash3_x64_128 (seed 0): the key's digest.  It tells code objects apart, it
# does not stand against a forger (whoever can write the cache directory can write
# any entry under any key: the plan checks stand between an entry and the core), so
# a fast non-cryptographic 128-bit hash serves; blake2b took ~3x longer than the
# key's bytes.  cache._murmur128 is its statement in Python.
cdef inline uint64_t _rotl(uint64_t x, int r) noexcept:
    return (x << r) | (x >> (64 - r))


cdef inline uint64_t _fmix(uint64_t k) noexcept:
    k ^= k >> 33
    k *= 0xff51afd7ed558ccdULL
    k ^= k >> 33
    k *= 0xc4ceb9fe1a85ec53ULL
    k ^= k >> 33
    return k


cdef bytes _murmur(const uint8_t *data, Py_ssize_t n):
    cdef uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL
    cdef uint64_t h1 = 0, h2 = 0, k1, k2
    cdef Py_ssize_t i, nblocks = n // 16, tail
    cdef const uint8_t *t
    cdef uint64_t out[2]
    for i in range(nblocks):
        memcpy(&k1, data + 16 * i, 8)
        memcpy(&k2, data + 16 * i + 8, 8)
        k1 *= c1; k1 = _rotl(k1, 31); k1 *= c2; h1 ^= k1
        h1 = _rotl(h1, 27); h1 += h2; h1 = h1 * 5 + 0x52dce729
        k2 *= c2; k2 = _rotl(k2, 33); k2 *= c1; h2 ^= k2
        h2 = _rotl(h2, 31); h2 += h1; h2 = h2 * 5 + 0x38495ab5
    t = data + 16 * nblocks
    tail = n & 15
    k1 = 0
    k2 = 0
    for i in range(tail - 1, 7, -1):
        k2 = (k2 << 8) | t[i]
    for i in range(min(tail, 8) - 1, -1, -1):
        k1 = (k1 << 8) | t[i]
    if tail > 8:
        k2 *= c2; k2 = _rotl(k2, 33); k2 *= c1; h2 ^= k2
    if tail > 0:
        k1 *= c1; k1 = _rotl(k1, 31); k1 *= c2; h1 ^= k1
    h1 ^= <uint64_t>n
    h2 ^= <uint64_t>n
    h1 += h2
    h2 += h1
    h1 = _fmix(h1)
    h2 = _fmix(h2)
    h1 += h2
    h2 += h1
    out[0] = h1   # (little-endian machines only: init)
    out[1] = h2
    return PyBytes_FromStringAndSize(<char *>out, 16)


def murmur128(data):
    """MurmurHash3_x64_128 of `data` (bytes), seed 0, as 16 bytes (h1, h2 little-endian)."""
    cdef const uint8_t[::1] view = data
    if view.shape[0] == 0:
        return _murmur(<const uint8_t *>b"", 0)
    return _murmur(&view[0], view.shape[0])


def code_key(bytes prefix, code):
    """The digest of `prefix` and the bytes of `code`'s key: cache._key's."""
    if type(code) is not CodeType:
        raise TypeError(f"code_key takes a code object, not {type(code).__name__}")
    cdef _Buf b
    b.p = NULL
    b.n = b.cap = 0
    try:
        _put(&b, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix))
        _put_code(&b, code)
        return _murmur(<const uint8_t *>b.p, b.n)
    finally:
        free(b.p)


cpdef untrack(obj):
    """Take `obj` out of the garbage collector's lists (plan data that refers to no
    object that could refer back: int arrays, frozensets of ints, lists of strings,
    tuples of strings and builtin callables), so that collections never walk it."""
    if PyObject_IS_GC(obj) and PyObject_GC_IsTracked(obj):
        PyObject_GC_UnTrack(<void *>obj)


# -- reading an entry ----------------------------------------------------------------------
def read_file(str path):
    """The whole file at `path` (bytes), or None when it cannot be opened or read."""
    cdef bytes b = path.encode(sys.getfilesystemencoding(), "surrogateescape")
    cdef int fd = c_open(b, O_RDONLY)
    cdef struct_stat st
    cdef Py_ssize_t size, got = 0, n
    if fd < 0:
        return None
    try:
        if fstat(fd, &st) != 0:
            return None
        size = st.st_size
        data = PyBytes_FromStringAndSize(NULL, size)
        while got < size:
            n = c_read(fd, PyBytes_AS_STRING(data) + got, size - got)
            if n <= 0:
                return None  # (shorter than fstat said: being replaced; a rebuild)
            got += n
        return data
    finally:
        c_close(fd)


cdef inline uint32_t _u32(const char *p) noexcept:
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v


cdef carray.array _ints(const char *p, Py_ssize_t n):
    cdef carray.array a = carray.clone(_INT_ARRAY, n, False)
    if n:
        memcpy(a.data.as_voidptr, p, n * 4)
    return a


def decode(bytes data, code, bytes key, Py_ssize_t at=0, Py_ssize_t length=-1):
    """The plan's fields from an entry's bytes -- `data`, or its `length` bytes from
    `at` (an entry inside a pack) -- as cache._decode gives them (raising
    cache._Corrupt for the same entries).  The arrays, sets and statics list are
    left untracked by the garbage collector (see `untrack`)."""
    if length < 0:
        length = PyBytes_GET_SIZE(data) - at
    if at < 0 or at + length > PyBytes_GET_SIZE(data):
        raise _CORRUPT("the entry is outside its pack")
    cdef const char *p = PyBytes_AS_STRING(data) + at
    cdef Py_ssize_t size = length
    if size < HEADER_SIZE:
        raise _CORRUPT("truncated header")
    if memcmp(p, PyBytes_AS_STRING(_MAGIC), 8) != 0 or _u32(p + 8) != _FORMAT:
        raise _CORRUPT("not a plan entry of this format")
    cdef bytes qualname = code.co_qualname.encode("utf-8", "surrogatepass")
    cdef uint32_t nqual = _u32(p + 36), npayload = _u32(p + 40), check = _u32(p + 44)
    cdef Py_ssize_t start = HEADER_SIZE + <Py_ssize_t>nqual
    if memcmp(p + 12, PyBytes_AS_STRING(key), 16) != 0 \
            or <int32_t>_u32(p + 28) != <int32_t>code.co_firstlineno \
            or _u32(p + 32) != <uint32_t>len(code.co_code) \
            or <Py_ssize_t>nqual != PyBytes_GET_SIZE(qualname) or start > size \
            or memcmp(p + HEADER_SIZE, PyBytes_AS_STRING(qualname), nqual) != 0:
        raise _CORRUPT("the entry describes another code object")
    if size != start + <Py_ssize_t>npayload:
        raise _CORRUPT("truncated or overlong payload")
    buf = memoryview(data)[at + start:at + size]
    if _CRC(buf) != check:
        raise _CORRUPT("payload checksum")
    cdef Py_ssize_t narr = len(_ARRAYS), nall = narr + len(_LISTS)
    cdef Py_ssize_t counts_size = 4 * (nall + 1)
    if npayload < counts_size:
        raise _CORRUPT("counts")  # (struct.error in the Python decoder: also a rebuild)
    cdef const char *q = p + start
    cdef Py_ssize_t counts[MAX_ARRAYS]
    cdef Py_ssize_t i, total = 0
    for i in range(nall):
        counts[i] = _u32(q + 4 * i)
        total += counts[i]
    cdef int32_t nparams = <int32_t>_u32(q + 4 * nall)
    cdef Py_ssize_t end = counts_size + 4 * total
    if end > npayload:
        raise _CORRUPT("counts")
    statics = _STATICS(buf[end:], code)
    fields = {"nparams": nparams, "statics": statics}
    cdef Py_ssize_t pos = counts_size
    for i in range(nall):
        a = _ints(q + pos, counts[i])
        untrack(a)   # (arrays are collector-tracked from 3.12 on)
        fields[(_ARRAYS[i] if i < narr else _LISTS[i - narr])] = a
        pos += 4 * counts[i]
    problem = _PROBLEM(fields, code)
    if problem is not None:
        raise _CORRUPT(problem)
    untrack(statics)
    events = frozenset(fields["events"])
    jump_events = frozenset(fields["jump_events"])
    untrack(events)
    untrack(jump_events)
    fields["events"] = events
    fields["jump_events"] = jump_events
    fields["param_cells"] = tuple(fields["param_cells"])
    return fields
