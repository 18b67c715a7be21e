"""A trace's calls as Chrome trace-event JSON: the format Perfetto's UI
(ui.perfetto.dev), speedscope and chrome://tracing open, as viztracer writes it.

Each recorded call is one complete event (``"ph": "X"``) with ``ts`` and ``dur`` in
microseconds, ``pid``/``tid``, ``name`` the qualified name of the function it ran (or
of the callable, `tracer.views.names`), and ``args`` with its ``file``, first ``line``
and ``row`` (the node's row: `tracer.nodes.node_at(trace, row)` finds it again).

- A trace recorded with `Context(timing=True)`: one event per timed activation of a
  followed frame (a generator's each resumption), at the times the core stamped,
  from the first one on.
- A trace without timing: one event per recorded (nested) call, with synthetic times:
  ``ts`` is the call's first row and ``dur`` the rows of its subtree, so one
  "microsecond" is one node.  The nesting and the proportions of work are the
  trace's; the times are not times.

Which of the two a file holds is in its ``otherData`` (``"clock"``) and in the
process's name.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..views.nodes import Node
from .rows import NESTED, call_name, callee_codes, code_name
from .timing import call_times

__all__ = ["trace_events", "write"]

TIMED_CLOCK = "monotonic: ts and dur are the microseconds the calls took (Context(timing=True))"
SYNTHETIC_CLOCK = ("synthetic: ts is the call's first node and dur the nodes inside it (one "
                   "microsecond = one node); the trace was not timed (Context(timing=True))")


def trace_events(node: Node, *, pid: int = 1, tid: int = 1) -> dict:
    """The Chrome trace-event JSON object (a dict) of the calls under `node` (a root
    from `tracer.track` or `tracer.load`, or any node)."""
    if not isinstance(node, Node):
        raise TypeError(f"trace_events needs a node (tracer.track's result), "
                        f"got {type(node).__name__}")
    trace, lo = node.trace, node.row
    hi = trace.end(lo)
    times = call_times(trace)
    cols = trace.columns()
    if times is not None:
        inside = np.flatnonzero((times.row >= lo) & (times.row < hi))
        rows = times.row[inside].astype(np.int64)
        codes = times.code[inside].astype(np.int64)
        start = times.start[inside]
        t0 = int(start.min()) if start.size else 0
        ts = (start - t0) / 1000.0
        dur = times.inclusive[inside] / 1000.0
        clock = TIMED_CLOCK
    else:
        kind = cols["kind"][lo:hi]
        rows = np.flatnonzero(kind == NESTED).astype(np.int64) + lo
        codes = callee_codes(cols, lo, hi)[rows - lo]
        ts = (rows - lo).astype(np.float64)
        dur = (cols["aux"][rows] - rows).astype(np.float64)
        clock = SYNTHETIC_CLOCK
    names, files, lines = _code_facts(trace)
    root_name = _name(trace, lo, callee_codes(cols, lo, lo + 1)[0] if lo + 1 <= hi else -1,
                      names)
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": tid,
         "args": {"name": f"tracer: {root_name}" + ("" if times is not None else
                                                    " (synthetic times: nodes)")}},
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
         "args": {"name": "traced call"}},
    ]
    for row, code, t, d in zip(rows.tolist(), codes.tolist(), np.round(ts, 3).tolist(),
                               np.round(dur, 3).tolist()):
        args = {"row": row}
        if code >= 0:
            args["file"], args["line"] = files[code], lines[code]
        events.append({"name": _name(trace, row, code, names), "cat": "python", "ph": "X",
                       "ts": t, "dur": d, "pid": pid, "tid": tid, "args": args})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"producer": "tracer", "clock": clock, "root": root_name,
                          "nodes": hi - lo, "calls": len(events) - 2}}


def write(node: Node, path, *, pid: int = 1, tid: int = 1) -> None:
    """Write the calls under `node` to `path` as Chrome trace-event JSON (see
    `trace_events`); open it in ui.perfetto.dev, speedscope or chrome://tracing."""
    data = trace_events(node, pid=pid, tid=tid)
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        json.dump(data, f, separators=(",", ":"))


def _code_facts(trace) -> tuple[list[str], list[str], list[int | None]]:
    names, files, lines = [], [], []
    for code in trace.codes:
        names.append(code_name(code))
        files.append(getattr(code, "co_filename", "?"))
        lines.append(getattr(code, "co_firstlineno", None))
    return names, files, lines


def _name(trace, row: int, code: int, names: list[str]) -> str:
    # A call whose body is not known (a C callable that ran Python frames, a
    # primitive root) is named by what it called.
    return names[code] if code >= 0 else call_name(trace, row)
