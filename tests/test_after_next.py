"""Generators driven by `next(g)` and `g.send(v)` from a followed frame: the
plain paths' trace equals the general paths' (a `canrecur` context).

These programs were written for a change (session 16, reverted: bench/RESULTS.md)
that switched off the INSTRUCTION event after such a call, completing the call's
row at the generator's PY_YIELD instead; they stay as the cases any such change
must keep equal: the generator raises, returns, is closed, delegates with
`yield from`, is started by the call, is resumed by a call inside another
generator; one call site fed by generators, list iterators and a generator
started before the recorder saw its code (its frame fires no events); `next`
with a default; `next` rebound to a Python function and to a C callable; a bound
`send`; another tool restarting every event; a nested `track`.  Each program is
traced twice plain (the second with whatever the first switched off), alternated
with general runs and a nested run.
"""

from __future__ import annotations

import builtins
import gc
import itertools
import sys
import types

import pytest

import tracer
from helpers import assert_same_trace
from tracer.views.nodes import NestedCallNode, node_at
from test_resume_paths import FollowAll


def worker(ident, steps, log):
    total = 0
    for step in range(steps):
        total += (ident * step) % 7
        if step % 3 == 0:
            log.append((ident, total))
        yield
    return total


def scheduler(ntasks, steps):
    log = []
    ready = [(i, worker(i, steps + i % 3, log)) for i in range(ntasks)]
    results = {}
    while ready:
        ident, task = ready.pop(0)
        try:
            next(task)
        except StopIteration as done:
            results[ident] = done.value
        else:
            ready.append((ident, task))
    return [results[i] for i in range(ntasks)], len(log)


def counter(n):
    got = []
    for i in range(n):
        x = yield i
        got.append(x)
    return got


def sender(n):
    out = []
    for k in range(3):
        g = counter(n)
        g.send(None)
        try:
            while True:
                g.send(k * 10 + len(out))
                out.append(len(out))
        except StopIteration as e:
            out.append(e.value)
    return out


def raising(n):
    for i in range(n):
        yield i
    raise KeyError(n)


def driver_raising(n):
    out = []
    for k in range(3):
        g = raising(n + k)
        while True:
            try:
                next(g)
            except KeyError as e:
                out.append(("raised", e.args[0]))
                break
            out.append(k)
    return out


def closed(n):
    out = []
    g = counter(n)
    next(g)
    for i in range(n):
        if i == n // 2:
            g.close()
        try:
            next(g)
        except StopIteration:
            out.append(("stopped", i))
            continue
        out.append(i)
    return out


def relay(src):
    yield from src


def delegating(n):
    # The generator next() resumes yields through a `yield from` chain: its
    # own yield may be written at its receiver's (resume.pxi), then the call
    # completed.
    out = []
    g = relay(relay(counter(n)))
    try:
        while True:
            next(g)
            out.append(len(out))
    except StopIteration:
        pass
    return out


def first_start(n):
    # Every next() here starts its generator (PY_START, not PY_RESUME).
    out = []
    for i in range(n):
        g = counter(3)
        next(g)
        out.append(i)
    return out


def nested_next(n):
    def outer(m):
        inner = counter(m)
        for _ in range(m):
            next(inner)
            yield
    out = []
    g = outer(n)
    for _ in range(n):
        next(g)
        out.append(len(out))
    return out


def alternating_iterators(n):
    # One call site fed by generators, list iterators, a map over a Python
    # function and a generator started before the recorder saw its code.
    out = []
    srcs = [counter(n + 2), iter([1, 2, 3, 4]), map(lambda x: x + 1, range(5)), counter(n + 2),
            PRESTARTED]
    for k in range(4 * n):
        src = srcs[k % len(srcs)] if k >= n else srcs[0]
        try:
            next(src)
        except StopIteration:
            out.append("stop")
            continue
        out.append(k)
    return out


def _prestarted_gen():
    # (the same value at every call: runs compared value by value share it)
    while True:
        yield "pre"


PRESTARTED = _prestarted_gen()
next(PRESTARTED)


def with_default(n):
    # next() with a default: a generator that returns makes the call return
    # the default, so such a call never switches its event off.
    out = []
    for k in range(2):
        g = counter(n)
        for i in range(n + 2):
            if k:
                next(g, "dflt")
            else:
                try:
                    next(g)
                except StopIteration:
                    pass
            out.append(i)
    return out


def py_next(g, *default):
    return builtins.next(g, *default)


def rebound(n):
    # `next` rebound at the call site between the builtin, a Python function
    # and a C callable that resumes the generator itself.
    global next
    out = []
    try:
        for k, callee in enumerate([builtins.next, py_next, builtins.next,
                                    types.GeneratorType.__next__, builtins.next]):
            next = callee
            g = counter(n)
            for i in range(n):
                next(g)
                out.append((k, i))
    finally:
        next = builtins.next
    return out


def bound_send(n):
    out = []
    g = counter(2 * n)
    next(g)
    for i in range(n):
        g.send(i)
        out.append(i)
    s = g.send
    for i in range(n - 1):
        s(i)
        out.append(-i)
    return out


def restarting(n):
    out = []
    for k in range(3):
        g = counter(n)
        for i in range(n):
            next(g)
            if i == 2:
                sys.monitoring.restart_events()
            out.append(i)
    return out


def nested_track(n):
    out = []
    g = counter(2 * n)
    for i in range(n):
        next(g)
        out.append(i)
    inner = tracer.track(scheduler, 3, 4)
    out.append(inner.value)
    for i in range(n - 1):
        next(g)
        out.append(i)
    return out


PROGRAMS = [
    (scheduler, (5, 6)),
    (sender, (4,)),
    (driver_raising, (3,)),
    (closed, (6,)),
    (delegating, (5,)),
    (first_start, (6,)),
    (nested_next, (5,)),
    (alternating_iterators, (3,)),
    (with_default, (4,)),
    (rebound, (4,)),
    (bound_send, (5,)),
    (restarting, (5,)),
    (nested_track, (4,)),
]


_FRESH = itertools.count()


def _renamed(code, k):
    consts = tuple(_renamed(c, k) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_name=f"{code.co_name}_{k}", co_consts=consts)


def _fresh(f):
    """`f` with new code objects (its own and those it makes functions of):
    whether an event stays on for good is kept per code object and process, so
    each test starts from locations never seen."""
    return types.FunctionType(_renamed(f.__code__, next(_FRESH)), f.__globals__, f.__name__,
                              f.__defaults__, f.__closure__)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_the_plain_trace_equals_the_general_one(program):
    f, args = program
    f = _fresh(f)
    expected = f(*args)
    gc.collect()
    gc.disable()
    try:
        plain = tracer.track(f, *args)
        again = tracer.track(f, *args)   # (with the events switched off by the first)
        general = tracer.track(f, *args, ctx=FollowAll())
    finally:
        gc.enable()
    assert plain.value == again.value == general.value == expected
    assert_same_trace(plain, general, fewer_events=True)
    assert_same_trace(again, general, fewer_events=True)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_runs_alternating_with_other_recorders(program):
    # A location switched off by one plain run, then a general run, a nested
    # plain run (two live recorders) and a plain one again: each equal to a
    # general run.
    f, args = program
    f = _fresh(f)
    f(*args)
    gc.collect()
    gc.disable()
    try:
        first = tracer.track(f, *args)
        general = tracer.track(f, *args, ctx=FollowAll())
        nested = tracer.track(lambda: tracer.track(f, *args))
        second = tracer.track(f, *args)
        general_again = tracer.track(f, *args, ctx=FollowAll())
    finally:
        gc.enable()
    assert_same_trace(first, general, fewer_events=True)
    assert_same_trace(nested.value, general, fewer_events=True)
    assert_same_trace(second, general, fewer_events=True)
    assert_same_trace(general_again, general)


def _next_rows(root):
    """The calls of `next` (the builtin) and generator.send in `root`'s trace
    that resumed a generator's frame (not a for loop's next over a range)."""
    trace = root.trace
    out = []
    for row in range(len(trace)):
        node = node_at(trace, row)
        fn = getattr(node, "function", None)
        fn = getattr(fn, "value", fn)
        if isinstance(node, NestedCallNode) and (fn is builtins.next
                                                 or fn is types.GeneratorType.send):
            out.append(node)
    return out


def test_send_results_are_the_values_yielded():
    f = _fresh(sender)
    plain = tracer.track(f, 4)
    tracer.validate(plain)
    rows = [n for n in _next_rows(plain) if not isinstance(n.value, StopIteration)]
    # counter yields 0, 1, 2, 3 for each of its three runs; the first send(None)
    # starts it.
    assert [n.value for n in rows] == [0, 1, 2, 3] * 3
