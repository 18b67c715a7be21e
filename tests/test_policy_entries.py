"""Calls under a value policy (`Context(values=...)`) take the plain entry and the
plain return (events.pxi's `_enter_plain`, `_return_plain`) as calls with every
value kept do: the rows are written with the program's objects and what the policy
keeps replaces them once the frame is consistent (`_policy_rows`).

- Each program is traced on the plain paths and on the general ones (a `canrecur`
  context sends every frame through `_enter` and `_leave_general`) under each
  policy: the same columns, and values of the same type and repr.
- The plain entry takes all but a few calls under every policy (before, a policy
  sent every call to the general entry).
- What a policy does not keep dies when the program drops it, whichever path
  wrote its row: an argument, a value returned.
"""

from __future__ import annotations

import gc
import weakref

import pytest

import tracer
from tracer import _core
from tracer.context import Context
from helpers import assert_same_rows
from test_call_entries import PROGRAMS, fib
from test_resume_paths import FollowAll

POLICIES = ["none", "summary", "weak"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", PROGRAMS + [fib], ids=[f.__name__ for f in PROGRAMS + [fib]])
def test_plain_paths_under_a_policy_equal_the_general_ones(f, policy):
    if policy == "weak" and f.__name__ in ("keyword_and_star_calls", "callee_not_on_stack"):
        # A bug of the general path found here, not of the plain one: a canrecur
        # hook is handed the call's parts as the trace holds them, and under
        # "weak" a `**kw` dict is a ValueSummary (contexts.pxi's _call_parts).
        pytest.xfail("canrecur under values='weak' gets a summarised **kwargs dict")
    expected = f(4)
    gc.collect()
    gc.disable()
    try:
        plain = tracer.track(f, 4, ctx=Context(values=policy))
        again = tracer.track(f, 4, ctx=Context(values=policy))   # (plans warm)
        general = tracer.track(f, 4, ctx=FollowAll(values=policy))
    finally:
        gc.enable()
    assert plain.value == again.value == general.value == expected
    assert_same_rows(plain, general)
    assert_same_rows(again, general)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_plain_entry_takes_the_calls_under_a_policy(policy):
    ctx = Context(values=policy)
    tracer.track(fib, 12, ctx=ctx)
    before = _core._general_starts()
    root = tracer.track(fib, 12, ctx=ctx)
    general = _core._general_starts() - before
    frames = len(root.trace.frames()[0])
    assert frames == 465
    # (the root, and a growth of the frame stack, the shadow or a column; the
    # same bound as test_call_entries' with every value kept)
    assert 1 <= general <= 12


class Box:
    """An object no policy but "keep" holds strongly (mutable, weakly referable)."""


def take(box):
    return 1


def make():
    return Box()


def drops_its_argument():
    box = Box()
    gone = weakref.ref(box)
    take(box)
    take(box)   # (the second call's entry is the plain one: plans warm)
    del box
    return gone() is None


def drops_what_was_returned():
    make()
    box = make()
    gone = weakref.ref(box)
    del box
    return gone() is None


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("program", [drops_its_argument, drops_what_was_returned])
def test_a_policy_keeps_no_argument_or_result_alive(program, policy):
    assert program() is True
    tracer.track(program, ctx=Context(values=policy))   # (plans warm)
    root = tracer.track(program, ctx=Context(values=policy))
    assert root.value is True
    tracer.validate(root)
    # With every value kept, the trace holds the object past the program's `del`.
    assert tracer.track(program).value is False
