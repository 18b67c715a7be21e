"""Adjoint values: numbers and arrays as they are, containers as sparse `Seq`s.

An adjoint of a float is a float, of an array an array of its shape.  The adjoint
of a tuple, list, dict or iterator is a `Seq`: the adjoints of the items that got
one, by index or key (an item without one has a zero adjoint).  A loop over a list
of 1,000 floats then costs one dict entry per item, not a list of 1,000 per read.
"""

from __future__ import annotations

import types

import numpy as np

__all__ = ["Seq", "add", "add_pure", "zeros_like", "seq_item", "seq_get", "seq_part", "seq_drop", "seq_keys", "abs_slope", "from_seq", "to_gradient",
           "is_differentiable", "unbroadcast"]


class Seq:
    """The adjoint of a container: `items` maps an index or key to its adjoint.

    `owned` marks a Seq that only one adjoint variable holds, which `add` may
    therefore extend in place (the first contribution to a variable may be shared
    with the op that made it, so it is copied before it is extended).
    """

    __slots__ = ("items", "owned")

    def __init__(self, items: dict, owned: bool = False):
        self.items = items
        self.owned = owned

    def get(self, key, like):
        """The adjoint of item `key`, zero like `like` when it has none."""
        g = self.items.get(key)
        return zeros_like(like) if g is None else g

    def __repr__(self) -> str:
        return f"Seq({self.items!r})"


def add(a, b):
    """`a + b` for adjoints (numbers, arrays, Seqs); None is zero."""
    if a is None:
        return b
    if b is None:
        return a
    if type(a) is Seq:
        if type(b) is not Seq:
            if _scalar_zero(b):
                return a  # the zero of a value read as a plain object (a saved value)
            b = _as_seq(b)
        if not a.owned:
            a = Seq(dict(a.items), owned=True)
        items = a.items
        for k, v in b.items.items():
            old = items.get(k)
            items[k] = v if old is None else add(old, v)
        return a
    if type(b) is Seq:
        return add(b, a)
    return a + b


def _scalar_zero(x) -> bool:
    return type(x) in (float, int) and x == 0


def add_pure(a, b):
    """`add` without changing either operand (no store into a dict): the form an
    outer gradient can follow when it differentiates a gradient's own code."""
    if a is None:
        return b
    if b is None:
        return a
    if type(a) is not Seq and type(b) is not Seq:
        return a + b
    if _scalar_zero(a):
        return b
    if _scalar_zero(b):
        return a
    a = a if type(a) is Seq else _as_seq(a)
    b = b if type(b) is Seq else _as_seq(b)
    keys = list(a.items) + [k for k in b.items if k not in a.items]
    return Seq(dict([(k, add_pure(a.items.get(k), b.items.get(k))) for k in keys]))


def _as_seq(x) -> Seq:
    if isinstance(x, dict):
        return Seq(dict(x))
    return Seq(dict(list(enumerate(x))))  # a list of pairs: an outer gradient follows it


def seq_item(g, key) -> Seq:
    """The adjoint of a container whose item `key` has adjoint `g`."""
    return Seq({key: g}, owned=True)


def seq_get(g, key, like):
    """Item `key` of a container adjoint `g` (zero like `like` if it has none)."""
    if type(g) is Seq:
        return g.get(key, like)
    if g is None:
        return zeros_like(like)
    return g[key]


def seq_drop(g, key):
    """A container adjoint `g` without item `key` (what a store into it replaced)."""
    if type(g) is not Seq or key not in g.items:
        return g
    return Seq(dict([(k, v) for k, v in g.items.items() if k != key]), owned=True)


def seq_keys(g, keys, keep):
    """A dict adjoint `g` restricted to the items `keys` (`keep`) or without them:
    `d.update(m)` / `f(**m)` into a dict the program just made gives m's items their
    adjoints and d's earlier items the rest."""
    if g is None:
        return None
    if type(g) is not Seq:
        g = _as_seq(g)
    return Seq(dict([(k, v) for k, v in g.items.items() if (k in keys) == keep]), owned=True)


def seq_part(g, start, n):
    """Items `start .. start + n` of a container adjoint `g`, as the adjoint of the
    sequence of n items appended there (`lst.extend(items)`)."""
    if g is None:
        return None
    if type(g) is not Seq:
        g = Seq(dict(list(enumerate(g))))
    return Seq({k - start: v for k, v in g.items.items() if start <= k < start + n},
               owned=True)


def from_seq(g, x):
    """The adjoint of `x` from a Seq over its items (an array's rows when `x` is one)."""
    if type(g) is not Seq:
        return g
    if isinstance(x, np.ndarray):
        out = np.zeros(x.shape, dtype=_float_dtype(x))
        for k, v in g.items.items():
            out[k] += v
        return out
    return g


def zeros_like(x):
    """The zero adjoint of value `x` (a Seq for containers)."""
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, dtype=_float_dtype(x))
    if isinstance(x, (float, int, np.number)):
        return 0.0 * x if isinstance(x, complex) else 0.0
    if isinstance(x, (tuple, list, dict)) or type(x) is _CELL or _is_iterator(x):
        return Seq({})  # an iterator's or a cell's adjoint is its items' (python_rules)
    return 0.0


def _is_iterator(x) -> bool:
    return hasattr(type(x), "__next__") and not isinstance(x, np.ndarray)


def _float_dtype(x):
    return x.dtype if x.dtype.kind in "fc" else np.float64


def to_gradient(g, x):
    """The gradient as the user sees it: the structure of `x`, zeros where `g` has none."""
    if g is None:
        return _zero_gradient(x)
    if type(g) is Seq:
        if isinstance(x, dict):
            return {k: to_gradient(g.items.get(k), v) for k, v in x.items()}
        if isinstance(x, (tuple, list)):
            items = [to_gradient(g.items.get(k), v) for k, v in enumerate(x)]
            return items if isinstance(x, list) else tuple(items)
        return from_seq(g, x)
    if _is_complex(g) and not _is_complex(x):
        g = np.real(g)  # a real argument's part of a complex adjoint (see unbroadcast)
        if isinstance(x, float) and type(g) is np.float64:
            g = float(g)
    if isinstance(x, np.ndarray) and not isinstance(g, np.ndarray):
        return np.full(x.shape, g, dtype=_float_dtype(x))
    if isinstance(x, np.ndarray) and g.dtype != x.dtype and x.dtype.kind in "fc":
        return g.astype(x.dtype)  # a float32 argument gets a float32 gradient
    if isinstance(x, float) and (isinstance(g, np.ndarray) and g.shape == ()
                                 or isinstance(g, np.floating)):
        return float(g)
    return g


def _zero_gradient(x):
    if isinstance(x, dict):
        return {k: _zero_gradient(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        items = [_zero_gradient(v) for v in x]
        return items if isinstance(x, list) else tuple(items)
    return zeros_like(x)


_CELL = types.CellType
_NOT_DIFFERENTIABLE = frozenset((bool, int, str, bytes, type(None), range, np.bool_))


def is_differentiable(v) -> bool:
    """Whether a value can carry an adjoint: not an int, bool, str, None, or an array
    of ints or bools (containers and iterators may hold floats: they can)."""
    t = type(v)
    if t is float:
        return True
    if t in _NOT_DIFFERENTIABLE:
        return False
    if t is _CELL:  # a closure cell made in the run: what it holds
        try:
            return is_differentiable(v.cell_contents)
        except ValueError:  # empty
            return False
    if t is tuple:  # a shape or an index of ints carries no adjoint (tuples are short)
        return any(type(x) not in _NOT_DIFFERENTIABLE and is_differentiable(x) for x in v)
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "fc"
    if isinstance(v, np.generic):
        return isinstance(v, (np.floating, np.complexfloating))
    if isinstance(v, (type, BaseException)) or callable(v) and not hasattr(v, "__next__"):
        return False
    if getattr(t, "__no_adjoint__", False) or isinstance(v, np.dtype):
        return False  # a gradient program (see tracer.ad.program), a dtype
    return not isinstance(v, (int, str, bytes))


def unbroadcast(g, x):
    """Sum `g` over the axes numpy broadcast `x` along, so it has `x`'s shape.  A
    complex adjoint of a real `x` keeps its real part (autograd's convention: the
    adjoint of z = a + ib is dL/da - i dL/db, so a real value's is dL/da)."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind != "c" and getattr(g, "dtype", _REAL).kind == "c":
            g = np.real(g)
        shape = x.shape
        if getattr(g, "shape", None) == shape:
            return g
        g = np.asarray(g)
        while g.ndim > len(shape):
            g = g.sum(axis=0)
        for axis, n in enumerate(shape):
            if n == 1 and g.shape[axis] != 1:
                g = g.sum(axis=axis, keepdims=True)
        if g.shape != shape:
            g = np.broadcast_to(g, shape).copy()
        return g
    if type(g) is float:
        return g
    if _is_complex(g) and not _is_complex(x):
        g = np.real(g)
        if type(g) is np.float64 and isinstance(x, float):
            g = float(g)
    if isinstance(g, np.ndarray):
        s = g.sum()
        return float(s) if isinstance(x, (float, int)) and not isinstance(x, np.generic) else s
    return g


_REAL = np.dtype(float)


def abs_slope(x):
    """d|x|/dx: sign(x), and conj(x)/|x| for complex x (autograd's convention)."""
    if _is_complex(x):
        a = np.abs(x)
        return np.conj(x) / np.where(a == 0, 1.0, a)
    return np.sign(x)


def _is_complex(v) -> bool:
    return type(v) is complex or isinstance(v, np.complexfloating) or (
        isinstance(v, np.ndarray) and v.dtype.kind == "c")
