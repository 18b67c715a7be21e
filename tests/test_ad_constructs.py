"""Python constructs tracer.grad differentiates (issue 23), each against central
finite differences: gradients of gradients (Hessians against the analytic one of a
quadratic form), *args, keyword arguments into primitives, numpy functions passed
as values, in-place array updates, list.extend, functools.partial, dtypes, and the
errors for what is refused."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import tracer
import tracer.ad
from tracer.ad.errors import NoRuleError

from ad_cases import EPS, numeric

def assert_grad(f, x, argnums=0, calls=3):
    """tracer.grad of f at x matches central differences on the traced, the
    interpreted and the compiled path."""
    g = tracer.grad(f, argnums)
    want = numeric(f, x)
    for _ in range(calls):
        got = g(x)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6), (got, want)
    return got


# -- higher order ----------------------------------------------------------------------------
A = np.array([[3.0, 1.0, 0.5], [1.0, 2.0, -0.3], [0.5, -0.3, 1.5]])
B = np.array([0.2, -1.0, 0.7])


def quadratic(x):
    return 0.5 * x @ A @ x + B @ x


def test_second_derivative_of_scalar_code():
    f = lambda a: math.sin(a) * a ** 3  # noqa: E731
    g2 = tracer.grad(tracer.grad(f))
    want = -math.sin(0.7) * 0.7 ** 3 + 6 * math.cos(0.7) * 0.7 ** 2 + 6 * math.sin(0.7) * 0.7
    for _ in range(3):
        assert g2(0.7) == pytest.approx(want, rel=1e-9)


def test_hessian_of_a_quadratic_form_is_its_matrix():
    grad_q = tracer.grad(quadratic)
    x = np.array([0.3, -0.2, 1.1])
    rows = [tracer.grad(lambda x, i=i: grad_q(x)[i])(x) for i in range(3)]
    assert np.allclose(np.array(rows), A, atol=1e-12)


def test_hessian_vector_product_against_finite_differences():
    f = lambda x: np.sum(np.sin(x) * x) + quadratic(x)  # noqa: E731
    grad_f = tracer.grad(f)
    v = np.array([1.0, -2.0, 0.5])
    hvp = tracer.grad(lambda x: np.sum(grad_f(x) * v))
    x = np.array([0.3, -0.7, 0.2])
    want = numeric(lambda y: np.sum(grad_f(y) * v), x)
    for _ in range(3):
        assert np.allclose(hvp(x), want, atol=1e-6)


def test_second_order_through_vjp():
    f = lambda x: np.sum(np.exp(x) * x)  # noqa: E731

    def pulled(x):
        return tracer.vjp(f, x)[1](1.0)[0]  # the gradient, through a pullback

    x = np.array([0.3, -0.4])
    _, pb = tracer.vjp(pulled, x)
    hess_row0 = pb(np.array([1.0, 0.0]))[0]
    assert np.allclose(hess_row0, [np.exp(0.3) * 2.3, 0.0], atol=1e-12)


# -- arguments ------------------------------------------------------------------------------------
def test_star_args_parameter():
    f = lambda x, *rest: x * rest[0] + rest[1] ** 2  # noqa: E731
    g = tracer.grad(f, (0, 1, 2))
    for _ in range(3):
        assert g(1.5, 2.0, 3.0) == pytest.approx((2.0, 1.5, 6.0))


def h2(p, q):
    return p * math.sin(q)


def star_into_python(a):
    args = (a, a * 2.0)
    return h2(*args)


def star_into_primitive(a):
    return math.hypot(*[a, 2.0, a * a])


@pytest.mark.parametrize("f", [star_into_python, star_into_primitive])
def test_star_call(f):
    assert_grad(f, 0.8)


def keyword_into_primitive(a):
    return dict([("u", a)], w=a * 2.0)["w"] * 3.0 + dict(v=a)["v"]


def numpy_keywords_by_name(x):
    return np.sum(np.moveaxis(x, source=0, destination=1) * np.arange(6.0).reshape(3, 2))


def test_keyword_argument_into_a_primitive():
    assert_grad(keyword_into_primitive, 1.3)
    assert_grad(numpy_keywords_by_name, np.arange(6.0).reshape(2, 3) / 7)


def reduce_with(x, red=np.sum):
    return red(np.exp(x) * x)


def test_numpy_function_as_a_default_argument():
    x = np.array([0.2, 0.9])
    assert_grad(reduce_with, x)
    g = tracer.grad(reduce_with)
    g(x)
    # another function passed for the same path: the program is not reused for it
    assert np.allclose(g(x, np.prod), numeric(lambda y: reduce_with(y, np.prod), x), atol=1e-6)


def test_partial_and_callable_instance_as_the_function():
    def g(a, b, k=1.0):
        return a * b * k + math.sin(a)

    class Scaled:
        def __init__(self, k):
            self.k = k

        def __call__(self, v):
            return v * v * self.k

    assert tracer.grad(functools.partial(g, 2.0, k=3.0))(1.5) == pytest.approx(6.0)
    assert tracer.grad(functools.partial(g, k=3.0))(1.5, 2.0) == pytest.approx(6.0 + math.cos(1.5))
    assert tracer.grad(Scaled(2.0))(1.5) == pytest.approx(6.0)


# -- in-place updates ------------------------------------------------------------------------------
def iadd_after_read(x):
    y = x * 1.0
    z = y * y      # reads y before it changes
    y += 1.0
    return np.sum(z) + np.sum(y * y)


def store_items(a):
    out = np.zeros(3)
    out[1] = a * 2
    out[2] = out[1] * a
    return np.sum(out * np.arange(3.0))


def column_iadd(x):
    out = np.zeros((2, 3))
    for k in range(3):
        out[:, k] += x[k % 2] * (k + 1.0)
    return np.sum(out ** 2)


def store_then_imul(x):
    b = x * 2.0
    b[0] = 7.0
    b *= x
    return np.sum(b)


@pytest.mark.parametrize("f,x", [(iadd_after_read, np.array([1.0, 2.0])),
                                 (store_items, 1.5),
                                 (column_iadd, np.array([0.5, -1.0])),
                                 (store_then_imul, np.array([1.0, 2.0]))],
                         ids=["iadd_after_read", "store_items", "column_iadd", "store_then_imul"])
def test_in_place_array_updates(f, x):
    assert_grad(f, x)


def test_in_place_updates_that_would_change_meaning_are_refused():
    def stale_view(a):
        out = np.ones((2, 2))
        row = out[0]
        out[0, 1] = a
        return np.sum(row) * a

    def mutates_argument(x):
        x += 1.0
        return np.sum(x * x)

    def add_at(x):
        out = np.zeros(3)
        np.add.at(out, [0, 0], x)
        return np.sum(out)

    with pytest.raises(NoRuleError, match="shares memory"):
        tracer.grad(stale_view)(1.5)
    with pytest.raises(NoRuleError, match="caller passed"):
        tracer.grad(mutates_argument)(np.array([1.0, 2.0]))
    with pytest.raises(NoRuleError, match="in place"):
        tracer.grad(add_at)(np.array([1.0, 2.0]))


def test_backprop_refuses_an_array_changed_in_place():
    root = tracer.track(iadd_after_read, np.array([1.0, 2.0]))
    with pytest.raises(NoRuleError, match="changed in"):
        tracer.backprop(root)


def list_extend(a):
    xs = [1.0, a]
    xs.extend([a * 2, 3.0])
    ys = [*xs, a]
    zs = []
    zs.append(xs)
    return xs[2] * ys[1] + ys[4] + sum(ys) + zs[0][1] * 7


def test_list_extend_and_unpacking():
    assert_grad(list_extend, 1.5)


# -- types and errors --------------------------------------------------------------------------------
def test_float32_argument_gets_a_float32_gradient():
    x = np.array([1.0, 2.0], dtype=np.float32)
    g = tracer.grad(lambda a: np.sum(a * a))(x)
    assert g.dtype == np.float32 and np.allclose(g, 2 * x)


def test_no_rule_error_names_the_source_line():
    def uses_i0(x):
        return np.sum(np.i0(x))

    with pytest.raises(NoRuleError) as info:
        tracer.grad(uses_i0)(np.array([0.5]))
    assert "uses_i0" in str(info.value) and "test_ad_constructs.py:" in str(info.value)
    assert "@tracer.rule(numpy.i0)" in str(info.value)


# -- Jacobians, Hessians, forward mode --------------------------------------------------------------
def vector_map(x):
    return np.sin(x) * x[::-1] + np.array([1.0, 2.0, 3.0]) @ x


def test_jacobian_reverse_and_forward_against_finite_differences():
    x = np.array([0.3, 0.7, -0.2])
    want = np.array([(vector_map(x + EPS * e) - vector_map(x - EPS * e)) / (2 * EPS)
                     for e in np.eye(3)]).T
    assert np.allclose(tracer.ad.jacobian(vector_map)(x), want, atol=1e-6)
    assert np.allclose(tracer.ad.jacfwd(vector_map)(x), want, atol=1e-6)
    y, jv = tracer.ad.jvp(vector_map, (x,), np.array([0.0, 1.0, 0.0]))
    assert np.allclose(y, vector_map(x)) and np.allclose(jv, want[:, 1], atol=1e-6)


def test_hessian_of_a_quadratic_form_through_tracer_ad_hessian():
    x = np.array([0.3, -0.2, 1.1])
    assert np.allclose(tracer.ad.hessian(quadratic)(x), A, atol=1e-12)
    h = tracer.ad.hessian(lambda x: quadratic(x) + np.sum(np.cos(x)))(x)
    assert np.allclose(h, A - np.diag(np.cos(x)), atol=1e-12)


def test_jvp_of_scalar_code():
    y, jv = tracer.ad.jvp(lambda a: math.sin(a) * a, (0.5,), 1.0)
    assert y == pytest.approx(math.sin(0.5) * 0.5)
    assert jv == pytest.approx(math.cos(0.5) * 0.5 + math.sin(0.5))


def list_item_stores(a):
    out = [0.0, 0.0, 1.0]
    out[1] = a * 2
    out[-1] = out[1] * a
    ys = [a * k for k in range(3)]
    ys[0] = ys[1] * ys[2]
    ys.append(a * 3)
    ys[3] = ys[3] * ys[0]
    return out[0] + out[1] * 3 + out[2] + sum(ys)


def test_item_stores_into_lists_the_function_built():
    assert_grad(list_item_stores, 1.5)


class Scale:
    def __call__(self, v, scale=1.0):
        return v * v * scale


SCALE = Scale()


def partials_and_instances_inside(x):
    def g(a, b, k=1.0):
        return a * b * k

    p = functools.partial(g, x, k=x * 2)
    return p(3.0) + functools.partial(np.multiply, x)(4.0) + SCALE(x, scale=3.0)


def test_partials_and_callable_instances_called_inside():
    assert_grad(partials_and_instances_inside, 1.5)


def dict_comprehensions(a):
    d = {k: a * (i + 1.0) for i, k in enumerate("xyz")}
    e = {k: v * v for k, v in d.items()}
    return d["x"] + e["z"] * 2 + sum(e.values())


def test_dict_comprehensions():
    assert_grad(dict_comprehensions, 1.5)


def sorted_dict_items(w):
    d = {"b": w * 1.0, "a": w * 2.0, "c": w * w}
    pairs = sorted(d.items(), key=lambda kv: kv[0])
    return sum([np.sum(v * v) * (i + 1) for i, (k, v) in enumerate(pairs)]) \
        + sorted([w[0], 2.0, w[1] * 3], reverse=True)[0]


def test_sorted_over_dict_items_and_reversed():
    assert_grad(sorted_dict_items, np.array([0.5, -1.5]))


def test_a_hessian_vector_product_reuses_its_path():
    """grad of (grad f . v) traces once: replaying the outer path runs the inner
    gradient's code as the trace followed it (its `recording()` test is not a guard
    that fails on every replay), and the value stays the analytic H v."""
    W = np.array([[0.3, -0.2, 0.1], [0.05, 0.4, -0.3], [0.2, 0.1, 0.25]])
    v = np.array([1.0, -0.5, 2.0])

    def f(x):
        return np.sum(np.tanh(W @ x)) + 0.5 * np.sum(x * x)

    hvp = tracer.grad(lambda y: np.sum(tracer.grad(f)(y) * v))
    for x in (np.array([0.1, 0.2, -0.3]), np.array([0.5, -0.1, 0.7])):
        t = np.tanh(W @ x)
        H = W.T @ np.diag(-2 * t * (1 - t * t)) @ W + np.eye(3)
        for _ in range(4):
            assert np.allclose(hvp(x), H @ v, rtol=1e-10)
    assert hvp.paths[(0,)].traces == 1


@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.sort(x) ** 3 * np.arange(1.0, 5.0)),          # a permutation
    lambda x: np.sum(np.partition(x, 1)[:2] ** 3),
    lambda x: np.sum(x[[0, 2, 2, 3]] ** 3),                              # fancy, repeated
    lambda x: np.sum(np.take(x, [1, 1, 3]) ** 3) + np.sum(np.repeat(x, [1, 0, 2, 1]) ** 2),
])
def test_second_order_through_scatters_and_permutations(f):
    """Pullbacks that scatter (fancy indexing, take, repeat) or undo a permutation
    (sort, partition) are calls with rules of their own (tracer/ad/scatter.py), so a
    Hessian-vector product differentiates them: against central differences of the
    gradient."""
    x = np.array([0.3, -1.2, 0.8, 2.0])
    v = np.array([1.0, -0.5, 0.25, 2.0])
    g = tracer.grad(f)
    hv = tracer.grad(lambda y: np.sum(g(y) * v))
    want = (g(x + EPS * v) - g(x - EPS * v)) / (2 * EPS)
    for _ in range(3):
        assert np.allclose(hv(x), want, rtol=1e-5, atol=1e-6)


def test_keyword_dict_merged_into_a_call_and_a_dict_display():
    """`f(**m)` and `{**m, ...}` copy m into a dict the program just made
    (DICT_MERGE / DICT_UPDATE): m's items get their adjoints through the copy, at
    first and second order (a gradient's generated code calls `fn(*a, **kw)`)."""
    def inner(a, b):
        return a * b + math.sin(a)

    def f(x):
        m = {"a": x, "b": x * x}
        d = {**m, "c": 2.0}
        return inner(**m) + d["b"] * d["c"]

    want = lambda x: 3 * x * x + math.cos(x) + 4 * x  # noqa: E731  (f = x^3 + sin x + 2x^2)
    g = tracer.grad(f)
    for _ in range(3):
        assert g(0.7) == pytest.approx(want(0.7))
    g2 = tracer.grad(g)
    for _ in range(3):
        assert g2(0.7) == pytest.approx(6 * 0.7 - math.sin(0.7) + 4)


def _handled(x):
    d = {"a": x * x}
    try:
        v = d["a"] * x          # inside a handler, does not raise
    except KeyError:
        v = 0.0
    try:
        w = math.sin(v) + d["b"]   # raises: the handler's path
    except KeyError:
        w = math.cos(v)
    return w * x


def test_second_order_through_try_except():
    """A gradient's generated code runs the calls inside the traced code's handlers
    as plain `try` blocks (no op objects passed at run time), so an outer gradient
    follows them: grad(grad(f)) of a function with try/except (was NoRuleError for
    tracer.tapes.play.evaluate)."""
    g = tracer.grad(_handled)
    want = numeric(lambda a: g(a), 0.7)
    gg = tracer.grad(g)
    for _ in range(4):
        assert gg(0.7) == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_third_order_through_a_gradient_taken_inside():
    """autograd's test_nested_higher_order: a gradient taken inside the function,
    differentiated three times (its wrapper's functools.wraps, its dict of keyword
    arguments and the adjoint containers of the inner pullbacks on the path)."""
    def outer(x):
        def inner(y):
            return y[0] * y[1]
        return np.sum(np.sin(np.array(tracer.grad(inner)((x, x)))))

    g = tracer.grad(outer)
    gg = tracer.grad(g)
    ggg = tracer.grad(gg)
    for x in (1.3, 1.3, 1.3, 0.4):
        assert g(x) == pytest.approx(numeric(outer, x), rel=1e-5, abs=1e-6)
        assert gg(x) == pytest.approx(numeric(g, x), rel=1e-5, abs=1e-6)
        assert ggg(x) == pytest.approx(numeric(gg, x), rel=1e-4, abs=1e-5)
