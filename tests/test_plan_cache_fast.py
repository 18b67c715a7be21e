"""The plan cache's typed load path (tracer.analysis._fastcache) against the Python
functions it ports (cache._code_parts, cache._murmur128, cache._read_file,
cache._decode): the same key bytes and keys, the same fields, the same entries
refused, inside a pack as alone."""

import importlib
import os
import struct
import types
import zlib
from array import array
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


# A plan's int32 arrays: array('i') where built or copied, PlanInts where read in
# place in a pack (format 3); the same items either way.
INT_ARRAYS = {array, fast.PlanInts} if fast is not None else {array}


def same_kind(x, y) -> bool:
    return type(x) is type(y) or {type(x), type(y)} <= INT_ARRAYS


def same_fields(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        same_kind(a[k], b[k]) and a[k] == b[k] and b[k] == a[k] for k in a)


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
    start = cache._payload_start(nqual)
    payload = bytearray(data[start:])
    for i in range(cache._NCOUNTS + 1):
        for value in (0, 1, 0x7FFFFFFF, 0xFFFFFFFF):
            p = bytearray(payload)
            struct.pack_into("<I", p, 4 * i, value)
            yield h.pack(magic, fmt, key, first, ncode, nqual, len(p), cache._checksum(p)) \
                + data[h.size:start] + bytes(p)
    for cut in (0, 4, cache._COUNTS.size - 1, cache._COUNTS.size + 3):
        p = payload[:cut]
        yield h.pack(magic, fmt, key, first, ncode, nqual, len(p), cache._checksum(p)) \
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


def slots_of(plan) -> dict:
    from tracer.analysis.plan import CodePlan
    out = {}
    for name in CodePlan.__slots__:
        if name == "__weakref__":
            continue
        value = getattr(plan, name)
        out[name] = value() if name == "_code" else value
    return out


def same_plans(a, b) -> bool:
    x, y = slots_of(a), slots_of(b)
    return x.keys() == y.keys() and all(
        same_kind(x[k], y[k]) and (x[k] is y[k] or x[k] == y[k]) for k in x)


@pytest.mark.parametrize("mode", [PLAN_PLAIN, PLAN_INTERVENE])
def test_load_makes_the_plan_entry_read_makes(plan_dir, mode):
    from tracer.analysis.plan import CodePlan
    codes = [sample.__code__] + codes_of("json.decoder") + codes_of("textwrap")
    for code in codes:
        build_plan(code, mode)
    cache.forget()  # as a new process: packs read again, nothing in memory
    for code in codes:
        copy = code.replace()
        before = dict(cache.stats)
        plan = cache.load(copy, mode, CodePlan)
        assert plan is not None and type(plan) is CodePlan, code.co_qualname
        assert cache.stats["loaded"] == before["loaded"] + 1
        assert plan._code() is copy and plan.mode == mode
        # ... the plan CodePlan(**Entry.read()) makes (kept in memory by the load:
        # a reuse, which load's second call for code of the same content is too)
        again = code.replace()
        assert same_plans(plan, CodePlan(again, mode, **cache.entry(again, mode).read()))
        third = code.replace()
        reused = cache.load(third, mode, CodePlan)
        assert cache.stats["reused"] == before["reused"] + 2
        assert reused._code() is third and reused.ops is plan.ops  # (arrays shared)
        assert same_plans(reused, CodePlan(third, mode, **cache.entry(third, mode).read()))


def test_load_sets_the_slots_setattr_sets(plan_dir):
    # A plan type whose objects have a __dict__ gets its fields by setattr: the same
    # plan as the slots written in place.
    from tracer.analysis.plan import CodePlan

    class Loose(CodePlan):
        pass

    build_plan(sample.__code__)
    cache.forget()
    tight = cache.load(sample.__code__.replace(), PLAN_PLAIN, CodePlan)
    loose = cache.load(sample.__code__.replace(), PLAN_PLAIN, Loose)
    assert type(loose) is Loose and same_plans(tight, loose)


def test_load_leaves_a_refused_entry_to_entry_read(plan_dir):
    from tracer.analysis.plan import CodePlan
    build_plan(sample.__code__)
    cache.flush()
    entry = cache.entry(sample.__code__, PLAN_PLAIN)
    data = bytearray(entry.raw())
    data[-3] ^= 0x10  # the payload's checksum no longer matches
    entry.replace_raw(bytes(data))
    before = dict(cache.stats)
    assert cache.load(sample.__code__.replace(), PLAN_PLAIN, CodePlan) is None
    assert cache.stats == before  # counted and logged by Entry.read, once
    plan = build_plan(sample.__code__.replace())
    assert cache.stats["rejected"] == before["rejected"] + 1
    assert same_fields({k: getattr(plan, k) for k in ("ops", "recs", "statics")},
                       {k: getattr(build_plan(sample.__code__), k) for k in ("ops", "recs", "statics")})


def test_load_is_none_with_the_cache_off():
    from tracer.analysis.plan import CodePlan
    saved = dict(cache._state)
    try:
        cache.set_plan_cache(None)
        assert cache.load(sample.__code__.replace(), PLAN_PLAIN, CodePlan) is None
    finally:
        cache._state.clear()
        cache._state.update(saved)


def test_statics_decode_as_the_python_decoder():
    known = cache._known()

    def kw(a, *, b, c):
        return kw(1, b=2, c="x\"y")

    texts = [b"[]", b"[0]", b'["a"]', b'["a",1,["b","c"]]', b'[["b","c"]]', b"[[]]",
             b'["\\u00e9"]', b'["a\\"b"]', b'["\\\\"]', b'["\\udc80"]', b'["tab\\t"]',
             b'[%d]' % (len(known) - 1), b'[%d]' % len(known), b"[-1]", b"[01]", b"[1.5]",
             b"[1e2]", b"[ 1]", b"[1 ]", b'["a",]', b"[,]", b"[", b"]", b"", b"{}", b'"a"',
             b"[9999999999]", b'[["a",1]]', b'[["a"]', b'["\x7f"]', b'["\xc3\xa9"]',
             b'["ab', b"[1,,2]", b"[1][2]", b'[["b","c"]]']
    for text in texts:
        for code in (sample.__code__, kw.__code__):
            try:
                want = cache._decode_statics(memoryview(text), code)
            except Exception as exc:  # noqa: BLE001
                want = exc
            try:
                got = fast.decode_statics(text, code)
            except Exception as exc:  # noqa: BLE001
                got = exc
            if isinstance(want, Exception):
                assert type(got) is type(want), (text, got)
                continue
            assert [type(x) for x in got] == [type(x) for x in want], text
            assert got == want, text
            for x, y in zip(got, want):  # interned strings, the code's own tuples
                assert x is y or type(x) is tuple and all(p is q for p, q in zip(x, y)), text
    # a tuple of keyword names is the code's own constant
    names = next(c for c in kw.__code__.co_consts if type(c) is tuple)
    text = ("[" + ",".join('"%s"' % n for n in names).join("[]") + "]").encode()
    assert fast.decode_statics(text, kw.__code__)[0] is names


# -- format 3: a loaded plan's arrays in place in their pack -----------------------------------
def test_entries_are_4_byte_aligned_in_their_pack(plan_dir):
    codes = codes_of("textwrap")   # (one module: one pack)
    for code in codes:
        build_plan(code)
    cache.flush()
    pack = cache.entry(codes[0], PLAN_PLAIN).path.read_bytes()
    index = cache._pack_index(pack)
    assert len(index) == len(codes)
    for key, (at, n) in index.items():
        assert at % 4 == 0, key
        nqual = cache._HEADER.unpack_from(pack, at)[5]
        assert cache._payload_start(nqual) % 4 == 0
        # (the padding after the qualname and after the entry is NULs)
        assert not any(pack[at + cache._HEADER.size + nqual:at + cache._payload_start(nqual)])


def test_a_loaded_plans_arrays_are_read_in_place(plan_dir):
    import numpy as np
    from tracer import _core
    from tracer.analysis.plan import CodePlan
    built = build_plan(sample.__code__)
    cache.forget()
    copy = sample.__code__.replace()
    plan = cache.load(copy, PLAN_PLAIN, CodePlan)
    pack = cache._state["packs"][copy.co_filename].data
    base = np.frombuffer(pack, dtype=np.uint8).ctypes.data
    for name in cache._ARRAYS:
        got, want = getattr(plan, name), getattr(built, name)
        assert type(got) is fast.PlanInts, name
        # in the pack's bytes, not a copy
        address, n = got.buffer_info()
        assert base <= address and address + 4 * n <= base + len(pack), name
        # ... and read as the built plan's array('i')
        assert got == want and want == got and not got != want, name
        assert len(got) == len(want) and list(got) == list(want) == got.tolist()
        assert got.tobytes() == want.tobytes() and bytes(memoryview(got)) == want.tobytes()
        assert memoryview(got).format == "i" and memoryview(got).readonly
        assert (np.frombuffer(got, dtype=np.int32) == np.frombuffer(want, dtype=np.int32)).all()
        if len(want):
            assert got[0] == want[0] and got[-1] == want[-1]
            assert got[1:3] == want[1:3] and type(got[1:3]) is array
        with pytest.raises(IndexError):
            got[len(want)]
    assert plan.events == built.events and plan.param_cells == built.param_cells
    with pytest.raises(TypeError):
        hash(plan.ops)
    with pytest.raises(TypeError):
        memoryview(plan.ops).cast("B")[0] = 1  # read-only
    # the core's plan points into them and records as with the built plan
    assert _core.plan_of(copy) is not None
    assert _core.plan_problem(plan, copy) is None


def test_an_entry_cut_at_an_odd_place_is_copied(plan_dir):
    # (an entry inside bytes at an address not 4-aligned: its arrays are copied)
    build_plan(sample.__code__)
    cache.flush()
    entry = cache.entry(sample.__code__, PLAN_PLAIN)
    data = entry.raw()
    for pad in range(4):
        packed = b"\0" * pad + data
        fields = fast.decode(packed, sample.__code__, entry.key, pad, len(data))
        kinds = {type(fields[name]) for name in cache._ARRAYS}
        assert kinds == ({fast.PlanInts} if pad == 0 else {array}), pad
        assert same_fields(fields, cache._decode(data, sample.__code__, entry.key))


def test_a_padding_that_is_not_nuls_is_refused_alike(plan_dir):
    def odd(x, y):   # (a qualname of 3 bytes: one byte of padding)
        return x + y

    build_plan(odd.__code__)
    cache.flush()
    entry = cache.entry(odd.__code__, PLAN_PLAIN)
    data = entry.raw()
    nqual = cache._HEADER.unpack_from(data)[5]
    assert cache._payload_start(nqual) > cache._HEADER.size + nqual
    bad = bytearray(data)
    bad[cache._HEADER.size + nqual] = 1
    for decode in (cache._decode, fast.decode):
        with pytest.raises(cache._Corrupt, match="padding"):
            decode(bytes(bad), odd.__code__, entry.key)
        assert decode(data, odd.__code__, entry.key)["nparams"] == 2


def test_entries_of_format_2_are_not_read():
    # (an older format's entries live in another folder, and are refused if met)
    assert cache.FORMAT == 6 and cache.PACK_FORMAT == 2
    assert all(p.startswith(cache._fingerprint()) for p in cache._PREFIXES)
    from tracer import _core
    assert len(cache._PREFIXES) == len(_core.PlanMode)


def test_plan_problem_reads_int32_buffers_and_refuses_others(plan_dir):
    import numpy as np
    from tracer import _core
    built = build_plan(sample.__code__)
    fields = {name: getattr(built, name) for name in cache._ARRAYS}
    fields.update(events=sorted(built.events), jump_events=sorted(built.jump_events),
                  param_cells=list(built.param_cells), nparams=built.nparams,
                  statics=built.statics)
    assert _core.plan_problem(fields, sample.__code__) is None
    as_numpy = dict(fields, ops=np.array(built.ops, dtype=np.int32))
    assert _core.plan_problem(as_numpy, sample.__code__) is None
    wide = dict(fields, ops=np.array(built.ops, dtype=np.int64))  # copied, item by item
    assert _core.plan_problem(wide, sample.__code__) is None
    bad = np.array(built.ops, dtype=np.int32)
    bad[0] = 10_000
    assert _core.plan_problem(dict(fields, ops=bad), sample.__code__) is not None
    assert "int32" in _core.plan_problem(dict(fields, ops=b"\1\2\3"), sample.__code__)


def test_the_payload_checksum_is_the_digests_first_bytes(plan_dir):
    # (the typed decoder computes it in place; cache._checksum states it, in Python
    # too when the typed path is off)
    build_plan(sample.__code__)
    cache.flush()
    entry = cache.entry(sample.__code__, PLAN_PLAIN)
    data = entry.raw()
    h = cache._HEADER.unpack_from(data)
    payload = data[cache._payload_start(h[5]):]
    assert h[7] == cache._checksum(payload) == int.from_bytes(cache._murmur128(payload)[:4], "little")
    saved = cache._fast
    try:
        cache._fast = None
        assert cache._checksum(memoryview(payload)) == h[7]
    finally:
        cache._fast = saved
    assert fast.decode(data, sample.__code__, entry.key)["nparams"] == 4
    forged = cache._HEADER.pack(*h[:7], h[7] ^ 1) + data[cache._HEADER.size:]
    for decode in (cache._decode, fast.decode):
        with pytest.raises(cache._Corrupt, match="checksum"):
            decode(forged, sample.__code__, entry.key)
