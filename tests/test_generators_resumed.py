"""Locals of a resumed generator that are read and then assigned again in the same
segment (`k += 1` after a `yield` in a `while` loop): the recorder knows their
source (no `tracer.views.UNKNOWN` input anywhere in the trace), values and edges are
right, and gradients match central differences (issue 23; tracer.analysis.unknown
places the events)."""

from __future__ import annotations

import math

import pytest

import tracer
from tracer.views import UNKNOWN

from ad_cases import numeric


def unknown_inputs(root) -> list[tuple[int, int]]:
    """(row, position) of every input of the trace whose source is UNKNOWN."""
    t = root.trace
    return [(row, i) for row in range(len(t)) for i, r in enumerate(t.refs(row))
            if not isinstance(r, int) and r[1] is UNKNOWN]


# -- the shapes ------------------------------------------------------------------------
def while_augmented(x):
    k = 0
    while k < 3:
        yield x * k
        k += 1


def while_assigned(x):
    k = 0
    while k < 3:
        yield x * k
        k = k + 1


def nested(x):
    i = 0
    while i < 2:
        j = 0
        while j < 3:
            yield x * i + j * x
            j += 1
        i += 1


def in_try_finally(x):
    k = 0
    acc = x
    try:
        while k < 3:
            yield acc
            acc = acc * x
            k += 1
    finally:
        acc = 0.0


def delegating(x):
    k = 1
    yield from while_augmented(x)
    while k < 3:
        r = yield from while_assigned(x * k)
        k += 1
        yield x + k


class Scaled:
    def __init__(self, scale):
        self.scale = scale

    def terms(self, x):
        n = 0
        while n < 4:
            yield self.scale * x ** n
            n += 1


def through_method(x):
    return sum(Scaled(1.5).terms(x))


def read_after_resumes(x):
    acc = x
    total = 0.0
    k = 0
    while k < 4:
        yield total
        total = total + acc * k
        k += 1
    yield total * acc


def swapping(x):
    a, b = x, 2.0
    while a < 10.0 * x:
        yield a
        a, b = a + b * x, b + 1.0


def sum_of(gen):
    return lambda x: sum(gen(x))


CASES = {
    "while_augmented": sum_of(while_augmented),
    "while_assigned": sum_of(while_assigned),
    "nested": sum_of(nested),
    "in_try_finally": sum_of(in_try_finally),
    "delegating": sum_of(delegating),
    "method": through_method,
    "read_after_resumes": sum_of(read_after_resumes),
    "swapping": sum_of(swapping),
    "for_consumer": lambda x: math.fsum(v * v for v in while_augmented(x)),
    "next_calls": lambda x: (lambda g: next(g) + next(g) * next(g))(read_after_resumes(x)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_unknown_source(name):
    f = CASES[name]
    root = tracer.track(f, 1.3)
    assert root.value == f(1.3)
    assert unknown_inputs(root) == []


# A generator another generator delegates to (`yield from`): each SEND of the
# delegating frame is a next() of the inner generator, whose activation is inlined
# there; what the inner generator returns is the `yield from` expression's value.
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_differences(name):
    f = CASES[name]
    g = tracer.grad(f)
    want = numeric(f, 1.3)
    for _ in range(3):  # traced, then the reused paths
        assert g(1.3) == pytest.approx(want, rel=1e-5, abs=1e-6)


def returning(x):
    k = 0
    acc = 1.0
    while k < 2:
        yield acc
        acc = acc * x
        k += 1
    return acc * acc


def delegating_returned(x):
    r = yield from returning(x)   # the value: what returning() returned
    yield r * 3.0
    yield from (v * r for v in returning(r))


def test_delegation_differentiates_at_first_and_second_order():
    f = lambda x: sum(delegating_returned(x))  # noqa: E731
    g = tracer.grad(f)
    want = numeric(f, 1.3)
    for _ in range(4):
        assert g(1.3) == pytest.approx(want, rel=1e-5, abs=1e-6)
    g2 = tracer.grad(tracer.grad(f))
    want2 = numeric(lambda a: g(a), 1.3)
    for _ in range(3):
        assert g2(1.3) == pytest.approx(want2, rel=1e-5, abs=1e-6)


def test_a_value_sent_into_a_delegation_is_refused_clearly():
    """`g.send(v)` resumes with a value, not a next(): refused, never a wrong value."""
    def inner(x):
        v = yield x
        yield v * x

    def outer(x):
        yield from inner(x)

    def f(x):
        g = outer(x)
        next(g)
        return g.send(2.0 * x)
    with pytest.raises(tracer.NoRuleError, match="cannot differentiate through"):
        tracer.grad(f)(1.3)


def test_the_issue_example():
    assert tracer.grad(lambda x: sum(while_augmented(x)))(2.0) == pytest.approx(3.0)


def test_resumed_load_is_the_carried_local():
    # After each resume, `k` is read once from the frame (a carried ArgumentNode
    # holding the k the round before stored); `k += 1` reads it, and `x * k` reads
    # the sum -- no unknown source, no second carried copy.
    root = tracer.track(lambda x: list(while_augmented(x)), 2.0)
    assert root.value == [0.0, 2.0, 4.0]
    activations = root.children[3].children
    assert len(activations) == 4  # the first run and three resumes
    for k, act in enumerate(activations[1:]):
        kids = act.children
        carried = [n for n in kids if type(n).__name__ == "ArgumentNode" and n.value == k]
        assert len(carried) == 1
        iadd = next(n for n in kids if carried[0] in n.inputs())
        assert iadd.value == k + 1
        if k + 1 < 3:
            mul = next(n for n in kids if iadd in n.inputs() and n.value == 2.0 * (k + 1))
            assert mul.inputs()[0].value == 2.0
    assert unknown_inputs(root) == []


async def agen(x):
    k = 0
    while k < 3:
        yield x * k
        k += 1


async def consume(x):
    total = 0.0
    async for v in agen(x):
        total += v
    return total


def run_async(x):
    # Driven by hand (no event loop: agen never awaits a future).
    coro = consume(x)
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine suspended")


def test_async_generator_no_unknown_source():
    root = tracer.track(run_async, 1.5)
    assert root.value == run_async(1.5)
    assert unknown_inputs(root) == []


# -- a for loop over a generator that returns a value -------------------------------------
def counted(n):
    for i in range(n):
        yield float(i)
    return n        # StopIteration(n) ends the consumer's loop


def consume_twice(x):
    total = x
    for v in counted(3):
        total += v * x
    for v in counted(2):
        total += v * x   # `total` read, then stored again, after the first loop's exit
    return total


def test_loop_over_returning_generator_keeps_locals_known():
    root = tracer.track(consume_twice, 2.0)
    assert root.value == consume_twice(2.0)
    assert unknown_inputs(root) == []
    # the exit is an exhaustion (with the generator's last activation under it), not
    # a raise the frame lost track at
    text = "\n".join(tracer.format_node(n) for n in root.children)
    assert "exhausted" in text and "↯" not in text
    g = tracer.grad(consume_twice)
    assert g(2.0) == pytest.approx(numeric(consume_twice, 2.0))
