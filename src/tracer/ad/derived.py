"""Jacobians, Hessians and forward-mode products, built on `vjp`.

`jacobian(f)(x)` stacks one vector-Jacobian product per output element (one
trace, one pullback reused); `hessian(f)(x)` is the Jacobian of `grad(f)` (a
gradient differentiated again: see tracer.ad.api); `jvp(f, x, v)` is the
Jacobian-vector product, the VJP of the (linear) pullback itself: J v =
d/du <J^T u, v>, with the pullback's generated code traced as plain Python;
`jacfwd` stacks JVPs along each input direction.  Arguments are floats or float
arrays; each function differentiates with respect to argument `argnums` (an int).
"""

from __future__ import annotations

import functools

import numpy as np

from . import adjoints, api

__all__ = ["jacobian", "hessian", "jvp", "jacfwd"]


def _as_array(v):
    return np.asarray(v, dtype=float)


def jacobian(f, argnums: int = 0):
    """A function returning the Jacobian of `f` with respect to argument `argnums`:
    an array of shape `shape(f(x)) + shape(x)` (reverse mode, one row per output)."""
    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        x = args[argnums]
        y, pullback = api.vjp_positions(f, args, (argnums,), kwargs)
        ya = _as_array(y)
        rows = []
        for i in range(ya.size):
            seed = np.zeros(ya.size)
            seed[i] = 1.0
            g = pullback(seed.reshape(ya.shape) if ya.ndim else 1.0)[0]
            rows.append(_as_array(adjoints.to_gradient(g, x)))
        return np.array(rows).reshape(ya.shape + np.shape(x))
    return jacobian_f


def hessian(f, argnums: int = 0):
    """A function returning the Hessian of scalar `f` with respect to argument
    `argnums`: the Jacobian of its gradient."""
    return jacobian(api.grad(f, argnums), argnums)


def jvp(f, args: tuple, tangent, argnums: int = 0, kwargs=None):
    """`(f(*args), J v)`: the Jacobian-vector product of `f` at `args` along
    `tangent` (for argument `argnums`), by transposing the pullback."""
    kwargs = kwargs or {}
    prog = api._vjp_program(f, args, (argnums,), kwargs)[1]
    prog.compile()
    y, state = prog.forward(args, kwargs)  # generated code: an outer trace follows it
    x = args[argnums]

    def transposed(u):
        return prog.backward(state, u)[0]

    # The pullback is linear in u: its VJP along `tangent` is J @ tangent.
    u0 = np.zeros(np.shape(y)) if np.ndim(y) else 0.0
    _, back = api.vjp_positions(transposed, (u0,), (0,), {})
    t = _as_array(tangent) if isinstance(x, np.ndarray) else float(tangent)
    jv = back(t)[0]
    if jv is None:
        jv = np.zeros(np.shape(y)) if np.ndim(y) else 0.0
    return y, adjoints.to_gradient(jv, u0)


def jacfwd(f, argnums: int = 0):
    """A function returning the Jacobian of `f` by forward mode: one JVP per input
    element (the better choice when the output is larger than the input)."""
    @functools.wraps(f)
    def jacfwd_f(*args, **kwargs):
        x = args[argnums]
        xa = _as_array(x)
        cols = []
        for i in range(xa.size):
            t = np.zeros(xa.size)
            t[i] = 1.0
            _, jv = jvp(f, args, t.reshape(xa.shape) if xa.ndim else 1.0, argnums, kwargs)
            cols.append(_as_array(jv))
        y = _as_array(f(*args, **kwargs))
        return np.moveaxis(np.array(cols), 0, -1).reshape(y.shape + xa.shape)
    return jacfwd_f
