"""Per-call times of a trace recorded with `Context(timing=True)`: each followed call's
inclusive and self time, and the per-function table (calls, total, self, per call) that
`summary()` and the CLI print.

The core stamps each activation of a followed frame when it starts (or resumes) and
when it returns, yields or unwinds (`_core.timing_table`).  Inclusive time is the
stamps' difference; self time is inclusive time less the inclusive time of the timed
activations directly inside it (calls the program made into C, primitives, stay in
their caller's self time).  Times are of the traced run: tracing slows every
operation about alike, so shares and ratios carry over to the untraced program better
than absolute times.  Everything here is numpy on the table, one Python object per
function.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .. import _core
from .rows import call_name, code_name, code_place, outermost, text_table

__all__ = ["CallTimes", "FunctionTime", "call_times", "function_times", "subtree_nanoseconds",
           "format_times"]


@dataclass
class CallTimes:
    """The timed activations of a trace, one entry each, in the order they started."""

    row: np.ndarray         # the call row (int32)
    parent: np.ndarray      # the entry of the enclosing timed activation, -1 for none
    start: np.ndarray       # nanoseconds of the monotonic clock (time.monotonic_ns)
    end: np.ndarray
    inclusive: np.ndarray   # end - start, nanoseconds (int64)
    own: np.ndarray         # inclusive less the timed activations directly inside
    code: np.ndarray        # the code id each activation ran, -1 if it is not known

    def __len__(self) -> int:
        return len(self.row)


@dataclass
class FunctionTime:
    """The time of one function's calls inside a summarised subtree."""

    function: str        # qualified name
    place: str           # file:first line
    calls: int           # timed activations (a generator's each resumption is one)
    total: float         # seconds inside its calls; a recursive function's outermost calls
    self: float          # seconds in its own bodies, timed calls inside them excluded
    per_call: float      # total / calls, seconds
    share: float | None  # total / the summarised call's time

    def as_dict(self) -> dict:
        return asdict(self)


def call_times(trace) -> CallTimes | None:
    """The per-activation times of `trace` (a `_core.Trace`), or None when it was not
    recorded with `Context(timing=True)`."""
    cache = trace._cache
    if cache is not None and "call_times" in cache:
        return cache["call_times"]
    table = _core.timing_table(trace)
    if table is None:
        return None
    row = table["row"].astype(np.int32)
    parent = table["parent"].astype(np.int32)
    start, end = table["start"], table["end"]
    inclusive = end - start
    inner = parent >= 0
    own = inclusive - np.bincount(parent[inner], weights=inclusive[inner],
                                  minlength=len(row)).astype(np.int64)
    cols = trace.columns()
    # A timed activation's first child is its first row (an argument, or what a
    # resumed frame did first): the code column there is the code it ran.
    first = row.astype(np.int64) + 1
    ok = first < len(trace)
    code = np.full(len(row), -1, dtype=np.int32)
    ok[ok] &= cols["parent"][first[ok]] == row[ok]
    code[ok] = cols["code"][first[ok]]
    out = CallTimes(row, parent, start, end, inclusive, own, code)
    if not trace.flags(0) & int(_core.NodeFlag.F_OPEN):
        if trace._cache is None:
            trace._cache = {}
        trace._cache["call_times"] = out
    return out


def subtree_nanoseconds(trace, times: CallTimes, lo: int, hi: int) -> int | None:
    """The time of the call at row `lo` (its subtree ends at `hi`): its own activation's,
    or its timed activations' added up (a frame resumed several times, a call into C
    that ran Python frames); None when nothing in it was timed."""
    inside = (times.row >= lo) & (times.row < hi)
    if not inside.any():
        return None
    at = np.flatnonzero(times.row == lo)
    if at.size:
        return int(times.inclusive[at].sum())
    # The outermost timed activations inside: their enclosing one is outside.
    parent = times.parent[inside]
    prow = np.where(parent >= 0, times.row[np.maximum(parent, 0)], -1)
    top = (prow < lo) | (prow >= hi)
    return int(times.inclusive[inside][top].sum())


def function_times(trace, lo: int = 0, hi: int | None = None) -> list[FunctionTime] | None:
    """The per-function time table of the calls in rows [lo, hi) (the whole trace by
    default), most total time first; None when the trace was not timed."""
    times = call_times(trace)
    if times is None:
        return None
    hi = len(trace) if hi is None else hi
    inside = np.flatnonzero((times.row >= lo) & (times.row < hi))
    if inside.size == 0:
        return []
    total_ns = subtree_nanoseconds(trace, times, lo, hi)
    rows = times.row[inside].astype(np.int64)
    # Functions by code; activations whose code is unknown by their call's name.
    code = times.code[inside].astype(np.int64)
    unknown = code < 0
    names: dict[int, str] = {}
    if unknown.any():
        base = int(max(code.max(), -1)) + 1
        keys: dict[str, int] = {}
        for i in np.flatnonzero(unknown).tolist():
            name = call_name(trace, int(rows[i]))
            code[i] = keys.setdefault(name, base + len(keys))
            names[int(code[i])] = name
    ends = trace.columns()["aux"][rows].astype(np.int64)
    outer = outermost(code, rows, ends)
    ncodes = int(code.max()) + 1
    calls = np.bincount(code, minlength=ncodes)
    total = np.bincount(code[outer], weights=times.inclusive[inside][outer], minlength=ncodes)
    own = np.bincount(code, weights=times.own[inside], minlength=ncodes)
    out = []
    for c in np.flatnonzero(calls).tolist():
        if c in names:
            function, place = names[c], "?"
        else:
            obj = trace.codes[c]
            function, place = code_name(obj), code_place(obj)
        out.append(FunctionTime(
            function, place, int(calls[c]), float(total[c]) / 1e9, float(own[c]) / 1e9,
            float(total[c]) / 1e9 / int(calls[c]),
            float(total[c]) / total_ns if total_ns else None))
    out.sort(key=lambda f: (-f.total, f.function))
    return out


def format_times(times: list[FunctionTime], top: int | None = None) -> list[str]:
    """The table's lines: function, where, calls, total and self seconds, microseconds
    per call and the share of the summarised call."""
    shown = times if top is None else times[:top]
    body = [[f.function, f.place, f"{f.calls:,}", f"{f.total:.6f}", f"{f.self:.6f}",
             f"{f.per_call * 1e6:.2f}", "" if f.share is None else f"{f.share:.1%}"]
            for f in shown]
    lines = text_table(["time by function", "where", "calls", "total s", "self s",
                    "per call us", "share"], body)
    if top is not None and len(times) > top:
        lines.append(f"... {len(times) - top} more functions")
    return lines

