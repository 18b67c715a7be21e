"""The one place tracer.ppl hooks into a running trace.

Everything ppl needs from the recorder while a model runs is here: the tracking
context of a plain run (samplers primitive, no hooks), and that of a run with fixed
choices (replay, condition, do, update), which names each draw by its address as it
happens and substitutes the fixed ones.

The fixing context asks the recorder for the sampler callables alone
(`Context(substitute={sampler: gate})`, matched in C): every other call and operator
runs no Python code.  The gate (`_core.SiteGate`, written in C) calls the sampler
itself unless the draw is on a line where a fixed address draws; there the first
draw of each call runs the Python dispatcher, which names it by its address, and
later draws are counted in C until one is fixed (the dispatcher returns the fixed
value).  So a fixing run costs what a plain one costs, plus one `enter` per recorded
Python call (which names the call: its address and its counts of calls and draws,
looked up by the dispatcher from its caller's frame) and a Python call per fixed
draw.  Every draw's row calls the gate; `metadata["substituted"]` holds what the
program called (scan.py reads it there).  The sequence context of a replay by
position substitutes `_core.NextValue` (C): the k-th draw gets the k-th value.
"""

from __future__ import annotations

import copy
import sys

import numpy as np

from .. import _core
from ..context import Context
from ._receiver import bound_method
from .address import Address, Component, component, join, parse
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
    if type(fn) is _core.SiteGate:
        return fn.original
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
    `unbound`: a method taking the generator first) that its SiteGate sends here:
    it names the draw by its address and returns the fixed value, or draws from
    what the program called.

    A call's draws are counted in `act._sites`, under `slot << 16 | site id` on a
    line of a fixed address (the gate counts there too, in C, the draws that are
    not fixed), else under (site, line), as `[k, base, wanted]`: the next count,
    the address without a count (`[k]` appended for the k-th) and the fixed
    draws of that base by count (None: none)."""
    acts_get, hits_add = run._acts.get, run.hits.add
    by_base = run._by_base
    slots_of = run._places.slots
    kinds_at, drawn = run.kinds_at, run.count
    getframe = sys._getframe
    named = key is sample
    s = lookup(key)[0]
    shuffles = s is not None and s.shuffles >= 0
    site_id = run._site_ids[site]

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
            name, line = draw.site, None
            where = (name, None)
        else:
            name, line = site, frame.f_lineno
            slot = slots_of(frame.f_code).get(line)
            where = (slot << 16) | site_id if slot is not None and slot < 255 else (site, line)
        count = act._sites.get(where)
        if count is None:
            base = join(act.prefix, component(name, line, 0))
            count = act._sites[where] = [0, base, by_base.get(base)]
        k = count[0]
        count[0] = k + 1
        wanted = count[2]
        fix = wanted.get(k) if wanted is not None else None
        if fix is None:
            return (f or _no_generator(key, site))(*args, **kwargs)
        address = count[1] if k == 0 else f"{count[1]}[{k}]"
        hits_add(address)
        kinds_at[drawn.n - 1] = fix[1]     # the gate counted this draw
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


class _Places:
    """Where a fixing run's draws may be fixed: the lines of the fixed addresses'
    sites, by the name of the function drawing there.  `places(code)`, for the
    SiteGates: one byte per code unit of `code`, the slot (1, 2, ... in line order;
    255 from the 255th on) of the line it is on where that is such a line, else 0;
    `slots(code)`: line -> slot."""

    def __init__(self, fixed: dict):
        self.lines: dict = {}
        for addr in fixed:
            a = parse(addr)
            if len(a) >= 2 and a[-1].line is not None:
                self.lines.setdefault(a[-2].name, set()).add(a[-1].line)
        self._slots: dict = {}

    def slots(self, code) -> dict:
        got = self._slots.get(code)
        if got is None:
            wanted = sorted(self.lines.get(code_name(code.co_qualname), ()))
            got = self._slots[code] = {line: min(i + 1, 255) for i, line in enumerate(wanted)}
        return got

    def __call__(self, code) -> bytes:
        slots = self.slots(code)
        if not slots:
            return b""
        units = bytearray(len(code.co_code) // 2)
        for start, end, line in code.co_lines():
            slot = slots.get(line)
            if slot is not None:
                units[start // 2:end // 2] = bytes([slot]) * (end // 2 - start // 2)
        return bytes(units)


def _by_base(fixed: dict) -> dict:
    """The fixed addresses by their address without the count: base -> {k: fix}."""
    out: dict = {}
    for addr, fix in fixed.items():
        a = parse(addr)
        last = a[-1]
        base = str(Address(a[:-1] + (Component(last.name, last.line, 0),)))
        out.setdefault(base, {})[last.k] = fix
    return out


class FixingContext(Context):
    """Runs a model with the draws at `fixed` addresses replaced by given values.

    Every sampler callable is substituted by a `_core.SiteGate` (matched in C, so no
    other call runs Python code), which calls the sampler itself, in C, unless
    the call is made on a line where a fixed address draws (or through a bound
    method, or is a named `sample`): those go to the Python dispatcher, which
    names the draw by its address and fixes it.  `enter` makes one object per
    recorded call, registered by its frame for the dispatchers: it knows its
    call's address and counts the calls and draws made in it, as the scan of the
    finished trace (scan.py) counts them.  `hits` (shared) collects the addresses
    fixed; `kinds_at` maps the position of each fixed draw among all draws (the
    gates' `count`) to its kind.
    """

    def __init__(self, fixed: dict, snaps: Snapshots | None = None):
        self.fixed = fixed
        self.hits: set = set()
        self.count = _core.DrawCount()   # draws so far, counted by the gates
        self.kinds_at: dict = {}  # draw position -> kind of the fixed draws
        self._acts: dict = {}     # id(frame) -> the FixingContext of that call
        self.prefix: str | None = None
        self._calls: dict = {}
        self._sites: dict = {}
        self._places = _Places(fixed)
        self._by_base = _by_base(fixed)
        keys = sampler_keys()
        self._site_ids = {}
        for _, site, _ in keys:
            self._site_ids.setdefault(site, len(self._site_ids))
        gates = {key: _core.SiteGate(key, _dispatcher(self, key, site, unbound), self._places,
                                     self.count, GENERATOR_TYPES if unbound else None,
                                     everywhere=key is sample, acts=self._acts,
                                     site_id=self._site_ids[site])
                 for key, site, unbound in keys}
        super().__init__(primitives=sampler_callables(), modules=["random", __name__],
                         substitute=gates,
                         on_call=snaps.on_call() if snaps is not None else None)

    def kinds(self, draws) -> list:
        """Each draw's kind, in draw order (`draws`: the scan of the finished run)."""
        n = len(draws)
        if self.count.n == n:
            kinds = [SAMPLED] * n
            for i, k in self.kinds_at.items():
                kinds[i] = k
            return kinds
        # the gates and the scan disagree on the number of draws: the addresses decide
        fixed, hits = self.fixed, self.hits
        return [fixed[a][1] if a in hits else SAMPLED for a in draws.addresses]

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
