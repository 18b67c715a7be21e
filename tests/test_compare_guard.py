"""3.12's COMPARE_OP into a branch without an event at the jump (the core's
compare312.pxi): its value, edges and branch against an exact plan's (an event
right after every instruction whose value is read, the compare's read off the
stack), for operands whose compare may or may not return a bool, switching type
from one execution to the next, in recursion and generators; on 3.13 the same
traces (there the compiler's bool flag does it)."""

import math
import sys

import numpy as np
import pytest

import tracer
from tracer import Context, _core
from tracer.analysis.microops import M_RECORD_BOOL, OP_WORDS

from helpers import ReturnHook, assert_same_columns

PY312 = sys.version_info < (3, 13)
# What a numpy compare into a branch records: its result on 3.12; on 3.13 the
# compiler's bool flag makes the compare convert it (the value is a bool).
NP_BOOL = np.bool_ if PY312 else bool


def _same_value(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, (bool, int, float, str, type(None), np.generic)):
        return bool(a == b)
    return repr(type(a)) == repr(type(b))


def _check(f, *args):
    """f(*args) traced on the plain plan and on an exact one (snapshots: the
    compare's value read off the stack at an event): the same rows, values
    and edges; the plain one with no more events.  Returns the plain root."""
    fast = tracer.track(f, *args)
    exact = tracer.track(f, *args, ctx=Context(snapshot="copy"))
    ta, tb = assert_same_columns(fast, exact)
    for row in range(len(ta)):
        assert _same_value(ta.value(row), tb.value(row)), \
            f"row {row}: {ta.value(row)!r} against {tb.value(row)!r}"
    assert ta.events <= tb.events
    tracer.validate(fast)
    tracer.validate(exact)
    return fast


def _compare_values(root):
    """The values of the operator.lt/le/eq/... rows anywhere under root, in order."""
    import operator
    cmp = {operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge}
    out = []

    def walk(node):
        for child in node.children:
            fn = getattr(getattr(child, "function", None), "value", None)
            if any(fn is c for c in cmp):
                out.append(child.value)
            walk(child)
    walk(root)
    return out


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


class IntSub(int):
    pass


class Weird:
    """`<` returns neither True nor False: a list whose truth is its length."""

    def __init__(self, k):
        self.k = k

    def __lt__(self, other):
        return [0] * self.k

    def __sub__(self, other):
        return Weird(self.k - other)

    def __add__(self, other):
        return self


def test_plain_plan_has_no_event_at_the_jump():
    plan = _core.plan_of(fib.__code__)
    ops = list(plan.ops)
    codes = [ops[i] for i in range(0, len(ops), OP_WORDS)]
    assert M_RECORD_BOOL in codes   # on 3.12 too: the compare is a RECORD_BOOL


@pytest.mark.parametrize("arg", [
    12, 12.0, True, IntSub(9), np.int64(9), np.float64(7.0),
], ids=["int", "float", "bool", "int-subclass", "np.int64", "np.float64"])
def test_recursion_values(arg):
    root = _check(fib, arg)
    values = _compare_values(root)
    assert values
    if type(arg) in (int, float, bool):
        assert all(v is True or v is False for v in values)
    if isinstance(arg, np.generic):
        assert all(type(v) is NP_BOOL for v in values)


def fib_alone(n):
    # (a code object of its own: no other test's operands switch its jump on)
    if n < 2:
        return n
    return fib_alone(n - 1) + fib_alone(n - 2)


def test_events_per_call_as_on_313():
    # PY_START, the second call's end and PY_RETURN: 3 per call, the jump's
    # event only at its first execution in the trace.
    root = _check(fib_alone, 12)
    calls = sum(1 for _ in _walk_calls(root))
    assert root.trace.events <= 3 * calls + 2


def _walk_calls(node):
    yield node
    for child in node.children:
        if len(child):
            yield from _walk_calls(child)


def test_exact_then_other_then_exact_in_one_process():
    # The jump's event off after exact operands, switched on for good by a
    # numpy operand (its value recorded), exact again after.
    for arg in (10, np.int64(6), 10, IntSub(5), 7.5):
        root = _check(fib, arg)
        if isinstance(arg, np.generic):
            assert all(type(v) is NP_BOOL for v in _compare_values(root))


def loop(x, n):
    r = 0.0
    i = 0
    while i < n:
        r += x ** i
        i += 1
    return r


def test_loop_int_float_and_numpy_bounds():
    for n in (50, 20.5, np.int64(7), IntSub(6), 40):
        root = _check(loop, 1.01, n)
        values = _compare_values(root)
        assert len(values) == math.ceil(float(n)) + 1
        if isinstance(n, np.generic):
            assert all(type(v) is NP_BOOL for v in values)


def switching(items, limit):
    # A type switching mid-loop: the compared value changes type.
    out = 0
    for v in items:
        if v < limit:
            out += 1
        limit = limit + 1
    return out


def test_type_switching_mid_loop():
    items = [1, 2.5, "a" if False else 3, np.int64(4), 5, IntSub(6), 7.0, np.float64(1), 9]
    root = _check(switching, items, 4)
    values = _compare_values(root)
    assert [type(v) for v in values] == [
        bool, bool, bool, NP_BOOL, bool, bool, bool, NP_BOOL, bool]


def counter_switch(n):
    i = 0
    total = 0
    while i < n:
        total += i
        if i == 3:
            i = np.int64(i)
        i += 1
    return total


def test_local_switching_type_in_the_loop():
    root = _check(counter_switch, 8)
    types = [type(v) for v in _compare_values(root)]
    # (`i < n` and `i == 3` of the first four iterations, then numpy's)
    assert types == [bool] * 8 + [NP_BOOL] * 9
    assert root.value == counter_switch(8)


def strings(words, pivot):
    n = 0
    for w in words:
        if w < pivot:
            n += 1
        if w == "stop":
            break
    return n


def test_strings_and_mixed_operands():
    _check(strings, ["b", "z", "a", "stop", "q"], "m")
    _check(strings, ["b", np.str_("a"), "z"], "m")


def weird(w, k):
    if w < k:
        return 1
    return 0


def test_non_bool_results():
    root = _check(weird, Weird(2), 1)
    assert _compare_values(root) == ([[0, 0]] if PY312 else [True])
    root = _check(weird, Weird(0), 1)
    assert _compare_values(root) == ([[]] if PY312 else [False])
    _check(weird, 1, 2)


def nan_loop(xs, y):
    c = 0
    for x in xs:
        if x < y:
            c += 1
        if x != x:
            c += 10
    return c


def test_nan():
    _check(nan_loop, [1.0, float("nan"), 3.0], 2.0)
    _check(nan_loop, [1.0, 2.0], float("nan"))


def truth_raises(a):
    if a < 3:
        return 1
    return 0


def test_the_jump_raises_on_a_value_without_truth():
    with pytest.raises(ValueError):
        tracer.track(truth_raises, np.array([1, 5]))
    partial = tracer.last_trace()
    with pytest.raises(ValueError):
        tracer.track(truth_raises, np.array([1, 5]), ctx=Context(snapshot="copy"))
    exact = tracer.last_trace()
    assert_same_columns(partial, exact)
    values = _compare_values(partial)
    # (3.12: the compare's array, then the jump raises; 3.13: the compare raises)
    assert len(values) == 1 and type(values[0]) is (np.ndarray if PY312 else ValueError)


def compare_raises(a, b):
    if a < b:
        return 1
    return 0


def test_the_compare_raises():
    with pytest.raises(TypeError):
        tracer.track(compare_raises, 1, "a")
    tracer.validate(tracer.last_trace())
    _check(compare_raises, 1, 2)


def gen(n):
    i = 0
    while i < n:
        yield i
        i += 1


def drain(n):
    return sum(gen(n))


def test_generators():
    for n in (6, np.int64(4), 5.5, 6):
        root = _check(drain, n)
        if isinstance(n, np.generic):
            assert any(type(v) is NP_BOOL for v in _compare_values(root))


def produce(k):
    return k


def after_call(k):
    x = produce(k)
    if x < 2:
        return 0
    return after_call(x - 1) + 1


def test_compare_right_after_a_call():
    # The segment starting after a call holds the compare: its event stays on.
    for k in (6, np.int64(5), 6):
        _check(after_call, k)


def restarts(n):
    i = 0
    while i < n:
        if i == 2:
            sys.monitoring.restart_events()   # (anyone may, at any time)
        i += 1
    return i


def test_someone_else_restarts_events():
    _check(restarts, 6)


def site(a, b):
    if a < b:
        return 1
    return 0


def sites(values):
    return [site(v, 2) for v in values]


@pytest.mark.skipif(not PY312, reason="3.12's guard")
def test_guard_switches_the_jump_on_for_good():
    base = tracer.track(sites, [1] * 10).trace.events
    switched = _check(sites, [1] * 5 + [np.int64(1)] + [1] * 4).trace.events
    assert switched >= base + 5      # the jump's event from the numpy operand on
    assert tracer.track(sites, [1] * 10).trace.events >= base + 9   # on for good
    _check(sites, [1, 3, 2.5])


def test_per_row_paths_on_the_plain_plan():
    for args in ((1.01, 30), (1.01, np.int64(5)), (1.01, 30)):
        fast = tracer.track(loop, *args)
        hooked = tracer.track(loop, *args, ctx=ReturnHook())
        ta, tb = assert_same_columns(fast, hooked)
        for row in range(len(ta)):
            assert _same_value(ta.value(row), tb.value(row))
        assert ta.events == tb.events
