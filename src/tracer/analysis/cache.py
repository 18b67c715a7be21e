"""Plans kept on disk between processes, so that a program traced again is warm from
its first call (the plan builder, tracer.analysis.plan, asks here first).

One file per code object and plan variant, named by a digest of everything the plan
depends on -- like a .pyc file: the code object (co_code, the exception table,
names, locals, cells, flags, qualname, first line, and the shape of its constants:
strings and tuples of strings by value, nested code objects recursively, any other
constant by type), the Python version, tracer's version and a fingerprint of the
analysis itself (the sources of tracer.analysis and tracer.callables, and the core's
numbering of micro-ops and words), since development builds all say 0.0.0.

An entry is data: int32 arrays and a table of the plan's static values (strings,
tuples of strings, and callables named by their index in a fixed table), never
code or a pickle.  It is read back only if its header names the same code object
(digest, qualname, first line, size of co_code) and a checksum over its payload
(CRC-32) matches; otherwise -- stale, truncated, corrupt -- the plan is built and the entry
written again.  Writers write a temporary file and rename it over the entry, so a
reader sees a whole entry or none.  A directory that cannot be written (read-only,
full) only costs the time to build plans: the cache stops writing for the process.

An entry whose checksum matches is still not trusted: every index the core will
dereference (local and stack slots, record and static numbers, offsets, micro-op
codes, ...) is range-checked against the code object by the core's
`plan_problem` (one C pass; the rules are stated in Python by
tracer.analysis.plancheck.plan_violation, which also validates freshly built
plans under TRACER_CHECK_PLANS=1), and an entry failing it is rebuilt like a
corrupt one.  `stats` counts entries loaded and rejected; the reason of each
rejection is logged (logger "tracer.plan_cache", level DEBUG).

The directory is kept under a size: when a process has written entries, the
oldest-written entries (of every version's folder) are removed once the whole
passes TRACER_PLAN_CACHE_MAX_MB megabytes (default 200), down to three quarters of
it.  `set_plan_cache_limit(megabytes)` sets it from Python.

The load path (the key's bytes, reading the file, decoding the entry) runs in
tracer.analysis._fastcache where it is built; the Python functions here
(`_code_parts`, `_read_file`, `_decode`) are its statement and its fallback, and
TRACER_FAST_CACHE=0 keeps them (bench/cold.py's "load(py)").

Settings: TRACER_PLAN_CACHE=0 (or off/false/no) turns it off; TRACER_PLAN_CACHE_DIR
chooses the directory (default: $XDG_CACHE_HOME/tracer, else ~/.cache/tracer);
`set_plan_cache(directory)` does the same from Python.
"""

from __future__ import annotations

import hashlib
import json
import logging
import operator
import os
import struct
import sys
import tempfile
import zlib
from array import array
from pathlib import Path
from types import CodeType

from .. import _core
from .. import callables as ops

__all__ = ["set_plan_cache", "set_plan_cache_limit", "plan_cache_dir", "entry", "Entry", "stats"]

FORMAT = 2
MAGIC = b"TRPLAN\r\n"
# magic, format, key digest, first line, co_code size, qualname size, payload size,
# payload checksum; then the qualname (UTF-8), then the payload.
_HEADER = struct.Struct("<8sI16siIIII")
# The int32 arrays of a plan, in the order they are written.
_ARRAYS = ("ops", "recs", "rec_iv", "seg_at", "seg_from", "depth", "handler", "istart",
           "unit_flags", "piece_start", "branch_sides", "branch_sides_at", "carry")
# ... then these, as lists of ints.
_LISTS = ("events", "jump_events", "param_cells")
_OFF = ("0", "off", "false", "no")

_state: dict = {"dir": None, "resolved": False, "writable": True, "fingerprint": None,
                "limit": None, "written": 0, "next_prune": 0}
# Entries read back and used, and entries found stale, truncated, corrupt or failing
# the plan checks (tracer.analysis.plancheck) and rebuilt, in this process.
stats: dict = {"loaded": 0, "rejected": 0}
_log = logging.getLogger("tracer.plan_cache")


# -- settings ----------------------------------------------------------------------------
def set_plan_cache(directory: str | os.PathLike | None) -> None:
    """Keep plans in `directory` (made when first written), or, with None, keep none.

    Overrides TRACER_PLAN_CACHE and TRACER_PLAN_CACHE_DIR for this process.
    """
    _state["dir"] = None if directory is None else Path(os.path.abspath(directory))
    _state["resolved"] = True
    _state["writable"] = True


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
    """Remove the oldest-written entries under `root` until it holds at most three
    quarters of the limit (entries another process removes first are skipped)."""
    limit = _limit()
    found = []
    total = 0
    try:
        folders = [d for d in os.scandir(root) if d.is_dir() and d.name.startswith("plans-")]
        for folder in folders:
            for e in os.scandir(folder.path):
                if e.name.endswith(".plan") and e.path != keep:
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
    parts = [_fingerprint(), b"%d" % mode]
    _code_parts_fast(parts, code)
    return hashlib.blake2b(b"".join(parts), digest_size=16).digest()


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
    # CRC-32: it is there to catch a damaged or half-written file, not a crafted one
    # (the plan checks stand between any entry and the core), and is ~5x cheaper
    # than a cryptographic digest, which took half of a load (format 1: blake2b).
    return zlib.crc32(payload)


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
    return header + qualname + payload


def _decode(data: bytes, code: CodeType, key: bytes) -> dict:
    if len(data) < _HEADER.size:
        raise _Corrupt("truncated header")
    magic, fmt, digest, firstline, ncode, nqual, npayload, check = _HEADER.unpack_from(data)
    if magic != MAGIC or fmt != FORMAT:
        raise _Corrupt("not a plan entry of this format")
    qualname = code.co_qualname.encode("utf-8", "surrogatepass")
    start = _HEADER.size + nqual
    if (digest, firstline, ncode) != (key, code.co_firstlineno, len(code.co_code)) \
            or data[_HEADER.size:start] != qualname:
        raise _Corrupt("the entry describes another code object")
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


class Entry:
    """The cache file of one code object's plan in one variant."""

    __slots__ = ("code", "mode", "key", "folder", "name")

    def __init__(self, code: CodeType, mode: int, folder: str) -> None:
        self.code, self.mode = code, mode
        self.key = _key(code, mode)
        self.folder = folder
        self.name = f"{self.key.hex()}-{mode}.plan"

    @property
    def path(self) -> Path:
        return Path(self.folder, self.name)

    def read(self) -> dict | None:
        """The plan's fields (CodePlan's keyword arguments), or None: no entry, or
        one that is stale, truncated or corrupt (the caller builds and writes it)."""
        path = os.path.join(self.folder, self.name)
        if _fast is not None:
            data = _fast.read_file(path)
            if data is None:
                return None
        else:
            try:
                data = _read_file(path)
            except OSError:
                return None
        try:
            fields = _decode_fast(data, self.code, self.key)
        except Exception as exc:  # noqa: BLE001 - whatever is wrong with an entry, it is rebuilt
            stats["rejected"] += 1
            _log.debug("plan cache: rebuilding %s (%s): %s", self.name,
                       self.code.co_qualname, exc)
            return None
        stats["loaded"] += 1
        return fields

    def write(self, plan) -> bool:
        """Write `plan`; False if it was not (not encodable, or the directory cannot
        be written: then the cache writes nothing more in this process)."""
        if not _state["writable"]:
            return False
        data = _encode(plan, self.code, self.key)
        if data is None:
            return False
        tmp = None
        try:
            os.makedirs(self.folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=self.name + ".", suffix=".tmp", dir=self.folder)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            path = os.path.join(self.folder, self.name)
            os.replace(tmp, path)  # readers see a whole entry
            # The size bound: looked at on a process's first write, then again after
            # each sixteenth of the limit written (a scan of the directory each time).
            _state["written"] += len(data)
            if _state["written"] >= _state["next_prune"]:
                _state["next_prune"] = _state["written"] + _limit() // 16
                _prune(Path(self.folder).parent, path)
            return True
        except OSError:
            _state["writable"] = False  # read-only or full: only speed is lost
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            return False


def _init_fast():
    """The typed load path (tracer.analysis._fastcache), or None: not built, or a
    big-endian machine (the Python functions byteswap there)."""
    try:
        from . import _fastcache
    except ImportError:  # pragma: no cover - an install without the compiled helper
        return None
    ok = _fastcache.init(_Corrupt, _decode_statics, zlib.crc32, _core.plan_problem, _ARRAYS,
                         _LISTS, MAGIC, FORMAT, _HEADER.size, _CODE_INTS.pack)
    return _fastcache if ok and os.environ.get("TRACER_FAST_CACHE", "1") not in _OFF else None


_fast = _init_fast()
# What the load path calls: the typed functions when built, else the Python ones
# (which stay the statement of the format; tests hold the two to each other).
_code_parts_fast = _fast.code_parts if _fast is not None else _code_parts
_decode_fast = _fast.decode if _fast is not None else _decode


def entry(code: CodeType, mode: int) -> Entry | None:
    """The cache entry of `code`'s plan in variant `mode`, or None when the cache is off."""
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
    return Entry(code, mode, folder)
