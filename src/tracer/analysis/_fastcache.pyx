# cython: language_level=3, boundscheck=False, wraparound=False
"""The plan cache's load path, typed (tracer.analysis.cache falls back to its Python
functions without it): the bytes a code object's key is the digest of, an entry
file read by open/read/close, and an entry's header, counts and int32 arrays
decoded without struct, array slicing or Python loops.

Each function gives exactly what its Python twin in cache.py gives
(`code_parts` = `_code_parts`, `decode` = `_decode`); tests/test_plan_cache_fast.py
holds them to it, corrupt entries included.  It imports nothing of tracer: cache.py
hands over what it needs (`init`).
"""

from cpython cimport array as carray
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, uint32_t
from libc.string cimport memcpy, memcmp
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


# -- the key's bytes -------------------------------------------------------------------
cdef str _NUL = "\0"


cpdef code_parts(list parts, code):
    """Append to `parts` the bytes of `code`'s key, as cache._code_parts does."""
    raw = code.co_code  # (a new copy at each access)
    parts.append(raw)
    parts.append(b"\0")
    parts.append(code.co_exceptiontable)
    parts.append(_INTS_PACK(code.co_argcount, code.co_posonlyargcount,
                            code.co_kwonlyargcount, code.co_flags, code.co_nlocals,
                            code.co_stacksize, code.co_firstlineno, len(raw),
                            len(code.co_consts)))
    cdef list names = [code.co_qualname, ""]
    names.extend(code.co_names)
    names.append("")
    names.extend(code.co_varnames)
    names.append("")
    names.extend(code.co_cellvars)
    names.append("")
    names.extend(code.co_freevars)
    parts.append(_NUL.join(names).encode("utf-8", "surrogatepass"))
    for c in code.co_consts:
        _const_parts(parts, c)


cdef _const_parts(list parts, c):
    kind = type(c)
    if kind is str:
        data = (<str>c).encode("utf-8", "surrogatepass")
        parts.append(b"\1s%d:" % len(data))
        parts.append(data)
    elif kind is tuple:
        parts.append(b"\1t%d" % len(<tuple>c))
        for x in <tuple>c:
            _const_parts(parts, x)
    elif kind is CodeType:
        parts.append(b"\1c")
        code_parts(parts, c)
    else:
        parts.append(b"\1o")
        parts.append((<type>kind).__qualname__.encode())


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


def decode(bytes data, code, bytes key):
    """The plan's fields from an entry's bytes, as cache._decode gives them (raising
    cache._Corrupt for the same entries)."""
    cdef const char *p = PyBytes_AS_STRING(data)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(data)
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
    buf = memoryview(data)[start:]
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
    fields = {"nparams": nparams, "statics": _STATICS(buf[end:], code)}
    cdef Py_ssize_t pos = counts_size
    for i in range(nall):
        fields[(_ARRAYS[i] if i < narr else _LISTS[i - narr])] = _ints(q + pos, counts[i])
        pos += 4 * counts[i]
    problem = _PROBLEM(fields, code)
    if problem is not None:
        raise _CORRUPT(problem)
    fields["events"] = frozenset(fields["events"])
    fields["jump_events"] = frozenset(fields["jump_events"])
    fields["param_cells"] = tuple(fields["param_cells"])
    return fields
