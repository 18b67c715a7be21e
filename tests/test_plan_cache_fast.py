"""The plan cache's typed load path (tracer.analysis._fastcache) against the Python
functions it ports (cache._code_parts, cache._murmur128, cache._read_file,
cache._decode): the same key bytes and keys, the same fields, the same entries
refused, inside a pack as alone."""

import importlib
import os
import struct
import types
import zlib
from pathlib import Path

import pytest

from tracer.analysis import cache
from tracer.analysis.plan import PLAN_EXACT, PLAN_INTERVENE, PLAN_PLAIN, build_plan

fast = cache._fast
pytestmark = pytest.mark.skipif(fast is None, reason="tracer.analysis._fastcache is not built "
                                "(or the machine is big-endian): only the Python path runs")

MODULES = ["json.decoder", "json.encoder", "textwrap", "difflib", "ast", "inspect"]


def codes_of(name: str) -> list:
    mod = importlib.import_module(name)
    found = []

    def collect(c):
        found.append(c)
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                collect(k)

    collect(compile(Path(mod.__file__).read_text(), mod.__file__, "exec"))
    return found


def sample(xs, key=None, *, scale=2, **kw):
    parts = [f"{k}={v!r}" for k, v in sorted(kw.items())]
    return sum(x * scale for x in xs if key is None or key(x)), " ".join(parts), ("a", "\udc80")


def same_fields(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        type(a[k]) is type(b[k]) and a[k] == b[k] for k in a)


def outcome(decode, data, code, key, *where):
    try:
        return decode(data, code, key, *where)
    except Exception as exc:  # noqa: BLE001 - a refused entry, whatever the reason
        return exc


def test_the_key_bytes_are_the_python_ones():
    def cells(a, *args, **kw):
        def inner():
            return a, args, kw, "\udc80"
        return inner, ("k\udc81", (1, 2.0, None, b"x", frozenset()), ...)

    codes = [sample.__code__, cells.__code__] + [c for name in MODULES for c in codes_of(name)]
    saved = cache._fast
    for code in codes:
        py = []
        cache._code_parts(py, code)
        assert b"".join(py) == fast.code_bytes(code), code.co_qualname
        for mode in (PLAN_PLAIN, PLAN_EXACT):
            typed = cache._key(code, mode)
            try:
                cache._fast = None  # the statement: the parts' join, hashed in Python
                assert cache._key(code, mode) == typed, code.co_qualname
            finally:
                cache._fast = saved


def test_the_hash_is_murmur3_x64_128():
    # (mmh3.hash_bytes("foo"), the reference implementation's documented value)
    assert fast.murmur128(b"foo") == cache._murmur128(b"foo") == \
        b"aE\xf5\x01W\x86q\xe2\x87}\xba+\xe4\x87\xaf~"
    data = bytes(range(256)) * 3
    for n in range(0, 100):  # every tail length, several blocks
        assert fast.murmur128(data[:n]) == cache._murmur128(data[:n]), n


@pytest.mark.parametrize("mode", [PLAN_PLAIN, PLAN_EXACT, PLAN_INTERVENE])
def test_entries_decode_to_the_python_fields(plan_dir, mode):
    codes = [sample.__code__] + codes_of("json.decoder") + codes_of("textwrap")
    for code in codes:
        build_plan(code, mode)
    cache.flush()
    for code in codes:
        entry = cache.entry(code, mode)
        pack = fast.read_file(str(entry.path))
        assert pack == entry.path.read_bytes()
        data = entry.raw()
        typed = fast.decode(data, code, entry.key)
        assert same_fields(typed, cache._decode(data, code, entry.key)), code.co_qualname
        # the same entry decoded in place in its pack
        at, n = cache._pack_index(pack)[entry.key]
        assert same_fields(fast.decode(pack, code, entry.key, at, n), typed)
        assert same_fields(cache._decode(pack, code, entry.key, at, n), typed)
        # the statics are the code's own objects again, as the Python decoder makes them
        assert [type(s) for s in typed["statics"]] == [type(s) for s in build_plan(code, mode).statics]


def test_a_missing_file_reads_as_none(tmp_path):
    assert fast.read_file(str(tmp_path / "nothing.plan")) is None
    assert fast.read_file(str(tmp_path)) is None  # a directory: read fails


def damaged(data: bytes):
    """Entries made from `data`: truncated, bytes flipped, lengths and counts forged
    (with the checksum recomputed, so that the checks behind it are reached)."""
    yield data[:0]
    for cut in (10, 47, 48, 60, len(data) // 2, len(data) - 1):
        yield data[:cut]
    yield data + b"\0"
    for at in (0, 8, 12, 27, 28, 32, 36, 40, 44, 48, 60, len(data) - 2):
        b = bytearray(data)
        b[at] ^= 0x41
        yield bytes(b)
    h = cache._HEADER
    magic, fmt, key, first, ncode, nqual, npayload, check = h.unpack_from(data)
    start = h.size + nqual
    payload = bytearray(data[start:])
    for i in range(cache._NCOUNTS + 1):
        for value in (0, 1, 0x7FFFFFFF, 0xFFFFFFFF):
            p = bytearray(payload)
            struct.pack_into("<I", p, 4 * i, value)
            yield h.pack(magic, fmt, key, first, ncode, nqual, len(p), zlib.crc32(p)) \
                + data[h.size:start] + bytes(p)
    for cut in (0, 4, cache._COUNTS.size - 1, cache._COUNTS.size + 3):
        p = payload[:cut]
        yield h.pack(magic, fmt, key, first, ncode, nqual, len(p), zlib.crc32(p)) \
            + data[h.size:start] + bytes(p)
    for n in (0, nqual + 1, 1 << 30):  # the qualname's length forged
        yield h.pack(magic, fmt, key, first, ncode, n, npayload, check) + data[h.size:]


def test_damaged_entries_are_refused_alike(plan_dir):
    for code in (sample.__code__, codes_of("textwrap")[3]):
        build_plan(code)
        cache.flush()
        entry = cache.entry(code, PLAN_PLAIN)
        data = entry.raw()
        n = 0
        for bad in damaged(data):
            py = outcome(cache._decode, bad, code, entry.key)
            typed = outcome(fast.decode, bad, code, entry.key)
            # ... and the same bytes inside a pack (between two other entries' bytes)
            pad = b"\x55" * 7
            packed = pad + bad + pad
            for at, length in ((7, len(bad)), (7, len(bad) + 1), (-1, 10),
                               (len(packed) - 3, 10)):
                inside_py = outcome(cache._decode, packed, code, entry.key, at, length)
                inside = outcome(fast.decode, packed, code, entry.key, at, length)
                if isinstance(inside_py, Exception):
                    assert isinstance(inside, Exception), (n, at, length, inside_py)
                else:
                    assert same_fields(inside_py, inside), (n, at, length)
                if (at, length) == (7, len(bad)):  # in place: as alone
                    assert isinstance(inside, Exception) == isinstance(typed, Exception), n
            if isinstance(py, Exception):
                # (Entry.read rebuilds on any exception: the statics' JSON errors
                # come from the shared _decode_statics in both)
                assert isinstance(typed, cache._Corrupt) or type(typed) is type(py), (n, py, typed)
            else:  # (a flip the checks cannot see, e.g. in a count nobody reads)
                assert same_fields(py, typed), n
            n += 1
        assert n > 60


def test_the_load_path_uses_the_typed_functions():
    # (TRACER_FAST_CACHE=0 keeps the Python functions: how the benchmark compares them)
    if os.environ.get("TRACER_FAST_CACHE", "1") in cache._OFF:
        assert cache._decode_fast is cache._decode and cache._fast is None
    else:
        assert cache._decode_fast is fast.decode and cache._fast is fast
