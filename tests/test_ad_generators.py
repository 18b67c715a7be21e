"""Gradients through Python code that builtins run from C (issue 23): generators and
generator expressions consumed by `sum`/`max`/`sorted`/..., `map` and `filter` with
Python callbacks (closures of the input), `functools.reduce`, and comprehensions,
each against central finite differences on the traced, interpreted and compiled
paths, and second derivatives (grad of grad) against finite differences of the
first derivative."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest

import tracer
from tracer.ad.api import ad_context
from tracer.tapes import Tape

from ad_cases import numeric

def assert_grad(f, x, calls=4):
    """tracer.grad of f at x matches central differences, on every path kind."""
    g = tracer.grad(f)
    want = numeric(f, x)
    for _ in range(calls):
        got = g(x)
        assert np.allclose(np.asarray(got, dtype=float), np.asarray(want), rtol=1e-5,
                           atol=1e-6), (got, want)


def assert_second(f, x, calls=3):
    """grad(grad(f)) at float x against central differences of the exact first
    derivative (itself checked against finite differences of f)."""
    g1 = tracer.grad(f)
    want = numeric(lambda a: g1(a), x)
    g2 = tracer.grad(tracer.grad(f))
    for _ in range(calls):
        assert g2(x) == pytest.approx(want, rel=1e-5, abs=1e-6)


# -- generator expressions and generators -------------------------------------------------
def sum_of_squares(vals):
    return sum(v * v for v in vals)


def scaled_sum(x):
    return sum(x ** k / (k + 1) for k in range(4))


def gen_powers(x, n):
    for k in range(n):
        yield x ** k


def generator_function(x):
    return sum(gen_powers(x, 4)) + math.fsum(gen_powers(math.sin(x), 3))


def running(x):
    # `acc` is a local the generator carries across its yields.
    def partial_sums():
        acc = 0.0
        for w in (1.0, 2.0, 3.0):
            acc = acc + w * x
            yield acc * acc
    return sum(partial_sums())


def nested(rows):
    if isinstance(rows, float):
        rows = [rows, rows * rows]
    return sum(sum(w * w for w in (v, 2.0 * v)) for v in rows)


def consumers(x):
    items = [x, 2.0 * x, math.cos(x)]
    return (max(v * v for v in items) + min(v + 1.0 for v in items)
            + sum(sorted(v * x for v in items)[:2]) + tuple(v for v in items)[2]
            + list(v * 3.0 for v in items)[1] + sum((v for v in items), 0.5))


def array_rows(a):
    return sum(np.sum(np.sin(row) * row) for row in a)


@pytest.mark.parametrize("f, x", [
    (sum_of_squares, [1.0, -2.0, 0.5]),
    (scaled_sum, 0.7),
    (generator_function, 0.4),
    (running, 0.3),
    (nested, [0.5, 1.5, -1.0]),
    (consumers, 0.8),
    (array_rows, np.array([[0.1, 0.2], [0.3, -0.4], [1.0, 2.0]])),
])
def test_generators_match_finite_differences(f, x):
    assert_grad(f, x)


def consumers_unsorted(x):
    items = [x, 2.0 * x, math.cos(x)]
    return (max(v * v for v in items) + min(v + 1.0 for v in items)
            + tuple(v for v in items)[2] + list(v * 3.0 for v in items)[1])


@pytest.mark.parametrize("f, x", [(scaled_sum, 0.7), (generator_function, 0.4),
                                  (running, 0.3), (consumers_unsorted, 0.8),
                                  (nested, 0.6)])
def test_generators_second_order(f, x):
    assert_second(f, x)


def test_generator_length_is_guarded():
    """Another length takes another path: the cached one's guard fails, the new
    length is traced (never the old item count reused)."""
    g = tracer.grad(sum_of_squares)
    for vals in ([1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [3.0, 1.0, 2.0], [1.0], [1.0, 2.0]):
        assert g(vals) == pytest.approx([2 * v for v in vals])


# -- map, filter, reduce -------------------------------------------------------------------
def map_closure(x):
    return sum(map(lambda v: v * x + math.sin(v * x), [1.0, 2.0, 3.0]))


def map_two(xs):
    return sum(map(lambda a, b: a * b, xs, [1.0, -1.0, 2.0, 5.0]))  # the shorter ends it


def map_list(x):
    return list(map(lambda v: math.exp(v), [x, 2 * x]))[1] + max(map(lambda v: v * v, [x, -x, 0.5]))


def filtered(x):
    return sum(filter(lambda v: v > 0.5, [x, x * x, -x, 2.0 * x]))


def reduced(x):
    return functools.reduce(lambda a, b: a * b + x, [x, 2.0, 3.0])


def reduced_init(xs):
    return functools.reduce(lambda acc, v: acc + v * v, xs, 0.5)


def comprehensions(x):
    d = {k: x * k for k in range(3)}
    return sum([v * v for v in d.values()]) + sum([[x, 1.0][0] for _ in range(2)])


@pytest.mark.parametrize("f, x", [
    (map_closure, 0.6), (map_two, [0.5, 1.5, -2.0]), (map_list, 0.3), (filtered, 0.9),
    (reduced, 0.7), (reduced_init, [0.5, 1.5, -2.0]), (comprehensions, 1.3),
])
def test_map_filter_reduce_match_finite_differences(f, x):
    assert_grad(f, x)


@pytest.mark.parametrize("f, x", [(map_closure, 0.6), (filtered, 0.9), (reduced, 0.7),
                                  (comprehensions, 1.3)])
def test_map_filter_reduce_second_order(f, x):
    assert_second(f, x)


def test_filter_outcome_is_guarded():
    g = tracer.grad(filtered)
    # x = 0.9: x, x*x and 2x pass; x = 0.6: x*x = 0.36 does not.
    for x in (0.9, 0.9, 0.9, 0.6, 0.6, 0.9):
        want = numeric(filtered, x)
        assert g(x) == pytest.approx(want, rel=1e-5)


# -- the tape --------------------------------------------------------------------------------
@pytest.mark.parametrize("f, x", [(sum_of_squares, [1.0, -2.0, 0.5]), (running, 0.3),
                                  (map_two, [0.5, 1.5, -2.0]), (filtered, 0.9),
                                  (reduced_init, [0.5, 1.5, -2.0]), (nested, [0.5, 1.5])])
def test_inlined_tape_replays_and_compiles(f, x):
    """The tape with the iterations inlined (callbacks=True) is a valid tape whose
    play and compiled function give the untraced result, and whose guards stop a
    run that iterates differently."""
    root = tracer.track(f, x, ctx=ad_context())
    tape = Tape.from_trace(root, None, callbacks=True)
    tape.validate()
    assert tape.inlined_iterables or f is reduced_init
    assert tape.play(x) == f(x)
    assert tape.compile()(x) == f(x)
    if isinstance(x, list):
        with pytest.raises(tracer.GuardError):
            tape.play(x + [1.0, 1.0, 1.0, 1.0])




def test_a_local_read_from_a_closure_is_carried_across_yields():
    """A generator local assigned from a closure variable (no op of its own: the
    tape reads the cell's op) keeps its source across the yield."""
    def f(x):
        def gen():
            a = x
            yield 1.0
            yield a * a
            yield a * 3.0
        return sum(gen())
    assert_grad(f, 0.7)
    assert_second(f, 0.7)


# -- generators resumed step by step: for loops and next() -------------------------------
def for_loop(x):
    t = 0.0
    for v in gen_powers(x, 4):
        t = t + v * v
    return t


def next_calls(x):
    it = (x * k for k in range(3))
    first = next(it)
    return first + next(it) * 2.0 + sum(it)  # the rest consumed whole


def two_loops(x):
    total = 0.0
    for a in (x * k for k in range(2)):
        for b in gen_powers(a + 1.0, 3):
            total = total + a * b
    return total


@pytest.mark.parametrize("f", [for_loop, next_calls, two_loops])
def test_generators_resumed_step_by_step(f):
    assert_grad(f, 0.6)
    assert_second(f, 0.6)


def test_a_for_loop_over_a_generator_is_guarded_by_the_generator():
    def f(x, n):
        t = 0.0
        for v in gen_powers(x, n):
            t = t + v
        return t
    g = tracer.grad(f)
    for n in (3, 3, 3, 2, 4, 3):
        assert g(0.5, n) == pytest.approx(sum(k * 0.5 ** (k - 1) for k in range(1, n)))


def test_a_generator_driven_by_a_key_function_or_itertools_is_refused():
    """Consumers this module does not follow (a key function, itertools, numpy's
    fromiter) leave the generator to C: a clear NoRuleError, never a wrong value."""
    for f in (lambda x: max((v * x for v in [1.0, -2.0]), key=abs),
              lambda x: sum(itertools.chain(gen_powers(x, 2), [1.0])),
              lambda x: float(np.sum(np.fromiter((v * x for v in [1.0, 2.0]), float)))):
        with pytest.raises(tracer.NoRuleError, match="another C function"):
            tracer.grad(f)(0.5)


def test_a_generator_left_to_a_c_function_after_inlined_steps_is_refused():
    """next() steps are inlined, then itertools.chain resumes the same generator: the
    tape would restart it on a new run, so tracing refuses (an error, never a wrong
    value)."""
    def f(x):
        g = (x * k for k in range(4))
        first = next(g)
        return first + sum(itertools.chain(g, [1.0]))
    with pytest.raises((tracer.TapeError, tracer.NoRuleError)):
        tracer.grad(f)(0.5)


# -- chained sources: yield from, zip, enumerate, map over generators, reduce over map ----
def g1(x):
    k = 0
    while k < 3:
        yield x * k
        k += 1


def g3(x):
    yield from g1(x)


def delegated(x):
    return sum(g3(x))                                        # 3.0 at any x


def zipped_generators(x):
    return sum(a * b for a, b in zip(g1(x), g1(x)))          # 2x(0+1+4)


def enumerated_generator(x):
    return sum(i * v for i, v in enumerate(g1(x)))           # 0+1+4


def zipped_with_a_list(x):
    return sum(a * b for a, b in zip(g1(x), [1.0, -2.0, 3.0, 4.0]))  # g1 ends it


def zipped_after_next(x):
    g = (x * k for k in range(4))
    first = next(g)                                          # then zip resumes g
    return first + sum(a * b for a, b in zip(g, [1.0, 2.0, 3.0]))


def reduce_of_map(x):
    return functools.reduce(lambda a, b: a * b + x, map(lambda v: v * x, [1.0, 2.0, 3.0]))


def sum_of_map_of_generator(x):
    return sum(map(lambda v: math.sin(v) * v, g1(x)))


def genexpr_over_map(x):
    return sum(math.exp(v) for v in map(lambda w: w * x, [1.0, 2.0, -1.0]))


def map_of_map(x):
    return sum(map(math.sin, map(lambda v: v * x, g1(x))))


def filter_of_generator(x):
    return sum(filter(lambda v: v > 1.0, g1(x)))


def reduce_of_generator(x):
    return functools.reduce(lambda a, b: a + b * b, g1(x), 0.5)


def enumerate_with_start_in_a_for_loop(x):
    t = 0.0
    for i, (a, b) in enumerate(zip(g1(x), map(math.cos, g1(x))), 1):
        t = t + i * a * b
    return t


CHAINED = [delegated, zipped_generators, enumerated_generator, zipped_with_a_list,
           zipped_after_next, reduce_of_map, sum_of_map_of_generator, genexpr_over_map,
           map_of_map, filter_of_generator, reduce_of_generator,
           enumerate_with_start_in_a_for_loop]


@pytest.mark.parametrize("f", CHAINED, ids=lambda f: f.__name__)
def test_chained_sources_match_finite_differences(f):
    assert_grad(f, 2.0)
    assert_grad(f, 0.7)


def test_chained_sources_give_the_issue_values():
    assert tracer.grad(delegated)(2.0) == pytest.approx(3.0)
    assert tracer.grad(zipped_generators)(2.0) == pytest.approx(20.0)
    assert tracer.grad(enumerated_generator)(2.0) == pytest.approx(5.0)


@pytest.mark.parametrize("f", CHAINED, ids=lambda f: f.__name__)
def test_chained_sources_second_order(f):
    assert_second(f, 0.7)


def test_zip_ends_where_its_shortest_source_ends_and_is_guarded():
    """How many items zip/enumerate take is guarded as for the other consumers: a
    generator of another length, or a list of another length, traces another path."""
    def f(x, n, ys):
        return sum(a * b for a, b in zip(gen_powers(x, n), ys))
    g = tracer.grad(f)
    for n, ys in ((3, [1.0, 2.0, 3.0, 4.0]), (3, [1.0, 2.0, 3.0, 4.0]), (3, [1.0, 2.0, 3.0, 4.0]),
                  (4, [1.0, 2.0, 3.0, 4.0]), (5, [1.0, 2.0, 3.0, 4.0]), (3, [1.0, 2.0]),
                  (3, [1.0, 2.0, 3.0, 4.0])):
        want = sum(k * 0.5 ** (k - 1) * y for k, y in zip(range(n), ys) if k)
        assert g(0.5, n, ys) == pytest.approx(want)


def test_chained_tape_replays_and_compiles():
    for f in CHAINED:
        root = tracer.track(f, 0.7, ctx=ad_context())
        tape = Tape.from_trace(root, None, callbacks=True)
        tape.validate()
        assert tape.inlined_iterables, f.__name__
        assert tape.play(0.7) == f(0.7)
        assert tape.compile()(0.7) == f(0.7)


# -- map with a C callback (no Python frame runs: the items are the calls themselves) -------
import operator  # noqa: E402


def map_sin(x):
    return sum(map(math.sin, [x, 2.0 * x, x * x]))


def map_mul(x):
    return math.fsum(map(operator.mul, [x, x * x], [1.5, 2.0, 9.0]))  # ends at the shorter


def map_ufunc(x):
    return sum(map(np.exp, [x, -x]))


@pytest.mark.parametrize("f", [map_sin, map_mul, map_ufunc], ids=lambda f: f.__name__)
def test_map_with_c_callback(f):
    assert_grad(f, 0.7)
    assert_second(f, 0.7)


def test_map_with_c_callback_guards_the_length():
    f = lambda xs: sum(map(math.sin, xs))  # noqa: E731
    g = tracer.grad(f)
    for xs in ([0.1, 0.2], [0.3, 0.4, 0.5], [0.6]):
        assert np.allclose(g(xs), [math.cos(v) for v in xs])


def test_map_with_an_impure_c_function_is_not_called_again():
    # list.append is not one of the pure C functions whose calls become the items:
    # the flattener must not call it a second time for a value.
    out: list = []
    g = tracer.grad(lambda x: len(list(map(out.append, [x, x]))) * x)
    assert g(1.0) == 2.0
    assert out == [1.0, 1.0]
