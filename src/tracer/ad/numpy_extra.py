"""Rules for the rest of the numpy namespace users reach for (autograd.numpy's
coverage): more ufuncs, products and statistics, cumulative sums, diagonals and
triangles, rolls, flips and sorts, splits and stacks, `take`, `pad`, `einsum`,
`tensordot`, `kron`.  Each pullback reads the call's arguments as they were passed;
keywords a rule does not list are refused by the analysis (tracer.ad.program).
"""

from __future__ import annotations

import operator

import numpy as np

from .adjoints import Seq, seq_get, unbroadcast as ub
from .errors import NoRuleError
from .rules import defrule
from .scatter import permute_along, scatter_add

__all__: list[str] = []


def _zero(g, ans, x, *args, **kw):
    """The derivative of a piecewise-constant function (sign, floor, ...): zero."""
    return np.zeros(np.shape(x)) if isinstance(x, np.ndarray) else 0.0 * np.sum(g)


def _unary(fn, pb):
    defrule(fn, lambda g, ans, x: ub(pb(g, ans, np.asarray(x)), x))


_unary(np.exp2, lambda g, ans, x: g * ans * np.log(2.0))
_unary(np.arcsin, lambda g, ans, x: g / np.sqrt(1.0 - x * x))
_unary(np.arccos, lambda g, ans, x: -g / np.sqrt(1.0 - x * x))
_unary(np.arcsinh, lambda g, ans, x: g / np.sqrt(x * x + 1.0))
_unary(np.arccosh, lambda g, ans, x: g / np.sqrt(x * x - 1.0))
_unary(np.arctanh, lambda g, ans, x: g / (1.0 - x * x))
_unary(np.cbrt, lambda g, ans, x: g / (3.0 * ans * ans))
_unary(np.fabs, lambda g, ans, x: g * np.sign(x))
_unary(np.rad2deg, lambda g, ans, x: g * (180.0 / np.pi))
_unary(np.deg2rad, lambda g, ans, x: g * (np.pi / 180.0))
_unary(np.sinc, lambda g, ans, x: g * np.where(
    x == 0, 0.0, (np.cos(np.pi * x) * np.pi * x - np.sin(np.pi * x))
    / (np.pi * np.where(x == 0, 1.0, x) ** 2)))
for _fn in (np.degrees,):
    _unary(_fn, lambda g, ans, x: g * (180.0 / np.pi))
for _fn in (np.radians,):
    _unary(_fn, lambda g, ans, x: g * (np.pi / 180.0))
# Complex values follow autograd's convention (tracer.ad.adjoints.unbroadcast):
# holomorphic functions' rules are the real ones, these are not holomorphic.
for _fn in (np.real, np.real_if_close):
    _unary(_fn, lambda g, ans, x: g)
for _fn in (np.conjugate, np.conj):
    _unary(_fn, lambda g, ans, x: np.conj(g))
_unary(np.imag, lambda g, ans, x: -1j * np.asarray(g))
_unary(np.angle, lambda g, ans, x: np.asarray(g) * np.conj(np.asarray(x) * 1j)
       / np.where(np.abs(x) == 0, 1.0, np.abs(x)) ** 2)
for _fn in (np.sign, np.floor, np.ceil, np.round, np.rint, np.trunc, np.fix):
    defrule(_fn, _zero)


def _binary(ufunc, pa, pb):
    defrule(ufunc, lambda g, ans, a, b: ub(pa(g, ans, a, b), a),
            lambda g, ans, a, b: ub(pb(g, ans, a, b), b))


def _share(mine, other):
    return np.where(mine == other, 0.5, (mine > other) * 1.0)


_binary(np.logaddexp2, lambda g, ans, a, b: g * 2.0 ** (a - ans),
        lambda g, ans, a, b: g * 2.0 ** (b - ans))
_binary(np.hypot, lambda g, ans, a, b: g * a / ans, lambda g, ans, a, b: g * b / ans)
_binary(np.fmax, lambda g, ans, a, b: g * _share(a, b), lambda g, ans, a, b: g * _share(b, a))
_binary(np.fmin, lambda g, ans, a, b: g * _share(-np.asarray(a), -np.asarray(b)),
        lambda g, ans, a, b: g * _share(-np.asarray(b), -np.asarray(a)))
for _fn in (np.remainder, np.mod, operator.mod):
    _binary(_fn, lambda g, ans, a, b: g, lambda g, ans, a, b: -g * np.floor_divide(a, b))
_binary(np.fmod, lambda g, ans, a, b: g, lambda g, ans, a, b: -g * np.trunc(np.divide(a, b)))


# -- products and statistics ----------------------------------------------------------------------
def _axis_keep(args, kw, axis_at=0, keep_at=None):
    axis = kw.get("axis", args[axis_at] if len(args) > axis_at else None)
    keep = kw.get("keepdims", args[keep_at] if keep_at is not None and len(args) > keep_at
                  else False)
    return axis, keep


def _expand(g, x, axis, keepdims):
    g = np.asarray(g)
    if axis is not None and not keepdims:
        axes = axis if isinstance(axis, tuple) else (axis,)
        g = np.expand_dims(g, sorted([a % x.ndim for a in axes]))
    return np.broadcast_to(g, x.shape)


def _prod_pb(g, ans, x, *args, **kw):
    axis, keep = _axis_keep(args, kw, 0, 3)
    xa = np.asarray(x, dtype=float)
    full = _expand(ans, xa, axis, keep)
    gx = _expand(g, xa, axis, keep)
    if np.all(xa != 0):
        return gx * full / xa
    # With zeros: the product of the others, one element left out at a time.
    out = np.empty(xa.shape)
    for i in np.ndindex(xa.shape):
        y = xa.copy()
        y[i] = 1.0
        out[i] = np.prod(y, axis=axis, keepdims=True).reshape(-1)[0] if axis is None \
            else np.prod(y, axis=axis, keepdims=True)[_keep_index(i, axis)]
    return gx * out


def _keep_index(i, axis):
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(0 if k in axes or k - len(i) in axes else j for k, j in enumerate(i))


for _fn in (np.prod, np.ndarray.prod):
    defrule(_fn, _prod_pb, keywords=("axis", "keepdims"))


def _var_parts(x, args, kw):
    axis, keep = _axis_keep(args, kw, 0, 3)
    ddof = kw.get("ddof", args[2] if len(args) > 2 else 0)
    xa = np.asarray(x, dtype=float)
    n = xa.size if axis is None else np.prod([xa.shape[a] for a in (
        axis if isinstance(axis, tuple) else (axis,))])
    return xa, axis, keep, n - ddof


def _var_pb(g, ans, x, *args, **kw):
    xa, axis, keep, dof = _var_parts(x, args, kw)
    centered = xa - np.mean(xa, axis=axis, keepdims=True)
    return _expand(g, xa, axis, keep) * 2.0 * centered / dof


def _std_pb(g, ans, x, *args, **kw):
    xa, axis, keep, dof = _var_parts(x, args, kw)
    centered = xa - np.mean(xa, axis=axis, keepdims=True)
    ans = np.asarray(ans)  # a constant input has std 0: its (sub)gradient is taken as 0
    return _expand(g / np.where(ans == 0, 1.0, ans), xa, axis, keep) * centered / dof


for _fn in (np.var, np.ndarray.var):
    defrule(_fn, _var_pb, keywords=("axis", "keepdims", "ddof"))
for _fn in (np.std, np.ndarray.std):
    defrule(_fn, _std_pb, keywords=("axis", "keepdims", "ddof"))


def _cumsum_pb(g, ans, x, *args, **kw):
    axis = kw.get("axis", args[0] if args else None)
    xa = np.asarray(x)
    if axis is None:
        return np.flip(np.cumsum(np.flip(np.ravel(g)))).reshape(xa.shape)
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


for _fn in (np.cumsum, np.ndarray.cumsum):
    defrule(_fn, _cumsum_pb, keywords=("axis",))


# -- diagonals and triangles --------------------------------------------------------------------------
def _trace_pb(g, ans, x, offset=0, axis1=0, axis2=1, *args, **kw):
    xa = np.asarray(x)
    n1, n2 = xa.shape[axis1], xa.shape[axis2]
    eye = np.eye(n1, n2, k=offset)
    out = np.asarray(g)[..., None, None] * eye
    return np.moveaxis(out, (-2, -1), (axis1 % xa.ndim, axis2 % xa.ndim))


for _fn in (np.trace, np.ndarray.trace):
    defrule(_fn, _trace_pb, keywords=("offset", "axis1", "axis2"))


def _diag_pb(g, ans, x, k=0, **kw):
    k = kw.get("k", k)
    xa = np.asarray(x)
    if xa.ndim == 1:
        return np.diagonal(g, k).copy()
    out = np.zeros(xa.shape)
    idx = np.arange(np.shape(g)[0])
    out[idx + max(-k, 0), idx + max(k, 0)] = g
    return out


defrule(np.diag, _diag_pb, keywords=("k",))


def _diagonal_pb(g, ans, x, offset=0, axis1=0, axis2=1, **kw):
    offset = kw.get("offset", offset)
    xa = np.asarray(x)
    if xa.ndim != 2:
        raise NoRuleError(np.diagonal, message="the rule covers 2-D arrays")
    return _diag_pb(g, ans, xa, offset)


for _fn in (np.diagonal, np.ndarray.diagonal):
    defrule(_fn, _diagonal_pb, keywords=("offset",))
defrule(np.triu, lambda g, ans, x, k=0, **kw: np.triu(g, kw.get("k", k)), keywords=("k",))
defrule(np.tril, lambda g, ans, x, k=0, **kw: np.tril(g, kw.get("k", k)), keywords=("k",))


# -- rearranging -------------------------------------------------------------------------------------
def _roll_pb(g, ans, x, shift, axis=None, **kw):
    axis = kw.get("axis", axis)
    neg = tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift
    return np.roll(g, neg, axis)


defrule(np.roll, _roll_pb, keywords=("axis",))
defrule(np.flipud, lambda g, ans, x: np.flipud(g))
defrule(np.fliplr, lambda g, ans, x: np.fliplr(g))
defrule(np.flip, lambda g, ans, x, axis=None, **kw: np.flip(g, kw.get("axis", axis)),
        keywords=("axis",))
defrule(np.rot90, lambda g, ans, x, k=1, axes=(0, 1), **kw: np.rot90(
    g, -kw.get("k", k), kw.get("axes", axes)), keywords=("k", "axes"))
for _fn in (np.swapaxes, np.ndarray.swapaxes):
    defrule(_fn, lambda g, ans, x, a1, a2: np.swapaxes(g, a1, a2))
defrule(np.moveaxis, lambda g, ans, x, src, dst: np.moveaxis(g, dst, src))


def _rollaxis_pb(g, ans, x, axis, start=0):
    nd = np.ndim(x)
    axis %= nd
    start = start % (nd + 1) if start < 0 else start
    dst = start - 1 if start > axis else start
    return np.moveaxis(g, dst, axis)


defrule(np.rollaxis, _rollaxis_pb)
defrule(np.atleast_3d, lambda g, ans, x: np.reshape(g, np.shape(x)))


def _sort_pb(g, ans, x, axis=-1, *args, **kw):
    axis = kw.get("axis", axis)
    xa = np.asarray(x)
    idx = np.argsort(xa, axis=axis, kind="stable")
    return _unpermute(g, xa, idx, axis)


def _unpermute(g, xa, idx, axis):
    """The adjoint of `x` from that of x's items reordered by `idx` along `axis`:
    the inverse permutation (a call with a rule: a gradient of it follows)."""
    if axis is None:
        return permute_along(g, np.argsort(idx), None).reshape(xa.shape)
    return permute_along(g, np.argsort(idx, axis=axis), axis)


def _partition_pb(g, ans, x, kth, axis=-1, **kw):
    axis = kw.get("axis", axis)
    xa = np.asarray(x)
    return _unpermute(g, xa, np.argpartition(xa, kth, axis=axis), axis)


defrule(np.sort, _sort_pb, keywords=("axis",))
defrule(np.partition, _partition_pb, keywords=("axis",))


def _take_pb(g, ans, x, indices, axis=None, **kw):
    axis = kw.get("axis", axis)
    xa = np.asarray(x)
    if axis is None:
        return scatter_add((xa.size,), np.float64, indices, g).reshape(xa.shape)
    idx = [slice(None)] * xa.ndim
    idx[axis % xa.ndim] = indices
    return scatter_add(xa.shape, np.float64, tuple(idx), g)


for _fn in (np.take, np.ndarray.take):
    defrule(_fn, _take_pb, keywords=("axis",))


def _repeat_pb(g, ans, x, repeats, axis=None, **kw):
    axis = kw.get("axis", axis)
    xa = np.asarray(x)
    if np.ndim(repeats) == 0:  # each item r times in a row: a reshape and a sum
        r = int(repeats)
        if axis is None:
            return np.reshape(g, (xa.size, r)).sum(axis=1).reshape(xa.shape)
        axis %= xa.ndim
        shape = np.shape(g)
        split = shape[:axis] + (xa.shape[axis], r) + shape[axis + 1:]
        return np.reshape(g, split).sum(axis=axis + 1)
    if axis is None:
        src = np.repeat(np.arange(xa.size), repeats)
        return scatter_add((xa.size,), np.float64, src, np.ravel(g)).reshape(xa.shape)
    axis %= xa.ndim
    src = np.repeat(np.arange(xa.shape[axis]), repeats)
    idx = [slice(None)] * xa.ndim
    idx[axis] = src
    return scatter_add(xa.shape, np.float64, tuple(idx), g)


for _fn in (np.repeat, np.ndarray.repeat):
    defrule(_fn, _repeat_pb, keywords=("axis",))


def _tile_pb(g, ans, x, reps):
    xa = np.asarray(x)
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    nd = max(xa.ndim, len(reps))
    shape = (1,) * (nd - xa.ndim) + xa.shape
    reps = (1,) * (nd - len(reps)) + reps
    g = np.reshape(g, [v for r, s in zip(reps, shape) for v in (r, s)])
    return np.sum(g, axis=tuple(range(0, 2 * nd, 2))).reshape(xa.shape)


defrule(np.tile, _tile_pb)


def _diff_pb(g, ans, x, n=1, axis=-1, **kw):
    n, axis = kw.get("n", n), kw.get("axis", axis)
    for _ in range(n):
        shape = list(np.shape(g))
        shape[axis] = 1
        z = np.zeros(shape)
        g = np.concatenate([z, g], axis) - np.concatenate([g, z], axis)
    return g


defrule(np.diff, _diff_pb, keywords=("n", "axis"))


def _gradient_axis_pb(g, n, axis):
    """The adjoint of np.gradient's result along one axis (unit spacing, first-order
    edges): out[0] = f[1] - f[0], out[i] = (f[i+1] - f[i-1]) / 2, out[-1] = f[-1] -
    f[-2].  Built without in-place stores, so a second order can trace it."""
    gm = np.moveaxis(np.asarray(g, dtype=float), axis, 0)
    rest = gm.shape[1:]
    two = np.zeros((2,) + rest)
    half = gm[1:-1] / 2.0
    adj = np.concatenate([two, half]) - np.concatenate([half, two])
    if n > 2:
        middle = np.zeros((n - 2,) + rest)
        adj = adj + np.concatenate([-gm[:1], gm[:1], middle]) \
            + np.concatenate([middle, -gm[-1:], gm[-1:]])
    else:
        adj = adj + np.concatenate([-gm[:1], gm[:1]]) + np.concatenate([-gm[-1:], gm[-1:]])
    return np.moveaxis(adj, 0, axis)


def _gradient_pb(g, ans, f, *spacing, **kw):
    if spacing or kw.get("edge_order", 1) != 1:
        raise NoRuleError(np.gradient, message="the rule covers unit spacing and edge_order=1")
    fa = np.asarray(f)
    axis = kw.get("axis")
    if axis is None:
        axes = list(range(fa.ndim))
    elif isinstance(axis, (tuple, list)):
        axes = [a % fa.ndim for a in axis]
    else:
        axes = [axis % fa.ndim]
    if isinstance(ans, (list, tuple)):  # one array per axis: g is a Seq (or a list)
        gs = [g.items.get(i) for i in range(len(ans))] if type(g) is Seq else list(g)
    else:
        gs = [g]
    out = np.zeros(fa.shape)
    for a, ga in zip(axes, gs):
        if ga is not None:
            out = out + _gradient_axis_pb(ga, fa.shape[a], a)
    return out


defrule(np.gradient, _gradient_pb, keywords=("axis", "edge_order"))


def _pad_pb(g, ans, x, pad_width, mode="constant", **kw):
    if kw.get("mode", mode) != "constant":
        raise NoRuleError(np.pad, message="the rule covers mode='constant'")
    xa = np.asarray(x)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (xa.ndim, 2))
    return np.asarray(g)[tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, xa.shape))]


defrule(np.pad, _pad_pb, keywords=("mode", "constant_values"))
defrule(np.nan_to_num, lambda g, ans, x, *a, **kw: np.where(np.isfinite(x), g, 0.0),
        keywords=("copy",))
for _fn in (np.ndarray.astype,):
    defrule(_fn, lambda g, ans, x, dtype, *a, **kw: np.asarray(g).astype(x.dtype),
            keywords=("copy",))
defrule(np.ndarray.item, lambda g, ans, x, *a: np.reshape(
    np.eye(1, np.size(x), int(np.ravel_multi_index(a, np.shape(x))) if a else 0) * g,
    np.shape(x)))


# -- joining and splitting --------------------------------------------------------------------------
def _join(fn, shape_of):
    """`fn(arrays)`: each array is made `shape_of(a)` and concatenated along `axis(..)`."""
    def pb(g, ans, arrays, *args, **kw):
        made = [shape_of(np.asarray(a)) for a in arrays]
        axis = _join_axis(fn, made, args, kw)
        sizes = np.cumsum([m.shape[axis] for m in made])[:-1]
        parts = np.split(np.asarray(g), sizes, axis=axis)
        return Seq({k: ub(np.reshape(p, np.shape(a)) if p.size == np.size(a) else p, a)
                    for k, (p, a) in enumerate(zip(parts, arrays))}, owned=True)
    return pb


def _join_axis(fn, made, args, kw):
    if fn is np.concatenate:
        return kw.get("axis", args[0] if args else 0)
    if fn is np.hstack:
        return 1 if made[0].ndim > 1 else 0
    if fn is np.dstack:
        return 2
    if fn is np.column_stack:
        return 1
    return 0


def _concatenate_pb(g, ans, arrays, *args, **kw):
    axis = kw.get("axis", args[0] if args else 0)
    if axis is None:
        sizes = np.cumsum([np.size(a) for a in arrays])[:-1]
        parts = np.split(np.ravel(g), sizes)
        return Seq({k: np.reshape(p, np.shape(a)) for k, (p, a) in
                    enumerate(zip(parts, arrays))}, owned=True)
    return _join(np.concatenate, lambda a: a)(g, ans, arrays, axis)


defrule(np.concatenate, _concatenate_pb, keywords=("axis",))
defrule(np.vstack, _join(np.vstack, np.atleast_2d))
defrule(np.hstack, _join(np.hstack, np.atleast_1d))
defrule(np.dstack, _join(np.dstack, np.atleast_3d))
defrule(np.column_stack, _join(np.column_stack,
                               lambda a: a.reshape(-1, 1) if a.ndim < 2 else a))


def _like(adj, x):
    """An array adjoint for `x`: a Seq of its rows when `x` is a list or tuple."""
    if isinstance(x, (list, tuple)):
        return Seq({k: _like(a, v) for k, (a, v) in enumerate(zip(adj, x))}, owned=True)
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        return float(np.sum(adj))
    return adj


def _append_pb_arr(g, ans, arr, values, axis=None, **kw):
    axis = kw.get("axis", axis)
    g = np.asarray(g)
    if axis is None:
        return _like(np.reshape(g[:np.size(arr)], np.shape(arr)), arr)
    return _like(np.take(g, np.arange(np.shape(arr)[axis]), axis=axis), arr)


def _append_pb_val(g, ans, arr, values, axis=None, **kw):
    axis = kw.get("axis", axis)
    g = np.asarray(g)
    if axis is None:
        return _like(np.reshape(g[np.size(arr):], np.shape(values)), values)
    n = np.shape(arr)[axis]
    return _like(np.take(g, np.arange(n, g.shape[axis]), axis=axis), values)


defrule(np.append, _append_pb_arr, _append_pb_val, keywords=("axis",))


def _split_pb(fn, default_axis):
    def pb(g, ans, x, sections, axis=default_axis, **kw):
        axis = kw.get("axis", axis)
        xa = np.asarray(x)
        if fn is np.hsplit and xa.ndim == 1:
            axis = 0
        parts = [seq_get(g, k, a) for k, a in enumerate(ans)]  # zeros where none
        return np.concatenate(parts, axis=axis)
    return pb


defrule(np.split, _split_pb(np.split, 0), keywords=("axis",))
defrule(np.array_split, _split_pb(np.array_split, 0), keywords=("axis",))
defrule(np.vsplit, _split_pb(np.vsplit, 0))
defrule(np.hsplit, _split_pb(np.hsplit, 1))
defrule(np.dsplit, _split_pb(np.dsplit, 2))


def _stack_pb(g, ans, arrays, axis=0, **kw):
    axis = kw.get("axis", axis)
    return Seq({k: np.take(g, k, axis=axis) for k in range(len(arrays))}, owned=True)


defrule(np.stack, _stack_pb, keywords=("axis",))


def _select_pb(g, ans, condlist, choicelist, default=0, **kw):
    taken = np.zeros(np.shape(ans), dtype=bool)
    masks = []
    for c in condlist:
        masks.append(np.asarray(c) & ~taken)
        taken = taken | np.asarray(c, dtype=bool)
    # Built by a comprehension, not stores into a dict: an outer gradient follows it.
    return Seq(dict([(k, ub(np.where(m, g, 0.0), ch))
                     for k, (m, ch) in enumerate(zip(masks, choicelist))]), owned=True)


defrule(np.select, None, _select_pb, keywords=("default",))
defrule(np.linspace, lambda g, ans, start, stop, num=50, *a, **kw: ub(
    np.sum(np.asarray(g) * (1.0 - np.linspace(0.0, 1.0, kw.get("num", num))), axis=0), start),
        lambda g, ans, start, stop, num=50, *a, **kw: ub(
    np.sum(np.asarray(g) * np.linspace(0.0, 1.0, kw.get("num", num)), axis=0), stop),
        keywords=("num",))


# -- contractions ------------------------------------------------------------------------------------
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_parts(subscripts, operands):
    """(input subscripts, output subscript) with '...' spelled out as letters."""
    spec = subscripts.replace(" ", "")
    ins, arrow, out = spec.partition("->")
    terms = ins.split(",")
    if len(terms) != len(operands):
        raise NoRuleError(np.einsum, message="the subscripts do not match the operands")
    used = set(spec) - set(".,->")
    spare = [c for c in _LETTERS if c not in used]
    ell_nd = max((np.ndim(op) - len(t.replace("...", "")) for t, op in zip(terms, operands)
                  if "..." in t), default=0)
    ell = "".join(spare[:ell_nd])
    terms = [t.replace("...", ell[ell_nd - (np.ndim(op) - len(t.replace("...", ""))):])
             for t, op in zip(terms, operands)]
    if not arrow:
        counts = {c: ins.count(c) for c in set(ins) - set(".,")}
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    else:
        out = out.replace("...", ell)
    return terms, out


def _sublists(args):
    """`einsum(op0, sub0, op1, sub1, ..., [out])` as (subscripts, operands, the
    position in `args` of each operand)."""
    n = len(args) // 2
    terms = []
    for j in range(n):
        sub = args[2 * j + 1]
        terms.append("".join("..." if s is Ellipsis else _LETTERS[s] for s in sub))
    spec = ",".join(terms)
    if len(args) % 2:
        spec += "->" + "".join("..." if s is Ellipsis else _LETTERS[s] for s in args[-1])
    return spec, [args[2 * j] for j in range(n)], [2 * j for j in range(n)]


def _einsum_any(i):
    """The pullback of `einsum`'s argument i, in either calling form."""
    def pb(g, ans, *args, **kw):
        if isinstance(args[0], str):
            return _einsum_arg(i)(g, ans, *args)
        spec, operands, where = _sublists(args)
        if i not in where:
            return None
        return _einsum_arg(where.index(i) + 1)(g, ans, spec, *operands)
    return pb


def _einsum_arg(i):
    def pb(g, ans, subscripts, *operands, **kw):
        k = i - 1
        terms, out = _einsum_parts(subscripts, operands)
        mine = terms[k]
        shape = np.shape(operands[k])
        size = {c: shape[j] for j, c in enumerate(mine)} if len(mine) == len(shape) else {}
        # A repeated index (`ii`, a diagonal): differentiate with respect to the
        # diagonal (`i`), then put that back on the diagonal with identity matrices.
        uniq = "".join(dict.fromkeys(mine))
        others = [t for j, t in enumerate(terms) if j != k]
        ops = [o for j, o in enumerate(operands) if j != k]
        # Indices of `mine` that appear nowhere else were summed: broadcast them back.
        present = set(out).union(*others) if others else set(out)
        kept = "".join(c for c in uniq if c in present)
        adj = np.einsum(",".join([out] + others) + "->" + kept, g, *ops)
        if kept != uniq:  # `kept` is in `uniq`'s order: the summed axes come back as 1s
            uniq_shape = [size.get(c, 1) for c in uniq]
            adj = np.broadcast_to(np.reshape(adj, [np.shape(adj)[kept.index(c)] if c in present
                                                   else 1 for c in uniq]), uniq_shape)
        if uniq != mine:
            adj = _on_diagonals(adj, uniq, mine, size, terms, out)
        return ub(adj, operands[k])
    return pb


def _on_diagonals(adj, uniq, mine, size, terms, out):
    """`adj` (indexed by `uniq`) spread over the operand indexed by `mine`, zero off
    the diagonals its repeated indices make: a later `i` of `ii` is a fresh index
    tied to the first by an identity matrix."""
    used = set("".join(terms) + out)
    spare = iter(c for c in _LETTERS if c not in used)
    seen = set()
    full = []
    ties = []
    for c in mine:
        if c in seen:
            f = next(spare)
            full.append(f)
            ties.append((c, f))
        else:
            seen.add(c)
            full.append(c)
    eyes = [np.eye(size[c], dtype=np.result_type(adj, float)) for c, _ in ties]
    spec = ",".join([uniq] + [c + f for c, f in ties]) + "->" + "".join(full)
    return np.einsum(spec, adj, *eyes)


defrule(np.einsum, varargs=_einsum_any, keywords=("optimize",))


def _tensordot_subscripts(a, b, axes):
    na, nb = np.ndim(a), np.ndim(b)
    if isinstance(axes, int):
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, int) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, int) else list(ax_b)
    ax_a = [x % na for x in ax_a]
    ax_b = [x % nb for x in ax_b]
    sa = list(_LETTERS[:na])
    sb = list(_LETTERS[na:na + nb])
    for p, q in zip(ax_a, ax_b):
        sb[q] = sa[p]
    out = [c for j, c in enumerate(sa) if j not in ax_a] + \
        [c for j, c in enumerate(sb) if j not in ax_b]
    return "".join(sa) + "," + "".join(sb) + "->" + "".join(out)


def _tensordot_arg(i):
    def pb(g, ans, a, b, axes=2, **kw):
        spec = _tensordot_subscripts(a, b, kw.get("axes", axes))
        return _einsum_arg(i + 1)(g, ans, spec, a, b)
    return pb


defrule(np.tensordot, _tensordot_arg(0), _tensordot_arg(1), keywords=("axes",))
defrule(np.inner, lambda g, ans, a, b: _einsum_arg(1)(g, ans, _inner_spec(a, b), a, b),
        lambda g, ans, a, b: _einsum_arg(2)(g, ans, _inner_spec(a, b), a, b))


def _inner_spec(a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return _LETTERS[:np.ndim(a)] + "," + _LETTERS[10:10 + np.ndim(b)] + "->" + \
            _LETTERS[:np.ndim(a)] + _LETTERS[10:10 + np.ndim(b)]
    sa = _LETTERS[:np.ndim(a) - 1] + "z"
    sb = _LETTERS[10:10 + np.ndim(b) - 1] + "z"
    return f"{sa},{sb}->{sa[:-1]}{sb[:-1]}"


def _kron_arg(i):
    def pb(g, ans, a, b):
        a2, b2 = np.asarray(a), np.asarray(b)
        nd = max(a2.ndim, b2.ndim)
        # np.reshape, not .reshape: einsum may give a numpy scalar, whose method
        # has no rule for an outer gradient to follow.
        a2 = np.reshape(a2, (1,) * (nd - a2.ndim) + a2.shape)
        b2 = np.reshape(b2, (1,) * (nd - b2.ndim) + b2.shape)
        g4 = np.reshape(g, [v for p, q in zip(a2.shape, b2.shape) for v in (p, q)])
        axes_a = tuple(range(0, 2 * nd, 2))
        axes_b = tuple(range(1, 2 * nd, 2))
        la = _LETTERS[:2 * nd]
        if i == 0:
            spec = la + "," + "".join(la[k] for k in axes_b) + "->" + "".join(la[k] for k in axes_a)
            return np.reshape(np.einsum(spec, g4, b2), np.shape(a))
        spec = la + "," + "".join(la[k] for k in axes_a) + "->" + "".join(la[k] for k in axes_b)
        return np.reshape(np.einsum(spec, g4, a2), np.shape(b))
    return pb


defrule(np.kron, _kron_arg(0), _kron_arg(1))


def _cross_arg(i):
    def pb(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        if axis is not None:
            axisa = axisb = axisc = axis
        if np.shape(a)[axisa] != 3 or np.shape(b)[axisb] != 3:
            raise NoRuleError(np.cross, message="the rule covers 3-vectors (not 2-vectors)")
        # With the vectors' axes moved last, it is the default cross product.
        a3 = np.moveaxis(a, axisa, -1)
        b3 = np.moveaxis(b, axisb, -1)
        g3 = np.moveaxis(g, axisc, -1)
        if i == 0:
            return ub(np.moveaxis(np.cross(b3, g3), -1, axisa), a)
        return ub(np.moveaxis(np.cross(g3, a3), -1, axisb), b)
    return pb


defrule(np.cross, _cross_arg(0), _cross_arg(1))
defrule(np.broadcast_to, lambda g, ans, x, shape, *a, **kw: ub(np.asarray(g), x),
        keywords=("subok",))
defrule(np.full_like, None, lambda g, ans, x, fill, *a, **kw: ub(np.asarray(g), fill),
        keywords=("dtype",))
defrule(np.full, None, lambda g, ans, shape, fill, *a, **kw: ub(np.asarray(g), fill),
        keywords=("dtype",))
for _fn in (np.floor_divide, operator.floordiv):
    defrule(_fn, _zero, lambda g, ans, a, b: _zero(g, ans, b))  # piecewise constant


def _dict_pb(g, ans, *args, **kw):
    """`dict(mapping_or_pairs, **kw)`: the positional argument's adjoint."""
    if type(g) is dict:  # the seed a caller gave for a dict result
        g = Seq(dict(g))
    if type(g) is not Seq or not args:
        return g
    src = args[0]
    if isinstance(src, dict):
        return Seq(dict(g.items), owned=True)
    if not isinstance(src, (list, tuple)):
        # An iterator of pairs was consumed by the call: which pair made which key
        # is not known afterwards.
        raise NoRuleError(dict, message="dict() of an iterator of pairs is differentiated "
                          "for a list or tuple of pairs only; pass a list")
    keys = [k for k, _ in src]
    # A comprehension, not stores into a dict: an outer gradient follows this code.
    parts = {j: g.items.get(key) if kw.get(key) is None else None
             for j, key in enumerate(keys)}
    return Seq({j: Seq({1: v}, owned=True) for j, v in parts.items() if v is not None},
               owned=True)


defrule(dict, _dict_pb, keywords=None,
        by_keyword=lambda name: lambda g, ans, *args, **kw: seq_get(g, name, kw[name]))
defrule(np.generic.item, lambda g, ans, x, *a: g)  # a numpy scalar's Python number
