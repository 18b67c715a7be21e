"""A call of builtin isinstance/issubclass completed at its branch
(src/tracer/_core/aftercall.pxi's bool calls).

`if isinstance(x, str):` has an event at the CALL (it reads the callee and the
arguments), one right after it (TO_BOOL on 3.13, the POP_JUMP on 3.12) that only
reads the call's result, and the branch's own BRANCH event (or, for a silent
branch, the frame's next event on the side taken).  isinstance and issubclass
return exactly True or False, so the branch's direction gives the result: the
event after the call is switched off and the call's row is completed where the
branch is taken.  Any other callee reaching the site switches it on again.
Each trace must equal the general paths' (a `canrecur` context), value by
value, with fewer events where the event went off.
"""

import itertools
import sys
import threading
import types

import pytest

import tracer
from tracer.views.nodes import node_at

from helpers import assert_same_trace
from test_call_paths import FollowAll

CHECK = isinstance


def evented(xs):
    # The branch's BRANCH event is used (both sides go on in this frame).
    n = 0
    for x in xs:
        if CHECK(x, str):
            n += 1
        else:
            n -= 1
    return n


def silent(xs):
    # Each branch silent: the frame's next event (a call, a return) shows the side.
    out = []
    for x in xs:
        if CHECK(x, int):
            out.append(x + 1)
            continue
        if CHECK(x, (list, tuple)):
            out.append(len(x))
            continue
        out.append(None)
    return out


def negated(xs):
    # POP_JUMP_IF_TRUE (`not`), and a result kept in a local is not a bool call.
    out = []
    for x in xs:
        if not CHECK(x, str):
            out.append(1)
        kept = CHECK(x, str)
        out.append(kept)
    return out


def returns_at_once(x):
    if CHECK(x, int):
        return x
    return -1


def subclass_checks(types_):
    out = 0
    for t in types_:
        if issubclass(t, int):
            out += 1
    return out


_FRESH = itertools.count()


def fresh(f):
    """`f` with a code object of its own: whether the event after a call is off is
    kept per code object and process."""
    code = f.__code__.replace(co_name=f"{f.__name__}_{next(_FRESH)}")
    return types.FunctionType(code, f.__globals__, code.co_name)


def plain_vs_general(f, *args):
    plain = tracer.track(f, *args)
    general = tracer.track(f, *args, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)
    return plain, general


def calls_of(root, fn):
    t = root.trace
    out = []
    for row in range(len(t)):
        node = node_at(t, row)
        callee = getattr(node, "function", None)
        if getattr(callee, "value", callee) is fn:
            out.append(node)
    return out


XS = ["a", 1, [2], "b", (3, 4), 5.0, None, "c", 6] * 6


@pytest.mark.parametrize("f", [evented, silent, negated, returns_at_once])
def test_bool_calls_equal_the_general_paths(f):
    g = fresh(f)
    args = (XS,) if f is not returns_at_once else (3,)
    plain, general = plain_vs_general(g, *args)
    assert plain.value == f(*args)
    for node in calls_of(plain, isinstance):
        assert node.value is isinstance(*[a.value for a in node.arguments])


@pytest.mark.parametrize("f", [evented, silent])
def test_the_event_after_the_call_goes_off(f):
    g = fresh(f)
    plain, general = plain_vs_general(g, XS)
    # One event fewer per isinstance call once the location is off.
    assert plain.trace.events <= general.trace.events - len(calls_of(plain, isinstance)) // 2


def test_issubclass():
    g = fresh(subclass_checks)
    ts = [int, bool, str, float, type(None)] * 10
    plain, general = plain_vs_general(g, ts)
    assert plain.value == subclass_checks(ts)
    assert plain.trace.events < general.trace.events


def not_a_bool(x, t):
    return 7 if isinstance(x, t) else 0    # truthy, not a bool: only E can read it


@pytest.mark.parametrize("other", [not_a_bool, hasattr, lambda x, t: None, callable.__call__])
def test_a_site_whose_callee_changes(other):
    global CHECK
    g = fresh(evented)
    h = fresh(silent)

    def driver():
        global CHECK
        out = []
        for k, c in enumerate([isinstance] * 6 + [other] + [isinstance] * 3 + [other] * 2):
            CHECK = c if c is not callable.__call__ else (lambda x, t: callable(x))
            try:
                out.append((g(XS), h(XS)))
            except TypeError as e:
                out.append(type(e))
        return out

    try:
        plain = tracer.track(driver)
        general = tracer.track(driver, ctx=FollowAll())
        assert_same_trace(plain, general, fewer_events=True)
    finally:
        CHECK = isinstance


class Meta(type):
    def __instancecheck__(cls, obj):
        return 1 if type(obj) is int else 0      # not a bool: isinstance makes it one


class Checked(metaclass=Meta):
    pass


class Shifty:
    @property
    def __class__(self):          # read by isinstance when the type test fails
        return int


class Raises(type):
    def __instancecheck__(cls, obj):
        raise ValueError("no")


class Bad(metaclass=Raises):
    pass


def python_inside(xs, cls):
    n = 0
    for x in xs:
        try:
            if isinstance(x, cls):
                n += 1
            else:
                n -= 1
        except ValueError:
            n += 100
    return n


def python_inside_silent(xs, cls):
    out = []
    for x in xs:
        if isinstance(x, cls):
            out.append(1)
            continue
        out.append(0)
    return out


def walk_while(x):
    # A loop whose body leads back to the call: a frame entered by isinstance
    # (Shifty's __class__) runs while the call's CALL still executes.
    n = 0
    while isinstance(x, int) and n < 5:
        n += 1
    return n


@pytest.mark.parametrize("cls", [Checked, int, (Checked, str), Bad])
@pytest.mark.parametrize("f", [python_inside, python_inside_silent])
def test_isinstance_that_runs_python_code(f, cls):
    if f is python_inside_silent and cls is Bad:
        pytest.skip("raises out of the loop")
    g = fresh(f)
    xs = [1, "a", Shifty(), 2.0, Shifty(), 3] * 4
    plain, general = plain_vs_general(g, xs, cls)
    assert plain.value == f(xs, cls)


@pytest.mark.parametrize("x", [Shifty(), 1, "a"])
def test_a_loop_back_to_the_call_with_python_inside(x):
    g = fresh(walk_while)
    for _ in range(2):
        plain_vs_general(g, x)


def test_restart_by_another_tool_fires_the_event_again():
    g = fresh(evented)

    def driver():
        out = []
        for i in range(12):
            out.append(g(XS))
            if i % 4 == 1:
                sys.monitoring.restart_events()
        return out

    plain_vs_general(driver)


def nested_track(xs):
    inner = tracer.track(NESTED_INNER, xs)
    return evented(xs) + inner.value


NESTED_INNER = fresh(evented)


def test_nested_track():
    plain = tracer.track(nested_track, XS)
    tracer.validate(plain)
    assert plain.value == 2 * evented(XS)
    general = tracer.track(nested_track, XS, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)


def test_threads_tracking_the_same_site():
    g = fresh(silent)
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
    assert all(r == silent(XS) for r in results)
