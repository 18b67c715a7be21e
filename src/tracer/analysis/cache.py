"""Plans kept on disk between processes, so that a program traced again is warm from
its first call (the plan builder, tracer.analysis.plan, asks here first).

One file per module -- a *pack*, named by a digest of the code's co_filename and of
the source file's identity (its modification time and size, like a .pyc file; none
for code compiled from a string) -- holding the entry of every code object of that
file whose plan was built, in every plan variant.  A process reads a pack once,
when it first needs a plan of that file (one open and read, and an index of the
entries), and decodes an entry only when its code object's plan is asked for.

Each entry is keyed by a digest of everything the plan depends on -- like a .pyc
file: the code object (co_code, the exception table, names, locals, cells, flags,
qualname, first line, and the shape of its constants: strings and tuples of
strings by value, nested code objects recursively, any other constant by type),
the plan variant, the Python version, tracer's version and a fingerprint of the
analysis itself (the sources of tracer.analysis and tracer.callables, and the
core's numbering of micro-ops and words), since development builds all say 0.0.0.

An entry is data: int32 arrays and a table of the plan's static values (strings,
tuples of strings, and callables named by their index in a fixed table), never
code or a pickle.  It is used only if its header names the same code object
(digest, qualname, first line, size of co_code) and a checksum over its payload
(32 bits of its MurmurHash3) matches; otherwise -- stale, truncated, corrupt, a pack whose index is
damaged -- the plan is built and the entry written again.  A pack is written to a
temporary file and renamed over the old one, so a reader sees a whole pack or none
(it is read, not memory-mapped: a file truncated under a mapping would kill the
process with SIGBUS); a writer reads the pack on disk, merges its new entries in
and renames under an advisory lock (lockf on the folder's write.lock), so that
processes writing at once never drop each other's entries.  A directory that
cannot be written (read-only, full) only costs the time to build plans: the cache
stops writing for the process.

An entry whose checksum matches is still not trusted: every index the core will
dereference (local and stack slots, record and static numbers, offsets, micro-op
codes, ...) is range-checked against the code object by the core's
`plan_problem` (one C pass; the rules are stated in Python by
tracer.analysis.plancheck.plan_violation, which also validates freshly built
plans under TRACER_CHECK_PLANS=1), and an entry failing it is rebuilt like a
corrupt one.  `stats` counts entries loaded, reused and rejected; the reason of
each rejection is logged (logger "tracer.plan_cache", level DEBUG).

Plans built or loaded in this process are also kept in memory by their key (at
most _MEMO_MAX), so that a code object compiled again with the same content (code
that tests `exec`, doctest examples, `<string>` modules) reuses the plan without
reading or checking anything: the arrays are shared, the statics taken from the
new code's own constants.  Plan arrays, their event sets and statics refer to no
object that could refer back to them, so they are taken out of the garbage
collector's lists (full collections would otherwise walk ~15 of them per plan).

New entries are written in batches: a pack is rewritten (merged with what another
process may have written meanwhile) once its new entries are as many as it held,
or two seconds after the first of them, and at exit (`flush`).

The directory is kept under a size: when a process has written packs, the
oldest-written packs (of every version's folder) are removed once the whole
passes TRACER_PLAN_CACHE_MAX_MB megabytes (default 200), down to three quarters of
it.  `set_plan_cache_limit(megabytes)` sets it from Python.

Entries start 4-byte aligned in their pack (format 3), so the typed decoder leaves
a loaded plan's int32 arrays where the pack's bytes hold them (read-only
`_fastcache.PlanInts` views, which read as array('i') does) and the core's plan
points into the pack: nothing copied.  A pack's bytes live while plans read from
them do.

The load path (the key, reading a pack, decoding an entry) runs in
tracer.analysis._fastcache where it is built; the Python functions here
(`_code_parts`, `_read_file`, `_decode`, `_decode_statics`) are its statement and
its fallback, and TRACER_FAST_CACHE=0 keeps them.  The plan builder asks `load`
first: a plan in memory or in its pack, checked, and its CodePlan made, in one
typed call with no Python code per code object; only when that finds nothing
usable does it take `entry(code, mode).read()`, which says why (and counts it).

Settings: TRACER_PLAN_CACHE=0 (or off/false/no) turns it off; TRACER_PLAN_CACHE_DIR
chooses the directory (default: $XDG_CACHE_HOME/tracer, else ~/.cache/tracer);
`set_plan_cache(directory)` does the same from Python.
"""

from __future__ import annotations

import atexit
import errno
import hashlib
import json
import logging
import operator
import os
import stat
import struct
import sys
import tempfile
import threading
import time
import zlib
from array import array
from pathlib import Path
from types import CodeType

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system
    fcntl = None

from .. import _core
from .. import callables as ops

__all__ = ["set_plan_cache", "set_plan_cache_limit", "plan_cache_dir", "entry", "load", "Entry", "stats",
           "flush", "forget"]

# 3: the qualname padded to 4 bytes and entries 4-byte aligned in their pack, so a
# loaded plan's int32 arrays are read in place (tracer.analysis._fastcache).
# 4: 3.12's COMPARE_OP into a branch planned as a RECORD_BOOL in plain plans.
# 5: a `for` loop's FOR_ITER may be a silent branch (its BRANCH event off, its `b`
# word the local its body stores the next value in + 1: tracer.analysis.silent).
# 6: a silent conditional jump's successor word in branch_sides may have its sign
# set: that side is written without the op loop (tracer.analysis.silent.straight_sides);
# an UNPACK_SEQUENCE whose outputs the next instructions store in plain locals
# has them read back from there (RECORD's c = READ_STORED: tracer.analysis.plan
# deferral), without an event right after it.
FORMAT = 6
MAGIC = b"TRPLAN\r\n"
# A pack: magic, format, number of entries, CRC-32 of the index; then the index
# (per entry: key, offset in the pack, size), then the entries one after another,
# each starting at a multiple of 4 bytes (NULs between them).
PACK_FORMAT = 2
PACK_MAGIC = b"TRPACK\r\n"
_PACK_HEADER = struct.Struct("<8sIII")
_PACK_INDEX = struct.Struct("<16sII")
# magic, format, key digest, first line, co_code size, qualname size, payload size,
# payload checksum; then the qualname (UTF-8) and NULs up to a multiple of 4 bytes,
# then the payload.
_HEADER = struct.Struct("<8sI16siIIII")


def _payload_start(nqual: int) -> int:
    # Where an entry's payload starts: after the header and the padded qualname.
    return _HEADER.size + nqual + (-nqual % 4)
# The int32 arrays of a plan, in the order they are written.
_ARRAYS = ("ops", "recs", "rec_iv", "seg_at", "seg_from", "depth", "handler", "istart",
           "unit_flags", "piece_start", "branch_sides", "branch_sides_at", "carry")
# ... then these, as lists of ints.
_LISTS = ("events", "jump_events", "param_cells")
_OFF = ("0", "off", "false", "no")

# "packs": the packs this process opened, by co_filename; "memo": plans by key.
_state: dict = {"dir": None, "resolved": False, "writable": True, "fingerprint": None,
                "limit": None, "written": 0, "next_prune": 0, "packs": {}, "memo": {},
                "lock_waited": False}
# Entries read back and used, plans reused from memory for another code object of
# the same content, and entries found stale, truncated, corrupt or failing the plan
# checks (tracer.analysis.plancheck) and rebuilt, in this process.
stats: dict = {"loaded": 0, "reused": 0, "rejected": 0}
# The most plans kept in memory by key (the oldest go first).
_MEMO_MAX = 4096
# A pack's new entries are written once they are this many at least, and as many as
# the entries it held (each pack written O(log n) times), or _FLUSH_AFTER seconds
# after the first of them.
_FLUSH_MIN = 8
_FLUSH_AFTER = 2.0
_lock = threading.RLock()
_log = logging.getLogger("tracer.plan_cache")


def _new_lock_in_child() -> None:
    # A child forked while another thread of the parent held the lock (building or
    # writing a plan) would wait for it forever: that thread does not exist there.
    global _lock
    _lock = threading.RLock()


os.register_at_fork(after_in_child=_new_lock_in_child)


# -- settings ----------------------------------------------------------------------------
def set_plan_cache(directory: str | os.PathLike | None) -> None:
    """Keep plans in `directory` (made when first written), or, with None, keep none.

    Overrides TRACER_PLAN_CACHE and TRACER_PLAN_CACHE_DIR for this process.  The
    plans this process has not written yet are written to the previous directory
    first.
    """
    flush()
    _state["dir"] = None if directory is None else Path(os.path.abspath(directory))
    _state["resolved"] = True
    _state["writable"] = True
    _state["lock_waited"] = False
    _state["packs"] = {}
    _state["memo"] = {}


def set_plan_cache_limit(megabytes: float | None) -> None:
    """Keep the cache directory under `megabytes` (None: TRACER_PLAN_CACHE_MAX_MB,
    default 200), pruning the oldest-written entries when this process writes."""
    if megabytes is not None and not megabytes > 0:
        raise ValueError(f"tracer: the plan cache limit is a positive number of megabytes, "
                         f"not {megabytes!r}")
    _state["limit"] = None if megabytes is None else int(megabytes * 1_000_000)
    _state["next_prune"] = _state["written"]  # check at the next write


def _limit() -> int:
    if _state["limit"] is None:
        try:
            mb = float(os.environ.get("TRACER_PLAN_CACHE_MAX_MB", "200"))
        except ValueError:
            mb = 200.0
        _state["limit"] = int(max(mb, 1.0) * 1_000_000)
    return _state["limit"]


def _prune(root: Path, keep: str) -> None:
    """Remove the oldest-written packs (and entries of older formats) under `root` until it holds at most three
    quarters of the limit (entries another process removes first are skipped)."""
    limit = _limit()
    found = []
    total = 0
    try:
        folders = [d for d in os.scandir(root) if d.is_dir() and d.name.startswith("plans-")]
        for folder in folders:
            for e in os.scandir(folder.path):
                if e.name.endswith((".pack", ".plan")) and e.path != keep:
                    st = e.stat()
                    found.append((st.st_mtime, e.path, st.st_size))
                    total += st.st_size
    except OSError:
        return
    if total <= limit:
        return
    found.sort()
    for _, path, size in found:
        if total <= limit * 3 // 4:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size


def plan_cache_dir() -> Path | None:
    """The directory plans are kept in, or None when the cache is off."""
    if not _state["resolved"]:
        _state["resolved"] = True
        if os.environ.get("TRACER_PLAN_CACHE", "1").strip().lower() in _OFF:
            _state["dir"] = None
        elif os.environ.get("TRACER_PLAN_CACHE_DIR"):
            _state["dir"] = Path(os.path.abspath(os.environ["TRACER_PLAN_CACHE_DIR"]))
        else:
            home = os.path.expanduser("~")
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
            # No home directory to put it in (`~` unexpanded): no cache, rather than
            # one relative to wherever the program runs.
            _state["dir"] = Path(base) / "tracer" if os.path.isabs(base) else None
    return _state["dir"]


# -- what a plan depends on ----------------------------------------------------------------
def _fingerprint() -> bytes:
    """tracer's version, the Python version and a digest of the analysis itself."""
    fp = _state["fingerprint"]
    if fp is None:
        h = hashlib.blake2b(digest_size=16)
        try:
            from .._version import version
        except ImportError:  # pragma: no cover - a checkout without setuptools-scm's file
            version = "0.0.0"
        h.update(f"{FORMAT} {version} {sys.implementation.cache_tag} {sys.hexversion}".encode())
        here = Path(__file__).resolve().parent
        # (the compiled builder's source too, where the install has it: its plans
        # are the Python builder's, but a fix to it must not meet its old entries)
        for path in sorted(here.glob("*.py")) + sorted(here.glob("*.pyx")) + \
                [here.parent / "callables.py"]:
            h.update(path.name.encode())
            h.update(path.read_bytes())
        h.update(repr(sorted(_core.WORDS.items())).encode())
        for enum in (_core.MicroOp, _core.RecordSem, _core.LocalFlag, _core.UnitFlag,
                     _core.Intervention, _core.PlanMode):
            h.update(repr([(m.name, int(m)) for m in enum]).encode())
        fp = _state["fingerprint"] = h.digest()
    return fp


# Taken when the analysis is imported: the sources it was imported from (an editable
# install's files may change while a process runs; its entries stay its own).
_fingerprint()


def _code_parts(parts: list, code: CodeType) -> None:
    # The bytes a code object's key is the digest of, appended to `parts` (one
    # digest update of their join: ~2x cheaper than an update per piece).
    raw = code.co_code  # (a new copy at each access)
    parts += (raw, b"\0", code.co_exceptiontable,
              _CODE_INTS.pack(code.co_argcount, code.co_posonlyargcount,
                              code.co_kwonlyargcount, code.co_flags, code.co_nlocals,
                              code.co_stacksize, code.co_firstlineno, len(raw),
                              len(code.co_consts)),
              "\0".join((code.co_qualname, "", *code.co_names, "", *code.co_varnames, "",
                         *code.co_cellvars, "", *code.co_freevars)).encode("utf-8", "surrogatepass"))
    for c in code.co_consts:
        _const_parts(parts, c)


_CODE_INTS = struct.Struct("<9i")


def _const_parts(parts: list, c) -> None:
    # The plan reads strings (keyword names) and nested code objects (which cells
    # they assign) among the constants; of the others only their place.
    kind = type(c)
    if kind is str:
        data = c.encode("utf-8", "surrogatepass")
        parts += (b"\1s%d:" % len(data), data)
    elif kind is tuple:
        parts.append(b"\1t%d" % len(c))
        for x in c:
            _const_parts(parts, x)
    elif kind is CodeType:
        parts.append(b"\1c")
        _code_parts(parts, c)
    else:
        parts += (b"\1o", kind.__qualname__.encode())


def _key(code: CodeType, mode: int) -> bytes:
    prefix = _PREFIXES[mode] if 0 <= mode < len(_PREFIXES) else _fingerprint() + b"%d" % mode
    if _fast is not None:
        return _fast.code_key(prefix, code)
    parts = [prefix]
    _code_parts(parts, code)
    return _murmur128(b"".join(parts))


_M64 = (1 << 64) - 1


def _fmix64(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _M64
    return k ^ (k >> 33)


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _murmur128(data: bytes) -> bytes:
    # MurmurHash3_x64_128, seed 0: the key's digest (_fastcache.murmur128 is its
    # typed twin).  It tells code objects apart; it does not stand against a forger
    # -- whoever can write the cache directory can write any entry under any key,
    # and the plan checks stand between an entry and the core.
    c1, c2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
    h1 = h2 = 0
    n = len(data)
    body = n - n % 16
    for k1, k2 in struct.iter_unpack("<QQ", data[:body]):
        h1 ^= (_rotl64((k1 * c1) & _M64, 31) * c2) & _M64
        h1 = (_rotl64(h1, 27) + h2) & _M64
        h1 = (h1 * 5 + 0x52DCE729) & _M64
        h2 ^= (_rotl64((k2 * c2) & _M64, 33) * c1) & _M64
        h2 = (_rotl64(h2, 31) + h1) & _M64
        h2 = (h2 * 5 + 0x38495AB5) & _M64
    tail = data[body:]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (_rotl64((k2 * c2) & _M64, 33) * c1) & _M64
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (_rotl64((k1 * c1) & _M64, 31) * c2) & _M64
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    h1, h2 = _fmix64(h1), _fmix64(h2)
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    return h1.to_bytes(8, "little") + h2.to_bytes(8, "little")


# What every key starts with, per plan variant (every PlanMode the core has).
_PREFIXES = tuple(_fingerprint() + b"%d" % mode for mode in range(len(_core.PlanMode)))


# -- the plan's static values -----------------------------------------------------------------
def _known_callables() -> tuple:
    """Every callable a plan may hold, in a fixed order (their index is stored)."""
    from .instructions import BINARY_OPS, COMPARE_OPS, CONVERSIONS, INTRINSIC_1

    found: list = []
    seen: set[int] = set()

    def add(f) -> None:
        if callable(f) and id(f) not in seen:
            seen.add(id(f))
            found.append(f)

    for f in (*BINARY_OPS, *COMPARE_OPS.values(), *INTRINSIC_1.values(), *CONVERSIONS.values()):
        add(f)
    for f in (getattr, setattr, delattr, bool, iter, next, len, format, str, repr, ascii, tuple):
        add(f)
    for name in sorted(vars(operator)):
        if not name.startswith("_"):
            add(getattr(operator, name))
    for name in sorted(vars(ops)):
        f = getattr(ops, name)
        if not name.startswith("_") and getattr(f, "__module__", None) == ops.__name__:
            add(f)
    return tuple(found)


_KNOWN: tuple | None = None
_KNOWN_INDEX: dict[int, int] = {}


def _known() -> tuple:
    global _KNOWN
    if _KNOWN is None:
        _KNOWN = _known_callables()
        _KNOWN_INDEX.update((id(f), i) for i, f in enumerate(_KNOWN))
    return _KNOWN


def _encode_statics(statics: list) -> bytes | None:
    # JSON: a string as itself, a tuple of strings as a list, a known callable as
    # its index in _known() (lone surrogates survive JSON's \u escapes).
    _known()
    out: list = []
    for s in statics:
        if type(s) is str:
            out.append(s)
        elif type(s) is tuple and all(type(x) is str for x in s):
            out.append(list(s))
        else:
            index = _KNOWN_INDEX.get(id(s))
            if index is None:
                return None  # not data this format can hold: the plan is not kept
            out.append(index)
    return json.dumps(out, separators=(",", ":")).encode("ascii")


class _Corrupt(Exception):
    pass


_json_decode = json.JSONDecoder().raw_decode  # (json.loads less its encoding detection)


def _decode_statics(data: memoryview, code: CodeType) -> list:
    # The strings and tuples become the code's own objects again (its interned
    # names, its constant tuples of keyword names): the core's attribute lookups
    # and keyword calls then match them by identity, as with a plan just built.
    known = _known()
    nknown = len(known)
    try:
        text = str(data, "ascii")
    except UnicodeDecodeError:
        raise _Corrupt("statics") from None
    statics, end = _json_decode(text)
    if type(statics) is not list or end != len(text):
        raise _Corrupt("statics")
    for i, s in enumerate(statics):
        kind = type(s)
        if kind is int:
            if not 0 <= s < nknown:
                raise _Corrupt("statics")
            statics[i] = known[s]
        elif kind is str:
            statics[i] = sys.intern(s)
        elif kind is list:
            if not all(type(x) is str for x in s):
                raise _Corrupt("statics")
            t = tuple(sys.intern(x) for x in s)
            statics[i] = next((c for c in code.co_consts if type(c) is tuple and c == t), t)
        else:
            raise _Corrupt("statics")
    return statics


# -- entries ----------------------------------------------------------------------------------
# The payload: the counts (_COUNTS), then every int32 of the arrays, the events, the
# jump events and the parameter cells one after the other, then the statics (JSON).
_NCOUNTS = len(_ARRAYS) + 3
_COUNTS = struct.Struct(f"<{_NCOUNTS}Ii")  # the lengths, then nparams


def _checksum(payload) -> int:
    # The first 4 bytes (little-endian) of the payload's MurmurHash3_x64_128: it is
    # there to catch a damaged or half-written file, not a crafted one (the plan
    # checks stand between any entry and the core).  Format 1 took blake2b (half
    # of a load), format 2 zlib's CRC-32 (a quarter: ~4 instructions a byte);
    # the typed decoder computes this one in place at ~1.2 a byte.
    digest = _fast.murmur128(payload) if _fast is not None else _murmur128(bytes(payload))
    return int.from_bytes(digest[:4], "little")


def _encode(plan, code: CodeType, key: bytes) -> bytes | None:
    statics = _encode_statics(plan.statics)
    if statics is None:
        return None
    ints = array("i")
    counts = []
    for name in _ARRAYS:
        arr = getattr(plan, name)
        counts.append(len(arr))
        ints.extend(arr)
    for values in (sorted(plan.events), sorted(plan.jump_events), plan.param_cells):
        counts.append(len(values))
        ints.extend(values)
    if sys.byteorder != "little":  # pragma: no cover - big-endian machines
        ints.byteswap()
    payload = _COUNTS.pack(*counts, plan.nparams) + ints.tobytes() + statics
    qualname = code.co_qualname.encode("utf-8", "surrogatepass")
    header = _HEADER.pack(MAGIC, FORMAT, key, code.co_firstlineno, len(code.co_code),
                          len(qualname), len(payload), _checksum(payload))
    return header + qualname + b"\0" * (-len(qualname) % 4) + payload


def _decode(data: bytes, code: CodeType, key: bytes, at: int = 0, length: int = -1) -> dict:
    # (`at`, `length`: the entry's place in a pack)
    if length < 0:
        length = len(data) - at
    if at < 0 or at + length > len(data):
        raise _Corrupt("the entry is outside its pack")
    data = memoryview(data)[at:at + length]
    if len(data) < _HEADER.size:
        raise _Corrupt("truncated header")
    magic, fmt, digest, firstline, ncode, nqual, npayload, check = _HEADER.unpack_from(data)
    if magic != MAGIC or fmt != FORMAT:
        raise _Corrupt("not a plan entry of this format")
    qualname = code.co_qualname.encode("utf-8", "surrogatepass")
    start = _payload_start(nqual)
    if (digest, firstline, ncode) != (key, code.co_firstlineno, len(code.co_code)) \
            or start > len(data) or data[_HEADER.size:_HEADER.size + nqual] != qualname:
        raise _Corrupt("the entry describes another code object")
    if any(data[_HEADER.size + nqual:start]):
        raise _Corrupt("the qualname's padding is not NULs")
    if len(data) != start + npayload:
        raise _Corrupt("truncated or overlong payload")
    buf = memoryview(data)[start:]
    if _checksum(buf) != check:
        raise _Corrupt("payload checksum")
    *counts, nparams = _COUNTS.unpack_from(buf)
    end = _COUNTS.size + 4 * sum(counts)
    if end > len(buf):
        raise _Corrupt("counts")
    ints = array("i")
    ints.frombytes(buf[_COUNTS.size:end])
    if sys.byteorder != "little":  # pragma: no cover
        ints.byteswap()
    fields: dict = {"nparams": nparams, "statics": _decode_statics(buf[end:], code)}
    pos = 0
    for name, n in zip(_ARRAYS, counts):
        fields[name] = ints[pos:pos + n]
        pos += n
    for name, n in zip(_LISTS, counts[len(_ARRAYS):]):
        fields[name] = ints[pos:pos + n]
        pos += n
    # The checksum only says the bytes are the ones written: every index the core
    # will dereference is checked against the code object too (a crafted entry, or
    # one damaged under a recomputed checksum, must not reach the core), in one C
    # pass (the rules: tracer.analysis.plancheck.plan_violation).
    problem = _core.plan_problem(fields, code)
    if problem is not None:
        raise _Corrupt(problem)
    fields["events"] = frozenset(fields["events"])
    fields["jump_events"] = frozenset(fields["jump_events"])
    fields["param_cells"] = tuple(fields["param_cells"])
    return fields


def _read_file(path: str) -> bytes:
    # The whole file, by os.read: without open()'s file object (~3x the syscalls' cost).
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 17)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# -- packs: the entries of one module's code objects in one file ------------------------------
def _pack_index(data: bytes | None) -> dict:
    """{key: (offset, size)} of the entries in a pack's bytes; {} for no pack, or
    one whose header or index is damaged (its entries are then rebuilt).  Each
    entry is checked only when it is decoded."""
    if not data or len(data) < _PACK_HEADER.size:
        return {}
    magic, fmt, count, check = _PACK_HEADER.unpack_from(data)
    end = _PACK_HEADER.size + count * _PACK_INDEX.size
    if magic != PACK_MAGIC or fmt != PACK_FORMAT or end > len(data) \
            or zlib.crc32(memoryview(data)[_PACK_HEADER.size:end]) != check:
        return {}
    size = len(data)
    return {key: (at, n) for key, at, n in _PACK_INDEX.iter_unpack(data[_PACK_HEADER.size:end])
            if end <= at and at + n <= size}


def _pack_bytes(entries: dict) -> bytes:
    """A pack holding `entries` ({key: entry bytes})."""
    at = _PACK_HEADER.size + len(entries) * _PACK_INDEX.size  # (a multiple of 4)
    index = []
    body = []
    for key, data in entries.items():
        index.append(_PACK_INDEX.pack(key, at, len(data)))
        pad = -len(data) % 4  # the next entry starts 4-byte aligned too
        body += (data, b"\0" * pad)
        at += len(data) + pad
    index_bytes = b"".join(index)
    return b"".join((_PACK_HEADER.pack(PACK_MAGIC, PACK_FORMAT, len(entries),
                                       zlib.crc32(index_bytes)), index_bytes, *body))


# The lock file of a folder's writers (one per folder: pruning never meets it).
_LOCK_NAME = "write.lock"
# How long a writer waits for the lock before giving up this write (a writer stopped
# while holding it must not hang every other process, at exit least of all).  After
# one such wait the process only tries the lock (see _write_lock).
_LOCK_WAIT = 5.0
# _write_lock's answer when another process holds the lock: nothing is written.
_LOCK_BUSY = -2


def _write_lock(folder: str) -> int:
    """A descriptor holding the exclusive lock on `folder`'s lock file (released when
    it is closed); -1: no lock exists to be had (no fcntl, or the lock file cannot be
    opened: a read-only folder, where the write fails anyway), and the writer goes
    on without one; or _LOCK_BUSY: another process held it for _LOCK_WAIT seconds
    (or, once that happened in this process, at the one try), and the writer
    must not write (renaming its pack over one written meanwhile would drop that
    writer's entries).  A POSIX record lock (lockf), not flock: a child forked
    meanwhile does not inherit it."""
    if fcntl is None:  # pragma: no cover - not a POSIX system
        return -1
    try:
        fd = os.open(os.path.join(folder, _LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError:
        return -1
    # A holder that kept the lock past one wait (stopped, hung) is not waited for
    # again: later writes try once and stay pending.
    deadline = time.monotonic() + (0.0 if _state.get("lock_waited") else _LOCK_WAIT)
    pause = 0.001
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                os.close(fd)
                return -1
            if time.monotonic() >= deadline:
                os.close(fd)
                _state["lock_waited"] = True
                return _LOCK_BUSY
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


class _Pack:
    """One module's pack as this process sees it: the bytes read (once), their index,
    and the entries built here and not written yet."""

    __slots__ = ("path", "data", "index", "pending", "since", "used")

    def __init__(self, path: str) -> None:
        self.path = path
        self.data: bytes | None = None
        self.index: dict | None = None   # None: not read yet
        self.pending: dict = {}          # key -> entry bytes
        self.since = 0.0                 # when the first pending entry came
        self.used: set = set()           # keys this process read from the pack

    def open(self) -> dict:
        if self.index is None:
            try:
                data = _fast.read_file(self.path) if _fast is not None else _read_file(self.path)
            except OSError:
                data = None
            self.data = data
            self.index = _pack_index(data)
        return self.index

    def flush(self) -> bool:
        """Write the pending entries into the pack on disk (merged with the entries
        there now, which another process may have written since this one read it);
        False if it could not be written."""
        if not self.pending:
            return True
        pending, self.pending = self.pending, {}
        if not _state["writable"]:
            return False
        folder = os.path.dirname(self.path)
        tmp = None
        lock = -1
        try:
            os.makedirs(folder, exist_ok=True)
            # Read, merge and rename under the folder's write lock: another process
            # renaming its pack between this one's read and rename would otherwise
            # lose the entries only it wrote.
            lock = _write_lock(folder)
            if lock == _LOCK_BUSY:
                # Another writer holds the lock: the entries wait for a later flush
                # (kept in memory meanwhile; at worst they are rebuilt next process).
                self.pending = pending
                return False
            try:
                disk = _fast.read_file(self.path) if _fast is not None else _read_file(self.path)
            except OSError:
                disk = None
            index = _pack_index(disk)
            entries = {key: disk[at:at + n] for key, (at, n) in index.items()}
            entries.update(pending)
            if sum(map(len, entries.values())) > _limit() // 8:
                # An overgrown pack (a file run with ever new content, `<string>`): only
                # what this process used or made is kept.
                entries = {k: v for k, v in entries.items() if k in pending or k in self.used}
            data = _pack_bytes(entries)
            fd, tmp = tempfile.mkstemp(prefix=os.path.basename(self.path) + ".",
                                       suffix=".tmp", dir=folder)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.path)  # readers see a whole pack
        except OSError:
            _state["writable"] = False  # read-only or full: only speed is lost
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            return False
        finally:
            if lock >= 0:
                os.close(lock)  # (the lock goes with it)
        self.data, self.index = data, _pack_index(data)
        # The size bound: looked at on a process's first write, then again after
        # each sixteenth of the limit written (a scan of the directory each time).
        _state["written"] += len(data)
        if _state["written"] >= _state["next_prune"]:
            _state["next_prune"] = _state["written"] + _limit() // 16
            _prune(Path(folder).parent, self.path)
        return True


def _source_identity(filename: str) -> str:
    # A source file's modification time and size (as a .pyc's header has them);
    # nothing for code compiled from a string or a frozen module.
    try:
        st = os.stat(filename)
    except (OSError, ValueError):
        return ""
    return f"{st.st_mtime_ns}:{st.st_size}" if stat.S_ISREG(st.st_mode) else ""


def _pack_of(code: CodeType, folder: str) -> _Pack:
    packs = _state["packs"]
    filename = code.co_filename
    pack = packs.get(filename)
    if pack is None:
        ident = f"{filename}\0{_source_identity(filename)}".encode("utf-8", "surrogatepass")
        name = hashlib.blake2b(ident, digest_size=12).hexdigest() + ".pack"
        pack = packs[filename] = _Pack(os.path.join(folder, name))
    return pack


# -- plans kept in memory by key ---------------------------------------------------------------
def _remember(key: bytes, fields: dict) -> None:
    memo = _state["memo"]
    if len(memo) >= _MEMO_MAX:
        memo.pop(next(iter(memo)), None)  # (another thread may have taken it)
    memo[key] = fields


def _for_code(fields: dict, code: CodeType) -> dict:
    # Another code object's plan of the same content for `code`: its tuples of
    # keyword names are `code`'s own constants (the core matches them by identity);
    # strings are interned and callables the same objects.
    statics = fields["statics"]
    if any(type(s) is tuple for s in statics):
        consts = [c for c in code.co_consts if type(c) is tuple]
        statics = [next((c for c in consts if c == s), s) if type(s) is tuple else s
                   for s in statics]
        _untrack(statics)
        fields = dict(fields, statics=statics)
        _untrack(fields)
    return fields


def _untrack(obj) -> None:
    if _fast is not None:
        _fast.untrack(obj)


def _untrack_plan(plan) -> None:
    # A built plan's arrays, sets and statics, as the typed decoder leaves a loaded one's.
    if _fast is not None:
        for name in _ARRAYS:
            _fast.untrack(getattr(plan, name))
        _fast.untrack(plan.events)
        _fast.untrack(plan.jump_events)
        _fast.untrack(plan.statics)


class Entry:
    """The cache entry of one code object's plan in one variant (in its module's pack)."""

    __slots__ = ("code", "mode", "key", "pack")

    def __init__(self, code: CodeType, mode: int, pack: _Pack) -> None:
        self.code, self.mode = code, mode
        self.key = _key(code, mode)
        self.pack = pack

    @property
    def folder(self) -> str:
        return os.path.dirname(self.pack.path)

    @property
    def path(self) -> Path:
        """The pack holding the entry."""
        return Path(self.pack.path)

    def read(self) -> dict | None:
        """The plan's fields (CodePlan's keyword arguments), or None: no entry, or
        one that is stale, truncated or corrupt (the caller builds and writes it)."""
        key = self.key
        fields = _state["memo"].get(key)
        if fields is not None:
            stats["reused"] += 1
            return _for_code(fields, self.code)
        pack = self.pack
        with _lock:
            where = pack.open().get(key)
            data = pack.data
        if where is None:
            return None
        try:
            fields = _decode_fast(data, self.code, key, where[0], where[1])
        except Exception as exc:  # noqa: BLE001 - whatever is wrong with an entry, it is rebuilt
            stats["rejected"] += 1
            _log.debug("plan cache: rebuilding %s (%s): %s", key.hex(),
                       self.code.co_qualname, exc)
            return None
        stats["loaded"] += 1
        pack.used.add(key)
        _remember(key, fields)
        return fields

    def write(self, plan) -> bool:
        """Keep `plan` (in memory at once, in the pack on disk with the next batch);
        False if it is not data this format can hold."""
        data = _encode(plan, self.code, self.key)
        if data is None:
            return False
        _untrack_plan(plan)
        fields = {name: getattr(plan, name) for name in _ARRAYS}
        fields.update(events=plan.events, jump_events=plan.jump_events,
                      param_cells=plan.param_cells, nparams=plan.nparams, statics=plan.statics)
        _untrack(fields)  # (as a loaded plan's: nothing in it can refer back to it)
        _remember(self.key, fields)
        if not _state["writable"]:
            return False
        pack = self.pack
        with _lock:
            now = time.monotonic()
            if not pack.pending:
                pack.since = now
            pack.pending[self.key] = data
            if len(pack.pending) >= max(_FLUSH_MIN, len(pack.open())) \
                    or now - pack.since >= _FLUSH_AFTER:
                return pack.flush()
        return True

    def raw(self) -> bytes | None:
        """The entry's bytes as its pack on disk holds them (None: not there)."""
        try:
            data = _read_file(self.pack.path)
        except OSError:
            return None
        where = _pack_index(data).get(self.key)
        return None if where is None else data[where[0]:where[0] + where[1]]

    def replace_raw(self, data: bytes) -> None:
        """Put `data` in the pack on disk as this entry's bytes (for tests that damage
        entries), and forget what this process read or kept of the pack."""
        flush()
        old = _read_file(self.pack.path)
        entries = {k: old[a:a + n] for k, (a, n) in _pack_index(old).items()}
        entries[self.key] = data
        Path(self.pack.path).write_bytes(_pack_bytes(entries))
        forget()


def flush() -> None:
    """Write the plans built in this process and not written yet (the cache writes
    them in batches, and at exit)."""
    with _lock:
        for pack in list(_state["packs"].values()):
            pack.flush()


def forget() -> None:
    """Write what is pending, then drop every pack read and plan kept in memory: the
    process reads the cache again as a fresh one would."""
    flush()
    with _lock:
        _state["packs"] = {}
        _state["memo"] = {}


def _flush_at_exit() -> None:
    try:
        flush()
    except Exception:  # noqa: BLE001 - the cache only ever costs speed
        pass


atexit.register(_flush_at_exit)


def _init_fast():
    """The typed load path (tracer.analysis._fastcache), or None: not built, or a
    big-endian machine (the Python functions byteswap there)."""
    try:
        from . import _fastcache
    except ImportError:  # pragma: no cover - an install without the compiled helper
        return None
    ok = _fastcache.init(_Corrupt, _decode_statics, _core.plan_problem, _ARRAYS,
                         _LISTS, MAGIC, FORMAT, _HEADER.size, _CODE_INTS.pack,
                         sys.modules[__name__], _PREFIXES)
    return _fastcache if ok and os.environ.get("TRACER_FAST_CACHE", "1") not in _OFF else None


_fast = _init_fast()
# What the load path calls: the typed decoder when built, else the Python one (which
# stays the statement of the format; tests hold the two to each other).  The key is
# the typed `code_key` while `_fast` is set (`_code_parts_fast` is the statement's
# name for callers that switch the typed path off, as bench/cold.py does).
_code_parts_fast = _code_parts
_decode_fast = _fast.decode if _fast is not None else _decode


def _folder() -> str | None:
    root = plan_cache_dir()
    if root is None:
        return None
    folder = _state.get("folder")
    if folder is None or _state.get("folder_of") is not root:
        # One folder per Python and analysis fingerprint: the entries of older
        # versions of tracer are never read again, and go with their folder.
        name = f"plans-{sys.implementation.cache_tag}-{_fingerprint().hex()[:12]}"
        folder = _state["folder"] = os.path.join(root, name)
        _state["folder_of"] = root
    return folder


def entry(code: CodeType, mode: int) -> Entry | None:
    """The cache entry of `code`'s plan in variant `mode`, or None when the cache is off."""
    folder = _folder()
    if folder is None:
        return None
    return Entry(code, mode, _pack_of(code, folder))


def _open_pack(code: CodeType) -> _Pack | None:
    # The pack of `code`'s module, read (for _fastcache.load: once per module), or
    # None when the cache is off.
    folder = _folder()
    if folder is None:
        return None
    pack = _pack_of(code, folder)
    with _lock:
        pack.open()
    return pack


def load(code: CodeType, mode: int, plan_type: type):
    """The plan of `code` in variant `mode` as a `plan_type` (CodePlan) when the cache
    holds one that passes every check -- kept in memory for code of the same
    content, or read from the code's pack -- else None (the cache is off, has no
    entry, or its entry is stale, truncated or corrupt: `entry(code, mode).read()`
    then says why, counts it, and the plan is built).  One typed call where
    tracer.analysis._fastcache is built (no Python code per code object); without
    it, always None."""
    fast = _fast
    return None if fast is None else fast.load(code, mode, plan_type)
