"""Rules for numpy: ufuncs (broadcasting undone on the way back), `dot`/`matmul`/`@`,
reductions with `axis`, shape changes, indexing, `concatenate`/`stack`, `where`.

Each pullback receives the call's arguments as the program passed them (keywords
included), so `np.sum(x, axis=1, keepdims=True)` and `x.sum(1)` both work.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from .adjoints import Seq, abs_slope, from_seq, unbroadcast as ub
from .errors import NoRuleError
from .rules import defrule

__all__: list[str] = []


def _unary(ufunc, pb):
    defrule(ufunc, lambda g, ans, x, *rest, **kw: ub(pb(g, ans, x), x))


_unary(np.negative, lambda g, ans, x: -g)
_unary(np.exp, lambda g, ans, x: g * ans)
_unary(np.expm1, lambda g, ans, x: g * (ans + 1.0))
_unary(np.log, lambda g, ans, x: g / x)
_unary(np.log1p, lambda g, ans, x: g / (1.0 + x))
_unary(np.log2, lambda g, ans, x: g / (x * np.log(2.0)))
_unary(np.log10, lambda g, ans, x: g / (x * np.log(10.0)))
_unary(np.tanh, lambda g, ans, x: g * (1.0 - ans * ans))
_unary(np.sqrt, lambda g, ans, x: g * 0.5 / ans)
_unary(np.square, lambda g, ans, x: g * 2.0 * x)
_unary(np.reciprocal, lambda g, ans, x: -g * ans * ans)
_unary(np.sin, lambda g, ans, x: g * np.cos(x))
_unary(np.cos, lambda g, ans, x: -g * np.sin(x))
_unary(np.tan, lambda g, ans, x: g * (1.0 + ans * ans))
_unary(np.arctan, lambda g, ans, x: g / (1.0 + x * x))
_unary(np.sinh, lambda g, ans, x: g * np.cosh(x))
_unary(np.cosh, lambda g, ans, x: g * np.sinh(x))
_unary(np.absolute, lambda g, ans, x: g * abs_slope(x))
_unary(np.positive, lambda g, ans, x: g)


def _binary(ufunc, pa, pb):
    defrule(ufunc, lambda g, ans, a, b, *rest, **kw: ub(pa(g, ans, a, b), a),
            lambda g, ans, a, b, *rest, **kw: ub(pb(g, ans, a, b), b))


def _tie_share(mine, other):
    """1 where `mine` won, 0.5 on a tie, 0 where it lost (as autograd and jax split ties)."""
    return np.where(mine == other, 0.5, (mine > other) * 1.0)


_binary(np.add, lambda g, ans, a, b: g, lambda g, ans, a, b: g)
_binary(np.subtract, lambda g, ans, a, b: g, lambda g, ans, a, b: -g)
_binary(np.multiply, lambda g, ans, a, b: g * b, lambda g, ans, a, b: g * a)
_binary(np.divide, lambda g, ans, a, b: g / b, lambda g, ans, a, b: -g * a / (b * b))
_binary(np.power, lambda g, ans, a, b: g * b * np.power(a, np.where(b, b - 1.0, 1.0)),
        lambda g, ans, a, b: g * ans * np.log(np.where(np.asarray(a) > 0, a, 1.0)))
_binary(np.maximum, lambda g, ans, a, b: g * _tie_share(a, b),
        lambda g, ans, a, b: g * _tie_share(b, a))
_binary(np.minimum, lambda g, ans, a, b: g * _tie_share(-np.asarray(a), -np.asarray(b)),
        lambda g, ans, a, b: g * _tie_share(-np.asarray(b), -np.asarray(a)))
_binary(np.logaddexp, lambda g, ans, a, b: g * np.exp(a - ans),
        lambda g, ans, a, b: g * np.exp(b - ans))
_binary(np.arctan2, lambda g, ans, y, x: g * x / (x * x + y * y),
        lambda g, ans, y, x: -g * y / (x * x + y * y))


# -- matmul and dot ----------------------------------------------------------------------
def _matmul_parts(g, a, b):
    """(adjoint of a, adjoint of b) for `a @ b` (1-D operands as numpy promotes them)."""
    a, b, g = np.asarray(a), np.asarray(b), np.asarray(g)
    if a.ndim == 0 or b.ndim == 0:
        return ub(g * b, a), ub(g * a, b)
    A = a[None, :] if a.ndim == 1 else a
    B = b[:, None] if b.ndim == 1 else b
    G = g
    if b.ndim == 1:
        G = np.expand_dims(G, -1)
    if a.ndim == 1:
        G = np.expand_dims(G, -2)
    ga = G @ np.swapaxes(B, -1, -2)
    gb = np.swapaxes(A, -1, -2) @ G
    ga = ub(ga, A).reshape(a.shape) if ga.shape != A.shape else ga.reshape(a.shape)
    gb = ub(gb, B).reshape(b.shape) if gb.shape != B.shape else gb.reshape(b.shape)
    return ga, gb


def _dot_nd(g, a, b, which):
    """np.dot of operands with more than 2 dimensions: the last axis of `a` with the
    second-to-last of `b` (its only one when 1-D), as an einsum."""
    from .numpy_extra import _LETTERS, _einsum_arg

    na, nb = np.ndim(a), np.ndim(b)
    sa = _LETTERS[:na]
    sb = list(_LETTERS[na:na + nb])
    sb[-2 if nb > 1 else -1] = sa[-1]
    sb = "".join(sb)
    out = sa[:-1] + (sb[:-2] + sb[-1] if nb > 1 else "")
    return _einsum_arg(which + 1)(g, None, f"{sa},{sb}->{out}", a, b)


def _mm_a(g, ans, a, b, *rest, **kw):
    return _matmul_parts(g, a, b)[0]


def _mm_b(g, ans, a, b, *rest, **kw):
    return _matmul_parts(g, a, b)[1]


def _dot_a(g, ans, a, b, *rest, **kw):
    if max(np.ndim(a), np.ndim(b)) > 2 and min(np.ndim(a), np.ndim(b)) > 0:
        return _dot_nd(g, a, b, 0)
    return _matmul_parts(g, a, b)[0]


def _dot_b(g, ans, a, b, *rest, **kw):
    if max(np.ndim(a), np.ndim(b)) > 2 and min(np.ndim(a), np.ndim(b)) > 0:
        return _dot_nd(g, a, b, 1)
    return _matmul_parts(g, a, b)[1]


for _fn in (operator.matmul, operator.imatmul, np.matmul):
    defrule(_fn, _mm_a, _mm_b)
for _fn in (np.dot, np.ndarray.dot):
    defrule(_fn, _dot_a, _dot_b)
defrule(np.outer, lambda g, ans, a, b: g @ np.ravel(b), lambda g, ans, a, b: np.ravel(a) @ g)


# -- reductions ----------------------------------------------------------------------------
def _axis_of(args, kw, k=0):
    axis = kw.get("axis", args[k] if len(args) > k else None)
    return axis


def _expand(g, x, axis, keepdims):
    """`g` (a reduction's adjoint) broadcast back to `x`'s shape."""
    x = np.asarray(x)
    g = np.asarray(g)
    if axis is not None and not keepdims:
        axes = axis if isinstance(axis, tuple) else (axis,)
        axes = tuple([a % x.ndim for a in axes])  # a list: an outer gradient follows it
        g = np.expand_dims(g, sorted(axes))
    return np.broadcast_to(g, x.shape)


def _count(x, axis):
    x = np.asarray(x)
    if axis is None:
        return x.size
    axes = axis if isinstance(axis, tuple) else (axis,)
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


def _sum_pb(g, ans, x, *args, **kw):
    axis = _axis_of(args, kw)
    out = _expand(g, x, axis, kw.get("keepdims", args[3] if len(args) > 3 else False))
    return _for(out, x)


def _mean_pb(g, ans, x, *args, **kw):
    axis = _axis_of(args, kw)
    out = _expand(g, x, axis, kw.get("keepdims", args[3] if len(args) > 3 else False))
    return _for(out / _count(x, axis), x)


def _max_pb(g, ans, x, *args, **kw):
    axis = _axis_of(args, kw)
    keep = kw.get("keepdims", args[2] if len(args) > 2 else False)
    xa = np.asarray(x)
    full = _expand(ans, xa, axis, keep)
    mask = (xa == full) * 1.0
    share = mask / _expand(mask.sum(axis=axis, keepdims=True), xa, None, True)
    return _for(_expand(g, xa, axis, keep) * share, x)


def _for(adj, x):
    """An array adjoint for `x`: a Seq of rows when `x` is a list of numbers/arrays."""
    if isinstance(x, (list, tuple)):
        return Seq(dict(list(enumerate(adj))), owned=True)
    return adj


_REDUCE_KW = ("axis", "keepdims", "dtype")
for _fn in (np.sum, np.ndarray.sum):
    defrule(_fn, _sum_pb, keywords=_REDUCE_KW)
for _fn in (np.mean, np.ndarray.mean):
    defrule(_fn, _mean_pb, keywords=_REDUCE_KW)
for _fn in (np.max, np.ndarray.max, np.amax):
    defrule(_fn, _max_pb, keywords=("axis", "keepdims"))
for _fn in (np.min, np.ndarray.min, np.amin):
    defrule(_fn, lambda g, ans, x, *a, **kw: _max_pb(g, ans, x, *a, **kw),
            keywords=("axis", "keepdims"))


# -- shapes ----------------------------------------------------------------------------------
def _reshape_pb(g, ans, x, *args, **kw):
    return np.reshape(g, np.shape(x))


for _fn in (np.reshape, np.ndarray.reshape, np.squeeze, np.ndarray.squeeze, np.expand_dims,
            np.ravel, np.ndarray.ravel, np.ndarray.flatten, np.atleast_1d, np.atleast_2d):
    defrule(_fn, _reshape_pb)


def _transpose_pb(g, ans, x, *axes, **kw):
    axes = kw.get("axes", axes)
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list, np.ndarray))):
        axes = axes[0]
    if axes is None or len(axes) == 0:  # (an array of axes: a gradient of this rule's code)
        return np.transpose(g)
    return np.transpose(g, np.argsort(axes))


defrule(np.transpose, _transpose_pb, keywords=("axes",))
defrule(np.ndarray.transpose, _transpose_pb, keywords=("axes",))


def _getattr_pb(g, ans, obj, name, *default):
    if name == "T" or name == "mT" and np.ndim(obj) == 2:
        return np.transpose(g)
    if name == "real" or name == "items" and type(obj) is Seq:
        return g  # an adjoint Seq's adjoint is keyed like its items (second order)
    raise NoRuleError(getattr, note=f"The built-in rule covers the attributes `.T` and "
                      f"`.real` of arrays; this reads `.{name}` of a "
                      f"{type(obj).__name__}.")


defrule(builtins.getattr, _getattr_pb)


def _where_x(g, ans, cond, x, y):
    return ub(np.where(cond, g, 0.0), x)


def _where_y(g, ans, cond, x, y):
    return ub(np.where(cond, 0.0, g), y)


defrule(np.where, lambda g, ans, cond, *xy: np.zeros(np.shape(cond)), _where_x, _where_y)


def _clip_pb(g, ans, x, *args, **kw):
    lo = args[0] if args else kw.get("a_min", kw.get("min"))
    hi = args[1] if len(args) > 1 else kw.get("a_max", kw.get("max"))
    x = np.asarray(x)
    inside = np.ones(x.shape, dtype=bool)
    if lo is not None:
        inside &= x >= lo
    if hi is not None:
        inside &= x <= hi
    return g * inside


defrule(np.clip, _clip_pb, keywords=("a_min", "a_max", "min", "max"))


def _array_pb(g, ans, x, *args, **kw):
    """`np.array(items)`: a list or tuple of numbers (or of arrays) gets item k's
    adjoint from row k."""
    if isinstance(x, (list, tuple)):
        return Seq({k: g[k] for k in range(len(x))}, owned=True)
    return g


for _fn in (np.array, np.asarray):
    defrule(_fn, _array_pb, keywords=("dtype",))
defrule(np.ndarray.copy, lambda g, ans, x, *a, **kw: g)
defrule(np.copy, lambda g, ans, x, *a, **kw: g)
def _seq_items_pb(g, ans, items, owned=False):
    """An adjoint container built in a pullback (second order): its items' adjoint
    (a zero number standing for an untouched container is no adjoint: the items
    are a dict, whose adjoint is a container's)."""
    if type(g) is not Seq and type(g) in (float, int) and g == 0:
        return None
    return g


defrule(Seq, _seq_items_pb, keywords=("owned",))
