"""The one place tracer.ppl hooks into a running trace.

Everything ppl needs from the recorder while a model runs is here: the tracking
context of a plain run (samplers primitive, no hooks), and that of a run with fixed
choices (replay, condition, do, update), which names each draw by its address as it
happens and substitutes the fixed ones.

Today the fixing context overrides `Context.enter` (one Python call per recorded
Python call, to count calls per site) and `Context.substitute`, which the recorder
asks before every call and operator: its cost grows with the operations, not with
the matched sites.  When the recorder filters hooks by callee in C (issue 19), only
`substitute` here changes: it is asked for the sampler callables alone.
"""

from __future__ import annotations

import copy
import sys

import numpy as np

from ..context import Context
from .address import component, join
from .samplers import (Draw, Sampler, UnknownSamplerError, resolve, sample,
                       sampler_callables)

__all__ = ["plain_context", "FixingContext", "FIXED_NAME", "original_of", "code_name"]

FIXED_NAME = "ppl_fixed"   # the name of the stand-in of a fixed draw in a trace


def plain_context() -> Context:
    """The context of a run with nothing fixed: samplers primitive, no hook."""
    return Context(primitives=sampler_callables(), modules=["random"])


def code_name(qualname: str) -> str:
    """How a call shows in an address: its code's qualified name without `<locals>`."""
    return qualname.replace(".<locals>", "")


def original_of(fn):
    """The sampler a fixed draw's stand-in replaced, or None."""
    return getattr(fn, "_ppl_original", None)


def _user_frame():
    """The innermost frame that is not tracer's own (a hook is called from the
    recorder inside the traced frame, through tracer.context's helpers)."""
    f = sys._getframe(2)
    while f is not None and f.f_globals.get("__name__", "").startswith("tracer."):
        f = f.f_back
    return f


def _stand_in(original, box: list):
    """A function to run in place of sampler `original`: it returns the value the
    fixing context left in `box` (or reorders the shuffled list into it).  One per
    sampler and run, so the draws of one site share their callee in the trace, and
    it remembers `original`."""
    def ppl_fixed(*args, **kwargs):
        value, draw = box[0]
        box[0] = None
        if draw.sampler.shuffles >= 0:
            target = draw.target
            if isinstance(target, np.ndarray):
                target[...] = np.asarray(list(value), dtype=target.dtype).reshape(target.shape)
            else:
                target[:] = list(value)
            return None
        # a fresh copy: the program may change a list or array it drew in place
        return copy.copy(value) if isinstance(value, (list, np.ndarray)) else value
    ppl_fixed._ppl_original = original
    return ppl_fixed


class FixingContext(Context):
    """Runs a model with the draws at `fixed` addresses replaced by given values.

    One object per recorded call (`enter` makes it): it knows its call's address
    and counts the calls and draws made in it, as the scan of the finished trace
    (choices.py) counts them.  `hits` (shared) collects the addresses fixed.
    """

    def __init__(self, fixed: dict):
        super().__init__(primitives=sampler_callables(), modules=["random", __name__])
        self.fixed = fixed
        self.hits: set = set()
        self._box: list = [None]          # the value the next stand-in returns
        self._stand_ins: dict = {}        # sampler -> its stand-in in this run
        self.prefix: str | None = None
        self._calls: dict = {}
        self._sites: dict = {}

    def _child(self, prefix: str) -> "FixingContext":
        child = object.__new__(FixingContext)
        child.__dict__.update(self.__dict__)
        child.prefix, child._calls, child._sites = prefix, {}, {}
        return child

    def enter(self, f, /, *args, **kwargs):
        frame = _user_frame()
        qual = frame.f_code.co_qualname
        if self.prefix is None:                    # the model itself
            return self._child(code_name(qual))
        key = (qual, frame.f_back.f_lineno)
        k = self._calls.get(key, 0)
        self._calls[key] = k + 1
        return self._child(join(self.prefix, component(code_name(qual), key[1], k)))

    def substitute(self, f, /, *args, **kwargs):
        try:
            draw = resolve(f, args, kwargs)
        except UnknownSamplerError:
            # a draw of unknown density (kept with logp=None when traced with
            # unknown="record"): named and fixed like the scan names it
            name = getattr(f, "__name__", type(f).__name__)
            draw = Draw(Sampler(name, dict, "unknown"), name, {})
        if draw is None or self.prefix is None:
            return None
        line = None if f is sample else _user_frame().f_lineno
        key = (draw.site, line)
        k = self._sites.get(key, 0)
        self._sites[key] = k + 1
        address = join(self.prefix, component(draw.site, line, k))
        fix = self.fixed.get(address)
        if fix is None:
            return None
        self.hits.add(address)
        try:
            stand_in = self._stand_ins.get(f)
            if stand_in is None:
                stand_in = self._stand_ins[f] = _stand_in(f, self._box)
        except TypeError:                  # an unhashable sampler: a stand-in of its own
            stand_in = _stand_in(f, self._box)
        self._box[0] = (fix[0], draw)
        return stand_in
