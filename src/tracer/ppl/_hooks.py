"""The one place tracer.ppl hooks into a running trace.

Everything ppl needs from the recorder while a model runs is here: the tracking
context of a plain run (samplers primitive, no hooks), and that of a run with fixed
choices (replay, condition, do, update), which names each draw by its address as it
happens and substitutes the fixed ones.

The fixing context asks the recorder for the sampler callables alone
(`Context(substitute={sampler: dispatcher})`, matched in C): every other call and
operator runs no Python code, so a fixing run costs what a plain one costs plus one
Python call per draw and one `enter` per recorded Python call (which names the
call: its address and its counts of calls and draws, looked up by the dispatcher
from its caller's frame).  Every draw then runs through its dispatcher: the trace's
row calls the dispatcher, `metadata["substituted"]` holds what the program called
(scan.py reads it there), and the dispatcher either draws from that or returns the
fixed value.
"""

from __future__ import annotations

import copy
import sys

import numpy as np

from .. import _core
from ..context import Context
from ._receiver import bound_method
from .address import component, join
from .kinds import SAMPLED
from .snapshots import Snapshots
from .samplers import (GENERATOR_TYPES, Draw, Sampler, UnknownSamplerError, lookup,
                       resolve, sample, sampler_callables, sampler_keys)

__all__ = ["plain_context", "FixingContext", "SequenceContext", "OutOfDraws", "DRAW_NAME",
           "original_of", "code_name"]

DRAW_NAME = "ppl_draw"   # the name of a fixing run's dispatchers (the callee of its draws)


def plain_context(snaps: Snapshots | None = None) -> Context:
    """The context of a run with nothing fixed: samplers primitive; with `snaps`,
    the draws' mutable arguments and values are copied into it (snapshots.py)."""
    return Context(primitives=sampler_callables(), modules=["random"],
                   on_call=snaps.on_call() if snaps is not None else None)


def code_name(qualname: str) -> str:
    """How a call shows in an address: its code's qualified name without `<locals>`."""
    return qualname.replace(".<locals>", "")


def original_of(fn):
    """The sampler whose calls dispatcher `fn` takes (True for a replay by
    position's `_core.NextValue`, which takes every sampler's), or None if `fn` is
    no dispatcher (what one call called is in its row's metadata["substituted"])."""
    if type(fn) is _core.NextValue:
        return True
    return getattr(fn, "_ppl_sampler", None)


def _user_frame():
    """The innermost frame that is not tracer's own (a hook is called from the
    recorder inside the traced frame, through tracer.context's helpers)."""
    f = sys._getframe(2)
    while f is not None and f.f_globals.get("__name__", "").startswith("tracer."):
        f = f.f_back
    return f


def _shuffled(value, target) -> None:
    """A fixed shuffle: reorder the list (or array) `target` in place into `value`."""
    if isinstance(target, np.ndarray):
        target[...] = np.asarray(list(value), dtype=target.dtype).reshape(target.shape)
    else:
        target[:] = list(value)


def _no_generator(key, site: str):
    raise TypeError(
        f"tracer.ppl cannot tell which generator this call of a bound {site!r} method "
        f"draws from: it follows a bound method back to the variable or attribute it was "
        f"read from, not through containers, calls or arguments computed with if/else or "
        f"and/or; call it on the generator (rng.{site}(...)) or from a variable")


def _dispatcher(run: "FixingContext", key, site: str, unbound: bool):
    """The callable run instead of each call of sampler `key` (site name `site`;
    `unbound`: a method taking the generator first): it names the draw by its
    address and returns the fixed value, or draws from what the program called.

    Every draw of a fixing run comes here, so it is written for speed: a call's
    draws are counted by (site, line) in `act._sites` next to the address
    they name without a count (`[k]` appended for the k-th)."""
    acts_get, fixed_get, hits_add = run._acts.get, run.fixed.get, run.hits.add
    kind = run.kinds.append
    getframe = sys._getframe
    named = key is sample
    s = lookup(key)[0]
    shuffles = s is not None and s.shuffles >= 0

    def ppl_draw(*args, **kwargs):
        frame = getframe(1)
        f = key
        if unbound and not (args and isinstance(args[0], GENERATOR_TYPES)):
            # a bound method (`m = rng.normal; m(...)`): the generator is its own
            f = bound_method(frame, key, site)
        act = acts_get(id(frame))
        if act is None:
            return (f or _no_generator(key, site))(*args, **kwargs)
        if named:
            try:
                draw = resolve(f, args, kwargs)
            except UnknownSamplerError:
                draw = Draw(Sampler("sample", dict, "unknown"), "sample", {})
            if draw is None:
                return f(*args, **kwargs)
            where = (draw.site, None)
        else:
            where = (site, frame.f_lineno)
        count = act._sites.get(where)
        if count is None:
            count = act._sites[where] = [0, join(act.prefix, component(*where, 0))]
        k = count[0]
        count[0] = k + 1
        address = count[1] if k == 0 else f"{count[1]}[{k}]"
        fix = fixed_get(address)
        if fix is None:
            kind(SAMPLED)
            return (f or _no_generator(key, site))(*args, **kwargs)
        hits_add(address)
        kind(fix[1])
        value = fix[0]
        if named and draw.sampler.shuffles >= 0:
            return _shuffled(value, draw.target)
        if shuffles:
            return _shuffled(value, resolve(f, args, kwargs).target if f is not None else
                             (args[0] if args else kwargs.get("x")))
        # a fresh copy: the program may change a list or array it drew in place
        if isinstance(value, (list, np.ndarray)):
            return copy.copy(value)
        return value

    ppl_draw.__name__ = ppl_draw.__qualname__ = DRAW_NAME
    ppl_draw._ppl_sampler = key
    return ppl_draw


class FixingContext(Context):
    """Runs a model with the draws at `fixed` addresses replaced by given values.

    Every sampler callable is substituted by a dispatcher (matched in C, so no
    other call runs Python code).  `enter` makes one object per recorded call,
    registered by its frame for the dispatchers: it knows its call's address and
    counts the calls and draws made in it, as the scan of the finished trace
    (scan.py) counts them.  `hits` (shared) collects the addresses fixed.
    """

    def __init__(self, fixed: dict, snaps: Snapshots | None = None):
        self.fixed = fixed
        self.hits: set = set()
        self.kinds: list = []     # each draw's kind (fixed ones: theirs), in draw order
        self._acts: dict = {}     # id(frame) -> the FixingContext of that call
        self.prefix: str | None = None
        self._calls: dict = {}
        self._sites: dict = {}
        dispatchers = {key: _dispatcher(self, key, site, unbound)
                       for key, site, unbound in sampler_keys()}
        super().__init__(primitives=sampler_callables(), modules=["random", __name__],
                         substitute=dispatchers,
                         on_call=snaps.on_call() if snaps is not None else None)

    def _child(self, prefix: str, frame) -> "FixingContext":
        child = object.__new__(FixingContext)
        child.__dict__.update(self.__dict__)
        child.prefix, child._calls, child._sites = prefix, {}, {}
        self._acts[id(frame)] = child
        return child

    def enter(self, f, /, *args, **kwargs):
        frame = _user_frame()
        qual = frame.f_code.co_qualname
        if self.prefix is None:                    # the model itself
            return self._child(code_name(qual), frame)
        key = (qual, frame.f_back.f_lineno)
        k = self._calls.get(key, 0)
        self._calls[key] = k + 1
        return self._child(join(self.prefix, component(code_name(qual), key[1], k)), frame)


class OutOfDraws(BaseException):
    """Raised by a SequenceContext's substitute when the run draws more often than
    the run it replays (a BaseException: the model's own handlers let it through)."""


class SequenceContext(Context):
    """Replays a run by position: the k-th sampler call returns the k-th value.

    Every sampler callable is substituted (matched in C) by one `_core.NextValue`,
    a callable written in C that returns the next value whatever it was called
    with: no Python code runs and no frame is made per draw, no address is made
    while the model runs, and no `enter` hook runs for its calls.  Right only when
    the run makes the same draws in the same order: the caller (run.replay) checks
    the finished trace against the replayed one, and runs a FixingContext instead
    when they differ.
    """

    def __init__(self, values: list, snaps: Snapshots | None = None):
        self.next_value = _core.NextValue(list(values), OutOfDraws, np.ndarray)
        super().__init__(primitives=sampler_callables(), modules=["random", __name__],
                         substitute={key: self.next_value for key, _, _ in sampler_keys()},
                         on_call=snaps.on_call() if snaps is not None else None)

    @property
    def count(self) -> int:
        """How many draws the run asked for (and got, up to the values given)."""
        return self.next_value.count
