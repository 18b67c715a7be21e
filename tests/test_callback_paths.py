"""The callbacks' fast path and the check at a call alone (session 19).

src/tracer/_core/callbacks.pxi: the PY_START, INSTRUCTION and PY_RETURN
callbacks take the common case themselves (the one live recorder, fed by their
tool, called as CPython calls them) and hand everything else to the generic
callback of their signature: a recorder of another thread live at the same time
(each thread's own slot), a recorder nested in another.  Traces taken either way
must be the same.

src/tracer/_core/events.pxi `_call_end_settled`: at the event that starts a call
op alone (S), the callee on the stack being the followed function last checked
there settles the check without `_check_skip`; a different callee (another
Python function, a C function, a class, a bound method, a generator function) at
that site goes on to `_check_skip` as before.  Each trace equals the general
paths' (a `canrecur` context, which takes none of this).
"""

import threading

import pytest

import tracer

from helpers import assert_same_trace
from test_call_paths import FollowAll


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def _fresh_fib():
    # A function of its own code object: its plan and its END locations start
    # fresh (no location switched off by an earlier test).
    ns = {}
    exec("def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n", ns)
    return ns["fib"]


def test_fib_alone_equals_the_general_paths():
    f = _fresh_fib()
    for _ in range(3):   # the END after the call off from the second run on
        plain = tracer.track(f, 12)
        general = tracer.track(f, 12, ctx=FollowAll())
        assert plain.value == 144
        assert_same_trace(plain, general, fewer_events=True)


def test_events_while_another_threads_recorder_is_live():
    # Two recorders live: the callbacks read each thread's slot (the generic
    # callback), not the only-recorder global.  The main thread's trace is the
    # same as taken alone.
    f = _fresh_fib()
    alone = tracer.track(f, 11)
    started = threading.Event()
    release = threading.Event()
    errors = []

    def waiting(n):
        started.set()
        release.wait(30)
        return n

    def other():
        try:
            root = tracer.track(waiting, 5)
            assert root.value == 5
        except BaseException as e:   # reported below
            errors.append(e)

    t = threading.Thread(target=other)
    t.start()
    try:
        assert started.wait(30)
        both = tracer.track(f, 11)
        general = tracer.track(f, 11, ctx=FollowAll())
    finally:
        release.set()
        t.join()
    assert not errors
    assert both.value == alone.value == 89
    assert_same_trace(alone, both, fewer_events=True)   # (no END switched off while two live)
    assert_same_trace(both, general, fewer_events=True)


def _nested_fib(n):
    inner = tracer.track(fib, 6)
    return fib(n) + inner.value


def test_a_nested_recorder():
    # The nested track's recorder and the outer one live at once.
    plain = tracer.track(_nested_fib, 9)
    general = tracer.track(_nested_fib, 9, ctx=FollowAll())
    assert plain.value == 34 + 8
    assert_same_trace(plain, general, fewer_events=True)
    tracer.validate(plain)


def _half(n):
    return n // 2


class Halver:
    def __init__(self, n):
        self.n = n // 2

    def get(self, n):
        return n // 2


def _gen_half(n):
    yield n // 2


CALLEES = {
    "python": _half,
    "builtin": abs,
    "class": Halver,
    "method": Halver(0).get,
    "generator": _gen_half,
}


def _down(n, callees):
    # One call site: a recursion through _down, now and then another callee at
    # the same site (the END after the call may be off from the recursion).
    if n <= 0:
        return 0
    step = callees[n % len(callees)]
    if step is None:
        return _down(n - 1, callees) + 1
    got = step(n)
    return _down(n - 1, callees) + (got if isinstance(got, int) else 1)


@pytest.mark.parametrize("other", sorted(CALLEES))
def test_a_recursion_whose_site_sees_another_callee(other):
    callees = [None] * 6 + [CALLEES[other]]
    for _ in range(2):
        plain = tracer.track(_down, 40, callees)
        general = tracer.track(_down, 40, callees, ctx=FollowAll())
        assert plain.value == _down(40, callees)
        assert_same_trace(plain, general, fewer_events=True)


def _ping(n):
    if n <= 0:
        return 0
    return _pong(n - 1) + 1


def _pong(n):
    if n <= 0:
        return 0
    return _ping(n - 1) + 2


def _alternating(n):
    # Two functions called at one site in turn: the cached callee is the other
    # one at every other call.
    total = 0
    for i in range(n):
        f = _ping if i % 2 else _pong
        total += f(i)
    return total


def test_a_site_whose_python_callee_alternates():
    for _ in range(2):
        plain = tracer.track(_alternating, 12)
        general = tracer.track(_alternating, 12, ctx=FollowAll())
        assert plain.value == _alternating(12)
        assert_same_trace(plain, general, fewer_events=True)
