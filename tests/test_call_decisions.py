"""What a plain call decides once instead of at every call (events.pxi's
`_enter_plain`/`_return_plain`).

- The caller's call op that a body's return completes: which stack slot takes
  the call row and whether the caller then goes on past its END without an event
  are facts of the caller's plan at that op (plans.pxi `_return_targets`), copied
  into the callee's frame record at entry (`FrameRec.ret_to`, `ret_pc`).  The
  return writes them if the caller's call is still open at that op; otherwise the
  caller's next event completes it, as before.
- The callee plan's own checks (its code id this session's, its code the
  program's, no cell parameters, the trace without value policy or timing) are
  made once per plan and session (`CPlan.plain_session`, cleared whenever the
  plan's session changes hands: another recorder, a nested `track`).

Every program is traced twice on the plain paths and compared with the general
paths (a `canrecur` context sends every frame through `_enter` and `_leave`'s
general code), across the shapes that change what the return does to its caller.
"""

from __future__ import annotations

import gc
import sys
import threading

import pytest

import tracer
from tracer import Context, _core
from helpers import assert_same_trace, ReturnHook
from test_resume_paths import FollowAll


def leaf(n):
    return n * 2


def raiser(n):
    if n > 1:
        raise ValueError(n)
    return n


def then_end(n):
    # Each call op alone in its segment: the caller goes on at the END.
    y = leaf(n)
    z = leaf(y)
    return z


def used_in_segment(n):
    # Call ops followed by more ops of the same segment.
    y = leaf(n) + 1
    return leaf(leaf(y)) - y


def returned_directly(n):
    return leaf(n + 1)


class Box:
    def __init__(self, k):
        self.k = k

    def times(self, n):
        return self.k * n


def method_calls(n):
    b = Box(3)
    return b.times(n) + b.times(leaf(n))


def star_and_keyword_calls(n):
    args = (n,)
    kw = {"n": n + 1}
    return leaf(*args) + leaf(**kw) + leaf(n=n)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def caught(n):
    total = 0
    for i in range(n):
        try:
            total += raiser(i)
        except ValueError:
            total -= 1
    return total


def cell_param(n):
    # Its parameter is a cell: entered by the general path (_enter), a body all the same.
    return (lambda: n + 1)()


def calls_cell_param(n):
    return cell_param(n) + cell_param(leaf(n))


def gen(n):
    for i in range(n):
        yield leaf(i)


def driven(n):
    g = gen(n)
    first = next(g)
    return first + sum(g) + sum(gen(2))


class Noisy:
    log: list = []

    def __del__(self):
        Noisy.log.append(leaf(1))


def drops_on_return(n):
    o = Noisy()   # dropped as the frame is cleared: its __del__'s frame entered from C
    return n + 1


def calls_dropper(n):
    a = drops_on_return(n)
    return a + drops_on_return(leaf(a))


def from_c(n):
    # Bodies entered from C (map, sorted's key, a __del__ above): each returns
    # into a caller whose open call is the builtin's row, not the callee's.
    return sum(map(leaf, range(n))) + sorted(range(n), key=leaf)[-1]


def returns_a_value(n):
    # A generator's own return (PY_RETURN of a generator frame) and a yield
    # from one whose frame returns into the delegating frame.
    total = yield n
    total = (total or 0) + ((yield leaf(n)) or 0)
    return total + 1


def delegates(n):
    got = yield from returns_a_value(n)
    return got * 2


def drives_returns(n):
    g = delegates(n)
    out = [next(g), g.send(3)]
    try:
        g.send(4)
    except StopIteration as stop:
        out.append(stop.value)
    return out + list(returns_a_value(leaf(n)))


def raises_after_calls(n):
    # A callee that raises after calls of its own returned: its frame leaves by
    # PY_UNWIND, the caller's call op completed by the exception.
    y = leaf(n)
    if y > 4:
        raise ValueError(leaf(y))
    return y


def catches_late(n):
    out = 0
    for i in range(n):
        try:
            out += raises_after_calls(i)
        except ValueError as e:
            out += e.args[0]
    return out


def branches_then_calls(n):
    # INSTRUCTION events past a silent branch (taken at the event: _instruction's
    # common path) before calls, in a loop and after it.
    out = 0
    for i in range(n):
        if i % 2:
            out += leaf(i)
        else:
            out -= leaf(leaf(i)) + (leaf(1) if i > 2 else 0)
    if out > 0:
        return leaf(out)
    return out - leaf(n)


PROGRAMS = [then_end, used_in_segment, returned_directly, method_calls,
            star_and_keyword_calls, fib, caught, calls_cell_param, driven,
            calls_dropper, from_c, drives_returns, catches_late, branches_then_calls]


@pytest.mark.parametrize("f", PROGRAMS, ids=[f.__name__ for f in PROGRAMS])
@pytest.mark.parametrize("reference", [FollowAll, ReturnHook])
def test_the_plain_calls_equal_the_general_paths(f, reference):
    expected = f(6)
    gc.collect()
    gc.disable()
    try:
        plain = tracer.track(f, 6)
        again = tracer.track(f, 6)   # (events switched off by the first, plans warm)
        general = tracer.track(f, 6, ctx=reference())
    finally:
        gc.enable()
    assert plain.value == again.value == general.value == expected
    assert_same_trace(plain, general, fewer_events=True)
    assert_same_trace(again, general, fewer_events=True)


def test_a_filtered_callers_calls_complete_as_before():
    # A caller whose context has a call filter copies nothing at entry (its
    # return leaves the op to the caller's event): the trace is the general one.
    seen = []
    ctx = Context(on_call={raiser: lambda node: seen.append(node.value)})
    plain = tracer.track(used_in_segment, 4, ctx=ctx)
    general = tracer.track(used_in_segment, 4, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)


@pytest.mark.parametrize("f", [then_end, fib, calls_cell_param, drives_returns])
def test_each_session_checks_the_plan_again(f):
    # The same plans under the default, a value policy, timing and the default
    # again: each trace is that context's general one; the policy reaches every
    # row and timing every frame although the plans were plain a run before.
    gc.collect()
    gc.disable()
    try:
        first = tracer.track(f, 5)
        none = tracer.track(f, 5, ctx=Context(values="none"))
        none_general = tracer.track(f, 5, ctx=FollowAll(values="none"))
        timed = tracer.track(f, 5, ctx=Context(timing=True))
        last = tracer.track(f, 5)
        general = tracer.track(f, 5, ctx=FollowAll())
    finally:
        gc.enable()
    assert_same_trace(first, general, fewer_events=True)
    assert_same_trace(last, general, fewer_events=True)
    assert_same_trace(none, none_general, fewer_events=True)
    values = [none.trace.value(row) for row in range(1, len(none.trace))]
    assert _core.NOT_KEPT in values
    assert not [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    table = _core.timing_table(timed.trace)
    frames, _ = timed.trace.frames()
    assert sorted(table["row"].tolist()) == sorted(frames.tolist())
    assert len(frames) == len(first.trace.frames()[0])


def nests_a_track(n):
    # Calls of the same functions before and after a nested track: the nested
    # session takes leaf's plan over (leaf entered once there, by the general
    # path: nothing there checks the plan for the plain entry), then this one
    # takes it back.
    a = then_end(n)
    inner = tracer.track(leaf, n)
    b = then_end(n + 1)
    return a + b + inner.value


def test_a_nested_track_of_the_same_code():
    gc.collect()
    gc.disable()
    try:
        tracer.track(nests_a_track, 3)
        plain = tracer.track(nests_a_track, 3)
        general = tracer.track(nests_a_track, 3, ctx=FollowAll())
    finally:
        gc.enable()
    assert plain.value == general.value == nests_a_track(3)
    assert_same_trace(plain, general, fewer_events=True)


def test_threads_tracing_the_same_code_at_once():
    # Two recorders in two threads take the same plans in turn (each reowns
    # them): every trace equals the single-threaded one.
    reference = tracer.track(fib, 9, ctx=FollowAll())
    results, errors = [], []
    barrier = threading.Barrier(2)

    def work():
        try:
            barrier.wait()
            for _ in range(20):
                results.append(tracer.track(fib, 9))
        except BaseException as exc:   # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 40
    for root in results:
        assert_same_trace(root, reference, fewer_events=True)


# -- the return's guard decided at entry (FrameRec.plain_ret) ---------------------------
def square(x):
    return x * x


def cube(x):
    return x * x * x


def returns_substituted(n):
    # The substituted call's result is what the frame returns: its return comes
    # right after the substitution.
    return square(n + 1)


def substitutes_then_goes_on(n):
    y = square(n)
    return leaf(y) + square(y + 1)


def recurs_over_substituted(n):
    if n < 2:
        return square(n)
    return recurs_over_substituted(n - 1) + recurs_over_substituted(n - 2)


def calls_substituting(n):
    # Frames that substitute, returning into followed frames that do not.
    return returns_substituted(n) + leaf(substitutes_then_goes_on(n)) + recurs_over_substituted(5)


class ToCube(Context):
    def substitute(self, f, *args, **kwargs):
        return cube if f is square else None


class ToCubeGeneral(ToCube):
    # (a node hook: every return takes _leave's general path)
    def trackedreturn(self, node) -> None:
        pass


SUBSTITUTING = [returns_substituted, substitutes_then_goes_on, recurs_over_substituted,
                calls_substituting]


@pytest.mark.parametrize("f", SUBSTITUTING, ids=[f.__name__ for f in SUBSTITUTING])
def test_frames_that_substitute_return_as_the_general_path(f):
    # A frame whose context substitutes enters with its return plain (no
    # snapshot or node hook, no value policy or timing) and loses that at its
    # first substitution (_substitute): its return, the substituted call's row
    # still open or not, then writes what the general path writes.
    gc.collect()
    gc.disable()
    try:
        plain = tracer.track(f, 4, ctx=ToCube())
        again = tracer.track(f, 4, ctx=ToCube())
        general = tracer.track(f, 4, ctx=ToCubeGeneral())
    finally:
        gc.enable()
    old_square = globals()["square"]
    try:
        globals()["square"] = cube
        expected = f(4)
    finally:
        globals()["square"] = old_square
    assert plain.value == again.value == general.value == expected
    assert_same_trace(plain, general, fewer_events=True)
    assert_same_trace(again, general, fewer_events=True)
    swapped = [row for row in range(len(plain.trace))
               if plain.trace.metadata_get(row, "substituted") is square]
    assert swapped, "no call was substituted"
    # The substitution's references (the replacement, the original) are dropped
    # with the frame (_close_call's), not left behind by a plain return.
    del plain, again, general
    gc.collect()
    held = sys.getrefcount(cube), sys.getrefcount(square)
    for _ in range(3):
        tracer.track(f, 4, ctx=ToCube())
    gc.collect()
    assert (sys.getrefcount(cube), sys.getrefcount(square)) == held
