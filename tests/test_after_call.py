"""The INSTRUCTION event after a call, switched off where the call's body returned
(src/tracer/_core/aftercall.pxi).

`[a, CALLEE(x - 1)]` has an event at the CALL (it reads `x - 1` and the global
off the stack) and one at BUILD_LIST right after it, which only reads the call's
result.  When CALLEE is a Python function the recorder follows, its PY_RETURN
completes the call's row and the BUILD_LIST event is switched off; the next
execution of the CALL with any other callee (a C function, a class, a generator
function, a bound method, tracer's own code) switches it on again first.  Each
trace must equal the general paths' (a `canrecur` context, which takes none of
this), value by value, and its call rows must hold what the callees returned.
"""

import itertools
import sys
import threading
import types

import pytest

import tracer
from tracer.context import Context
from tracer.views.nodes import node_at
from tracer.views.values import short_value

from helpers import assert_same_trace
from test_call_paths import FollowAll


def add_one(x):
    return x + 1


def twice(x):
    return 2 * x


def const_back(x):
    return 7     # returned through the general return path (a constant)


def counting(x):
    yield x


class Box:
    def __init__(self, v):
        self.v = v

    def get(self, x):
        return self.v + x


FINALIZED = []


def note(v):
    FINALIZED.append(v)
    return v


class Noisy:
    def __del__(self):
        note(len(FINALIZED))


def leaves_garbage(x):
    keep = Noisy()   # freed as the frame is cleared, after its PY_RETURN
    return x * 3


CALLEE = add_one


def site(a, x):
    return [a, CALLEE(x - 1)]


_SITE_CODE = site.__code__
_FRESH = itertools.count()


@pytest.fixture(autouse=True)
def fresh_site():
    """A new code object for `site` in every test: whether its event after the
    call stays on for good is kept per code object (and process)."""
    global site
    code = _SITE_CODE.replace(co_name=f"site_{next(_FRESH)}")
    site = types.FunctionType(code, globals(), code.co_name)
    yield


def driver(callees):
    global CALLEE
    out = []
    for i, c in enumerate(callees):
        CALLEE = c
        out.append(site(i, i + 2))
    return out


def _expected(callees):
    global CALLEE
    old = CALLEE
    try:
        return driver(callees)
    finally:
        CALLEE = old


def _plain_vs_general(callees):
    FINALIZED.clear()
    plain = tracer.track(driver, callees)
    general = tracer.track(driver, callees, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)
    return plain, general


def _nodes(root):
    return [node_at(root.trace, row) for row in range(len(root.trace))]


def _callee(node):
    fn = getattr(node, "function", None)
    return getattr(fn, "value", fn)


def _calls_of(root, fn):
    """The call nodes whose callee is `fn` (a node's or a constant's value)."""
    return [n for n in _nodes(root) if _callee(n) is fn]


PY = [add_one] * 4


@pytest.mark.parametrize("other", [abs, float, Box, counting, Box(3).get, short_value,
                                   const_back, leaves_garbage, twice, (5).__add__])
def test_a_site_whose_callee_changes(other):
    callees = PY + [other] + PY + [other] * 2 + PY
    plain, general = _plain_vs_general(callees)
    assert [v[0] for v in plain.value] == list(range(len(callees)))
    # Every call row at the site holds what its callee returned, and the list
    # built right after it holds that row's value.
    for node in _calls_of(plain, add_one):
        assert node.value == node.arguments[0].value + 1
    others = _calls_of(plain, other)
    assert len(others) == 3 or other in (Box, add_one, twice)
    for node in others:
        assert node.dependents(), "the call's result is read by the BUILD_LIST after it"
        built = node.dependents()[0]
        assert built.value[1] is node.value


def test_python_callees_switch_the_event_after_the_call_off():
    callees = [add_one] * 50
    plain = tracer.track(driver, callees)
    general = tracer.track(driver, callees, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)
    # One event per site call fewer once the location is off (it fires once).
    assert plain.trace.events <= general.trace.events - 40


def test_c_callee_after_many_python_ones_is_recorded():
    callees = [add_one] * 20 + [abs] + [add_one] * 5 + [abs]
    plain, _ = _plain_vs_general(callees)
    abs_rows = _calls_of(plain, abs)
    assert [n.value for n in abs_rows] == [21, 27]
    # The list built after each call references the call's row.
    for n in abs_rows:
        assert n.dependents(), "the call's result is read by the BUILD_LIST after it"


@pytest.mark.parametrize("values", ["none", "summary"])
def test_finalizer_run_as_the_callee_frame_is_cleared(values):
    # Under a value policy the trace keeps no Noisy alive: the callee's local is
    # freed as its frame is cleared, after its PY_RETURN, while the caller still
    # executes the CALL (note's frame is entered there, beside the call).
    callees = [add_one] * 5 + [leaves_garbage] * 3 + [add_one] * 3
    FINALIZED.clear()
    plain = tracer.track(driver, callees, ctx=Context(values=values))
    assert FINALIZED
    FINALIZED.clear()
    general = tracer.track(driver, callees, ctx=FollowAll(values=values))
    assert FINALIZED
    assert_same_trace(plain, general, fewer_events=True)
    notes = [n for n in _nodes(plain) if getattr(n, "location", None) is not None
             and type(n).__name__ == "NestedCallNode" and "note" in repr(n)]
    assert len(notes) == 3


def test_restart_by_another_tool_fires_the_event_again():
    def driver_restarting(callees):
        global CALLEE
        out = []
        for i, c in enumerate(callees):
            CALLEE = c
            out.append(site(i, i + 2))
            if i % 7 == 3:
                sys.monitoring.restart_events()
        return out

    callees = [add_one] * 30 + [abs] * 3 + [add_one] * 10
    plain = tracer.track(driver_restarting, callees)
    general = tracer.track(driver_restarting, callees, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)


def test_threads_tracking_the_same_site():
    results = {}
    errors = []
    seqs = {0: [add_one] * 200 + [abs] * 5 + [add_one] * 50,
            1: [abs, add_one] * 100,
            2: [twice] * 150 + [Box] * 3}

    def work(k):
        try:
            for _ in range(3):
                root = tracer.track(driver, seqs[k])
                tracer.validate(root)
                results.setdefault(k, []).append(root.value)
        except BaseException as e:   # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in seqs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, runs in results.items():
        expected = _expected(seqs[k])
        for r in runs:
            assert [x[0] for x in r] == [x[0] for x in expected]
            assert [type(x[1]) for x in r] == [type(x[1]) for x in expected]


def nested(x):
    inner = tracer.track(driver, [add_one] * 5 + [abs])
    return x + len(inner.value)


def test_nested_track_in_a_callee():
    callees = [add_one] * 10 + [nested] + [add_one] * 5 + [abs]
    plain = tracer.track(driver, callees)
    tracer.validate(plain)
    assert plain.value == _expected(callees)


def test_general_context_with_hooks_after_the_event_was_switched_off():
    class Seen(Context):
        def trackedprimitive(self, node):   # a per-row hook: the general paths
            pass

    callees = [add_one] * 30
    tracer.track(driver, callees)   # switches the event off
    hooked = tracer.track(driver, callees + [abs], ctx=Seen())
    tracer.validate(hooked)
    rows = _calls_of(hooked, abs)
    assert [n.value for n in rows] == [len(callees) + 1]


def shifty(x):
    return x - 1


def _make(x):
    yield x


def swapping_driver(n, at):
    global CALLEE
    CALLEE = shifty
    out = []
    for i in range(n):
        if i == at:
            shifty.__code__ = _make.__code__   # the same function, a generator's code
        out.append(site(i, i + 2))
    return out


def test_a_function_whose_code_is_replaced_by_a_generators_mid_run():
    original = shifty.__code__
    try:
        plain = tracer.track(swapping_driver, 12, 8)
        shifty.__code__ = original
        general = tracer.track(swapping_driver, 12, 8, ctx=FollowAll())
        assert_same_trace(plain, general, fewer_events=True)
        gens = [v[1] for v in plain.value[8:]]
        assert all(hasattr(g, "__next__") for g in gens)
        built = [n for n in _nodes(plain) if _callee(n) is shifty]
        assert [n.value for n in built[8:]] == gens
    finally:
        shifty.__code__ = original


# -- the instruction after a call reached by other ways too ---------------------------
# `(k if c else seven(c)) + 1`: the call's segment ends at the `+ 1`'s first
# instruction (E), and so does the `k` side's (a silent jump to E, the branch
# before it silent: taken at E's event).  E must stay on, or the `k` side's
# segment, the branch and the `+` are lost (found by the fuzzer, seed 782178292).
def seven(p):
    return 7


def joined(c, k):
    y = (k if c else seven(c)) + 1
    return y


def joined_twice(k):
    return joined(0, k) + joined(1, k)   # the call's side first, then the other


def joined_loop(n, k):
    out = 0
    for i in range(n):
        c = (k if i % 2 else seven(i)) % 5   # (before the fix: `c` an UNKNOWN's)
        out += c
    return out


def joined_gen(n, k):
    out = 0
    for i in range(n):
        c = (k if i % 2 else seven(i)) % 5
        out += c
        yield out


def joined_in_generator(n):
    return sum(joined_gen(n, 3)) + sum(joined_gen(n, 4))


def _unknown_inputs(root):
    trace = root.trace
    return [row for row in range(len(trace)) for r in trace.refs(row)
            if not isinstance(r, int) and r[1] is tracer.views.UNKNOWN]


JOINED = [(joined_twice, (2,)), (joined_loop, (5, 3)), (joined_in_generator, (5,))]


@pytest.mark.parametrize("program", JOINED, ids=[p[0].__name__ for p in JOINED])
def test_the_instruction_after_a_call_that_other_ways_reach_stays_on(program):
    f, args = program
    plain = tracer.track(f, *args)
    general = tracer.track(f, *args, ctx=FollowAll())
    assert plain.value == general.value == f(*args)
    assert _unknown_inputs(plain) == []
    assert_same_trace(plain, general, fewer_events=True)
