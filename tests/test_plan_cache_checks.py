"""Plan cache entries whose checksum is right but whose values are not: every index the
core dereferences is checked at load (tracer.analysis.plancheck), an entry failing
any check is rebuilt, and the traced call comes out as without a cache.  A fuzz run
flipping int32 values of a real entry (checksum recomputed) never crashes."""

import io
import os
import re
import struct
import subprocess
import sys
import textwrap
import types
from array import array
from pathlib import Path

import pytest

from tracer import _core
from tracer.analysis import cache, plancheck
from tracer.analysis.bytecode import nlocalsplus
from tracer.analysis.plan import PLAN_EXACT, PLAN_INTERVENE, PLAN_PLAIN, _Builder, build_plan
from tracer.api import track
from tracer.views.show import printlevels
from tracer.views.validate import validate

SRC = str(Path(__file__).resolve().parent.parent / "src")
M = _core.MicroOp
W = _core.WORDS
OPW = W["OP_WORDS"]
LISTS = ("events", "jump_events", "param_cells")


def sample(xs, key=None, *, scale=2, **kw):
    total = 0
    for i, x in enumerate(xs):
        try:
            total += x.real * scale if key is None else key(x)
        except (TypeError, AttributeError):
            total -= 1
    parts = [f"{k}={v!r}" for k, v in sorted(kw.items())]
    return total, sorted(map(str, xs), key=key, reverse=True), " ".join(parts)


def countdown(n):
    while n > 0:
        got = yield n
        n -= 1 if got is None else got


def use_countdown(n, gen=countdown):
    return [x * 2 for x in gen(n) if x % 3]


ARGS = {sample: (([3, 1.5, 2j, "s"],), {"a": 1})}


def call_of(f):
    """(the function to trace, args, kwargs) that runs `f`'s code in a fresh copy (so
    the core has no plan for it yet and asks the cache)."""
    if f is countdown:
        return use_countdown, (7, fresh_copy(countdown)), {}
    args, kwargs = ARGS[f]
    return fresh_copy(f), args, kwargs


# -- the entry rewriter ---------------------------------------------------------------------
def read_entry(entry) -> tuple[dict, int, bytes, bytes]:
    """The int32 arrays of an entry (a cache.Entry, as its pack on disk holds it) by
    name, its nparams, its header+qualname, statics."""
    cache.flush()
    data = entry.raw()
    h = cache._HEADER.unpack_from(data)
    start = cache._payload_start(h[5])
    payload = data[start:]
    *counts, nparams = cache._COUNTS.unpack_from(payload)
    ints = array("i")
    end = cache._COUNTS.size + 4 * sum(counts)
    ints.frombytes(payload[cache._COUNTS.size:end])
    arrays, pos = {}, 0
    for name, n in zip(cache._ARRAYS + LISTS, counts):
        arrays[name] = ints[pos:pos + n]
        pos += n
    return arrays, nparams, data[:start], payload[end:]


def write_entry(entry, arrays: dict, nparams: int, head: bytes, statics: bytes) -> None:
    """Write an entry holding `arrays` into its pack, with its checksum recomputed: only
    the plan checks stand between it and the core (the process then forgets what it
    read and kept, so the next read is of the file)."""
    ints = array("i")
    counts = []
    for name in cache._ARRAYS + LISTS:
        counts.append(len(arrays[name]))
        ints.extend(arrays[name])
    payload = cache._COUNTS.pack(*counts, nparams) + ints.tobytes() + statics
    h = list(cache._HEADER.unpack_from(head))
    h[6] = len(payload)
    h[7] = cache._checksum(payload)
    entry.replace_raw(cache._HEADER.pack(*h) + head[cache._HEADER.size:] + payload)


def fields_of_entry(entry, code) -> dict:
    """An entry's plan fields as the cache hands them to the check (int32 arrays)."""
    arrays, nparams, _head, statics = read_entry(entry)
    return dict(arrays, nparams=nparams, statics=cache._decode_statics(memoryview(statics), code))


def rewrite(code, mode, edit) -> None:
    entry = cache.entry(code, mode)
    arrays, nparams, head, statics = read_entry(entry)
    nparams = edit(arrays, nparams)
    write_entry(entry, arrays, nparams, head, statics)


def ops_of(arrays):
    ops = arrays["ops"]
    return [ops[i:i + OPW] for i in range(0, len(ops), OPW)]


def first_op(arrays, *codes):
    return next(i for i, op in enumerate(ops_of(arrays)) if op[0] in codes)


def set_op(arrays, opcode, word, value):
    arrays["ops"][first_op(arrays, opcode) * OPW + word] = value


def record_word(arrays, which):
    # Position in recs of a word of the first RECORD's record: "fn", "in", "out".
    rec = arrays["ops"][first_op(arrays, M.M_RECORD) * OPW + W["OP_A"]]
    recs = arrays["recs"]
    if which == "fn":
        return next(r for r in record_starts(arrays) if recs[r + 1] >= 0) + 1
    nin = recs[rec + 2]
    if which == "in":
        return next(r + 5 + k for r in record_starts(arrays) for k in range(recs[r + 2])
                    if recs[r + 5 + k] < 0)
    return rec + 5 + nin


def record_starts(arrays):
    return sorted({op[2] for op in ops_of(arrays) if op[0] in (M.M_RECORD, M.M_RECORD_BOOL,
                                                              M.M_FOR_ITER, M.M_SEND)})


def setter(name, at, value):
    def edit(arrays, nparams):
        arrays[name][at(arrays) if callable(at) else at] = value(arrays) if callable(value) else value
        return nparams
    return edit


code = sample.__code__
NLP = nlocalsplus(code)
SS = code.co_stacksize
NCODE = len(code.co_code)


def _an(arrays, name, pred):
    return next(i for i, v in enumerate(arrays[name]) if pred(v))


# (what, the function, its edit): each puts one out-of-range value in the entry.
EDITS = [
    ("unknown micro-op", sample, setter("ops", lambda a: first_op(a, M.M_STORE_LOCAL) * OPW, 99)),
    ("micro-op offset past the code", sample,
     setter("ops", lambda a: first_op(a, M.M_LOAD_LOCAL) * OPW + 1, NCODE + 2)),
    ("local slot", sample,
     setter("ops", lambda a: first_op(a, M.M_LOAD_LOCAL) * OPW + W["OP_B"], NLP)),
    ("negative local slot", sample,
     setter("ops", lambda a: first_op(a, M.M_STORE_LOCAL) * OPW + W["OP_B"], -1)),
    ("stack slot", sample,
     setter("ops", lambda a: first_op(a, M.M_LOAD_LOCAL) * OPW + W["OP_A"], SS)),
    ("captured stack slot past the depth", sample,
     setter("ops", lambda a: first_op(a, M.M_CAPTURE, M.M_CAPTURE_METHOD) * OPW + W["OP_A"],
            SS - 1)),
    ("constant index", sample,
     setter("ops", lambda a: first_op(a, M.M_LOAD_CONST) * OPW + W["OP_B"], len(code.co_consts))),
    ("record number", sample,
     setter("ops", lambda a: first_op(a, M.M_RECORD) * OPW + W["OP_A"],
            lambda a: len(a["recs"]) - 2)),
    ("deferred local", sample,
     setter("ops", lambda a: first_op(a, M.M_RECORD) * OPW + W["OP_C"], NLP + 1)),
    ("jump target", sample,
     setter("ops", lambda a: first_op(a, M.M_SILENT_JUMP, M.M_BRANCH) * OPW + W["OP_C"], NCODE)),
    ("record static input", sample, setter("recs", lambda a: record_word(a, "in"), -1000)),
    ("record output slot", sample, setter("recs", lambda a: record_word(a, "out"), SS)),
    ("record function static", sample, setter("recs", lambda a: record_word(a, "fn"), 10_000)),
    ("record input count", sample,
     setter("recs", lambda a: record_starts(a)[-1] + 2, lambda a: len(a["recs"]))),
    ("segment start", sample,
     setter("seg_from", lambda a: _an(a, "seg_from", lambda v: v >= 0),
            lambda a: len(a["ops"]) // OPW)),
    ("segment at an instruction", sample,
     setter("seg_at", lambda a: _an(a, "seg_at", lambda v: v >= 0), -7)),
    ("stack depth", sample, setter("depth", 0, SS + 1)),
    ("handler slot", sample, setter("handler", lambda a: _an(a, "handler", lambda v: v >= 0),
                                    2 * SS + 1)),
    ("instruction start", sample, setter("istart", 3, NCODE + 100)),
    ("odd instruction start", sample, setter("istart", 3, 3)),
    ("silent branch index", sample,
     setter("branch_sides_at", 0, lambda a: len(a["branch_sides"]) + 4)),
    ("piece start", sample, setter("piece_start", 0, -2)),
    ("carried stack slots", countdown,
     setter("carry", lambda a: _an(a, "carry", lambda v: v > 0), 1 << 20)),
    ("unit flags", sample, setter("unit_flags", 0, 64)),
    ("intervention class", sample, setter("rec_iv", 0, 7)),
    ("event offset", sample, setter("events", 0, NCODE)),
    ("parameter cell", sample, setter("param_cells", None, None)),
    ("nparams", sample, lambda arrays, nparams: NLP + 1),
    ("last micro-op does not close", sample,
     lambda a, n: (a["ops"].__setitem__(len(a["ops"]) - OPW, M.M_LOAD_LOCAL), n)[1]),
]


def _param_cell_edit(arrays, nparams):
    arrays["param_cells"] = array("i", [nparams])
    return nparams


EDITS = [(w, f, _param_cell_edit if w == "parameter cell" else e) for w, f, e in EDITS]


def fresh_copy(f):
    """`f` with an equal but new code object: no plan on it yet (the core keeps
    plans on the code object), the same cache entry."""
    g = types.FunctionType(f.__code__.replace(), f.__globals__, f.__name__, f.__defaults__,
                           f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    g.__qualname__ = f.__qualname__
    return g


def trace_text(f, args, kwargs):
    root = track(f, *args, **kwargs)
    validate(root)
    out = io.StringIO()
    printlevels(root, levels=50, file=out)
    return root.value, re.sub(r"0x[0-9a-f]+", "0x?", out.getvalue())


def no_stack():
    return False


def test_every_fresh_plan_meets_the_checks():
    # The builder's plans (the invariants hold by construction): the checks reject
    # nothing real, in every variant.
    import argparse
    import difflib
    import json

    from stdlib_walk import code_objects

    codes = [c for m in (textwrap, difflib, json.encoder, argparse) for c in code_objects(m)]
    codes += [sample.__code__, countdown.__code__, use_countdown.__code__,
              no_stack.__code__]  # (co_stacksize 0 on 3.12)
    for c in codes:
        for mode in (PLAN_PLAIN, PLAN_EXACT, PLAN_INTERVENE):
            plancheck.check_plan(_Builder(c, mode).build(), c)


@pytest.mark.parametrize("what,f,edit", EDITS, ids=[e[0] for e in EDITS])
def test_an_entry_with_an_out_of_range_value_is_rebuilt(plan_dir, what, f, edit):
    cache.set_plan_cache(None)
    expected = trace_text(*call_of(f))
    cache.set_plan_cache(plan_dir)
    c = f.__code__
    build_plan(c, PLAN_PLAIN)
    good = cache.entry(c, PLAN_PLAIN).read()
    assert good is not None
    rewrite(c, PLAN_PLAIN, edit)
    # Both statements of the rules reject it: the core's C pass (what the cache
    # runs) and the reference in Python.
    fields = fields_of_entry(cache.entry(c, PLAN_PLAIN), c)
    assert _core.plan_problem(fields, c) is not None, what
    assert plancheck.plan_violation(fields, c) is not None, what
    rejected = cache.stats["rejected"]
    assert cache.entry(c, PLAN_PLAIN).read() is None, what
    assert cache.stats["rejected"] == rejected + 1
    # Traced again: the entry is rejected, the plan built and written again, and the
    # trace is the one made with no cache at all.
    assert trace_text(*call_of(f)) == expected
    assert cache.stats["rejected"] == rejected + 2
    cache.forget()  # (written at the next batch; read back as by another process)
    assert cache.entry(c, PLAN_PLAIN).read() is not None  # written again, whole


def flipped(fields: dict, rng) -> dict:
    """A copy of a plan's fields with one to three int32 values changed as the fuzz
    below changes them (a neighbour, a flipped bit, a special value, a small one)."""
    out = {name: array("i", sorted(v) if name in ("events", "jump_events") else v)
           if name in cache._ARRAYS + LISTS else v for name, v in fields.items()}
    names = [n for n in cache._ARRAYS + LISTS if len(out[n])]
    special = [-1, 0, 1, 2, 3, 7, 31, 32, 255, -2**31, 2**31 - 1]
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(names)
        i = rng.randrange(len(out[name]))
        old = out[name][i]
        new = rng.choice([old + rng.choice([-1, 1]), old ^ (1 << rng.randrange(32)),
                          rng.choice(special), rng.randrange(-50, 200)])
        out[name][i] = (new + 2**31) % 2**32 - 2**31
    return out


def test_the_core_check_and_the_rules_agree_on_random_flips():
    # The core's C pass (what the cache runs) against the rules in Python
    # (plancheck.plan_violation), value by value: the same verdict on thousands of
    # damaged plans of real code, in every variant.
    import difflib
    import json
    import random

    from stdlib_walk import code_objects
    from tracer.analysis.plan import PLAN_FIELDS

    codes = [c for m in (textwrap, difflib, json.decoder) for c in code_objects(m)]
    codes += [sample.__code__, countdown.__code__, use_countdown.__code__, no_stack.__code__]
    plans = [(c, {n: getattr(p, n) for n in PLAN_FIELDS})
             for c in codes for mode in (PLAN_PLAIN, PLAN_EXACT, PLAN_INTERVENE)
             for p in [_Builder(c, mode).build()]]
    rng = random.Random(19)
    rejected = 0
    for _ in range(int(os.environ.get("TRACER_FUZZ_ROUNDS", "150")) * 20):
        c, fields = rng.choice(plans)
        bad = flipped(fields, rng)
        in_core = _core.plan_problem(bad, c)
        rules = plancheck.plan_violation(bad, c)
        assert (in_core is None) == (rules is None), (c.co_qualname, in_core, rules)
        rejected += rules is not None
    assert rejected > 1000  # most flips land on a value the core depends on


def test_the_core_check_takes_plans_and_their_fields():
    c = sample.__code__
    plan = _Builder(c, PLAN_PLAIN).build()
    assert _core.plan_problem(plan, c) is None
    fields = {name: getattr(plan, name) for name in ("statics", "nparams", *cache._ARRAYS, *LISTS)}
    assert _core.plan_problem(fields, c) is None
    assert "statics" in _core.plan_problem(dict(fields, statics=tuple(plan.statics)), c)
    assert "int32" in _core.plan_problem(dict(fields, events=[2**40]), c)
    assert "parameter" in _core.plan_problem(dict(fields, param_cells=("0",)), c)
    with pytest.raises(TypeError, match="code object"):
        _core.plan_problem(plan, "not code")


def test_the_rewriter_alone_keeps_an_entry_valid(plan_dir):
    # (So the tests above are about the values they change, not the rewriting.)
    build_plan(sample.__code__, PLAN_PLAIN)
    rewrite(sample.__code__, PLAN_PLAIN, lambda arrays, nparams: nparams)
    assert cache.entry(sample.__code__, PLAN_PLAIN).read() is not None


FUZZ = textwrap.dedent("""
    import random, sys, io
    sys.path.insert(0, {tests!r})
    from test_plan_cache_checks import sample, countdown, rewrite, call_of, trace_text
    from tracer.analysis import cache
    from tracer.analysis.plan import build_plan, PLAN_PLAIN, PLAN_EXACT

    cache.set_plan_cache({plans!r})
    rng = random.Random({seed})
    SPECIAL = [-1, 0, 1, 2, 3, 7, 31, 32, 255, -2**31, 2**31 - 1]
    loaded = 0
    for round in range({rounds}):
        f = rng.choice([sample, countdown])
        mode = rng.choice([PLAN_PLAIN, PLAN_EXACT])
        c = f.__code__
        build_plan(c, mode)
        def edit(arrays, nparams):
            names = [n for n in arrays if len(arrays[n])]
            for _ in range(rng.randint(1, 3)):
                name = rng.choice(names)
                i = rng.randrange(len(arrays[name]))
                old = arrays[name][i]
                new = rng.choice([old + rng.choice([-1, 1]), old ^ (1 << rng.randrange(32)),
                                  rng.choice(SPECIAL), rng.randrange(-50, 200)])
                arrays[name][i] = (new + 2**31) % 2**32 - 2**31  # as an int32 wraps
            return nparams
        rewrite(c, mode, edit)
        if cache.entry(c, mode).read() is not None:
            loaded += 1   # a value the core does not depend on, or one still in range
        try:
            trace_text(*call_of(f)) if mode == PLAN_PLAIN else None
        except Exception:
            pass  # a wrong-but-in-range plan may make a wrong trace; never a crash
        # a fresh entry for the next round
        cache.forget()
        import os; os.unlink(cache.entry(c, mode).path)
    print("done", loaded)
""")


def test_fuzzed_entries_never_crash(tmp_path):
    # In subprocesses: a crash fails this test instead of killing pytest.
    rounds = int(os.environ.get("TRACER_FUZZ_ROUNDS", "150"))
    for seed in (1, 2):
        program = FUZZ.format(tests=str(Path(__file__).parent), plans=str(tmp_path / "p"),
                              seed=seed, rounds=rounds)
        env = dict(os.environ, PYTHONPATH=SRC, PYTHONFAULTHANDLER="1")
        out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout.split()[0] == "done"


def test_a_big_cache_is_pruned_oldest_first(tmp_path):
    saved = dict(cache._state)
    try:
        cache.set_plan_cache(tmp_path)
        cache.set_plan_cache_limit(1)  # MB
        folder = Path(cache.entry(sample.__code__, PLAN_PLAIN).folder)
        folder.mkdir(parents=True)
        old = []
        for k in range(12):
            p = folder / f"{k:032x}-0.plan"
            p.write_bytes(b"\0" * 200_000)
            os.utime(p, (1_000_000 + k, 1_000_000 + k))
            old.append(p)
        build_plan(sample.__code__, PLAN_PLAIN)
        cache.flush()  # a write: the folder is over 1 MB
        left = [p for p in old if p.exists()]
        assert left == old[len(old) - len(left):]  # the oldest went first
        assert sum(p.stat().st_size for p in folder.iterdir()) <= 1_000_000
        assert cache.entry(sample.__code__, PLAN_PLAIN).path.exists()  # not the new one
    finally:
        cache._state.clear()
        cache._state.update(saved)
