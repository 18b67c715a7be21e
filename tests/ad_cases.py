"""Functions to differentiate, each written once for a module namespace `M`.

`make(M)` returns the function: the tests pass `M = PLAIN` (math for scalars,
numpy for arrays: the code tracer differentiates as it is) or, for the reference,
`M = AUTOGRAD` (autograd.numpy for both).  Each case is (name, make, args, argnums).
"""

from __future__ import annotations

import math
import random
import types

import numpy as np

EPS = 1e-6


def numeric(f, x, eps=EPS):
    """Central differences of scalar f at a float, a list of floats or an array
    (what the AD tests compare tracer's gradients with)."""
    if isinstance(x, float):
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    if isinstance(x, list):
        out = []
        for i in range(len(x)):
            up, down = list(x), list(x)
            up[i] += eps
            down[i] -= eps
            out.append((f(up) - f(down)) / (2 * eps))
        return out
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        d = np.zeros(x.shape)
        d[i] = eps
        out[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return out


PLAIN = types.SimpleNamespace(
    sin=math.sin, cos=math.cos, exp=math.exp, log=math.log, sqrt=math.sqrt, tanh=math.tanh,
    np=np)


def autograd_namespace():
    import autograd.numpy as anp

    return types.SimpleNamespace(sin=anp.sin, cos=anp.cos, exp=anp.exp, log=anp.log,
                                 sqrt=anp.sqrt, tanh=anp.tanh, np=anp)


CASES: list = []


def case(*args, argnums=0, name=None):
    def register(make):
        CASES.append((name or make.__name__, make, args, argnums))
        return make
    return register


# -- scalar Python: arithmetic and math ---------------------------------------------------------
@case(1.3)
def poly(M):
    return lambda x: x ** 3 - 2 * x ** 2 + x - 7


@case(0.7)
def rational(M):
    return lambda x: (x * x + 1) / (x - 3)


@case(0.4)
def sin_cos(M):
    return lambda x: M.sin(x) * M.cos(x) + M.sin(x * x)


@case(0.9)
def exp_log(M):
    return lambda x: M.exp(x) + M.log(x * x + 1) - M.exp(-x) / 2


@case(0.8)
def sqrt_tanh(M):
    return lambda x: M.sqrt(x + 2) * M.tanh(x)


@case(1.1, 2.3, argnums=(0, 1))
def two_args(M):
    return lambda x, y: x * y + x / y - y ** 2


@case(1.5, -0.5, argnums=1)
def second_arg(M):
    return lambda x, y: M.sin(x * y) + y


@case(0.6)
def neg_pos(M):
    return lambda x: -x + (+x) * 3 - (-(x * x))


@case(1.7)
def pow_float_exponent(M):
    return lambda x: x ** 2.5 + 2.0 ** x


@case(1.2)
def inplace_ops(M):
    def f(x):
        y = x
        y += 1.0
        y *= x
        y -= 0.5
        y /= 2.0
        y **= 2
        return y
    return f


# -- loops ---------------------------------------------------------------------------------
@case(0.5, 4)
def while_loop_h(M):
    def h(x, n):
        i = 0
        while i < n:
            x = x * 1.1 + M.cos(x)
            i += 1
        return x
    return h


@case(0.3, 6)
def for_range_series(M):
    def f(x, n):
        total = 0.0
        term = 1.0
        for k in range(1, n):
            term = term * x / k
            total = total + term
        return total
    return f


@case(1.2)
def nested_loops(M):
    def f(x):
        s = 0.0
        for i in range(3):
            for j in range(2):
                s = s + x ** (i + 1) * (j + 1)
        return s
    return f


@case(0.9)
def loop_with_break(M):
    def f(x):
        s = x
        for i in range(10):
            s = s * 1.3
            if s > 3.0:
                break
        return s
    return f


@case(2.0)
def newton_sqrt(M):
    def f(a):
        x = a
        for _ in range(5):
            x = 0.5 * (x + a / x)
        return x
    return f


@case([0.5, 1.5, -0.3])
def loop_over_list(M):
    def f(xs):
        t = 0.0
        for x in xs:
            t = t + x * x
        return t
    return f


@case([0.5, 1.5, -0.3])
def list_comprehension_sum(M):
    return lambda xs: sum([M.sin(x) * x for x in xs])


@case(0.7)
def enumerate_zip(M):
    def f(x):
        s = 0.0
        for i, v in enumerate([x, 2 * x, x * x]):
            s = s + i * v
        for a, b in zip([x, M.sin(x)], [1.0, 2.0]):
            s = s + a * b
        return s
    return f


@case(0.4)
def list_built_and_indexed(M):
    def f(x):
        xs = [x, x * x, M.exp(x)]
        return xs[0] * xs[2] + xs[-1] - xs[1]
    return f


@case(1.3)
def appended_list(M):
    def f(x):
        out = []
        for k in range(4):
            out.append(x * k)
        return sum(out) + out[2] * out[3]
    return f


# -- branches -----------------------------------------------------------------------------------
@case(0.8)
def branch_positive(M):
    return lambda x: x * x if x > 0 else -x


@case(-0.8)
def branch_negative(M):
    return lambda x: x * x if x > 0 else -x * 3


@case(1.5)
def elif_chain(M):
    def f(x):
        if x < 0:
            return -x
        elif x < 1:
            return x * x
        elif x < 2:
            return M.sin(x) * x
        return x
    return f


@case(0.2)
def abs_min_max(M):
    return lambda x: abs(x - 1) + max(x, 2 * x) + min(x, x * x)


@case(0.7, 2.0)
def builtin_pow(M):
    return lambda x, y: pow(x, 3) + pow(y, x)


@case(0.3)
def branch_on_computed(M):
    def f(x):
        y = M.sin(x) * 5
        if y > 1:
            y = y - 1
        else:
            y = y * y
        return y * x
    return f


# -- functions, closures, recursion, methods --------------------------------------------------
@case(0.6)
def helper_calls(M):
    def sq(y):
        return y * y

    def cube(y):
        return sq(y) * y
    return lambda x: sq(x) + cube(x) + sq(cube(x))


@case(0.6)
def keyword_and_default(M):
    def lin(y, a=2.0, b=1.0):
        return a * y + b
    return lambda x: lin(x) + lin(x, b=x) + lin(a=x, y=3.0)


@case(1.5)
def closure_over_argument(M):
    def make(a):
        def inner(y):
            return a * y * y
        return inner
    return lambda x: make(2.0)(x) + make(x)(3.0)


@case(0.9)
def closure_nonlocal_accumulator(M):
    def f(x):
        def scaled(y):
            return y * x
        return scaled(2.0) + scaled(x)
    return f


@case(1.1)
def lambda_inside(M):
    def f(x):
        g = lambda y: M.exp(y) * x  # noqa: E731
        return g(x) + g(1.0)
    return f


@case(1.2, 5)
def recursion_power(M):
    def power(x, n):
        if n == 0:
            return 1.0
        return x * power(x, n - 1)
    return power


@case(0.5, 6)
def recursion_two_branches(M):
    def f(x, n):
        if n <= 1:
            return x
        return f(x, n - 1) + M.sin(f(x, n - 2))
    return f


class Poly:
    def __init__(self, coefs):
        self.coefs = coefs

    def __call__(self, x):
        return self.evaluate(x)

    def evaluate(self, x):
        s = 0.0
        for c in reversed(self.coefs):
            s = s * x + c
        return s


@case(0.7)
def method_call(M):
    p = Poly([1.0, -2.0, 0.5, 3.0])
    return lambda x: p.evaluate(x) + p.evaluate(x * x)


@case(0.7)
def callable_object(M):
    p = Poly([1.0, 2.0, 3.0])
    return lambda x: p(x) * 2


class Counter:
    def __init__(self):
        self.scale = 3.0

    def step(self, x):
        return self.scale * x * x


@case(0.4)
def method_reading_attribute(M):
    c = Counter()
    return lambda x: c.step(x) + c.step(M.sin(x))


@case(0.3)
def geom_seeded(M):
    def geom(p):
        if random.random() < p:
            return 1.0 * p
        return p * p + geom(p)

    def f(p):
        random.seed(4)
        return geom(p)
    return f


# -- containers as arguments ------------------------------------------------------------------
@case((1.0, 2.0))
def tuple_argument(M):
    def f(params):
        a, b = params
        return a * b + a * a
    return f


@case({"w": 0.5, "b": -1.0})
def dict_argument(M):
    return lambda d: d["w"] * d["b"] + M.exp(d["w"])


@case([1.0, 2.0, 3.0], [0.5, -1.0, 2.0], argnums=(0, 1))
def two_lists(M):
    def f(xs, ys):
        return sum([x * y for x, y in zip(xs, ys)])
    return f


@case((0.5, [1.0, 2.0]))
def nested_container(M):
    def f(p):
        a, bs = p
        return a * bs[0] + bs[1] ** 2
    return f


@case(0.8)
def unused_argument_part(M):
    return lambda x: 3.0 + 0.0 * 2


# -- numpy ------------------------------------------------------------------------------------
_rng = np.random.default_rng(0)
W1 = _rng.normal(size=(4, 3))
B1 = _rng.normal(size=4)
W2 = _rng.normal(size=(2, 4))
X = _rng.normal(size=(5, 3))
Y = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
MU = np.array([-1.0, 0.5, 2.0])
LOGW = np.log(np.array([0.2, 0.5, 0.3]))


@case(W1, X)
def mlp(M):
    np_ = M.np

    def f(W, x):
        h = np_.tanh(x @ W.T + B1)
        out = h @ W2.T
        return np_.sum(out ** 2)
    return f


@case((W1, B1, W2), X)
def mlp_params_tuple(M):
    np_ = M.np

    def f(params, x):
        W, b, V = params
        h = np_.tanh(np_.dot(x, W.T) + b)
        return np_.mean(np_.dot(h, V.T) ** 2)
    return f


@case(np.array([0.3, -0.2, 0.5]))
def logistic_regression(M):
    np_ = M.np

    def loglik(w):
        z = X @ w
        return np_.sum(Y * z - np_.log(1.0 + np_.exp(z)))
    return loglik


@case(np.array([0.1, -0.4, 1.5, 2.2]))
def gaussian_mixture(M):
    np_ = M.np

    def logdens(xs):
        d = xs[:, None] - MU[None, :]
        comp = LOGW - 0.5 * d * d - 0.5 * np_.log(2 * np_.pi)
        m = np_.max(comp, axis=1)
        return np_.sum(m + np_.log(np_.sum(np_.exp(comp - m[:, None]), axis=1)))
    return logdens


@case(np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]]))
def softmax_broadcast(M):
    np_ = M.np

    def f(z):
        e = np_.exp(z - np_.max(z, axis=1, keepdims=True))
        p = e / np_.sum(e, axis=1, keepdims=True)
        return np_.sum(p * np_.array([[1.0, 2.0, 3.0]]))
    return f


@case(np.array([1.0, -2.0, 0.5, 3.0]))
def indexing_basic(M):
    np_ = M.np
    return lambda v: v[0] * v[2] + np_.sum(v[1:3] ** 2) + v[-1]


@case(np.array([1.0, -2.0, 0.5, 3.0]))
def indexing_fancy(M):
    np_ = M.np
    return lambda v: np_.sum(v[np_.array([0, 2, 2, 3])] ** 2) + np_.sum(v[v > 0])


@case(np.arange(6.0).reshape(2, 3) / 3)
def indexing_2d(M):
    np_ = M.np
    return lambda a: np_.sum(a[1] * a[0]) + a[0, 2] ** 2 + np_.sum(a[:, 1])


@case(np.array([0.5, 1.5]), np.array([2.0, -1.0, 0.3]), argnums=(0, 1))
def concatenate_stack(M):
    np_ = M.np

    def f(a, b):
        c = np_.concatenate([a, b, a * 2])
        s = np_.stack([a, a * a])
        return np_.sum(c ** 2) + np_.sum(s[1] * s[0])
    return f


@case(np.array([0.5, -1.5, 2.0, -0.2]))
def where_maximum(M):
    np_ = M.np

    def f(v):
        r = np_.maximum(v, 0.1 * v)
        w = np_.where(v > 0, v * v, -v)
        return np_.sum(r * 3) + np_.sum(w)
    return f


@case(np.arange(12.0).reshape(3, 4) / 10)
def reshape_transpose(M):
    np_ = M.np

    def f(a):
        b = a.reshape(4, 3)
        c = np_.reshape(a, (2, 6))
        return np_.sum(b.T * a) + np_.sum(c ** 2) + np_.sum(np_.transpose(a) @ a)
    return f


@case(np.arange(12.0).reshape(3, 4) / 10)
def sum_mean_axis(M):
    np_ = M.np

    def f(a):
        return (np_.sum(np_.sum(a, axis=0) ** 2) + np_.mean(a, axis=1) @ np_.ones(3)
                + a.sum(axis=1).max() + a.mean())
    return f


@case(np.array([0.5, 1.2, 2.0]))
def elementwise_functions(M):
    np_ = M.np
    return lambda v: np_.sum(np_.sqrt(v) * np_.log(v) + np_.tanh(v) - np_.exp(-v) + np_.sin(v))


@case(np.array([0.5, 1.2, 2.0]), 1.5, argnums=(0, 1))
def array_and_scalar(M):
    np_ = M.np
    return lambda v, s: np_.sum(v * s + s ** 2 / v)


@case(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.5, -1.0]), argnums=(0, 1))
def matvec_dot(M):
    np_ = M.np
    return lambda A, x: np_.dot(np_.dot(A, x), x) + x @ A @ x


@case(np.array([0.5, 1.0, -1.0]))
def outer_product(M):
    np_ = M.np
    return lambda v: np_.sum(np_.outer(v, v) ** 2)


@case(np.array([1.0, 2.0, 3.0]))
def numpy_loop_rows(M):
    np_ = M.np

    def f(v):
        A = np_.stack([v, v * 2, v * v])
        total = 0.0
        for row in A:
            total = total + np_.sum(row) * row[0]
        return total
    return f


@case(np.array([0.3, 0.9]))
def numpy_scalar_mix(M):
    np_ = M.np

    def f(v):
        s = np_.sum(v)
        return s * 2.0 + s ** 2 + M.sin(v[0] * 1.0)
    return f


@case(np.array([[0.2, 0.4], [0.6, 0.8]]))
def log_softmax_rows(M):
    np_ = M.np

    def f(z):
        m = np_.max(z, axis=1, keepdims=True)
        lse = m + np_.log(np_.sum(np_.exp(z - m), axis=1, keepdims=True))
        return np_.sum((z - lse)[:, 0])
    return f


@case(np.array([1.5, -0.5, 0.25]))
def minimum_abs(M):
    np_ = M.np
    return lambda v: np_.sum(np_.minimum(v, 0.5) + np_.abs(v) * v)


@case(np.array([0.2, 0.7]), 3)
def numpy_loop_recurrence(M):
    np_ = M.np

    def f(h, n):
        A = np_.array([[0.9, -0.2], [0.3, 0.8]])
        for _ in range(n):
            h = np_.tanh(A @ h + 0.1)
        return np_.sum(h * h)
    return f


@case(np.array([1.0, 2.0]), 0.5, argnums=(0, 1))
def gaussian_loglik(M):
    np_ = M.np

    def f(mu, log_sigma):
        sigma = M.exp(log_sigma)
        data = np_.array([0.3, 1.7, 2.5, 0.9])
        z = (data[:, None] - mu[None, :]) / sigma
        return np_.sum(-0.5 * z * z - log_sigma)
    return f


@case(0.5)
def scalar_through_numpy(M):
    np_ = M.np
    return lambda x: np_.sum(np_.exp(np_.array([1.0, 2.0]) * x))


@case(0.5)
def float_conversion(M):
    return lambda x: float(x * 2) ** 2 + float(M.np.sum(M.np.array([x, x])))


@case(0.3, 0.8, argnums=(0, 1))
def atan2_hypot(M):
    return lambda y, x: math.atan2(y, x) + math.hypot(x, y)


@case(0.4)
def more_math(M):
    return lambda x: math.tan(x) + math.atan(x) + math.log1p(x) + math.expm1(x) + math.cosh(x)


@case(2.5)
def math_log_base(M):
    return lambda x: math.log(x, 2.0) + math.log(10.0, x) + math.pow(x, 1.5)


@case(1.1)
def tuple_returning_helper(M):
    def both(y):
        return y * y, M.sin(y)

    def f(x):
        a, b = both(x)
        return a * b
    return f


@case([0.4, 0.9, 1.3])
def sliced_list(M):
    return lambda xs: sum(xs[1:]) * xs[0] + sum(xs[:2])


@case(0.6)
def conditional_expression_loop(M):
    def f(x):
        s = 0.0
        for k in range(5):
            s = s + (x * k if k % 2 else M.exp(x) / (k + 1))
        return s
    return f


@case(0.6)
def try_except_path(M):
    def checked_log(y):
        if y <= 0:
            raise ValueError("log of a number <= 0")
        return M.log(y)

    def f(x):
        try:
            y = checked_log(x - 1.0)
        except ValueError:
            y = x * x
        return y + x
    return f


@case(0.9)
def dict_built_inside(M):
    def f(x):
        d = {"a": x, "b": x * x}
        return d["a"] * d["b"]
    return f


@case(1.3, 3)
def int_argument_ignored(M):
    return lambda x, n: x ** n + n


@case(np.array([0.4, 1.1, 0.7]))
def numpy_mean_var(M):
    np_ = M.np

    def f(v):
        m = np_.mean(v)
        return np_.mean((v - m) ** 2)
    return f


@case(np.array([[0.5, 1.0], [2.0, 0.3]]))
def numpy_power_divide(M):
    np_ = M.np
    return lambda a: np_.sum(a ** 3 / (1.0 + a) - 2.0 / a)


@case(np.array([0.5, 1.0, 2.0]))
def numpy_square_reciprocal(M):
    np_ = M.np
    return lambda v: np_.sum(np_.square(v) + np_.reciprocal(v) + np_.log1p(v))


@case(np.arange(6.0).reshape(2, 3) / 4 + 0.1, np.arange(6.0).reshape(3, 2) / 5 - 0.3,
      argnums=(0, 1))
def matmul_matrices(M):
    np_ = M.np
    return lambda A, B: np_.sum(np_.tanh(np_.matmul(A, B)) ** 2)


@case(np.array([[0.5, -1.0, 2.0]]), np.array([0.3, 0.7, -0.2]), argnums=(0, 1))
def stacking_variants(M):
    np_ = M.np

    def f(a, b):
        v = np_.vstack([a, a * 2, b[None, :]])
        w = np_.vstack([b, b * b])
        u = np_.hstack([b, a.ravel()])
        k = np_.hstack([a, a])
        return np_.sum(v ** 2) + np_.sum(w * 3) + u @ u + np_.sum(k * np_.squeeze(a)[0])
    return f


@case(np.array([[0.5, -1.0, 2.0], [1.5, 0.2, -0.3]]))
def clip_max_min_axis(M):
    np_ = M.np

    def f(a):
        return (np_.sum(np_.clip(a, -0.5, 1.0) * a) + np_.sum(np_.max(a, axis=0))
                + np_.min(a) + np_.sum(a.max(axis=1)))
    return f


@case(0.7)
def array_from_floats(M):
    np_ = M.np
    return lambda x: np_.sum(np_.array([x, x * x, 2.0]) ** 2)


@case(np.array([0.5, -1.2, 2.0]))
def vector_norm(M):
    np_ = M.np
    return lambda v: np_.linalg.norm(v) * 2 + np_.linalg.norm(v * v)


@case({"a": 0.5, "b": -1.5, "c": 2.0})
def dict_methods(M):
    def f(params):
        s = 0.0
        for name, v in params.items():
            s = s + v * v * len(name)
        for v in params.values():
            s = s + M.sin(v)
        return s + params.get("a") * params.get("c")
    return f


@case([0.3, -1.2, 0.8])
def sorted_values(M):
    def f(xs):
        ys = sorted([x * x for x in xs])
        return ys[0] + 2 * ys[1] + 3 * ys[2]
    return f
