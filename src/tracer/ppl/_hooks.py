"""The one place tracer.ppl hooks into a running trace.

Everything ppl needs from the recorder while a model runs is here: the tracking
context of a plain run (samplers primitive, no hooks), and that of a run with fixed
choices (replay, condition, do, update), which names each draw by its address as it
happens and fixes the chosen ones.

The fixing context asks the recorder about the sampler callables alone
(`Context(override={sampler: fix})`, matched in C): every other call and operator
runs no Python code, and the samplers run as the program calls them (no
replacement callable, no event before a call: the run is recorded with the plans
of snapshots, PLAN_EXACT).  At the event after a draw the fix (`_core.SiteFix`,
written in C) looks the draw's code unit up among the lines where a fixed address
draws; there it counts the draw in the frame's context (the first draw of a call
at such a line runs `first` in Python, which names the line's address) and, when
the count is a fixed one, asks `fixed` (Python) for the value that takes the
place of the draw's result.  So a fixing run costs what a plain one costs, plus a
Python call per fixed draw and per call and line where one may be.  When a fixed
address lies below a call of the model (three components or more), the calls are
counted as the scan of the finished trace (scan.py) counts them, in C
(`_core.CallPaths`): a call on a fixed address's path gets a context of its own
(Python: its address, its counts of calls and draws), every other call, and all
below it, one shared context that fixes nothing; otherwise only the model's own
frame can draw at a fixed address and no `enter` runs.  The
sequence context of a replay by position substitutes `_core.NextValue` (C): the
k-th draw gets the k-th value.
"""

from __future__ import annotations

import copy
import sys

import numpy as np

from .. import _core
from ..context import KEEP, Context
from .address import base_of, component, join, parse
from .kinds import SAMPLED
from .snapshots import Snapshots
from .samplers import (Draw, Sampler, UnknownSamplerError, resolve, sample, sampler_callables,
                       sampler_keys)

__all__ = ["plain_context", "FixingContext", "fixing_context", "SequenceContext",
           "OutOfDraws", "DRAW_NAME", "original_of", "code_name"]

DRAW_NAME = "ppl_draw"   # the name a replacement callable of a draw may carry (scan.py)


def plain_context(snaps: Snapshots | None = None) -> Context:
    """The context of a run with nothing fixed: samplers primitive; with `snaps`,
    the draws' mutable arguments and values are copied into it (snapshots.py)."""
    ctx = Context(primitives=sampler_callables(), modules=["random"])
    ctx._call_filter = _call_filter(snaps.on_call() if snaps is not None else None)
    return ctx


def code_name(qualname: str) -> str:
    """How a call shows in an address: its code's qualified name without `<locals>`."""
    return qualname.replace(".<locals>", "")


def original_of(fn):
    """The sampler whose calls replacement `fn` takes (True for a replay by
    position's `_core.NextValue`, which takes every sampler's), or None if `fn`
    replaces no sampler (what one call called is in its row's
    metadata["substituted"])."""
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


def _fresh(value):
    # a fresh copy: the program may change a list or array it drew in place
    if isinstance(value, (list, np.ndarray)):
        return copy.copy(value)
    return value


class _Places:
    """Where a fixing run's draws may be fixed: the lines of the fixed addresses'
    sites, by the name of the function drawing there.  `places(code)`, for the
    SiteFixes: one byte per code unit of `code`, the slot (1, 2, ... in line order;
    255 from the 255th on) of the line it is on where that is such a line, else 0;
    `slots(code)`: line -> slot; `line_at(code, offset)`: the line of a code unit."""

    def __init__(self, parsed: dict):
        self.lines: dict = {}
        for a in parsed.values():
            if len(a) >= 2 and a[-1].line is not None:
                self.lines.setdefault(a[-2].name, set()).add(a[-1].line)
        self._slots: dict = {}
        self._lines: dict = {}

    def slots(self, code) -> dict:
        got = self._slots.get(code)
        if got is None:
            wanted = sorted(self.lines.get(code_name(code.co_qualname), ()))
            got = self._slots[code] = {line: min(i + 1, 255) for i, line in enumerate(wanted)}
        return got

    def line_at(self, code, offset: int):
        got = self._lines.get(code)
        if got is None:
            got = self._lines[code] = {}
            for start, end, line in code.co_lines():
                for o in range(start, end, 2):
                    got[o] = line
        return got.get(offset)

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


def _by_base(parsed: dict, fixed: dict) -> dict:
    """The fixed addresses by their address without the count: base -> {k: fix}."""
    out: dict = {}
    for addr, a in parsed.items():
        out.setdefault(base_of(addr), {})[a[-1].k] = fixed[addr]
    return out


def _call_filter(on_call: dict | None, substitute: dict | None = None,
                 override: dict | None = None):
    """The core's CallFilter for a ppl context's hooks, made as
    tracer.context's `_call_filter` makes it (one entry per callable, in the
    order first given) from keys that are callables already: none to resolve
    by name (a context is made per run: this is most of its making)."""
    entries: dict = {}
    for slot, arg in enumerate((on_call, substitute, override)):
        if not arg:
            continue
        for key, fn in arg.items():
            entry = entries.get(id(key))
            if entry is None:
                if not callable(key):
                    raise TypeError(f"a hook filter's key must be a callable, got {key!r}")
                entry = entries[id(key)] = [key, None, None, None]
            entry[1 + slot] = fn
    if not entries:
        return None
    return _core.CallFilter([(e[0], (e[1], e[2], e[3])) for e in entries.values()])


def _fix_hooks(run: "FixingContext", sites: list):
    """(first, fixed, named): the Python parts of a fixing run's SiteFixes (see
    _core.SiteFix), sharing `run`'s places, fixed addresses, hits and kinds."""
    places, by_base = run._places, run._by_base
    hits_add, kinds_at = run.hits.add, run.kinds_at

    def first(ctx, code, offset, key):
        line = places.line_at(code, offset)
        sid = key & 0xFFFF
        where = key if key >> 16 != 255 else (line, sid)   # slot 255: lines share it
        entry = ctx._sites.get(where)
        if entry is None:
            prefix = ctx.prefix if ctx.prefix is not None else code_name(code.co_qualname)
            base = join(prefix, component(sites[sid], line, 0))
            entry = ctx._sites[where] = [0, base, by_base.get(base)]
        return entry

    def fix(entry, k, trace, row):
        address = entry[1] if k == 0 else f"{entry[1]}[{k}]"
        value, kind = entry[2][k]
        hits_add(address)
        kinds_at[row] = kind
        return _fresh(value)

    def fix_shuffled(entry, k, trace, row):
        # a shuffle has reordered its list in place: reorder it into the fixed order
        value = entry[2][k][0]
        fix(entry, k, trace, row)
        f, args, kwargs = _core.node_view(trace, row).call_values()
        _shuffled(value, resolve(f, args, kwargs).target)
        return KEEP

    def named(ctx, code, trace, row):
        f, args, kwargs = _core.node_view(trace, row).call_values()
        try:
            draw = resolve(f, args, kwargs)
        except UnknownSamplerError:
            draw = Draw(Sampler("sample", dict, "unknown"), "sample", {})
        if draw is None:
            return KEEP
        where = (draw.site, None)
        entry = ctx._sites.get(where)
        if entry is None:
            prefix = ctx.prefix if ctx.prefix is not None else code_name(code.co_qualname)
            base = join(prefix, component(draw.site, None, 0))
            entry = ctx._sites[where] = [0, base, by_base.get(base)]
        k = entry[0]
        entry[0] = k + 1
        fixes = entry[2]
        if fixes is None or k not in fixes:
            return KEEP
        value, kind = fixes[k]
        hits_add(entry[1] if k == 0 else f"{entry[1]}[{k}]")
        kinds_at[row] = kind
        if draw.sampler.shuffles >= 0:
            _shuffled(value, draw.target)
            return KEEP
        return _fresh(value)

    return first, fix, fix_shuffled, named


class FixingContext(Context):
    """Runs a model with the draws at `fixed` addresses (address -> (value, kind))
    replaced by given values.

    Every sampler callable gets a `_core.SiteFix` override (matched in C, so no
    other call runs Python code): the program's own call of the sampler runs, and
    a draw at a fixed address has its value replaced right after it.  `hits`
    (shared) collects the addresses fixed; `kinds_at` maps the trace row of each
    fixed draw to its kind.  Made by `fixing_context`, which picks this class
    when every fixed address is in the model's own body, else _CallNaming (which
    names every recorded call in `enter`).
    """

    def __init__(self, fixed: dict, snaps: Snapshots | None = None, *,
                 parsed: dict | None = None):
        self.fixed = fixed
        parsed = parsed if parsed is not None else {a: parse(a) for a in fixed}
        self.hits: set = set()
        self.kinds_at: dict = {}  # row -> kind of the fixed draws
        self.prefix: str | None = None
        self._calls: dict = {}
        self._sites: dict = {}
        self._places = _Places(parsed)
        self._by_base = _by_base(parsed, fixed)
        self._parsed = parsed
        self._below = None    # (_CallNaming: the calls on paths below this one's)
        keys, sites = _keys()
        first, fix, fix_shuffled, named = _fix_hooks(self, sites)
        root_only = not isinstance(self, _CallNaming)
        places = self._places
        # Only the samplers whose site a fixed address names can make a fixed draw
        # (`sample`, which takes its site's name as an argument, may make any):
        # the others' calls run no fix at all.
        named_sites = {a[-1].name for a in parsed.values()}
        fixes = {key: _core.SiteFix(places, first, fix_shuffled if shuffles else fix, named,
                                    site_id=sid, everywhere=key is sample, root_only=root_only)
                 for key, sid, shuffles in keys if key is sample or sites[sid] in named_sites}
        super().__init__(primitives=sampler_callables(), modules=["random"])
        self._call_filter = _call_filter(snaps.on_call() if snaps is not None else None,
                                         None, fixes)

    def hook_mask(self) -> int:
        """Context.hook_mask, kept: a fixing run's contexts do not change (the
        recorder asks at each call given a context of its own: _CallNaming)."""
        mask = self.__dict__.get("_mask")
        if mask is None:
            mask = self._mask = Context.hook_mask(self)
        return mask

    def kinds(self, draws) -> list:
        """Each draw's kind, in draw order (`draws`: the scan of the finished run)."""
        kinds = [SAMPLED] * len(draws)
        if not self.kinds_at:
            return kinds
        rows = np.fromiter(self.kinds_at, dtype=np.int64, count=len(self.kinds_at))
        at = np.searchsorted(draws.rows, rows)
        ok = at < len(draws.rows)
        ok[ok] = draws.rows[at[ok]] == rows[ok]
        if not ok.all():
            # a fixed row the scan does not count as a draw: the addresses decide
            fixed, hits = self.fixed, self.hits
            return [fixed[a][1] if a in hits else SAMPLED for a in draws.addresses]
        for i, kind in zip(at.tolist(), self.kinds_at.values()):
            kinds[i] = kind
        return kinds


_KEYS: list = [None, None]   # [the samplers table's items, _keys()] when last made


def _keys() -> tuple[list, list]:
    """([(sampler key, site id, whether it shuffles)], site names by id), made again
    only when a sampler was declared since (sampler_keys walks two modules)."""
    from .samplers import _TABLE, lookup
    items = list(_TABLE.items())
    if _KEYS[0] != items:
        site_ids: dict = {}
        out = []
        for key, site, _ in sampler_keys():
            s = lookup(key)[0]
            out.append((key, site_ids.setdefault(site, len(site_ids)),
                        s is not None and s.shuffles >= 0))
        _KEYS[:] = [items, (out, list(site_ids))]
    return _KEYS[1]


_OFF_PATH = "\x00"   # the prefix of calls on no fixed address's path (matches none)


def _paths(parsed: dict) -> dict:
    """The calls on the paths of the fixed addresses: the printed prefix of a call
    -> {(name, line) of a call made in it: {k: the prefix of its k-th such call}}
    for every call component of every fixed address (the model's own name is the
    key of the top)."""
    out: dict = {}
    for a in parsed.values():
        prefix = a[0].name
        for c in a[1:-1]:
            child = join(prefix, component(c.name, c.line, c.k))
            out.setdefault(prefix, {}).setdefault((c.name, c.line), {})[c.k] = child
            prefix = child
    return out


class _CallNaming(FixingContext):
    """A FixingContext for addresses below the model's own calls: `enter` names the
    calls on the fixed addresses' paths, as the scan of the finished trace (scan.py)
    counts them: each call made in such a call is counted by (name, line) in it,
    and one that is on a path (a call component of a fixed address) gets a context
    of its own, which knows its address and counts the calls and draws made in it.
    Every other call, and all below it, shares one context that fixes nothing and
    names nothing (no `enter`: the recorder runs no Python code for those calls;
    its prefix matches no address)."""

    def _child(self, prefix: str) -> "_CallNaming":
        child = object.__new__(_CallNaming)
        child.__dict__.update(self.__dict__)
        child.prefix, child._calls, child._sites = prefix, {}, {}
        child._below = self._paths.get(prefix)   # (its hook mask: its parent's)
        return child

    def _off_path(self) -> FixingContext:
        return self._off

    def _start(self) -> None:
        # at the model's call: the paths, and the context of the calls on none
        # (the run's filter, its SiteFixes, and no enter hook), shared by the
        # contexts below through _call_paths (_core.CallPaths: the recorder
        # counts the calls of a context whose `_below` is a dict in C)
        self._paths = _paths(self._parsed)
        off = object.__new__(FixingContext)
        off.__dict__.update(self.__dict__)
        off.prefix, off._calls, off._sites = _OFF_PATH, {}, {}
        off._mask = None                        # (no enter: not its parent's)
        self._off = off
        self._call_paths = _core.CallPaths(off, _CallNaming._child, _code_name_of)

    def enter(self, f, /, *args, **kwargs):
        # (the recorder asks here only where _core.CallPaths does not decide:
        # the model's own call, a call made in a call with nothing on a path
        # below it, a frame with no calling frame)
        below = self._below
        if below is None:
            if self.prefix is None:                    # the model itself
                if "_call_paths" not in self.__dict__:
                    self._start()
                return self._child(code_name(_user_frame().f_code.co_qualname))
            return self._off_path()
        frame = _user_frame()
        key = (code_name(frame.f_code.co_qualname), frame.f_back.f_lineno)
        k = self._calls.get(key, 0)
        self._calls[key] = k + 1
        ks = below.get(key)
        if ks is None or k not in ks:
            return self._off_path()
        return self._child(ks[k])


def _code_name_of(code) -> str:
    return code_name(code.co_qualname)


def fixing_context(fixed: dict, snaps: Snapshots | None = None) -> FixingContext:
    """The context of a run with the draws at `fixed` addresses fixed: one that
    names every call when some fixed address lies below a call of the model."""
    parsed = {a: parse(a) for a in fixed}
    deep = any(len(a) > 2 for a in parsed.values())
    return (_CallNaming if deep else FixingContext)(fixed, snaps, parsed=parsed)


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
        super().__init__(primitives=sampler_callables(), modules=["random", __name__])
        self._call_filter = _call_filter(
            snaps.on_call() if snaps is not None else None,
            {key: self.next_value for key, _, _ in _keys()[0]})

    @property
    def count(self) -> int:
        """How many draws the run asked for (and got, up to the values given)."""
        return self.next_value.count
