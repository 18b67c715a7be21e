"""Gradients that used to be wrong with no error (issue 23): each against central
finite differences, through tracer.grad and where it follows them tracer.backprop.
A rule that does not cover a call's argument or keyword must refuse it."""

from __future__ import annotations

import numpy as np
import pytest

import tracer
from tracer.ad.errors import NoRuleError

from ad_cases import numeric

X = np.array([1.0, 2.0, 3.0])
G = 2.0
V = np.array([-1.0, 0.5, 2.0])


def times_global_array(a):
    return np.sum(a * X)


def times_global_float(a):
    return a * G


def through_asarray(a):
    b = np.asarray(a)
    return np.sum(b * X)


def closure_of_the_argument(a):
    g = lambda: a * 3.0  # noqa: E731
    return np.sum(g() * X)


def clip_keywords(a):
    return np.sum(np.clip(a, a_min=0.1, a_max=1.1) * np.array([1.0, 2.0, 3.0]))


def clip_positional(a):
    return np.sum(np.clip(a, 0.1, 1.1) * np.array([1.0, 2.0, 3.0]))


def r_concat(a):
    return np.sum(np.r_[a, 3.0, a * 2.0] ** 2)


def c_concat(a):
    return np.sum(np.c_[a, 2.0 * a] * np.arange(6.0).reshape(3, 2))


def power_zero(a):
    return np.sum(np.power(a, 0.0) + a)


def pow_zero(a):
    return a ** 0.0 + a


CASES = [
    # (function, argument: the argument is the very object a constant is)
    (times_global_array, X),
    (times_global_float, G),
    (through_asarray, X),
    (closure_of_the_argument, X),
    (clip_keywords, V),
    (clip_positional, V),
    (r_concat, X),
    (c_concat, X),
    (power_zero, np.array([0.0, 1.0, 2.0])),
    (pow_zero, 0.0),
]


@pytest.mark.parametrize("f,x", CASES, ids=[c[0].__name__ for c in CASES])
def test_grad_matches_finite_differences(f, x):
    g = tracer.grad(f)
    want = numeric(f, x) if f is not pow_zero else 1.0
    assert np.allclose(g(x), want, atol=1e-6)
    assert np.allclose(g(x), want, atol=1e-6)  # the cached path
    assert np.allclose(g(x), want, atol=1e-6)  # the compiled path


@pytest.mark.parametrize("f,x", CASES[:4], ids=[c[0].__name__ for c in CASES[:4]])
def test_backprop_does_not_link_by_identity(f, x):
    root = tracer.track(f, x)
    tracer.validate(root)
    assert np.allclose(tracer.backprop(root)[0], numeric(f, x), atol=1e-6)


def test_the_tape_keeps_a_global_that_is_the_argument_constant():
    tape = tracer.tapes.Tape.from_trace(tracer.track(times_global_array, X))
    y = np.array([5.0, 6.0, 7.0])
    assert tape.play(y) == pytest.approx(np.sum(y * X))


def test_a_keyword_the_rule_does_not_cover_is_refused():
    with pytest.raises(NoRuleError, match="keyword argument out="):
        tracer.grad(lambda a: np.sum(np.exp(a, out=np.zeros(3))))(X)


def test_an_argument_the_rule_gives_no_adjoint_is_refused():
    with pytest.raises(NoRuleError, match="argument 1 is differentiated"):
        tracer.grad(lambda lo: np.sum(np.clip(X, lo, 2.5)))(1.5)


def test_backprop_refuses_a_root_it_cannot_follow():
    class Scale:
        def __call__(self, v):
            return v * 3.0

    with pytest.raises(NoRuleError, match="entered from C"):
        tracer.backprop(tracer.track(Scale(), 1.0))


def test_a_global_that_is_the_argument_is_a_constant_at_second_order_too():
    """grad(grad(f)) where a global array is the very object passed: the inner
    gradient's generated code takes the argument out of its binder's tuple, which
    does not make that object (the global stays a constant; it was differentiated
    as well, silently: 85.66 instead of 0 off the exact value below)."""
    rng = np.random.default_rng(1)
    m = rng.standard_normal((3, 3))
    w = rng.standard_normal((3, 3))
    v = rng.standard_normal((3, 3))
    f = lambda x: np.sum(np.sin(x * m * x) * w)  # noqa: E731
    g = tracer.grad(f)
    h = tracer.grad(lambda a: np.sum(g(a) * v))
    eps = 1e-6
    d = rng.standard_normal((3, 3))
    numeric = float(np.sum((g(m + eps / 2 * d) - g(m - eps / 2 * d)) / eps * v))
    for _ in range(3):
        assert float(np.sum(h(m) * d)) == pytest.approx(numeric, rel=1e-5, abs=1e-6)
