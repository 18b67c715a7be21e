"""The common call's one-routine paths (events.pxi) record what the general paths do.

A Python function called by the op its caller's pending segment is at, under a
context with no hooks, enters through `_enter_plain` (call row, argument rows,
frame record in one routine), returns through `_return_plain` (ReturnNode, the
call row closed, the frame popped), and its caller's next event completes the
call's row in `_close_open_call`.  A context with a `canrecur` hook takes the
general paths (`_enter`, `_leave`, `_record`) for every call and answers the same
(it follows everything): both must give the same trace, column by column, also
for the calls the plain paths hand over (closures over parameters, classes,
generators, `*args`, exceptions, keyword calls, constants first used as
arguments) and when the columns grow.

Under `Context(modules=[...])` a callee's verdict is kept per code object
(`_may_recur_cached`); a context that also has `canrecur` asks `_may_recur` every
time: both record the same calls as primitive.
"""

import random
import re

import pytest

import tracer
from tracer._core import spare_columns_limit
from tracer.context import Context

ADDRESS = re.compile(r"0x[0-9a-f]+")
COLUMNS = ("kind", "flags", "parent", "offset", "aux", "ref_start", "refs", "code")


class FollowAll(Context):
    """A canrecur hook that follows every call: the general entry and exit paths."""

    def canrecur(self, f, /, *args, **kwargs) -> bool:
        return True


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def kw(a, b=2, *, c=3):
    return a * b + c


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm1(self):
        return abs(self.x) + abs(self.y)


def closure_over(p):
    def inner():
        return p + 1
    return inner() + inner()


def gen(n):
    for i in range(n):
        yield kw(i, c=i)


def fails(x):
    if x > 3:
        raise ValueError(x)
    return x


def calls(n):
    total = 0
    for i in range(n):
        total += kw(i) + kw(i, 3) + kw(i, c=1) + kw(*(i, 2))
        total += Point(i, -i).norm1()
        total += closure_over(i)
        total += sum(gen(3))
        try:
            total += fails(i % 5)
        except ValueError:
            total -= 1
        total += fib(i % 6)
    return total


def _columns(root):
    # A ref into the pool as the pooled value's repr (addresses left out: a
    # closure's cells are new objects at each run): which entry a captured value
    # gets depends on Recorder._pool_ref's cache, hashed by address.
    trace = root.trace
    cols = trace.columns()
    out = {name: cols[name].tolist() for name in COLUMNS}
    out["refs"] = [r if r >= 0 else ADDRESS.sub("@", repr(trace.pool[-r - 1]))
                   for r in out["refs"]]
    return out, trace


def _same_trace(plain, general):
    a, ta = _columns(plain)
    b, tb = _columns(general)
    for name in COLUMNS:
        assert a[name] == b[name], f"column {name} differs"
    for row in range(len(ta)):
        va, vb = ta.value(row), tb.value(row)
        assert type(va) is type(vb), f"value of row {row}"
        if isinstance(va, (int, float, str, tuple, type(None))):
            assert va == vb, f"value of row {row}"
    # The plain paths may see fewer events: an INSTRUCTION event after a call
    # whose body's return completed it is switched off (aftercall.pxi).
    assert ta.events <= tb.events
    tracer.validate(plain)
    tracer.validate(general)


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("call", [(fib, (12,)), (calls, (60,)), (closure_over, (5,))])
def test_plain_call_paths_match_the_general_ones(call, fresh):
    f, args = call
    # fresh: no spare columns, so the first capacity is small and the columns grow
    # between calls (the plain paths hand a call that needs growth over).
    old = spare_columns_limit(0) if fresh else None
    try:
        plain = tracer.track(f, *args)
        general = tracer.track(f, *args, ctx=FollowAll())
    finally:
        if old is not None:
            spare_columns_limit(old)
    assert plain.value == general.value == f(*args)
    _same_trace(plain, general)


def test_plain_entry_writes_the_rows_of_a_call():
    root = tracer.track(fib, 3)
    trace = root.trace
    cols = trace.columns()
    kind, flags, parent = cols["kind"].tolist(), cols["flags"].tolist(), cols["parent"].tolist()
    nested = [row for row in range(1, len(trace)) if kind[row] == 3]   # K_NESTED
    assert len(nested) == 4   # fib(2), fib(1) in it, fib(0) in it, fib(1)
    for row in nested:
        # each: its function and its parameter as ArgumentNodes right after it
        assert kind[row + 1] == kind[row + 2] == 0
        assert trace.value(row + 1) is fib
        assert parent[row + 1] == parent[row + 2] == row
        assert not flags[row] & 4   # closed (F_OPEN cleared)
    tracer.validate(root)


class ModulesFollowAll(Context):
    """modules=[...] with a canrecur hook: _may_recur asked at every call."""

    def canrecur(self, f, /, *args, **kwargs) -> bool:
        return True


def draws(r, n):
    total = 0.0
    for i in range(n):
        total += r.gauss(i, 1.0) + r.uniform(0, 1) + kw(i)
    return total


def test_module_verdicts_kept_per_code_match_asking_every_call():
    cached = tracer.track(draws, random.Random(0), 300, ctx=Context(modules=["random"]))
    asked = tracer.track(draws, random.Random(0), 300, ctx=ModulesFollowAll(modules=["random"]))
    assert cached.value == asked.value
    _same_trace(cached, asked)
    trace = cached.trace
    # r.gauss and r.uniform are Python functions of `random`: primitive, no frame
    # of theirs recorded; kw is followed.
    followed = {c.co_name for c in trace.codes}
    assert "kw" in followed and "gauss" not in followed and "uniform" not in followed


def test_module_verdicts_are_per_context():
    # The same code under two contexts in one process: each context's verdict.
    primitive = tracer.track(draws, random.Random(0), 5, ctx=Context(modules=["random"]))
    followed = tracer.track(draws, random.Random(0), 5, ctx=Context())
    assert "gauss" not in {c.co_name for c in primitive.trace.codes}
    assert "gauss" in {c.co_name for c in followed.trace.codes}
    tracer.validate(primitive)
    tracer.validate(followed)
