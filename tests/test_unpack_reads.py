"""An UNPACK_SEQUENCE whose outputs the next instructions store in plain locals
(`for k, v in d.items()`, `a, b = t`) read back from those locals at the frame's
next event (tracer.analysis.plan deferral, READ_STORED) instead of off the stack
at an event right after it.

Each program is run three ways: on plans with READ_STORED, on the same plans down
the general paths (a `canrecur` context), and on plans built with it off (the
event right after the UNPACK_SEQUENCE, as before): every column, value and edge
the same, fewer events where an unpacking is read back.  Then the shapes: loops
over items, enumerate, zip and lists of tuples (the tuple itself is still the
FOR_ITER's value, read at its BRANCH event), break/continue, nested loops,
generators iterated, `__next__` raising, targets stored again (an event after
all), tuples of the wrong length (the ValueError as untraced), starred and
nested unpacking, a generator unpacked (frames inside the UNPACK_SEQUENCE), a
finalizer run by the stores, and cells.
"""

import gc

import pytest

import tracer
from tracer import Context
from tracer.analysis import cache, plan as plan_mod
from tracer.analysis.microops import M_RECORD, OP_WORDS, PLAN_PLAIN, READ_STORED
from tracer.analysis.plan import _Builder

from helpers import assert_same_columns, assert_same_rows, assert_same_trace
from test_call_paths import FollowAll

PROGRAMS = {
    "items": """
def main(d):
    t = 0
    for k, v in d.items():
        t += len(k) * v
    return t
ARGS = ({'a': 1, 'bb': 2, 'ccc': 3},)
STORED = 1
""",
    "enumerate_zip_pairs": """
def main(xs, ys):
    t = 0
    for i, x in enumerate(xs):
        t += i * x
    for x, y in zip(xs, ys):
        t -= x * y
    pairs = [(1, 2), (3, 4), (5, 6)]
    for a, b in pairs:
        t += a - b
    for a, b, c in [(1, 2, 3), (4, 5, 6)]:
        t += a * b * c
    return t
ARGS = ([3, 1, 4], [1, 5, 9])
STORED = 4
""",
    "statement": """
def main(t, u):
    a, b = t
    c, d, e = u
    return a * d + c * e + b
ARGS = ((3, 4), [5, 6, 7])
STORED = 2
""",
    "break_continue": """
def main(d):
    t = 0
    for k, v in d.items():
        if v < 0:
            continue
        if v > 8:
            break
        t += v
    for k, v in d.items():
        t -= v
        break
    return t
ARGS = ({'a': 3, 'b': -1, 'c': 4, 'd': 9, 'e': 2},)
STORED = 2
""",
    "nested": """
def main(rows):
    t = 0
    for i, row in enumerate(rows):
        for j, x in enumerate(row):
            t += i * j * x
    return t
ARGS = ([[1, 2], [3, 4, 5], []],)
STORED = 2
""",
    "generator_iterated": """
def pairs(n):
    for i in range(n):
        yield i, i * i

def main(n):
    t = 0
    for a, b in pairs(n):
        t += a + b
    return t
ARGS = (5,)
STORED = 1
""",
    "next_raises": """
class Bad:
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        return self
    def __next__(self):
        self.n -= 1
        if self.n < 0:
            raise ValueError('no more')
        return self.n, -self.n

def main(n):
    t = 0
    try:
        for a, b in Bad(n):
            t += a - b
    except ValueError:
        t += 100
    return t
ARGS = (3,)
STORED = 1
""",
    "stored_again": """
def main(d):
    t = 0
    for k, v in d.items():
        v = v + 1
        t += v
    for k, v in d.items():
        del k
        t += v
    return t
ARGS = ({'a': 1, 'b': 2},)
STORED = 0
""",
    "wrong_length": """
def main(xs):
    t = 0
    try:
        for a, b in xs:
            t += a * b
    except ValueError as e:
        t += len(str(e))
    try:
        a, b = (1, 2, 3)
    except ValueError as e:
        t += len(str(e))
    return t
ARGS = ([(1, 2), (3, 4, 5)],)
STORED = 2
""",
    "starred_and_nested": """
def main(xs):
    t = 0
    for a, *rest in xs:
        t += a + len(rest)
    for i, (a, b) in enumerate(xs):
        t += i * a * b
    first, *others = xs
    return t, first, others
ARGS = ([(1, 2), (3, 4)],)
# (only the inner pair of `i, (a, b)`: the outer one's second output is unpacked)
STORED = 1
""",
    "generator_unpacked": """
def gen(n):
    for i in range(n):
        yield i * 7

def main(n):
    a, b, c = gen(n)
    t = a + b + c
    try:
        x, y = gen(n)
    except ValueError:
        t += 1000
    return t
ARGS = (3,)
STORED = 2
""",
    "finalizer_in_the_stores": """
import gc
LOG = []

class Noisy:
    def __init__(self, k):
        self.k = k
    def __del__(self):
        LOG.append(self.k)

def pair(i):
    return Noisy(i + 10), Noisy(i + 20)

def main(n):
    LOG.clear()
    a, b = pair(-10)
    t = 0
    for i in range(n):
        a, b = pair(i)
        t += a.k + b.k
    del a, b
    return t
ARGS = (3,)
STORED = 2
""",
    "cells": """
def main(d):
    fs = []
    for k, v in d.items():
        fs.append(lambda: (k, v))
    return [f() for f in fs]
ARGS = ({'a': 1, 'b': 2},)
STORED = 0
""",
    "comprehension": """
def main(d):
    return [(w, c) for w, c in d.items() if c > 1], {v: k for k, v in d.items()}
ARGS = ({'a': 1, 'b': 2, 'c': 3},)
STORED = None
""",
}


def _load(name, stored):
    """PROGRAMS[name] compiled afresh (code objects of its own) with READ_STORED
    on or off; its plans built now, with no plan cache."""
    ns = {}
    saved_state = dict(cache._state)
    was = plan_mod.set_stored_unpack(stored)
    try:
        cache.set_plan_cache(None)
        exec(compile(PROGRAMS[name], f"<unpack-reads {name}>", "exec"), ns)
        for v in list(ns.values()):
            codes = []
            if hasattr(v, "__code__"):
                codes.append(v.__code__)
            elif isinstance(v, type):
                codes += [m.__code__ for m in vars(v).values() if hasattr(m, "__code__")]
            for code in codes:
                for c in (code, *[k for k in code.co_consts if hasattr(k, "co_code")]):
                    tracer._core.plan_of(c)   # (cached on the code object)
    finally:
        plan_mod.set_stored_unpack(was)
        cache._state.clear()
        cache._state.update(saved_state)
    return ns


def _stored_records(code):
    plan = tracer._core.plan_of(code)
    ops = plan.ops
    # (an instruction's ops may stand in more than one segment)
    return len({ops[k * OP_WORDS + 1] for k in range(len(ops) // OP_WORDS)
                if ops[k * OP_WORDS] == M_RECORD and ops[k * OP_WORDS + 4] == READ_STORED})


def _run(ns, ctx=None):
    gc.collect()
    return tracer.track(ns["main"], *ns["ARGS"], ctx=ctx)



@pytest.mark.parametrize("name", sorted(set(PROGRAMS) - {"finalizer_in_the_stores"}))
def test_stored_unpacking_traces_equal_the_evented_and_general_ones(name):
    on = _load(name, True)
    off = _load(name, False)
    quiet = _run(on)
    evented = _run(off)
    general = _run(on, FollowAll())
    assert quiet.value == evented.value == on["main"](*on["ARGS"])
    assert_same_trace(quiet, general, fewer_events=True)
    assert_same_rows(quiet, evented)
    expected = on["STORED"]
    if expected is not None:
        assert _stored_records(on["main"].__code__) == expected
        assert _stored_records(off["main"].__code__) == 0
    if _stored_records(on["main"].__code__):
        assert quiet.trace.events < evented.trace.events
    else:
        assert quiet.trace.events <= evented.trace.events
    again = _run(on)
    assert_same_rows(again, quiet)


@pytest.mark.parametrize("name", ["items", "enumerate_zip_pairs", "statement", "nested",
                                  "wrong_length", "generator_unpacked"])
def test_stored_unpacking_rows_equal_an_exact_plans(name):
    # A snapshot context uses the exact plans (every value read off the stack at
    # an event right after its instruction): the same rows and values.
    on = _load(name, True)
    quiet = _run(on)
    exact = _run(on, Context(snapshot="copy"))
    ta, tb = assert_same_columns(quiet, exact)
    for row in range(len(ta)):
        va, vb = ta.value(row), tb.value(row)
        if isinstance(va, (int, str, tuple, type(None))):
            assert va == vb, f"row {row}"
    assert ta.events < tb.events
    tracer.validate(quiet)


def test_the_tuple_is_the_loops_value_and_the_items_its_outputs():
    on = _load("enumerate_zip_pairs", True)
    root = _run(on)
    t = root.trace
    values = [t.value(row) for row in range(len(t))]
    # the FOR_ITER's rows hold the tuples themselves (the list's own items), the
    # UNPACK's rows their items
    (pairs,) = [c for c in on["main"].__code__.co_consts if c == ((1, 2), (3, 4), (5, 6))]
    for p in pairs:
        assert any(v is p for v in values)
    assert (0, 3) in values and (1, 1) in values and (2, 4) in values
    assert (3, 1) in values and (4, 9) in values


def test_the_wrong_length_raises_as_untraced():
    on = _load("wrong_length", True)
    root = _run(on)
    assert root.value == on["main"](*on["ARGS"])
    raised = [row for row in range(len(root.trace)) if isinstance(root.trace.value(row), ValueError)]
    assert raised


def test_read_stored_words_and_the_reference_builder():
    # The typed builder and the reference one agree; the c word of an unpacking
    # into plain locals is READ_STORED and no event follows it.
    for name in sorted(PROGRAMS):
        ns = {}
        exec(compile(PROGRAMS[name], f"<unpack-reads {name}>", "exec"), ns)
        codes = [v.__code__ for v in ns.values() if hasattr(v, "__code__")]
        for v in ns.values():
            if isinstance(v, type):
                codes += [m.__code__ for m in vars(v).values() if hasattr(m, "__code__")]
        for code in codes:
            fast = _Builder(code, PLAN_PLAIN).build()
            ref = _Builder(code, PLAN_PLAIN, reference=True).build()
            for field in ("ops", "recs", "branch_sides", "branch_sides_at", "unit_flags"):
                assert list(getattr(fast, field)) == list(getattr(ref, field)), (name, field)
            assert sorted(fast.events) == sorted(ref.events), name
    ns = {}
    exec(compile(PROGRAMS["statement"], "<unpack-reads words>", "exec"), ns)
    code = ns["main"].__code__
    plan = _Builder(code, PLAN_PLAIN).build()
    import dis
    instrs = list(dis.get_instructions(code))
    unpacks = [(ins, instrs[n + 1]) for n, ins in enumerate(instrs)
               if ins.opname == "UNPACK_SEQUENCE"]
    assert len(unpacks) == 2
    ops = plan.ops
    for ins, after in unpacks:
        (k,) = [k for k in range(len(ops) // OP_WORDS)
                if ops[k * OP_WORDS] == M_RECORD and ops[k * OP_WORDS + 1] == ins.offset]
        assert ops[k * OP_WORDS + 4] == READ_STORED
        assert after.offset not in plan.events


def test_a_finalizer_run_by_the_stores():
    # With values not kept, the objects the stores replace are freed inside
    # the STORE_FAST(_STORE_FAST): their __del__ frames start there, and the
    # unpacking before is recorded early (its outputs whose store has not
    # finished read from their stack slots).  The same rows as with the event
    # after the UNPACK_SEQUENCE, and the finalizers ran as untraced.
    on = _load("finalizer_in_the_stores", True)
    off = _load("finalizer_in_the_stores", False)
    assert on["main"](*on["ARGS"]) == 96
    untraced = list(on["LOG"])
    # (the pair made first is freed by the loop's first stores, each pair by the next)
    assert sorted(untraced) == [0, 10, 10, 11, 12, 20, 21, 22]
    runs = []
    for ns, ctx in ((on, Context(values="none")), (off, Context(values="none")),
                    (on, FollowAll(values="none"))):
        gc.collect()
        root = tracer.track(ns["main"], *ns["ARGS"], ctx=ctx)
        assert root.value == 96 and ns["LOG"] == untraced
        runs.append(root)
    quiet, evented, general = runs
    for other in (evented, general):
        assert_same_columns(quiet, other)
        tracer.validate(other)
    tracer.validate(quiet)
    assert quiet.trace.events < evented.trace.events
    # the finalizers' frames are in the trace (they ran inside the stores)
    names, _rows = quiet.trace.table().counts("function")
    assert "Noisy.__del__" in list(names)
