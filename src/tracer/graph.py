"""Graph queries over a trace (referenced, backward, dependents, forward) and validate.

Reverse edges are built once per trace from the refs column (a CSR index, with
numpy) and cached; queries never scan siblings.
"""

from __future__ import annotations

import numpy as np

from .nodes import Node, node_at

__all__ = ["referenced", "backward", "dependents", "forward", "validate", "GraphError"]


class GraphError(AssertionError):
    """A trace violates an invariant of the graph (a bug in tracer)."""


def referenced(node: Node, numbered: bool = False) -> list:
    t = node.trace
    first = node._first_position()
    out = []
    for i, r in enumerate(t.refs(node.row)):
        if isinstance(r, int):
            n = node_at(t, r)
            out.append((first + i, n) if numbered else n)
    return out


def backward(node: Node) -> list[Node]:
    t = node.trace
    seen: set[int] = set()
    stack = [r for r in t.refs(node.row) if isinstance(r, int)]
    while stack:
        r = stack.pop()
        if r in seen:
            continue
        seen.add(r)
        stack.extend(x for x in t.refs(r) if isinstance(x, int))
    return [node_at(t, r) for r in sorted(seen, reverse=True)]


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


def _dependent_rows(trace, row: int) -> list[int]:
    bounds, owners = _reverse_index(trace)
    return sorted(set(owners[bounds[row]:bounds[row + 1]].tolist()))


def dependents(node: Node) -> list[Node]:
    t = node.trace
    return [node_at(t, r) for r in _dependent_rows(t, node.row)]


def forward(node: Node) -> list[Node]:
    t = node.trace
    seen: set[int] = set()
    stack = _dependent_rows(t, node.row)
    while stack:
        r = stack.pop()
        if r in seen:
            continue
        seen.add(r)
        stack.extend(_dependent_rows(t, r))
    return [node_at(t, r) for r in sorted(seen)]


def validate(root: Node) -> None:
    """Check the invariants of the graph under `root`; raise GraphError on a violation.

    References point backwards to nodes of the same call; every child lies inside
    its parent's row range and names it as parent; parameters are numbered 0, 1, ...
    at the start of a call; finished nodes are not marked open.
    """
    from ._core import FLAGS, KINDS

    t = root.trace
    n = len(t)
    stack = [root.row]
    while stack:
        p = stack.pop()
        end = t.end(p)
        if not (p < end <= n):
            raise GraphError(f"row {p}: subtree end {end} outside ({p}, {n}]")
        pend = t.end(t.parent(p)) if t.parent(p) >= 0 else n
        if end > pend:
            raise GraphError(f"row {p}: subtree end {end} beyond its parent's end {pend}")
        expected_pos = 0
        for c in t.children(p):
            if t.parent(c) != p:
                raise GraphError(f"row {c}: listed under {p} but its parent is {t.parent(c)}")
            kind = t.kind(c)
            if not 0 <= kind < len(KINDS):
                raise GraphError(f"row {c}: unknown kind {kind}")
            for r in t.refs(c):
                if not isinstance(r, int):
                    continue
                if r >= c:
                    raise GraphError(f"row {c}: references row {r}, which is not earlier")
                if t.parent(r) != p:
                    raise GraphError(
                        f"row {c}: references row {r} of another call (parent {t.parent(r)}, not {p})"
                    )
            flags = t.flags(c)
            if kind == 0 and not flags & FLAGS["carried"]:
                if t.aux(c) != expected_pos:
                    raise GraphError(f"row {c}: parameter position {t.aux(c)}, expected {expected_pos}")
                expected_pos += 1
            if flags & FLAGS["open"] and t.exception is None and not t.stopped:
                raise GraphError(f"row {c}: still open in a trace that finished normally")
            if kind == 3:
                stack.append(c)
