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
from .samplers import lookup, sampler_keys

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


_KEYS: list | None = None


def snapshot_keys() -> list:
    """The sampler callables whose calls are snapshotted (every one whose arguments
    or value may be mutable)."""
    global _KEYS
    if _KEYS is None:
        _KEYS = [key for key, _, _ in sampler_keys() if not _is_numeric_random(key)]
    return _KEYS


class Snapshots:
    """The copies made while a model runs: `inputs[row]` maps input k of call row
    `row` (0 the callee, then the arguments as the trace's refs hold them) to its
    copy; `values[row]` the copy of the draw's value.  Only mutable ones are kept.
    Made in C by the recorder (`tracer._core.CopyAtCall`, an on_call hook that runs
    no Python code): about 0.2 us per snapshotted draw."""

    __slots__ = ("copier", "inputs", "values")

    def __init__(self):
        self.copier = _core.CopyAtCall(np.ndarray)
        self.inputs: dict[int, dict[int, object]] = self.copier.inputs
        self.values: dict[int, object] = self.copier.values

    def on_call(self) -> dict:
        """The `Context(on_call=...)` mapping that fills this."""
        copier = self.copier
        return {key: copier for key in snapshot_keys()}
