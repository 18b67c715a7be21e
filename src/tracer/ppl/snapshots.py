"""A draw's mutable arguments and value as they were at the draw.

The trace keeps values by reference: a list passed to a sampler and changed later in
the run (`w[0] = ...` after `rng.choices(pop, weights=w)`), or an array drawn and then
changed in place (`xs = g.normal(size=n); xs *= 2`), shows its final state in the
finished trace, and scoring it there gives the wrong log-density.  So every run that
tracer.ppl scans asks the recorder for one hook on the samplers that can take or
return a mutable object (`Context(on_call=...)`, matched in C: no other call runs
Python code; the copies are made in C, `tracer._core.CopyAtCall`), which copies the
draw's mutable inputs and value right after the call.
scan.py reads the copies instead of the trace's objects.

Skipped: the methods of `random.Random` whose parameters are numbers (gauss,
uniform, ...) — their arguments and results are immutable scalars; their calls cost
nothing extra.  Copies are shallow, one level into tuples (a star call's argument
tuple): a list of lists changed inside after the draw is not seen.
"""

from __future__ import annotations

import random as _random

import numpy as np

from .. import _core
from .samplers import _TABLE, lookup, sampler_keys

__all__ = ["Snapshots", "snapshot_keys"]

_NUMERIC_RANDOM = frozenset([
    "random", "uniform", "triangular", "randint", "randrange", "gauss", "normalvariate",
    "lognormvariate", "expovariate", "vonmisesvariate", "gammavariate", "betavariate",
    "paretovariate", "weibullvariate", "binomialvariate", "getrandbits", "randbytes"])
_RANDOM_TYPES = (_random.Random, _random.SystemRandom)


def _is_numeric_random(key) -> bool:
    """Whether sampler callable `key` is a random.Random method with numeric parameters."""
    s, owner, name = lookup(key)
    if name not in _NUMERIC_RANDOM:
        return False
    if isinstance(owner, _RANDOM_TYPES):            # random.gauss: a bound method
        return True
    qual = getattr(key, "__qualname__", "")
    return qual.split(".", 1)[0] in ("Random", "SystemRandom")


# Whether equal short lists of numbers share one copy (_core.CopyAtCall's `share`;
# False for tests comparing the two: the copies are equal either way).
SHARE_COPIES = True

_KEYS: list | None = None
_DECLARED = -1     # how many samplers the table had when _KEYS was made


def snapshot_keys() -> list:
    """The sampler callables whose calls are snapshotted (every one whose arguments
    or value may be mutable; made again when a sampler was declared since)."""
    global _KEYS, _DECLARED
    if _KEYS is None or _DECLARED != len(_TABLE):
        _DECLARED = len(_TABLE)
        _KEYS = [key for key, _, _ in sampler_keys() if not _is_numeric_random(key)]
    return _KEYS


class Snapshots:
    """The copies made while a model runs, kept by the recorder's `CopyAtCall`
    (tracer._core; an on_call hook that runs no Python code: about 0.2 us per
    snapshotted draw) as flat lists in the order they were made.  Read after the
    run: `inputs[row]` maps input k of call row `row` (0 the callee, then the
    arguments as the trace's refs hold them) to its copy, `values[row]` the copy of
    the draw's value (dicts made when first asked); `input_columns()` and
    `value_columns()` the same as columns (rows as arrays, copies as a list), for
    reading a site's draws at once.
    Only mutable ones are kept."""

    __slots__ = ("copier", "_inputs", "_values", "_input_cols", "_value_cols")

    def __init__(self):
        self.copier = _core.CopyAtCall(np.ndarray, share=SHARE_COPIES)
        self._inputs = self._values = self._input_cols = self._value_cols = None

    def on_call(self) -> dict:
        """The `Context(on_call=...)` mapping that fills this."""
        copier = self.copier
        return {key: copier for key in snapshot_keys()}

    @property
    def inputs(self) -> dict[int, dict[int, object]]:
        if self._inputs is None:
            self._inputs = self.copier.inputs
        return self._inputs

    @property
    def values(self) -> dict[int, object]:
        if self._values is None:
            self._values = self.copier.values
        return self._values

    def input_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, ks, copies): input ks[j] of call row rows[j] was copies[j], sorted
        by (row, k) (rows and ks int64 arrays, copies a list)."""
        if self._input_cols is None:
            rows, ks, copies, _, _ = self.copier.columns()
            self._input_cols = _sorted(rows, copies, ks)
        return self._input_cols

    def value_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, copies): the value of call row rows[j] was copies[j], by row."""
        if self._value_cols is None:
            _, _, _, rows, copies = self.copier.columns()
            rows, _, copies = _sorted(rows, copies)
            self._value_cols = rows, copies
        return self._value_cols

    def inputs_of(self, row: int) -> dict | None:
        """{k: copy} of call row `row`'s copied inputs (None: none copied), without
        making `inputs` for every row."""
        if self._inputs is not None:
            return self._inputs.get(row)
        rows, ks, copies = self.input_columns()
        lo, hi = np.searchsorted(rows, [row, row + 1]).tolist()
        if lo == hi:
            return None
        return dict(zip(ks[lo:hi].tolist(), copies[lo:hi]))


def _sorted(r: np.ndarray, copies: list, k: np.ndarray | None = None):
    """(rows, ks, copies) (int64 arrays `r` and `k`, CopyAtCall.columns()'s; the
    copies a list, not to be changed: scan.py takes items and slices of it) in
    (row, k) order: a call's copies are made when it returns, so a call that
    draws inside another (a sampler calling one) is copied before it."""
    ks = k
    if k is None:
        k = np.empty(0, dtype=np.int64)
    if len(r) > 1 and not (r[1:] >= r[:-1]).all():
        order = np.lexsort((k, r)) if ks is not None else np.argsort(r, kind="stable")
        r = r[order]
        copies = [copies[i] for i in order.tolist()]
        if ks is not None:
            k = k[order]
    return r, k, copies
