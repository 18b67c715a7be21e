"""A call's plain entry reading its call op from one per-op word (events.pxi's
`_enter_plain`, plans.pxi's `_call_entries`).

- Per op, the call op's offset, its record's input list and input count are
  decided once per plan (`CPlan.call_in`); an op that is not a call record, ends
  its segment in a silent branch, has a static input or more than 255 inputs
  (the compiler makes none: a call of many arguments takes them as one tuple)
  is left to the general entry (`_enter`).
- The call row's inputs are decoded from the caller's shadow: rows, pool
  entries, constants (pooled at their first use in a trace by the general
  path), NULL slots skipped, unknown slots.
- The rows written below the trace's zeroed room leave aux and flags unstored
  (`Trace.zcap`), zeroed ahead by the entry itself when it runs past it.
- The frame record is set field by field (`_frame_init`), its shadow filled
  four slots a step past its end (`SHADOW_SLACK`).

Every program is traced on the plain paths twice and compared with the general
paths (a `canrecur` context sends every frame through `_enter`, a node hook
every row through the per-row writers).
"""

from __future__ import annotations

import functools
import gc
import sys
import threading

import pytest

import tracer
from tracer import _core
from helpers import assert_same_trace, ReturnHook
from test_resume_paths import FollowAll
from test_zeroed_rows import _leave_dirty_columns, spare  # noqa: F401  (a fixture)


def leaf(n):
    return n * 2


def none_of():
    return 7


def three(a, b, c):
    return a + b * c


def many(a, b, c, d=4, *, e=5, f=6):
    return a + b + c + d + e + f


def starred(*args, **kw):
    return len(args) + len(kw)


SCALE = 10 ** 12   # a global's value: a pool entry in the shadow


def constants_in_calls(n):
    # Constants among the inputs: pooled by the general entry at their first
    # use in the trace, read from the plan's const_refs by the plain one after;
    # a global's value among them (a pool entry, not a row).
    total = 0
    for i in range(n):
        total += three(1, 2, n) + three(n, 2, 3) + leaf(None is None)
        total += three(SCALE, n, SCALE)
    return total + many(1, 2.5, n, e=None is None)


class Box:
    def __init__(self, k):
        self.k = k

    def times(self, n):
        return self.k * n

    @staticmethod
    def twice(n):
        return 2 * n

    @classmethod
    def make(cls, k):
        return cls(k)


def method_shapes(n):
    b = Box.make(3)                 # a classmethod; a class called (__init__ from C)
    bound = b.times                 # a bound method object on the stack: its
    total = bound(n) + b.times(n)   # function is not the callable the shadow holds
    return total + Box.twice(n) + b.twice(n) + Box.times(b, n)


def keyword_and_star_calls(n):
    args = (n, n + 1, n + 2)
    kw = {"e": n, "f": 1}
    return (three(*args) + many(*args, **kw) + many(n, b=1, c=2, f=3)
            + starred(*args, x=1) + starred() + three(a=1, b=2, c=n) + none_of())


def _wrapper(f):
    @functools.wraps(f)
    def inner(*args, **kw):
        return f(*args, **kw)
    return inner


wrapped_leaf = _wrapper(leaf)
partial_three = functools.partial(three, 1, 2)


def callee_not_on_stack(n):
    # The frame entered is not the callable the call op names: a partial, a
    # wrapper's inner call, a builtin calling back into Python, a generator.
    total = partial_three(n) + wrapped_leaf(n) + sum(map(leaf, range(n)))
    total += sorted([3, 1, 2], key=leaf)[0]
    return total + sum(leaf(i) for i in range(n))


def deep(n):
    if n == 0:
        return 0
    return deep(n - 1) + 1


def wide_frames(n):
    # A callee with many locals and a deep stack (a shadow of many slots).
    def big(a, b):
        c = d = e = f = g = h = i = j = k = m = a + b
        return [a, b, c, d, e, f, g, h, i, j, k, m, [a, [b, [c, [d, (e, f)]]]]]
    return big(1, n) + big(2, n)


# 300 arguments (the compiler passes them as one tuple: CALL_FUNCTION_EX).
many_inputs_src = "def wide_call(n):\n    return starred(" + ", ".join(
    f"n + {i}" for i in range(300)) + ")\n"
_namespace = {"starred": starred}
exec(compile(many_inputs_src, __file__, "exec"), _namespace)
wide_call = _namespace["wide_call"]


def many_calls(n):
    # Thousands of entries: the rows run across the trace's zeroed chunks and
    # grow the columns.
    total = 0
    for i in range(n):
        total += three(i, 1, 2) + leaf(i)
    return total


PROGRAMS = [constants_in_calls, method_shapes, keyword_and_star_calls,
            callee_not_on_stack, wide_frames, wide_call]


def _compare(f, *args):
    expected = f(*args)
    gc.collect()
    gc.disable()
    try:
        plain = tracer.track(f, *args)
        again = tracer.track(f, *args)   # (events switched off by the first, plans warm)
        general = tracer.track(f, *args, ctx=FollowAll())
        hooked = tracer.track(f, *args, ctx=ReturnHook())
    finally:
        gc.enable()
    assert plain.value == again.value == general.value == hooked.value == expected
    for root in (plain, again):
        assert_same_trace(root, general, fewer_events=True)
        assert_same_trace(root, hooked, fewer_events=True)
    return plain


@pytest.mark.parametrize("f", PROGRAMS, ids=[f.__name__ for f in PROGRAMS])
def test_the_plain_entries_equal_the_general_ones(f):
    _compare(f, 4)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def _general_starts(f, *args):
    # Frame starts of a trace (plans warm) that the plain entry left to _enter,
    # and the trace's frames.
    tracer.track(f, *args)
    before = _core._general_starts()
    root = tracer.track(f, *args)
    return _core._general_starts() - before, len(root.trace.frames()[0])


@pytest.mark.parametrize("f, n", [(many_calls, 400), (deep, 300), (fib, 12),
                                  (constants_in_calls, 40)],
                         ids=["many_calls", "deep", "fib", "constants_in_calls"])
def test_the_plain_entry_takes_all_but_a_few_calls(f, n):
    # What goes to the general entry is per trace, not per call: the root (its
    # caller is track's frame), a callee's first entry in a session (its plan
    # taken over), a constant's first use, and a growth of the frame stack, the
    # shadow or a column (geometric: a handful in a trace).
    general, frames = _general_starts(f, n)
    assert frames > 100
    assert 1 <= general <= 12
    # Twice the work adds growths (geometric), not starts per call: fib(2n) has
    # ~160 times fib(n)'s frames (fib(12): 4 general starts, fib(24): 13).
    twice, more_frames = _general_starts(f, 2 * n)
    assert more_frames > frames
    assert general <= twice <= general + (12 if f is fib else 3), (general, twice)


def test_deep_recursion_grows_the_shadow():
    # More frames than the recorder's first frame stack, more shadow slots than
    # its first shadow (4,096): the entries past them grow both in _push.
    depth = min(900, sys.getrecursionlimit() - 100)
    _compare(deep, depth)


def test_entries_across_zeroed_chunks_and_growth():
    _compare(many_calls, 3000)


@pytest.mark.parametrize("f, args", [(many_calls, (1500,)), (method_shapes, (3,)),
                                     (keyword_and_star_calls, (2,))],
                         ids=["many_calls", "method_shapes", "keyword_and_star_calls"])
def test_entries_into_columns_that_held_other_rows(spare, f, args):  # noqa: F811
    # Spare columns full of non-zero aux and flags: the rows the entry leaves
    # unstored must still read 0.
    _leave_dirty_columns(6000)
    assert tracer.views.spare_columns_bytes() > 0
    plain = tracer.track(f, *args)                     # takes the spare set
    general = tracer.track(f, *args, ctx=ReturnHook())
    assert plain.value == general.value == f(*args)
    assert_same_trace(plain, general, fewer_events=True)


def test_a_plan_first_used_in_another_thread():
    # Plans built and first entered by a session in another thread: this
    # thread's sessions take them over (constants pooled anew in each trace).
    done = []

    def work():
        done.append(tracer.track(constants_in_calls, 3))

    th = threading.Thread(target=work)
    th.start()
    th.join()
    assert done and done[0].value == constants_in_calls(3)
    plain = tracer.track(constants_in_calls, 3)
    general = tracer.track(constants_in_calls, 3, ctx=FollowAll())
    assert_same_trace(plain, general, fewer_events=True)
    assert_same_trace(done[0], general, fewer_events=True)


def nested_sessions(n):
    # The same callee plans used by an inner track between calls of this one.
    a = constants_in_calls(n)
    inner = tracer.track(keyword_and_star_calls, n)
    return a + constants_in_calls(n + 1) + inner.value + keyword_and_star_calls(n)


def test_plans_shared_with_a_nested_track():
    tracer.track(nested_sessions, 2)
    _compare(nested_sessions, 2)


# Calls whose arguments hold a branch (a conditional expression, `and`, `or`):
# the event before the CALL is the branch's, the call op comes after ops still to
# run in the caller's segment (no INSTRUCTION at the call); the plain entry runs
# them as _enter does (events.pxi's _run_to_call) and takes the call.

def cond_arg(n):
    total = 0
    for i in range(n):
        total += three(1, 3 if i & 1 else 2, n)
    return total


def and_arg(n):
    total = 0
    for i in range(n):
        total += three(1, i and 2, n)
    return total


def or_arg(n):
    total = 0
    for i in range(n):
        total += three(i or n, 1, n)
    return total


def nested_arg(n):
    total = 0
    for i in range(n):
        total += three(i & 1 and (5 if i & 2 else i) or -1, leaf(i if i > 2 else n), n)
    return total


def last_arg_branches(n):
    total = 0
    for i in range(n):
        total += three(n, i, 7 if i % 3 else i)
    return total


def method_cond_arg(n):
    b = Box(2)
    total = 0
    for i in range(n):
        total += b.times(i if i & 1 else n) + Box.twice(n and i)
    return total


def once_cond(n):
    # Not in a loop: each call once.
    a = three(1, 2 if n else 3, n)
    b = leaf(n or 4)
    return a + b + three(n and 1, n or 2, 3 if n > 1 else n)


BRANCHY = [cond_arg, and_arg, or_arg, nested_arg, last_arg_branches, method_cond_arg]


@pytest.mark.parametrize("f", BRANCHY + [once_cond], ids=[f.__name__ for f in BRANCHY + [once_cond]])
def test_calls_with_branching_arguments_equal_the_general_entries(f):
    _compare(f, 41)
    _compare(f, 0)


@pytest.mark.parametrize("f", BRANCHY, ids=[f.__name__ for f in BRANCHY])
def test_calls_with_branching_arguments_take_the_plain_entry(f):
    # As many general entries as with constant arguments: per trace, not per call
    # (was one per call).
    general, frames = _general_starts(f, 41)
    assert frames > 40
    assert 1 <= general <= 6, general
    # Twice and four times the calls add a growth (of a column, the frame stack or
    # the shadow) per doubling at most, not a general start per call (+41, +82).
    twice, _ = _general_starts(f, 82)
    four_times, _ = _general_starts(f, 164)
    assert general <= twice <= general + 3 and twice <= four_times <= twice + 3, \
        (general, twice, four_times)
