# cython: language_level=3, boundscheck=False, wraparound=False
"""The plan cache's load path, typed (tracer.analysis.cache falls back to its Python
functions without it): a code object's key (its bytes written straight from the
code object's fields into one buffer, then MurmurHash3), a pack file read by
open/read/close, an entry's header, counts, int32 arrays and statics decoded
without struct, array slicing, json or Python loops; `load`, which is
cache.Entry.read and the CodePlan made of its fields in one call (build_plan asks
it first: no Python code per code object); and `untrack`, which takes plan data
out of the garbage collector's lists.  A loaded plan's int32 arrays stay in place in
the pack's bytes (`PlanInts`: entries are 4-byte aligned there).

Each function gives exactly what its Python twin in cache.py gives
(`code_bytes` = b"".join of `_code_parts`, `code_key` = `_key`, `decode` =
`_decode`, `load` = CodePlan(code, mode, **entry(code, mode).read())); tests/
test_plan_cache_fast.py holds them to it, corrupt entries included.  It imports
nothing of tracer: cache.py hands over what it needs (`init`).
"""

cimport cython
from cpython cimport array as carray
from cpython.buffer cimport PyBUF_FORMAT, PyBUF_WRITABLE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_FromStringAndSize
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
from libc.stdint cimport int32_t, uint32_t, uint8_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memcmp
from posix.fcntl cimport open as c_open, O_RDONLY
from posix.unistd cimport read as c_read, close as c_close
from posix.stat cimport fstat, struct_stat

import sys
from sys import intern as sys_intern
from array import array
from types import CodeType, MemberDescriptorType

cdef carray.array _INT_ARRAY = array("i")
cdef object _CORRUPT = None       # cache._Corrupt
cdef object _STATICS = None       # cache._decode_statics
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


def init(corrupt, decode_statics, plan_problem, tuple arrays, tuple lists,
         bytes magic, int fmt, int header_size, ints_pack, module=None, tuple prefixes=()):
    """Take cache.py's pieces (called once when cache.py is imported); `module` (the
    cache module) and `prefixes` (its keys' prefixes per plan variant) for `load`."""
    global _CORRUPT, _STATICS, _PROBLEM, _ARRAYS, _LISTS, _MAGIC, _FORMAT
    global _INTS_PACK, _READY, _CACHE, _PREFIXES, _WEAKREF
    if header_size != HEADER_SIZE or len(magic) != 8 or len(arrays) + len(lists) > MAX_ARRAYS:
        raise ValueError("tracer: the plan cache's entry format is not the one "
                         "_fastcache was compiled for")
    if lists != ("events", "jump_events", "param_cells"):
        raise ValueError("tracer: _fastcache reads the plan's lists as events, jump_events, "
                         "param_cells, in that order")
    for prefix in prefixes:
        if type(prefix) is not bytes:
            raise TypeError("the keys' prefixes are bytes")
    _CORRUPT, _STATICS, _PROBLEM = corrupt, decode_statics, plan_problem
    _ARRAYS, _LISTS, _MAGIC, _FORMAT, _INTS_PACK = arrays, lists, magic, fmt, ints_pack
    _CACHE, _PREFIXES = module, prefixes
    import weakref
    _WEAKREF = weakref.ref
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
    Py_ssize_t Py_SIZE(object o)
    int PyType_HasFeature(object t, unsigned long feature)
    unsigned long Py_TPFLAGS_HEAPTYPE
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset
        int flags
    ctypedef struct PyDescrObject:
        PyObject *d_type
    ctypedef struct PyMemberDescrObject:
        PyDescrObject d_common
        PyMemberDef *d_member
    int Py_T_OBJECT_EX
    int Py_READONLY
    int PySet_Add(object s, object key) except -1
    object PyFrozenSet_New(PyObject *iterable)
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
    # b"\1s%d:" / b"\1t%d": a tag (2 bytes) and a decimal count (n >= 0), written
    # by hand (snprintf took a third of the key's time).
    cdef char text[32]
    cdef char digits[24]
    cdef int k = 0, m = 0
    cdef size_t u = <size_t>n
    text[0] = tag[0]
    text[1] = tag[1]
    k = 2
    while True:
        digits[m] = <char>(48 + u % 10)
        m += 1
        u //= 10
        if u == 0:
            break
    while m:
        m -= 1
        text[k] = digits[m]
        k += 1
    if colon:
        text[k] = 58   # ":"
        k += 1
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
    cdef const char *u
    cdef Py_ssize_t size
    if kind is str:
        # the tag holds the UTF-8 length (the str's own UTF-8, without a bytes
        # object; encoded with "surrogatepass" only for a lone surrogate)
        try:
            u = PyUnicode_AsUTF8AndSize(c, &size)
        except UnicodeEncodeError:
            data = (<str>c).encode("utf-8", "surrogatepass")
            u = PyBytes_AS_STRING(data)
            size = PyBytes_GET_SIZE(data)
        _put_tag(b, b"\1s", size, True)
        _put(b, u, size)
    elif kind is tuple:
        _put_tag(b, b"\1t", len(<tuple>c), False)
        for x in <tuple>c:
            _put_const(b, x)
    elif kind is CodeType:
        _put(b, b"\1c", 2)
        _put_code(b, c)
    else:
        _put(b, b"\1o", 2)
        # (a static type's qualname, kept: it makes a new str at each access)
        name = _QUALNAMES.get(kind)
        if name is None:
            name = (<type>kind).__qualname__
            if not PyType_HasFeature(kind, Py_TPFLAGS_HEAPTYPE):   # (fixed for life)
                _QUALNAMES[kind] = name
        _put_str(b, <str>name)
    return 0


cdef dict _QUALNAMES = {}


cdef int _key_bytes(_Buf *b, bytes prefix, object code) except -1:
    # The key's bytes into a fresh buffer `b` (the caller frees b.p): `prefix` (may
    # be empty), then what cache._code_parts appends for `code`.
    b.p = NULL
    b.n = b.cap = 0
    if type(code) is not CodeType:
        raise TypeError(f"the plan cache's key is made of a code object, not {type(code).__name__}")
    _put(b, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix))
    _put_code(b, code)
    return 0


def code_bytes(code):
    """The bytes of `code`'s key (b"".join of what cache._code_parts appends)."""
    cdef _Buf b
    try:
        _key_bytes(&b, b"", code)
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
    cdef uint64_t out[2]
    _murmur_into(data, n, out)
    return PyBytes_FromStringAndSize(<char *>out, 16)   # (little-endian machines only: init)


cdef uint32_t _checksum(const char *data, Py_ssize_t n) noexcept:
    # An entry's payload checksum (cache._checksum): the digest's first 4 bytes.
    cdef uint64_t out[2]
    _murmur_into(<const uint8_t *>data, n, out)
    return <uint32_t>(out[0] & 0xffffffffULL)


cdef void _murmur_into(const uint8_t *data, Py_ssize_t n, uint64_t *out) noexcept:
    cdef uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL
    cdef uint64_t h1 = 0, h2 = 0, k1, k2
    cdef Py_ssize_t i, nblocks = n // 16, tail
    cdef const uint8_t *t
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
    out[0] = h1
    out[1] = h2


def murmur128(data):
    """MurmurHash3_x64_128 of `data` (bytes), seed 0, as 16 bytes (h1, h2 little-endian)."""
    cdef const uint8_t[::1] view = data
    if view.shape[0] == 0:
        return _murmur(<const uint8_t *>b"", 0)
    return _murmur(&view[0], view.shape[0])


cdef bytes _code_key(bytes prefix, object code):
    cdef _Buf b
    try:
        _key_bytes(&b, prefix, code)
        return _murmur(<const uint8_t *>b.p, b.n)
    finally:
        free(b.p)


def code_key(bytes prefix, code):
    """The digest of `prefix` and the bytes of `code`'s key: cache._key's."""
    return _code_key(prefix, code)


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


# -- a loaded plan's arrays, in place in their pack ---------------------------------------
# Entries are 4-byte aligned in a pack (format 3), so a plan read from one keeps its
# int32 arrays where the pack's bytes hold them: no array objects made, no copies;
# the core's plan (CPlan) points into the pack.  The pack's bytes never change (a
# pack written again is a new bytes object; the old one lives while plans use it).

cdef char *_FORMAT_I = b"i"


@cython.final
@cython.no_gc
@cython.freelist(64)
cdef class PlanInts:
    """A read-only run of int32 items inside a pack's bytes: the array fields of a
    plan loaded from the plan cache (a plan built in the process has array('i')
    objects there instead).  It reads as a read-only array('i') does: len, items,
    slices (copied into an array('i')), iteration, equality with any sequence of
    ints, the buffer protocol (format "i"), tolist, tobytes."""

    cdef object owner          # the bytes holding the items (immutable)
    cdef const int32_t *p
    cdef Py_ssize_t n
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __cinit__(self):
        self.n = 0
        self.p = NULL

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        cdef Py_ssize_t i
        if type(index) is slice:
            return self._array()[index]
        i = index
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("PlanInts index out of range")
        return self.p[i]

    def __iter__(self):
        return iter(self.tolist())

    def __eq__(self, other):
        if type(other) is PlanInts or (type(other) is carray.array
                                       and (<carray.array>other).ob_descr.typecode == b"i"):
            return len(other) == self.n and memcmp(self.p, _address_of(other), 4 * self.n) == 0
        try:
            return self.tolist() == list(other)
        except TypeError:
            return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None   # (as array's: not hashable)

    def __repr__(self):
        return f"PlanInts({self.tolist()!r})"

    def __reduce__(self):
        return (array, ("i", self.tolist()))   # (pickled as the array it reads as)

    def __getbuffer__(self, Py_buffer *view, int flags):
        if flags & PyBUF_WRITABLE:
            raise BufferError("a loaded plan's arrays are read-only")
        self.shape[0] = self.n
        self.strides[0] = 4
        view.buf = <void *>self.p
        view.obj = self
        view.len = 4 * self.n
        view.readonly = 1
        view.itemsize = 4
        view.format = NULL
        if flags & PyBUF_FORMAT:
            view.format = _FORMAT_I
        view.ndim = 1
        view.shape = self.shape
        view.strides = self.strides
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer *view):
        pass

    @property
    def typecode(self):
        return "i"

    @property
    def itemsize(self):
        return 4

    def tolist(self):
        cdef Py_ssize_t i
        return [self.p[i] for i in range(self.n)]

    def tobytes(self):
        return PyBytes_FromStringAndSize(<const char *>self.p, 4 * self.n)

    def buffer_info(self):
        """(address, number of items), as array.buffer_info gives them."""
        return (<size_t>self.p, self.n)

    cdef carray.array _array(self):
        return _ints(<const char *>self.p, self.n)


cdef inline const void *_address_of(object a) noexcept:
    if type(a) is PlanInts:
        return <const void *>(<PlanInts>a).p
    return <const void *>(<carray.array>a).data.as_voidptr


cdef object _in_place(bytes owner, const char *p, Py_ssize_t n):
    # The n int32s at p (4-byte aligned, inside `owner`) as a PlanInts.
    cdef PlanInts v = PlanInts.__new__(PlanInts)
    v.owner = owner
    v.p = <const int32_t *>p
    v.n = n
    return v


cdef object _int_set(const char *p, Py_ssize_t n):
    # A frozenset of the n int32s at p (any alignment), untracked by the collector.
    cdef Py_ssize_t i
    out = PyFrozenSet_New(NULL)
    for i in range(n):
        PySet_Add(out, <int32_t>_u32(p + 4 * i))   # (allowed on a frozenset not yet shared)
    untrack(out)
    return out


cdef tuple _int_tuple(const char *p, Py_ssize_t n):
    cdef Py_ssize_t i
    out = tuple([<int32_t>_u32(p + 4 * i) for i in range(n)])
    untrack(out)
    return out


cdef object _KNOWN = None   # cache._known(): the callables a plan's statics name by index


cdef object _ascii_str(const char *p, Py_ssize_t n):
    # An interned str of the n bytes at p (printable ASCII, checked by the caller), as
    # sys.intern(json's string) gives it.
    s = PyUnicode_FromStringAndSize(p, n)
    return sys_intern(s)


cdef Py_ssize_t _string_end(const char *p, Py_ssize_t i, Py_ssize_t n) noexcept:
    # The index of the closing quote of the JSON string whose opening quote is at i,
    # or -1 if it is not plain printable ASCII (an escape, a control or non-ASCII
    # byte: the Python decoder reads those).
    cdef Py_ssize_t j = i + 1
    cdef unsigned char c
    while j < n:
        c = <unsigned char>p[j]
        if c == 34:   # '"'
            return j
        if c < 32 or c > 126 or c == 92:   # control, non-ASCII, '\\'
            return -1
        j += 1
    return -1


cdef object _statics_fast(const char *p, Py_ssize_t n, object code):
    """The statics list from its JSON (cache._encode_statics's compact form) when it
    holds only known-callable indexes, plain ASCII strings and lists of them -- what
    cache._decode_statics makes of it -- or None: anything else (escapes, spaces,
    numbers out of range, not a list), which the Python decoder then reads (and
    refuses, when it is not a statics list)."""
    global _KNOWN
    cdef Py_ssize_t i = 1, j, k, nknown
    cdef long v
    cdef unsigned char c
    cdef list out = []
    cdef list names
    if _KNOWN is None:
        _KNOWN = _CACHE._known() if _CACHE is not None else None
        if type(_KNOWN) is not tuple:
            _KNOWN = None
            return None
    nknown = len(<tuple>_KNOWN)
    if n < 2 or p[0] != 91 or p[n - 1] != 93:   # '[' ... ']'
        return None
    if n == 2:
        return out
    while True:
        c = <unsigned char>p[i]
        if c == 34:
            j = _string_end(p, i, n)
            if j < 0:
                return None
            out.append(_ascii_str(p + i + 1, j - i - 1))
            i = j + 1
        elif 48 <= c <= 57:
            if c == 48 and i + 1 < n and 48 <= p[i + 1] <= 57:
                return None   # (a leading zero is not JSON)
            v = 0
            j = i
            while j < n and 48 <= p[j] <= 57:
                if j - i >= 9:
                    return None
                v = 10 * v + (p[j] - 48)
                j += 1
            if v >= nknown:
                return None
            out.append((<tuple>_KNOWN)[v])
            i = j
        elif c == 91:   # a list of strings: a tuple of keyword names
            names = []
            i += 1
            if i < n and p[i] != 93:
                while True:
                    if i >= n or p[i] != 34:
                        return None
                    j = _string_end(p, i, n)
                    if j < 0:
                        return None
                    names.append(_ascii_str(p + i + 1, j - i - 1))
                    i = j + 1
                    if i < n and p[i] == 44:
                        i += 1
                        continue
                    break
            if i >= n or p[i] != 93:
                return None
            i += 1
            t = tuple(names)
            # (the code's own constant when it has an equal one, as the Python decoder)
            for kept in code.co_consts:
                if type(kept) is tuple and kept == t:
                    t = kept
                    break
            out.append(t)
        else:
            return None
        if i >= n:
            return None
        if p[i] == 44:   # ','
            i += 1
            if i >= n - 1:
                return None
            continue
        if p[i] == 93 and i == n - 1:
            return out
        return None


def decode(bytes data, code, bytes key, Py_ssize_t at=0, Py_ssize_t length=-1):
    """The plan's fields from an entry's bytes -- `data`, or its `length` bytes from
    `at` (an entry inside a pack) -- as cache._decode gives them (raising
    cache._Corrupt for the same entries).  The arrays, sets and statics list are
    left untracked by the garbage collector (see `untrack`)."""
    return _decode(data, code, key, at, length)


cdef dict _decode(bytes data, object code, bytes key, Py_ssize_t at, Py_ssize_t length):
    if type(code) is not CodeType:
        raise TypeError(f"an entry is decoded for a code object, not {type(code).__name__}")
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
    # The qualname's UTF-8 (kept by the str; encoded with "surrogatepass" only
    # when it holds a lone surrogate).
    cdef Py_ssize_t nqual_code
    cdef const char *qual
    qualname = None
    try:
        qual = PyUnicode_AsUTF8AndSize(<object>(<PyCodeObject *>code).co_qualname, &nqual_code)
    except UnicodeEncodeError:
        qualname = (<str><object>(<PyCodeObject *>code).co_qualname).encode("utf-8", "surrogatepass")
        qual = PyBytes_AS_STRING(qualname)
        nqual_code = PyBytes_GET_SIZE(qualname)
    cdef uint32_t nqual = _u32(p + 36), npayload = _u32(p + 40), check = _u32(p + 44)
    # (the qualname padded with NULs to 4 bytes: the payload's int32s are aligned)
    cdef Py_ssize_t start = HEADER_SIZE + <Py_ssize_t>nqual + (-<Py_ssize_t>nqual & 3)
    cdef Py_ssize_t k
    # (co_code's size is twice the code object's item count: no co_code copy made)
    if memcmp(p + 12, PyBytes_AS_STRING(key), 16) != 0 \
            or <int32_t>_u32(p + 28) != (<PyCodeObject *>code).co_firstlineno \
            or _u32(p + 32) != <uint32_t>(2 * Py_SIZE(code)) \
            or <Py_ssize_t>nqual != nqual_code or start > size \
            or memcmp(p + HEADER_SIZE, qual, nqual) != 0:
        raise _CORRUPT("the entry describes another code object")
    for k in range(HEADER_SIZE + <Py_ssize_t>nqual, start):
        if p[k] != 0:
            raise _CORRUPT("the qualname's padding is not NULs")
    if size != start + <Py_ssize_t>npayload:
        raise _CORRUPT("truncated or overlong payload")
    if _checksum(p + start, size - start) != check:
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
    statics = _statics_fast(q + end, <Py_ssize_t>npayload - end, code)
    if statics is None:
        statics = _STATICS(memoryview(data)[at + start + end:at + size], code)
    fields = {"nparams": nparams, "statics": statics}
    cdef Py_ssize_t pos = counts_size
    # In place where the items are 4-byte aligned (an entry of a pack, or alone in
    # a bytes object); copied into arrays where they are not (bytes cut at an odd
    # place: the tests' entries inside other bytes).
    cdef bint aligned = (<size_t>(q + pos) & 3) == 0
    for i in range(nall):
        if aligned:
            a = _in_place(data, q + pos, counts[i])
        else:
            a = _ints(q + pos, counts[i])
            untrack(a)   # (arrays are collector-tracked from 3.12 on)
        fields[(_ARRAYS[i] if i < narr else _LISTS[i - narr])] = a
        pos += 4 * counts[i]
    problem = _PROBLEM(fields, code)
    if problem is not None:
        raise _CORRUPT(problem)
    untrack(statics)
    pos = counts_size + 4 * (total - counts[nall - 1] - counts[nall - 2] - counts[nall - 3])
    events = _int_set(q + pos, counts[nall - 3])
    pos += 4 * counts[nall - 3]
    jump_events = _int_set(q + pos, counts[nall - 2])
    pos += 4 * counts[nall - 2]
    cells = _int_tuple(q + pos, counts[nall - 1])
    fields["events"] = events
    fields["jump_events"] = jump_events
    fields["param_cells"] = cells
    # (the fields dict too: the plans kept in memory by key hold it, and nothing in
    # it refers to anything that could refer back)
    untrack(fields)
    return fields


# -- a plan read from the cache, in one call ------------------------------------------------
# cache.Entry.read and the CodePlan made of its fields, without Python code per code
# object: build_plan asks here first.  cache.py's state is read at each call (its
# `_state`, `stats`, `_MEMO_MAX`: set_plan_cache and tests replace them); Python runs
# only when a module's pack is first opened (cache._open_pack) and for a reused plan
# holding tuples of keyword names (cache._for_code).

cdef object _CACHE = None          # the tracer.analysis.cache module
cdef tuple _PREFIXES = ()          # cache._PREFIXES: what every key starts with, per variant
cdef object _WEAKREF = None        # weakref.ref


cdef bint _holds_tuple(object statics):
    cdef Py_ssize_t i
    if type(statics) is not list:
        return True   # (not what a plan holds: cache._for_code decides)
    for i in range(len(<list>statics)):
        if type((<list>statics)[i]) is tuple:
            return True
    return False


cdef object _SLOTS_OF = None        # the plan type whose slots _SLOT_AT holds
cdef dict _SLOT_AT = {}             # slot name -> its offset in a plan_type object
cdef tuple _OWN_SLOTS = ("mode", "ir", "_code", "_layout", "_layout_full", "_rec_at")


cdef bint _slots_known(object plan_type) except -1:
    # Where each slot `load` sets lives in a `plan_type` object (its member
    # descriptors' offsets), so that a plan's ~24 slots are set without 24 attribute
    # lookups; False when one is not a plain object slot (then setattr does it).
    global _SLOTS_OF, _SLOT_AT
    cdef PyMemberDescrObject *d
    if plan_type is _SLOTS_OF:
        return True
    if type(plan_type) is not type or (<type>plan_type).__dictoffset__ != 0:
        return False
    found = {}
    for name in _ARRAYS + _LISTS + ("nparams", "statics") + _OWN_SLOTS:
        descr = getattr(plan_type, name, None)
        if type(descr) is not MemberDescriptorType:
            return False
        d = <PyMemberDescrObject *>descr
        if d.d_member.type != Py_T_OBJECT_EX or d.d_member.flags & Py_READONLY \
                or not issubclass(plan_type, <object>d.d_common.d_type):
            return False
        found[name] = d.d_member.offset
    _SLOT_AT = found
    _SLOTS_OF = plan_type
    return True


cdef inline void _set_slot(object plan, Py_ssize_t offset, object value) noexcept:
    cdef PyObject **slot = <PyObject **>((<char *><PyObject *>plan) + offset)
    cdef PyObject *old = slot[0]
    Py_INCREF(value)
    slot[0] = <PyObject *>value
    Py_XDECREF(old)


cdef object _plan_of(object plan_type, object code, int mode, dict fields):
    # What CodePlan(code, mode, **fields) makes (plan.py's __init__: the fields, the
    # mode, no IR, the code held weakly, no layout or records yet), its slots set
    # from here; tests/test_plan_cache_fast.py holds the two to the same slots.
    plan = plan_type.__new__(plan_type)
    if _slots_known(plan_type) and len(fields) == len(_SLOT_AT) - len(_OWN_SLOTS):
        for name, value in fields.items():
            offset = _SLOT_AT.get(name)
            if offset is None:
                setattr(plan, name, value)   # (not a field a plan has: as CodePlan does)
            else:
                _set_slot(plan, <Py_ssize_t>offset, value)
        _set_slot(plan, <Py_ssize_t>_SLOT_AT["mode"], mode)
        _set_slot(plan, <Py_ssize_t>_SLOT_AT["ir"], None)
        _set_slot(plan, <Py_ssize_t>_SLOT_AT["_code"], _WEAKREF(code))
        _set_slot(plan, <Py_ssize_t>_SLOT_AT["_layout"], None)
        _set_slot(plan, <Py_ssize_t>_SLOT_AT["_layout_full"], False)
        _set_slot(plan, <Py_ssize_t>_SLOT_AT["_rec_at"], None)
        return plan
    for name, value in fields.items():
        setattr(plan, name, value)
    plan.mode = mode
    plan.ir = None
    plan._code = _WEAKREF(code)
    plan._layout = None
    plan._layout_full = False
    plan._rec_at = None
    return plan


cdef int _count(dict stats, str what) except -1:
    stats[what] = stats[what] + 1
    return 0


def load(code, int mode, plan_type):
    """The plan of `code` in variant `mode` as a new `plan_type` (CodePlan), from what
    the cache holds -- a plan kept in memory for code of the same content, or the
    entry in the code's pack, decoded and checked as `decode` does -- or None: the
    cache is off, holds no such entry, or its entry fails a check (build_plan then
    takes cache.Entry.read, which counts and logs a rejection, and builds).  Counts
    `stats` and keeps the plan in memory as Entry.read does."""
    if not _READY or _CACHE is None or type(code) is not CodeType \
            or not 0 <= mode < len(_PREFIXES):
        return None
    state = _CACHE._state
    if type(state) is not dict:
        return None
    if (<dict>state).get("dir") is None and (<dict>state).get("resolved"):
        return None   # the cache is off
    key = _code_key(<bytes>_PREFIXES[mode], code)
    memo = (<dict>state).get("memo")
    stats = _CACHE.stats
    if type(memo) is not dict or type(stats) is not dict:
        return None
    fields = (<dict>memo).get(key)
    if fields is not None:
        _count(<dict>stats, "reused")
        if _holds_tuple((<dict>fields).get("statics")):
            fields = _CACHE._for_code(fields, code)
        return _plan_of(plan_type, code, mode, <dict>fields)
    packs = (<dict>state).get("packs")
    if type(packs) is not dict:
        return None
    pack = (<dict>packs).get(code.co_filename)
    if pack is None or pack.index is None:
        pack = _CACHE._open_pack(code)
        if pack is None:
            return None
    index = pack.index
    data = pack.data
    if type(index) is not dict or type(data) is not bytes:
        return None
    where = (<dict>index).get(key)
    if where is None:
        return None
    try:
        fields = _decode(<bytes>data, code, key, where[0], where[1])
    except Exception:   # noqa: BLE001 - Entry.read decodes it again and says why
        return None
    _count(<dict>stats, "loaded")
    used = pack.used
    if type(used) is set:
        PySet_Add(used, key)
    else:
        used.add(key)
    if len(<dict>memo) >= _CACHE._MEMO_MAX:
        for oldest in memo:   # the oldest goes first (as cache._remember)
            (<dict>memo).pop(oldest, None)
            break
    (<dict>memo)[key] = fields
    return _plan_of(plan_type, code, mode, <dict>fields)


def decode_statics(data, code):
    """A plan's statics from their bytes (`data`: bytes), as cache._decode_statics
    makes them: read here when the JSON is plain (known-callable indexes, printable
    ASCII strings and lists of them), else by that function (as `decode` does)."""
    if type(code) is not CodeType:
        raise TypeError(f"statics are decoded for a code object, not {type(code).__name__}")
    cdef const uint8_t[::1] view = data
    statics = None
    if view.shape[0]:
        statics = _statics_fast(<const char *>&view[0], view.shape[0], code)
    return statics if statics is not None else _STATICS(memoryview(data), code)
