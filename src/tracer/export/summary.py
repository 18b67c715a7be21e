"""`tracer.summary(root)`: what a trace holds, as data and as a table: nodes by kind,
recorded calls by function, primitive calls by function, depth and bytes.

Computed on the columns with numpy; a Python object is made per function or call site,
never per node.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .. import _core
from .._core import KINDS
from ..views.nodes import Node, node_at
from .rows import (NESTED, call_name, callable_name, callee_codes, code_name, code_place,
                   outermost, text_table as _table)
from .timing import (FunctionTime, call_times, format_times, function_times,
                     subtree_nanoseconds)

__all__ = ["Summary", "FunctionCalls", "summary"]

PRIMITIVE = KINDS.index("primitive")


@dataclass
class FunctionCalls:
    """The recorded calls of one function inside the summarised subtree."""

    function: str       # qualified name
    place: str          # file:first line
    calls: int          # how many times it was called
    nodes: int          # nodes inside its calls, nested calls' nodes included
    own_nodes: int      # nodes directly in its calls' bodies
    seconds: float | None = None  # time inside its calls, when timed
    share: float | None = None    # seconds / the summarised call's time


@dataclass
class Summary:
    """What `tracer.summary` returns; `str(summary)` is the table the CLI prints."""

    root: str                       # the summarised call, as `function(...)`
    nodes: int                      # rows in the subtree, the root included
    by_kind: dict[str, int]         # nodes by kind (argument, constant, ...)
    depth: int                      # deepest nesting of recorded calls (the root is 1)
    refs: int                       # data references (edges) in the subtree
    nbytes: int                     # bytes of the whole trace's columns (trace.nbytes)
    calls: list[FunctionCalls]      # recorded (nested) calls by function, most nodes first
    primitives: list[tuple[str, int]]  # primitive calls by function, most calls first
    timed: bool                     # whether calls were timed (Context(timing=True),
                                    # or a context's metadata["start"]/["end"])
    seconds: float | None = None    # the summarised call's time, when timed
    notes: list[str] = field(default_factory=list)
    # Per function: calls, total, self and per-call time (Context(timing=True) only).
    times: list[FunctionTime] | None = None

    def as_dict(self) -> dict:
        """Plain data (JSON-able)."""
        return asdict(self)

    def __str__(self) -> str:
        return format_summary(self)


def summary(node: Node, top: int = 15) -> Summary:
    """Summarise the trace under `node` (a root from `tracer.track` or any node).

    `top` bounds the primitive functions listed (the recorded calls are all listed).
    A trace recorded with `Context(timing=True)` gets a time table by function
    (calls, total, self and per-call time, share: `Summary.times`) and each recorded
    function's seconds; without it, seconds and shares come from a context that
    stamped calls with `metadata["start"]` and `["end"]` in nanoseconds
    (`examples/profiler.py`'s TimingContext does), if one did.
    """
    if not isinstance(node, Node):
        raise TypeError(f"summary needs a node (tracer.track's result), got {type(node).__name__}")
    trace, row = node.trace, node.row
    cols = trace.columns()
    lo, hi = row, trace.end(row)
    kind = cols["kind"][lo:hi]
    by_kind = dict(zip(KINDS, np.bincount(kind, minlength=len(KINDS)).tolist()))
    depth = _core.depths(trace, lo, hi)
    nested = kind == NESTED
    max_depth = int(depth[nested].max()) + 1 if nested.any() else 0
    ref_start = cols["ref_start"]
    refs = cols["refs"][ref_start[lo]:ref_start[hi]]

    calls = _calls_by_function(trace, cols, lo, hi)
    times = function_times(trace, lo, hi)
    if times is not None:
        _with_times(calls, times)
        ns = subtree_nanoseconds(trace, call_times(trace), lo, hi)
        seconds = None if ns is None else ns / 1e9
        timed = True
    else:
        timed = any(f.seconds is not None for f in calls)
        start, end = trace.metadata_get(lo, "start"), trace.metadata_get(lo, "end")
        seconds = (end - start) / 1e9 if timed and end is not None else None
    notes = [] if timed else [
        "no timing: record with Context(timing=True) (python -m tracer run --timing) "
        "for time by function"]
    if trace.stopped:
        notes.insert(0, "partial: recording stopped before the call's end (the trace outgrew "
                        "its max_nodes, a hook raised, or tracer failed); the call ran on "
                        "untraced")
    return Summary(
        root=_call_name(node), nodes=hi - lo, by_kind=by_kind, depth=max_depth,
        refs=int((refs >= 0).sum()), nbytes=trace.nbytes, calls=calls,
        primitives=_primitives_by_function(trace, cols, lo, hi, top), timed=timed,
        seconds=seconds, notes=notes, times=times)


def _with_times(calls: list[FunctionCalls], times: list[FunctionTime]) -> None:
    """Each recorded function's seconds and share from the core's timing."""
    by_function = {(t.function, t.place): t for t in times}
    for f in calls:
        t = by_function.get((f.function, f.place))
        if t is not None:
            f.seconds, f.share = t.total, t.share


def _call_name(node: Node) -> str:
    if node.kind in ("primitive", "nested", "special"):
        return f"{call_name(node.trace, node.row)}(...)"
    return f"{node.kind} node"


def _calls_by_function(trace, cols, lo: int, hi: int) -> list[FunctionCalls]:
    callee = callee_codes(cols, lo, hi)
    rows = np.flatnonzero(callee >= 0)  # relative to lo
    if rows.size == 0:
        return []
    codes = callee[rows]
    ends = cols["aux"][rows + lo].astype(np.int64) - lo
    outer = outermost(codes, rows, ends)
    ncodes = int(codes.max()) + 1
    count = np.bincount(codes, minlength=ncodes)
    # Nodes inside: a recursive function's calls nest, so only its outermost calls'
    # subtrees are added up (each node counted once per function).
    inside = np.bincount(codes[outer], weights=(ends - rows - 1)[outer], minlength=ncodes)
    # A row's own function is its parent's callee; the root's parent is outside.
    parent = cols["parent"][lo + 1:hi].astype(np.int64) - lo
    own_code = callee[parent]
    own = np.bincount(own_code[own_code >= 0], minlength=ncodes)
    times = _times(trace, lo, rows[outer], codes[outer], ncodes)
    out = []
    for c in np.flatnonzero(count):
        code = trace.codes[c]
        calls = FunctionCalls(code_name(code), code_place(code), int(count[c]),
                              int(inside[c]), int(own[c]))
        if times is not None and times[0][c] > 0:
            calls.seconds = times[0][c] / 1e9
            calls.share = times[0][c] / times[1] if times[1] else None
        out.append(calls)
    out.sort(key=lambda f: (-f.nodes, f.function))
    return out


def _primitives_by_function(trace, cols, lo: int, hi: int, top: int) -> list[tuple[str, int]]:
    """Primitive calls counted by call site with numpy, each site named once by the
    function its first call called (a site calling different functions over the run,
    `f(x)` with `f` a variable, counts under the first)."""
    kind = cols["kind"][lo:hi]
    rows = np.flatnonzero(kind == PRIMITIVE) + lo
    if rows.size == 0:
        return []
    site = cols["code"][rows].astype(np.int64) << 32 | (cols["offset"][rows].astype(np.int64) & 0xFFFFFFFF)
    _, first, count = np.unique(site, return_index=True, return_counts=True)
    totals: dict[str, int] = {}
    for r, n in zip(rows[first].tolist(), count.tolist()):
        name = callable_name(node_at(trace, r).function.value)
        totals[name] = totals.get(name, 0) + n
    return sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:top]


def _times(trace, lo: int, rows: np.ndarray, codes: np.ndarray, ncodes: int):
    """(nanoseconds per function over its outermost calls, the summarised call's
    nanoseconds) from `metadata["start"]`/`["end"]` when a context stamped them;
    None otherwise.  Reads the sparse metadata table only."""
    md = dict(trace.metadata_items())     # (no dict made for a substitution's row)
    stamped = [(r, c) for r, c in zip((rows + lo).tolist(), codes.tolist())
               if "start" in md.get(r, ()) and "end" in md.get(r, ())]
    if not stamped:
        return None
    per_code = np.zeros(ncodes)
    for r, c in stamped:
        per_code[c] += md[r]["end"] - md[r]["start"]
    root = md.get(lo, {})
    total = root["end"] - root["start"] if "start" in root and "end" in root else per_code.max()
    return per_code, total


def format_summary(s: Summary) -> str:
    """The summary as aligned text tables."""
    lines = [f"trace of {s.root}: {s.nodes:,} nodes, {s.refs:,} references, "
             f"call depth {s.depth}, {s.nbytes:,} bytes of columns"]
    if s.seconds is not None:
        lines[0] += f", {s.seconds:.6f} s"
    lines.append("")
    kinds = [(k, n) for k, n in s.by_kind.items() if n]
    lines += _table(["kind", "nodes"], [[k, f"{n:,}"] for k, n in kinds])
    if s.calls:
        lines.append("")
        head = ["recorded calls", "where", "calls", "nodes inside", "own nodes"]
        body = [[f.function, f.place, f"{f.calls:,}", f"{f.nodes:,}", f"{f.own_nodes:,}"]
                for f in s.calls]
        if s.timed:
            head += ["seconds", "share"]
            for f, line in zip(s.calls, body):
                line += ["" if f.seconds is None else f"{f.seconds:.6f}",
                         "" if f.share is None else f"{f.share:.1%}"]
        lines += _table(head, body)
    if s.times:
        lines.append("")
        lines += format_times(s.times)
    if s.primitives:
        lines.append("")
        lines += _table(["primitive calls", "calls"], [[name, f"{n:,}"] for name, n in s.primitives])
    for note in s.notes:
        lines += ["", note]
    return "\n".join(lines)
