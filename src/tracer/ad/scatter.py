"""The writes of pullbacks as functions with rules of their own.

A pullback that scatters its adjoint into a new array (`np.add.at(out, key, g)`
for a fancy index, `np.put_along_axis` to undo a sort) stores into an array, which
a gradient of that pullback (second order) cannot follow.  Written as calls of
these functions instead, each is one primitive op with its own rule: the adjoint
of a scatter is a gather, and of a permutation the inverse permutation.
"""

from __future__ import annotations

import numpy as np

from .adjoints import unbroadcast
from .rules import defrule

__all__ = ["scatter_add", "permute_along"]


def scatter_add(shape, dtype, key, g):
    """A new array of `shape` with `g` added at `key` (repeated indices add up):
    `np.add.at(np.zeros(shape, dtype), key, g)`."""
    out = np.zeros(shape, dtype=dtype)
    if _is_basic_index(key):
        out[key] = g  # a basic index names each item once: a store is the sum
    else:
        np.add.at(out, key, g)
    return out


def _is_basic_index(key) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(isinstance(p, (int, slice, type(None), type(Ellipsis)))
               and not isinstance(p, bool) for p in parts)


def _scatter_add_pb(gg, ans, shape, dtype, key, g):
    return unbroadcast(np.asarray(gg)[key], g)


defrule(scatter_add, None, None, None, _scatter_add_pb)


def permute_along(g, perm, axis):
    """`g` reordered along `axis` by `perm` (a permutation along that axis, as
    argsort gives): item i is g's item perm[i]; with axis None, of the flattened g."""
    if axis is None:
        return np.ravel(g)[perm]
    return np.take_along_axis(np.asarray(g), perm, axis)


def _permute_along_pb(gg, ans, g, perm, axis):
    inverse = np.argsort(perm) if axis is None else np.argsort(perm, axis=axis)
    out = permute_along(gg, inverse, axis)
    return out.reshape(np.shape(g)) if axis is None else out


defrule(permute_along, _permute_along_pb)
