"""Graph queries over a trace's columns, by row: what a row reads (backward) and
what reads it (dependents, forward).

The walks run in the core over int32 arrays (`_core.reach`); reverse edges are built
once per trace as compressed rows (`_core.reverse_edges`, a counting sort) and cached
on the trace.  The node-level functions (`tracer.views.referenced`, `backward`,
`dependents`, `forward`) are in views/nodes.py; the query API in views/query.py.
"""

from __future__ import annotations

import numpy as np

from .. import _core

__all__ = ["input_rows", "backward_rows", "dependent_rows", "dependents_of", "forward_rows",
           "reverse_edges", "reach"]


def _cache(trace) -> dict:
    cache = trace._cache
    if cache is None:
        cache = trace._cache = {}
    return cache


def reverse_edges(trace) -> tuple[np.ndarray, np.ndarray]:
    """`(starts, readers)`: the readers of row r are `readers[starts[r]:starts[r+1]]`."""
    cache = _cache(trace)
    rev = cache.get("reverse_edges")
    if rev is None:
        rev = cache["reverse_edges"] = _core.reverse_edges(trace)
    return rev


def reach(trace, rows, forward: bool, across_calls: bool = False) -> np.ndarray:
    """The rows reached from `rows` (sorted int32), following references backward or
    forward; with `across_calls`, through call arguments and returns too."""
    sources = None
    if across_calls:
        from .binding import arg_sources  # only cross-call walks need the binding table
        sources = arg_sources(trace)
    if forward:
        reverse_edges(trace)  # cached where the core looks for it
    return _core.reach(trace, rows, forward, across_calls, sources)


def input_rows(trace, row: int) -> list[int]:
    """The rows `row` references, in input order (constants left out)."""
    return [r for r in trace.refs(row) if isinstance(r, int)]


def backward_rows(trace, row: int) -> list[int]:
    """Every row `row` depends on (transitively), latest first."""
    return reach(trace, [row], False)[::-1].tolist()


def dependent_rows(trace, row: int) -> list[int]:
    """The rows that read `row` directly, in order."""
    return dependents_of(trace, row).tolist()


def dependents_of(trace, row: int) -> np.ndarray:
    """The rows that read `row` directly, in order, as an int32 array."""
    starts, readers = reverse_edges(trace)
    found = readers[starts[row]:starts[row + 1]]
    if len(found) < 2:
        return found.copy()
    # A row that reads `row` twice is listed twice in the index; once here.
    keep = np.empty(len(found), dtype=bool)
    keep[0] = True
    np.not_equal(found[1:], found[:-1], out=keep[1:])
    return found[keep]


def forward_rows(trace, row: int) -> list[int]:
    """Every row that depends on `row` (transitively), earliest first."""
    return reach(trace, [row], True).tolist()
