"""Generator frames resumed and suspended through the plain paths (resume.pxi)
record what the general paths do.

A generator frame resumed (PY_RESUME) under a followed frame, with no hooks, no
value policy, no timing and its plan this session's, is entered by
`_resume_plain`; a followed frame that yields (PY_YIELD) under the same
conditions is left by `_yield_plain`.  A context with a `canrecur` hook takes the
general paths (`_enter`, `_leave`) for every frame and follows everything: both
must give the same trace, column by column (kinds, flags, parents, offsets,
auxes, refs with pool refs as the pooled values, codes), the same values and the
same event count, over `yield from` chains, generators resumed by C code, by a
for loop and by `send`, throw/close, exceptions through generators, values kept
on the stack across a yield, coroutines, async generators, deep delegation
chains (the frame stack and the shadow grow) and columns that grow.
"""

from __future__ import annotations

import gc
import json

import pytest

import tracer
from helpers import assert_same_trace
from tracer._core import spare_columns_limit
from tracer.context import Context

K_ARGUMENT, K_NESTED, K_RETURN = 0, 3, 6
F_YIELD, F_CARRIED, F_FRAME = 2, 16, 64


class FollowAll(Context):
    """A canrecur hook that follows every call: the general resume and yield paths."""

    def canrecur(self, f, /, *args, **kwargs) -> bool:
        return True


# -- programs ------------------------------------------------------------------------
def leaf(n):
    for i in range(n):
        yield i * 2


def middle(n):
    yield "start"
    yield from leaf(n)
    total = yield from counted(n)
    yield total


def counted(n):
    k = 0
    for v in leaf(n):
        k += v
        yield v + 1
    return k


def chain(n):
    return list(middle(n)) + ["".join(str(x) for x in middle(n))]


def echo():
    received = []
    while True:
        try:
            x = yield len(received)
        except KeyError as e:
            received.append(("thrown", e.args[0]))
            continue
        if x is None:
            return received
        received.append(x)


def delegating_echo():
    result = yield from echo()
    yield ("done", len(result))


def sends(n):
    out = []
    for _ in range(2):
        g = delegating_echo()
        out.append(next(g))
        for i in range(n):
            out.append(g.send(i * 3))
        out.append(g.throw(KeyError("k")))
        out.append(g.send(None))
        g.close()
    return out


def raises_after(n):
    for i in range(n):
        yield i
    raise ValueError(n)


def catches(n):
    try:
        yield from raises_after(n)
    except ValueError as e:
        yield ("caught", e.args[0])
    try:
        for v in raises_after(n):
            yield v
    except ValueError:
        yield "again"


def exceptions(n):
    return list(catches(n))


def stacked(xs):
    # Values kept on the stack across a yield: the callable and the first
    # argument of a call whose second argument is yielded for.
    for x in xs:
        y = max(x, (yield x), (yield x + 1))
        yield y


def stack_kept(n):
    g = stacked(range(n))
    out = [next(g)]
    try:
        while True:
            out.append(g.send(len(out)))
    except StopIteration:
        pass
    return out


def deep(d, n):
    if d == 0:
        yield from leaf(n)
    else:
        yield d
        yield from deep(d - 1, n)


def deep_chain(d, n):
    return sum(x for x in deep(d, n))


def comprehensions(n):
    return (sum(x * x for x in range(n)), max(v for v in leaf(n)),
            list(zip(leaf(n), (c for c in "abcdefgh"))), sorted(k for k in middle(n) if isinstance(k, int)))


class Tick:
    """An awaitable that suspends its awaiter once (a plain iterator under await)."""

    def __await__(self):
        got = yield "tick"
        return 1 if got is None else got


async def aleaf(x):
    t = await Tick()
    return x * 2 + t


async def agen(n):
    for i in range(n):
        yield await aleaf(i)


async def amain(n):
    total = 0
    async for v in agen(n):
        total += v
    try:
        async for v in agen(n):
            if v > 2:
                raise KeyError(v)
    except KeyError as e:
        total += e.args[0]
    return total + await aleaf(total)


def drive(coro):
    # A minimal event loop: asyncio.run's own bookkeeping (a WeakSet of tasks
    # emptied by the collector) would make two runs differ by when it collects.
    try:
        while True:
            coro.send(None)
    except StopIteration as e:
        return e.value


def coroutines(n):
    return drive(amain(n))


def relay(src):
    yield from src


def mixed_receivers(n):
    # One delegation location fed by generators and by C iterators in turn
    # (a list iterator, map over a Python function): the yield's event switched
    # off for the first must fire for the others.
    out = []
    for k in range(6):
        src = (leaf(n), iter([10, 20, 30][:n]), map(lambda x: x + 1, range(n)))[k % 3]
        out.extend(relay(relay(src)))
    return out


def shared_receiver(n):
    # A receiver exhausted by someone else between two resumes of its
    # delegator: the delegator's SEND returns without the receiver's frame.
    g = leaf(n)
    r = relay(g)
    out = [next(r)]
    out.extend(g)
    out.extend(r)
    return out


def restarted(n):
    # Another tool switching every location back on mid-run: the yields
    # written at the receiver's event fire again and must not count twice.
    import sys
    out = []
    for i, v in enumerate(relay(relay(leaf(n)))):
        if i == 1:
            sys.monitoring.restart_events()
        out.append(v)
    return out


def _constant_source():
    while True:
        yield "pre"


# A generator started before any recorder saw its code: its frame runs with no
# events (its code has none), so a delegation to it must keep its yield's event.
PRESTARTED = _constant_source()
next(PRESTARTED)
_KEPT = []   # (relays left suspended in PRESTARTED: closing one would close it)


def prestarted_receiver(n):
    out = list(relay(leaf(n)))      # the relay's yield switched off
    r = relay(PRESTARTED)           # then a receiver whose yields fire nothing
    _KEPT.append(r)
    for _ in range(n):
        out.append(next(r))
    out.extend(relay(leaf(n)))
    return out


def thrown_chain(n):
    # send/throw/close through two levels of delegation.
    out = []
    g = relay(delegating_echo())
    out.append(next(g))
    for i in range(n):
        out.append(g.send(i))
    out.append(g.throw(KeyError("t")))
    out.append(g.send(None))
    g.close()
    return out


def encode(n):
    # (check_circular=False: its markers are id()s, which differ between runs)
    records = [{"id": i, "tags": ["a", "b"][: i % 3], "p": {"x": i, "y": None}} for i in range(n)]
    return "".join(json.JSONEncoder(indent=1, sort_keys=True, check_circular=False).iterencode(records))


def _levels(k):
    # k generator functions, each its own code object: level j delegates to
    # level j - 1, then yields -j.
    src = "def level0(n):\n    for i in range(n):\n        yield i\n"
    for j in range(1, k):
        src += f"def level{j}(n):\n    yield from level{j - 1}(n)\n    yield -{j}\n"
    ns = {}
    exec(compile(src, "<levels>", "exec"), ns)
    return ns[f"level{k - 1}"]


LEVELS = _levels(24)


def many_receiver_codes(n):
    # A chain whose 24 levels run 24 codes: more receiver codes than the
    # followed-receiver cache holds (resume.pxi), each checked at every
    # resume of the level out, entries displaced and found again.
    out = list(LEVELS(n))
    out.extend(relay(LEVELS(n)))
    out.extend(relay(iter(out[:n])))
    out.extend(LEVELS(n))
    return out


def long_chain(n):
    # Many items through three delegating levels, values sent in through the
    # chain, and a level whose receiver changes: each level's yield is written
    # at its receiver's, the first at a delegator whose segment still runs a
    # LOAD_CONST into its SEND, the others at a SEND already open (resume.pxi's
    # _yield_delegators), which writes them itself; with fresh columns the
    # columns grow between (the plain paths reserve room or hand over).
    out = list(relay(relay(relay(leaf(n)))))
    g = relay(relay(delegating_echo()))
    out.append(next(g))
    for i in range(n):
        out.append(g.send(i))
    g.close()
    out.extend(relay(relay(deep(2, n))))
    return out


PROGRAMS = [
    (chain, (4,)),
    (sends, (3,)),
    (exceptions, (3,)),
    (stack_kept, (4,)),
    (deep_chain, (90, 3)),   # past the recorder's first 64 frame records
    (comprehensions, (6,)),
    (coroutines, (4,)),
    (encode, (12,)),
    (mixed_receivers, (3,)),
    (shared_receiver, (3,)),
    (restarted, (4,)),
    (thrown_chain, (3,)),
    (prestarted_receiver, (3,)),
    (many_receiver_codes, (3,)),
    (long_chain, (300,)),
]


# -- comparison ----------------------------------------------------------------------
def _resumes(root):
    """Rows of frames resumed after a yield: nested frames whose rows start
    with carried stack values or with no argument of the call."""
    trace = root.trace
    cols = trace.columns()
    kind, flags = cols["kind"].tolist(), cols["flags"].tolist()
    return [row for row in range(1, len(trace) - 1)
            if kind[row] == K_NESTED and flags[row] & F_FRAME
            and not (kind[row + 1] == K_ARGUMENT and not flags[row + 1] & F_CARRIED)]


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_plain_resume_and_yield_match_the_general_paths(program, fresh):
    f, args = program
    expected = f(*args)   # first: process-wide state (asyncio's policy) set up untraced
    # fresh: no spare columns, so the columns start small and grow between
    # resumes (the plain paths reserve room or hand over).
    old = spare_columns_limit(0) if fresh else None
    # No collection inside the runs: an earlier test's unfinished async generator
    # finalized there is a frame resumed under whatever op runs then, in one of
    # the two traces only.
    gc.collect()
    gc.disable()
    try:
        plain = tracer.track(f, *args)
        general = tracer.track(f, *args, ctx=FollowAll())
    finally:
        gc.enable()
        if old is not None:
            spare_columns_limit(old)
    assert plain.value == general.value == expected
    assert _resumes(plain), "the program resumes generator frames"
    # (the plain run writes a delegating frame's yield at its receiver's: fewer events)
    assert_same_trace(plain, general, fewer_events=True)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_runs_after_another_recorder_switched_yields_off(program):
    # Yield events switched off by one plain run stay off for the next only
    # while the tool id is held; runs alternate between the general and the
    # plain paths and a nested plain run, each equal to a fresh general one.
    f, args = program
    f(*args)
    gc.collect()
    gc.disable()
    try:
        first = tracer.track(f, *args)
        general = tracer.track(f, *args, ctx=FollowAll())
        second = tracer.track(f, *args)
        nested = tracer.track(lambda: tracer.track(f, *args))
        general_again = tracer.track(f, *args, ctx=FollowAll())
    finally:
        gc.enable()
    assert_same_trace(first, general, fewer_events=True)
    assert_same_trace(second, general, fewer_events=True)
    assert_same_trace(nested.value, general, fewer_events=True)
    assert_same_trace(general_again, general)


def test_a_delegating_frames_yield_costs_no_event():
    # In a chain of d delegating frames each item the innermost generator
    # yields is one PY_YIELD, not d + 1: the delegators' yields are written at
    # it (their locations switched off).
    tracer.track(deep_chain, 6, 3)   # (the locations switched off in an earlier run too)
    plain = tracer.track(deep_chain, 6, 3)
    general = tracer.track(deep_chain, 6, 3, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)
    # 3 items through 7 levels: 6 yields each written without an event.
    assert general.trace.events - plain.trace.events >= 3 * 6


def test_a_delegation_chain_records_each_level():
    # The last item of the innermost generator resumes every level of the
    # chain: one resumed node per level, each under the SEND of the level out,
    # each closed by a yield of the item.
    root = tracer.track(lambda: list(deep(3, 2)))
    assert root.value == [3, 2, 1, 0, 2]
    trace = root.trace
    cols = trace.columns()
    kind, flags, parent = cols["kind"].tolist(), cols["flags"].tolist(), cols["parent"].tolist()
    codes = cols["code"].tolist()
    names = [c.co_name for c in trace.codes]
    yields = [row for row in range(1, len(trace)) if kind[row] == K_RETURN and flags[row] & F_YIELD]
    last = [row for row in yields if names[codes[row]] == "leaf"][-1]
    assert trace.value(last) == 2
    frame = parent[last]
    levels = []   # (the code each resumed frame ran, its node)
    while frame > 0:
        own = [r for r in yields if parent[r] == frame and trace.value(r) == 2]
        assert own, frame
        levels.append(names[codes[own[0]]])
        assert flags[frame] & F_FRAME and not flags[frame] & 4   # its own node, closed
        assert trace.value(frame) == 2
        send = parent[frame]          # the op of the level out that resumed it
        assert kind[send] == K_NESTED
        if trace.value(send) != 2:
            assert trace.value(send) == [3, 2, 1, 0, 2]   # list(), the consumer
            break
        frame = parent[send]          # a SEND: the frame of the level out
    assert levels == ["leaf", "deep", "deep", "deep", "deep"]
    tracer.validate(root)


def test_carried_stack_values_are_the_live_slots():
    # A generator suspended between a call's arguments carries the callable
    # and the first argument across the yield, and the value sent in.
    root = tracer.track(stack_kept, 2)
    assert root.value == stack_kept(2)
    trace = root.trace
    cols = trace.columns()
    kind, flags = cols["kind"].tolist(), cols["flags"].tolist()
    carried = [trace.value(row) for row in range(len(trace))
               if kind[row] == K_ARGUMENT and flags[row] & F_CARRIED]
    assert max in carried and 1 in carried   # max and the sent value 1
    tracer.validate(root)
