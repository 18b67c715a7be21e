"""A statement call of a C method that returns None, completed at the frame's
next event (src/tracer/_core/aftercall.pxi's NONE_CALLEES).

`out.append(x)` as a statement is CALL, POP_TOP: an event at the CALL (it reads
the callee and the arguments) and one right after it (at the POP_TOP) that only
reads the call's result.  list.append, dict.update, deque.append and the other
NONE_CALLEES return None whenever they return, so that event is switched off
and the call's row is completed with None at the frame's next event, wherever
it is.  Any other callee reaching the site switches the event on again.  Each
trace must equal the general paths' (a `canrecur` context), value by value,
with fewer events where the event went off.
"""

import collections
import gc
import itertools
import sys
import threading
import types

import pytest

import tracer
from tracer.views.nodes import node_at

from helpers import assert_same_trace
from test_call_paths import FollowAll

_FRESH = itertools.count()


def fresh(f):
    """`f` with a code object of its own: whether the event after a call is off is
    kept per code object and process."""
    code = f.__code__.replace(co_name=f"{f.__name__}_{next(_FRESH)}")
    return types.FunctionType(code, f.__globals__, code.co_name, f.__defaults__)


def plain_vs_general(f, *args):
    plain = tracer.track(f, *args)
    general = tracer.track(f, *args, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)
    return plain, general


def none_rows(root):
    t = root.trace
    return [row for row in range(len(t))
            if getattr(getattr(node_at(t, row), "function", None), "value", None) in
            (list.append, collections.deque.append)]


XS = [3, -1, 4, 1, -5, 9, 2, -6, 5, 3] * 4


def appends(xs):
    out = []
    for x in xs:
        out.append(x)           # the next event: the loop's FOR_ITER
    return out


def appends_then_branch(xs):
    out = []
    neg = []
    for x in xs:
        out.append(x * 2)
        if x < 0:               # a silent branch right after the POP_TOP
            neg.append(x)
            continue
        out.append(-x)
    return out, neg


def helper(x):
    return x + 1


def appends_then_python_call(xs, f=helper):
    out = []
    for x in xs:
        out.append(x)
        y = f(x)                # a local callee: no event before its CALL
        out.append(y)
    return out


def appends_then_raise(xs):
    out = []
    for x in xs:
        try:
            out.append(x)
            out.append(10 // (x - 1))   # raises for x == 1, after the append returned
        except ZeroDivisionError:
            out.append("zero")
    return out


def appends_then_return(x):
    out = []
    out.append(x)
    out.append(x + 1)
    return out


def appends_in_a_generator(xs):
    out = []
    for x in xs:
        out.append(x)
        yield len(out)          # PY_YIELD is the frame's next event


def drain(xs):
    return list(appends_in_a_generator(xs))


def while_back_to_the_call(n):
    out = []
    i = 0
    while i < n:
        out.append(i)           # the next event: this CALL's own, one round later
        i += 1
    return out


def other_callees(xs):
    d = collections.deque()
    s = set()
    m = {}
    rows = []
    for x in xs:
        d.append(x)
        d.appendleft(-x)
        s.add(x)
        s.discard(-x)
        m.update({x: x})
        rows.insert(0, x)
        rows.extend((x, x))
        rows.reverse()
    d.rotate(3)
    rows.sort()
    rows.clear()
    return list(d), sorted(s), m, rows


def bound(xs):
    out = []
    add = out.append            # a method bound from list.append
    for x in xs:
        add(x)
    return out


@pytest.mark.parametrize("f, args", [
    (appends, (XS,)), (appends_then_branch, (XS,)), (appends_then_python_call, (XS,)),
    (appends_then_raise, (XS,)), (appends_then_return, (7,)), (drain, (XS,)),
    (while_back_to_the_call, (9,)), (other_callees, (XS,)), (bound, (XS,)),
])
def test_none_calls_equal_the_general_paths(f, args):
    g = fresh(f)
    if f is drain:
        g = types.FunctionType(f.__code__, {**f.__globals__,
                                            "appends_in_a_generator": fresh(appends_in_a_generator)})
    for _ in range(2):          # the second run starts with the event already off
        plain = tracer.track(g, *args)
        assert plain.value == f(*args)
        tracer.validate(plain)
    general = tracer.track(g, *args, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)
    for row in none_rows(plain):
        assert plain.trace.value(row) is None


def test_the_event_after_the_call_goes_off():
    g = fresh(appends)
    plain, general = plain_vs_general(g, XS)
    # One event fewer per append once the location is off (the first append's
    # event switched it off).
    assert plain.trace.events == general.trace.events - (len(XS) - 1)


class Hashed:
    """An element whose __hash__ and __eq__ are Python code: frames entered while
    set.add's and list.remove's CALL still executes."""

    def __init__(self, v):
        self.v = v

    def __hash__(self):
        return hash(self.v)

    def __eq__(self, other):
        return isinstance(other, Hashed) and self.v == other.v


class Finalized:
    """An element whose finalizer runs inside list.remove / list.clear (its last
    reference dropped there)."""

    log = []

    def __init__(self, v):
        self.v = v

    def __del__(self):
        Finalized.log.append(self.v)


def python_inside(n):
    s = set()
    items = []
    for i in range(n):
        s.add(Hashed(i % 3))
        items.append(Finalized(i))
        items.remove(items[-1])      # __eq__ of Finalized is identity; __del__ runs here
        items.append(Finalized(-i))
    items.clear()                   # finalizers run inside clear
    keyed = [Hashed(i) for i in range(n)]
    keyed.sort(key=lambda h: -h.v)  # the key function's frames inside sort
    keyed.extend(Hashed(i) for i in range(2))   # a generator's frames inside extend
    return len(s), [h.v for h in keyed]


def test_callees_that_run_python_code():
    g = fresh(python_inside)
    gc.collect()
    plain, general = plain_vs_general(g, 6)
    assert plain.value == python_inside(6)


def removes(xs):
    out = list(xs)
    n = 0
    for x in xs:
        try:
            out.remove(x + 100)     # raises ValueError out of the call
        except ValueError:
            n += 1
        out.remove(x)
    return n, out


def test_a_call_that_raises():
    g = fresh(removes)
    for _ in range(2):
        plain, general = plain_vs_general(g, XS)
    assert plain.value == removes(XS)


CALLEE = list.append


def site(xs):
    out = []
    for x in xs:
        CALLEE(out, x)
    return out


def returns_five(out, x):
    return 5


@pytest.mark.parametrize("other", [returns_five, list.__contains__, list.count,
                                   lambda out, x: out.append(x), collections.deque.append])
def test_a_site_whose_callee_changes(other):
    global CALLEE
    g = fresh(site)

    def driver():
        global CALLEE
        out = []
        for c in [list.append] * 4 + [other] + [list.append] * 3 + [other] * 2:
            CALLEE = c
            try:
                out.append(g(XS[:6]))
            except TypeError as e:    # deque.append given a list
                out.append(type(e))
        return out

    try:
        plain = tracer.track(driver)
        general = tracer.track(driver, ctx=FollowAll())
        assert_same_trace(plain, general, fewer_events=True)
    finally:
        CALLEE = list.append


class MyList(list):
    pass


class Overridden(list):
    def append(self, x):
        # (not super().append: which objects LOAD_SUPER_ATTR leaves on the stack
        # depends on its specialization, which re-instrumenting the code resets)
        list.append(self, x)
        return "mine"


def appends_to(out, xs):
    for x in xs:
        out.append(x)
    return out


@pytest.mark.parametrize("make", [MyList, Overridden])
def test_subclasses(make):
    g = fresh(appends_to)
    for _ in range(2):
        plain = tracer.track(g, make(), XS)
    general = tracer.track(g, make(), XS, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)


def test_restart_by_another_tool_fires_the_event_again():
    g = fresh(appends_then_branch)

    def driver():
        out = []
        for i in range(12):
            out.append(g(XS))
            if i % 4 == 1:
                sys.monitoring.restart_events()
        return out

    plain_vs_general(driver)


NESTED_INNER = fresh(appends)


def nested_track(xs):
    inner = tracer.track(NESTED_INNER, xs)
    return appends(xs) + inner.value


def test_nested_track():
    plain = tracer.track(nested_track, XS)
    tracer.validate(plain)
    assert plain.value == 2 * appends(XS)
    general = tracer.track(nested_track, XS, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)


def test_threads_tracking_the_same_site():
    g = fresh(appends_then_branch)
    errors = []
    results = []

    def work():
        try:
            for _ in range(3):
                root = tracer.track(g, XS)
                tracer.validate(root)
                results.append(root.value)
        except BaseException as e:   # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(r == appends_then_branch(XS) for r in results)


@pytest.mark.parametrize("values", ["none", "summary"])
def test_under_value_policies(values):
    from tracer.context import Context
    # (python_inside's finalizers run where the policy lets the values go, at
    # different rows on the two paths, base build included: not used here)
    g = fresh(other_callees)
    h = fresh(appends_then_branch)

    def driver():
        return g(XS), h(XS), removes(XS)

    for _ in range(2):
        plain = tracer.track(driver, ctx=Context(values=values))
    general = tracer.track(driver, ctx=FollowAll(values=values))
    assert_same_trace(plain, general, fewer_events=True)


# -- plain and general runs alternated ---------------------------------------------
#
# A location a plain run switched off is on again when the next recorder gives the
# code its events (CPython re-instruments every location for the tool: `_core.
# locations_on`).  The check at the call must then know it is on: a general run
# (hooks) that believed it still off called restart_events() mid-run, which
# switched on again the locations its own callbacks had switched off; on 3.12 a
# compare's jump then fired twice (one event more than the same run after a
# general one), and the call site stayed on for good, so the plain runs after it
# fired every event.

def leaf(i):
    return i * 2


def compares_and_calls(n):
    # (3.12: `i < 3` and `i > n - 3` are guarded compares whose jump's event goes
    # off; leaf's END goes off after its body returns; out.append's END is a
    # NONE_CALL's)
    out = []
    total = 0
    for i in range(n):
        if i < 3:
            total += 1
        total += leaf(i)
        if i > n - 3:
            total -= 1
        out.append(total)
        total += leaf(i + 1)
    return total, out


@pytest.mark.parametrize("f, args", [
    (compares_and_calls, (8,)),
    (appends_then_branch, (XS,)),
    (other_callees, (XS,)),
])
def test_plain_and_general_runs_alternated(f, args):
    f = fresh(f)
    f(*args)
    gc.collect()
    gc.disable()
    try:
        general_first = tracer.track(f, *args, ctx=FollowAll())
        plain = tracer.track(f, *args)
        general = tracer.track(f, *args, ctx=FollowAll())
        plain_again = tracer.track(f, *args)
        general_again = tracer.track(f, *args, ctx=FollowAll())
    finally:
        gc.enable()
    assert_same_trace(plain, general_first, fewer_events=True)
    assert_same_trace(plain_again, general_first, fewer_events=True)
    assert_same_trace(general, general_first)
    assert_same_trace(general_again, general_first)
    assert general.trace.events == general_again.trace.events == general_first.trace.events
    # The plain run after a general one switches the same events off again.
    assert plain_again.trace.events == plain.trace.events < general.trace.events

