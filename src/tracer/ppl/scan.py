"""Finding the draws of a finished trace: which rows, at which addresses.

The rows that may be draws are found on the trace's columns (callee names that end
in a sampler's name); only those are read as node views.  Addresses are counted as
the running hooks count them (_hooks.FixingContext): calls by (code, call line) within
their caller, draws by (site, line) within their call.
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..views.table import KIND_NAMES
from ._hooks import FIXED_NAME, code_name, original_of
from .address import component, join
from .samplers import Draw, UnknownSamplerError, method_names, resolve, sample

__all__ = ["scan"]

_PRIMITIVE = int(np.flatnonzero(KIND_NAMES == "primitive")[0])
_NESTED = int(np.flatnonzero(KIND_NAMES == "nested")[0])


class Found:
    """A draw row of a trace: its address, the draw and the value it gave."""

    __slots__ = ("row", "address", "draw", "value", "fixed", "unknown")

    def __init__(self, row, address, draw, value, fixed, unknown=None):
        self.row, self.address, self.draw, self.value = row, address, draw, value
        self.fixed = fixed          # whether a fixing context supplied the value
        self.unknown = unknown      # the error text of a draw with no known density


def _candidate_rows(tb) -> np.ndarray:
    names = tb.callee_names
    wanted = method_names() | {FIXED_NAME}
    ok = np.array([str(n).rsplit(".", 1)[-1] in wanted for n in names.tolist()], dtype=bool)
    if not ok.any():
        return np.empty(0, dtype=np.int64)
    # a sampler written in C that calls Python code (numpy's choice, poisson) is a call
    # with a body of frames entered from C: a nested row
    kind = tb["kind"]
    return np.flatnonzero(ok[tb["callee_id"]] & ((kind == _PRIMITIVE) | (kind == _NESTED)))


class _Paths:
    """Addresses of the recorded calls, built on demand and cached by row."""

    def __init__(self, trace, tb):
        self.trace = trace
        kind = tb["kind"]
        self.nested = np.flatnonzero(kind == _NESTED)
        parent = tb["parent"][self.nested]
        cid = tb["callee_id"][self.nested]
        line = tb["line"][self.nested]
        order = np.lexsort((self.nested, line, cid, parent))
        keys = np.stack([parent[order], cid[order], line[order]])
        new_group = np.ones(len(order), dtype=bool)
        if len(order) > 1:
            new_group[1:] = (keys[:, 1:] != keys[:, :-1]).any(axis=0)
        starts = np.flatnonzero(new_group)
        group_start = np.repeat(starts, np.diff(np.append(starts, len(order))))
        occ = np.empty(len(order), dtype=np.int64)
        occ[order] = np.arange(len(order)) - group_start
        self.occ = occ
        self.line = line
        self.names = tb.callee_names
        self.cid = cid
        self.cache: dict[int, str] = {}

    def path(self, row: int) -> str:
        got = self.cache.get(row)
        if got is not None:
            return got
        t = self.trace
        chain = []
        r = row
        while r >= 0 and r not in self.cache:
            chain.append(r)
            r = t.parent(r)
        prefix = self.cache.get(r, "") if r >= 0 else ""
        for r in reversed(chain):
            i = int(np.searchsorted(self.nested, r))
            if i >= len(self.nested) or self.nested[i] != r:
                # a primitive call a frame entered from C hangs under: no component
                self.cache[r] = prefix
                continue
            name = code_name(str(self.names[self.cid[i]]))
            if t.parent(r) < 0:
                prefix = name
            else:
                prefix = join(prefix, component(name, int(self.line[i]), int(self.occ[i])))
            self.cache[r] = prefix
        return prefix


def _call_of(trace, row: int, node, sites: dict, code: int, offset: int):
    """(callee, args, kwargs) of call row `row`.  The keyword names of a call site are
    the same at every execution, so node views are asked once per site; each row's
    inputs are then read from the refs column."""
    shape = sites.get((code, offset))
    if shape is None:
        star = node.is_star_call
        shape = sites[(code, offset)] = (star, tuple(node.keywords))
    star, kwnames = shape
    if star:
        return (node.function.value, tuple(a.value for a in node.arguments),
                {k: v.value for k, v in node.keywords.items()})
    vals = [trace.value(r) if type(r) is int else r[1] for r in trace.refs(row)]
    nk = len(kwnames)
    pos = vals[1:len(vals) - nk]
    return vals[0], tuple(pos), dict(zip(kwnames, vals[len(vals) - nk:]))


def scan(root, unknown: str = "error") -> list[Found]:
    """The draws under `root`, in the order they were made.

    `unknown="error"` raises UnknownSamplerError at a draw whose distribution is not
    known; `"record"` keeps it with its error text (its logp is None).
    """
    trace = root.trace
    tb = trace.table()
    rows = _candidate_rows(tb)
    if len(rows) == 0:
        return []
    paths = _Paths(trace, tb)
    lines = tb["line"]
    codes, offsets = tb["code"], tb["offset"]
    sites: dict = {}
    counts: dict = {}
    out: list[Found] = []
    views = _core.node_views(trace, rows)
    inside_until = -1       # a draw's subtree: a draw is the outermost sampler call
    for row, node in zip(rows.tolist(), views):
        if row < inside_until:
            continue
        if node.kind == "nested" and node.function is None:
            continue
        f, args, kwargs = _call_of(trace, row, node, sites, codes[row], offsets[row])
        fixed = False
        orig = original_of(f)
        if orig is not None:
            f, fixed = orig, True
        problem = None
        try:
            draw = resolve(f, args, kwargs)
        except UnknownSamplerError as e:
            problem = str(e)
            name = getattr(f, "__name__", type(f).__name__)
            from .samplers import Sampler
            draw = Draw(Sampler(name, lambda *a, **k: {}, "unknown"),
                        name, {"args": args[1:], "kwargs": kwargs})
        if draw is None:
            continue
        parent = trace.parent(row)
        line = None if f is sample else int(lines[row])
        key = (parent, draw.site, line)
        k = counts.get(key, 0)
        counts[key] = k + 1
        address = join(paths.path(parent), component(draw.site, line, k))
        if problem is not None and unknown == "error":
            raise UnknownSamplerError(
                f"the draw at {address} ({problem}); tracer.ppl cannot score it.  Declare "
                f"the sampler with @tracer.ppl.sampler(logpdf=...), or trace with "
                f"unknown='record' to keep it with logp=None")
        value = node.value
        if draw.sampler.shuffles >= 0:
            # shuffle returns None: the choice is the order it left (read now)
            value = tuple(np.asarray(draw.target).tolist()) if isinstance(
                draw.target, np.ndarray) else tuple(draw.target)
        out.append(Found(row, address, draw, value, fixed, problem))
        inside_until = trace.end(row)
    return out
