"""The op loop's compiled row templates (src/tracer/_core/template.pxi) write the
rows the op loop writes.

When a plan is loaded, each run of the op loop made only of loads, constants,
copies, stores of rows, captures, records and silent jumps (and the branch that
ends it) is compiled into a template, written at its event in one routine.  A
trace recorded with templates must equal the same run's trace recorded without
them (`use_templates(False)`: every run through the op loop), column by column,
value by value and event by event: for many segment shapes, with constants first
used inside a run, locals read before they were seen (generators resumed), cells,
columns growing inside runs, under every value policy, and with a context whose
hooks make every row take the per-row path.
"""

import math
import random

import pytest

import tracer
from tracer._core import spare_columns_limit, templates_of, use_templates
from tracer.context import Context

from helpers import assert_same_trace


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def geom(rng, n, beta):
    if rng.random() < beta:
        return n
    return geom(rng, n + 1, beta)


def geoms(k):
    rng = random.Random(5)
    return [geom(rng, 0, 0.4) for _ in range(k)]


def straight(a, b):
    c = a + b; d = c * a; e = d - b; f = e * c; g = f + d
    h = g - e; i = h * 2; j = i + 7; k = j - c; m = k * d
    return m + 1.5 - a * b + c + d + e + f + g + h + i + j + k


def branches(xs):
    out = 0
    for x in xs:
        if x is None:
            out += 1
        elif x is not None and x > 3:
            out -= x
        elif not x:
            out *= 2
        else:
            out = out + (x if x % 2 else -x)
    return out


def conditions(a, b, c):
    # Branches on locals, on constants loaded into the jump, chained comparisons,
    # and/or (copies and swaps on the stack), a ternary.
    r = 0
    if a:
        r += 1
    if a and b or c:
        r += 2
    if 0 < a < 10:
        r += a
    r += a if b else c
    while a > 0:
        a -= 1
        if a == 3:
            continue
        if a == 1:
            break
        r += a
    return r


def stores(xs):
    d = {}
    lst = [0] * 4
    for i, x in enumerate(xs):
        d[x % 5] = i
        lst[i % 4] = x
        lst[1:2] = [x]
        del d[x % 5]
        d[x] = x
    return len(d) + sum(lst)


class Vec:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm(self):
        return math.sqrt(self.x * self.x + self.y * self.y)

    def add(self, o):
        return Vec(self.x + o.x, self.y + o.y)


def methods(n):
    v = Vec(0.5, 1.5)
    t = 0.0
    for i in range(n):
        v = v.add(Vec(i, -i))
        t += v.norm()
    return t


def closure(n):
    k = 3

    def inner(x):
        return x * k + n

    return sum(inner(i) for i in range(n)) + [inner(j) for j in range(3)][0]


def gen(n):
    a = 1
    for i in range(n):
        b = a * 2
        yield a + b + i
        a = b - i


def generators(n):
    return sum(gen(n)) + max(x * 2 for x in gen(n // 2 + 1))


def raising(xs):
    t = 0
    for x in xs:
        try:
            t += 10 // x
        except ZeroDivisionError:
            t -= 1
        finally:
            t += 1
    return t


def first_constants(n):
    # Each constant is first used inside a run (the op loop pools it there).
    a = n + 12345
    b = a * 2.75
    c = b - "xyz".count("y")
    return (a, b, c, n - 98765)


def mixed(xs):
    total = 0
    for k, v in enumerate(xs):
        a, b = divmod(v, 3)
        if a > b:
            total += straight(a, b)
        else:
            total -= len(str(v)) * 1.25
    return total


CASES = [
    (fib, (12,)),
    (geoms, (30,)),
    (straight, (3, 4.5)),
    (branches, ([None, 0, 1, 2, 5, 7, None, 3, 0],)),
    (conditions, (6, 0, 1)),
    (conditions, (0, 1, 0)),
    (stores, (list(range(40)),)),
    (methods, (30,)),
    (closure, (12,)),
    (generators, (12,)),
    (raising, ([1, 0, 2, 0, 3],)),
    (first_constants, (7,)),
    (mixed, (list(range(200)),)),
]


class ReturnHook(Context):
    """A node hook: every row takes the per-row path (no template, no op loop)."""

    def trackedreturn(self, node) -> None:
        pass


def _traced(f, args, on, ctx=None):
    was = use_templates(on)
    try:
        return tracer.track(f, *args, ctx=ctx) if ctx is not None else tracer.track(f, *args)
    finally:
        use_templates(was)


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("call", CASES, ids=lambda c: c[0].__name__ if callable(c[0]) else "")
def test_templates_write_the_op_loops_rows(call, fresh):
    f, args = call
    # fresh: no spare columns, so the columns grow inside template runs.
    old = spare_columns_limit(0) if fresh else None
    try:
        fast = _traced(f, args, True)
        slow = _traced(f, args, False)
    finally:
        if old is not None:
            spare_columns_limit(old)
    assert fast.value == slow.value == f(*args)
    assert_same_trace(fast, slow)


@pytest.mark.parametrize("call", CASES, ids=lambda c: c[0].__name__)
def test_templates_match_the_per_row_writers(call):
    f, args = call
    fast = _traced(f, args, True)
    slow = _traced(f, args, True, ReturnHook())
    assert fast.value == slow.value
    assert_same_trace(fast, slow, fewer_events=True)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
@pytest.mark.parametrize("call", [CASES[0], CASES[2], CASES[7], CASES[12]],
                         ids=lambda c: c[0].__name__)
def test_templates_under_a_value_policy(call, values):
    f, args = call
    fast = _traced(f, args, True, Context(values=values))
    slow = _traced(f, args, False, Context(values=values))
    assert fast.value == slow.value
    assert_same_trace(fast, slow)


def test_a_template_run_with_a_constant_first_used_is_the_op_loops():
    # A new trace: the plan's constants are not pooled in it yet, so the first
    # run of each template gives way to the op loop, and later ones do not.
    for _ in range(3):
        fast = _traced(first_constants, (11,), True)
        slow = _traced(first_constants, (11,), False)
        assert_same_trace(fast, slow)


def test_templates_are_made_for_fibs_segments():
    # fib's plain plan: the runs measured in bench/RESULTS.md are templates' (the
    # branch at `n < 2` taken either way, S1's and S2's runs, `+` at the return).
    tracer.track(fib, 5)
    plain, branched = templates_of(fib.__code__)
    assert plain >= 4 and branched >= 1
