"""Graph queries over a trace's columns, by row: what a row reads (backward) and
what reads it (dependents, forward).

Reverse edges are built once per trace from the refs column (a CSR index, with
numpy) and cached; queries never scan siblings.  The node-level functions
(`tracer.referenced`, `backward`, `dependents`, `forward`) are in views/nodes.py.
"""

from __future__ import annotations

import numpy as np

__all__ = ["input_rows", "backward_rows", "dependent_rows", "forward_rows"]


def input_rows(trace, row: int) -> list[int]:
    """The rows `row` references, in input order (constants left out)."""
    return [r for r in trace.refs(row) if isinstance(r, int)]


def backward_rows(trace, row: int) -> list[int]:
    """Every row `row` depends on (transitively), latest first."""
    return sorted(_reached(trace, row, input_rows), reverse=True)


def _reached(trace, row: int, step) -> set[int]:
    """The rows reached from `row` by following `step` (rows -> rows) repeatedly."""
    seen: set[int] = set()
    stack = step(trace, row)
    while stack:
        r = stack.pop()
        if r in seen:
            continue
        seen.add(r)
        stack.extend(step(trace, r))
    return seen


def _reverse_index(trace):
    cache = trace._cache
    if cache is None:
        cache = trace._cache = {}
    rev = cache.get("reverse")
    if rev is None:
        cols = trace.columns()
        starts = cols["ref_start"].astype(np.int64)
        refs = cols["refs"].astype(np.int64)
        owner = np.repeat(np.arange(len(trace), dtype=np.int64), np.diff(starts))
        mask = refs >= 0
        targets, owners = refs[mask], owner[mask]
        order = np.lexsort((owners, targets))
        targets, owners = targets[order], owners[order]
        bounds = np.searchsorted(targets, np.arange(len(trace) + 1))
        rev = cache["reverse"] = (bounds, owners)
    return rev


def dependent_rows(trace, row: int) -> list[int]:
    """The rows that read `row` directly, in order."""
    bounds, owners = _reverse_index(trace)
    return sorted(set(owners[bounds[row]:bounds[row + 1]].tolist()))


def forward_rows(trace, row: int) -> list[int]:
    """Every row that depends on `row` (transitively), earliest first."""
    return sorted(_reached(trace, row, dependent_rows))
