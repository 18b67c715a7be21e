"""The callbacks' shortcut while one recorder is live in the whole process
(callbacks.pxi: the recorder kept in a plain global instead of a thread-local
slot): other threads' events reach it and are ignored, a nested track hands
the shortcut back to the outer recorder, and a second thread tracking at the
same time takes the thread-local slots again.  Each trace equals the same call
traced alone."""

import sys
import threading

import tracer
from tracer import _core
from tracer.views.nodes import CallNode


def rsum(n):
    return 0 if n == 0 else n + rsum(n - 1)


def shape(node):
    """Kinds, values and code locations of a subtree (no row numbers)."""
    loc = node.location
    value = node.value if isinstance(node.value, (int, bool, type(None))) else type(node.value).__name__
    return (type(node).__name__, value, None if loc is None else (loc.code.co_qualname, loc.offset),
            tuple(shape(c) for c in node.children))


def alone(f, *args):
    root = tracer.track(f, *args)
    tracer.validate(root)
    return shape(root)


def test_other_threads_running_the_same_code_are_not_recorded():
    want = alone(rsum, 40)
    stop = threading.Event()
    results = []

    def busy():
        # Untraced, in another thread, the same code as the traced call, while
        # the traced call runs (fine thread switching interleaves the events).
        while not stop.is_set():
            results.append(rsum(30))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    other = threading.Thread(target=busy)
    other.start()
    try:
        roots = [tracer.track(rsum, 40) for _ in range(20)]
    finally:
        stop.set()
        other.join(30)
        sys.setswitchinterval(old)
    assert results and set(results) == {465}
    for root in roots:
        tracer.validate(root)
        assert shape(root) == want


def outer(n):
    inner = tracer.track(rsum, n)
    # Recorded after the nested track ended: the outer recorder is fed again.
    return rsum(n) + inner.value, inner


def test_nested_track_gives_the_shortcut_back():
    root = tracer.track(outer, 12)
    tracer.validate(root)
    value, inner = root.value
    assert value == 2 * 78
    tracer.validate(inner)
    assert shape(inner) == alone(rsum, 12)
    calls = [c for c in root.children if isinstance(c, CallNode)]
    # The call of rsum after the nested track is followed: its whole recursion.
    (after,) = [c for c in calls if c.function.value is rsum]
    assert body(after) == body(alone_child(rsum, 12))


def body(call):
    """A call node's value and children (its own location is its caller's)."""
    kind, value, _, children = shape(call)
    return kind, value, children


def via(n):
    return rsum(n)


def alone_child(f, n):
    """The node of the call f(n) traced alone (under a caller of its own)."""
    root = tracer.track(via, n)
    (call,) = [c for c in root.children if isinstance(c, CallNode) and c.function.value is f]
    return call


def test_a_second_thread_tracking_meanwhile_records_its_own_call():
    want = alone(rsum, 25)
    started = threading.Event()
    release = threading.Event()
    out = {}

    def waiting(n):
        started.set()
        release.wait(30)
        return rsum(n)

    def second():
        started.wait(30)
        # The first thread's recorder is live: two now, the thread-local slots.
        out["second"] = tracer.track(rsum, 25)
        release.set()

    t = threading.Thread(target=second)
    t.start()
    first = tracer.track(waiting, 25)
    t.join(30)
    tracer.validate(first)
    tracer.validate(out["second"])
    assert shape(out["second"]) == want
    (call,) = [c for c in first.children if isinstance(c, CallNode) and c.function.value is rsum]
    assert body(call) == body(alone_child(rsum, 25))
    # Both ended: no recorder is fed in this thread.
    assert all(_core.active(tool) is None for tool in range(6))
