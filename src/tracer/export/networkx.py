"""`to_networkx(node)`: a trace as a `networkx.MultiDiGraph`, so graph algorithms come
from networkx (optional extra `tracer[graph]`)."""

from __future__ import annotations

import os

import numpy as np

from ..views.nodes import Const, Node, node_at
from ..views.checks import levels_arg
from ..views.values import short_value
from .. import _core
from .rows import JUMP, callable_name

__all__ = ["to_networkx"]


def to_networkx(node: Node, levels: int | None = None):
    """The nodes under `node` (all of them, or `levels` levels as `printlevels`
    counts them: 1 is `node` alone) as a `networkx.MultiDiGraph` keyed by row (the
    node's number in its trace).

    Node attributes: `kind`, `index` (its @k), `parent` (row, None for `node`),
    `depth` (0 for `node`), `function` (a call's function name, else None), `value`
    (short text), `location` (`file:line`, None where there is none).  Edges go from
    what is read to what reads it: `kind="data"` with the input `position`, and
    `kind="control"` from a jump to the node that ran next in the same call, with
    the `target` block.  A call's result and its body are linked through the call
    node's row: the body's rows have it as `parent`.
    """
    try:
        import networkx as nx
    except ImportError as err:
        raise ImportError("to_networkx needs networkx: pip install 'tracer[graph]' "
                          "(or pip install networkx)") from err
    if not isinstance(node, Node):
        raise TypeError(f"to_networkx needs a node (tracer.track's result), got {type(node).__name__}")
    trace = node.trace
    cols = trace.columns()
    lo, hi = node.row, trace.end(node.row)
    depth = _core.depths(trace, lo, hi)
    rows = np.arange(lo, hi)
    levels = levels_arg(levels, "to_networkx", optional=True)
    if levels is not None:
        rows = rows[depth < levels]
    graph = nx.MultiDiGraph()
    for row in rows.tolist():
        graph.add_node(row, **_attributes(node_at(trace, row), int(depth[row - lo]), lo))
    graph.add_edges_from(_data_edges(trace, cols, rows))
    graph.add_edges_from(_control_edges(trace, cols, rows, hi))
    return graph


def _attributes(n: Node, depth: int, top: int) -> dict:
    parent = n.trace.parent(n.row)
    code = n.code
    line = None
    if code is not None:
        loc = n.location
        if loc is not None and loc.line is not None:
            line = f"{os.path.basename(code.co_filename)}:{loc.line}"
    function = None
    if n.kind in ("primitive", "nested", "special"):
        fn = n.function
        function = callable_name(fn.value)
    return {"kind": n.kind, "index": n.index, "parent": parent if n.row != top else None,
            "depth": depth, "function": function, "value": short_value(n.value),
            "location": line}


def _data_edges(trace, cols, rows: np.ndarray):
    """(source, target, {kind, position}) for every reference among `rows`."""
    lo, hi = int(rows[0]), int(rows[-1]) + 1
    start = cols["ref_start"][lo:hi + 1].astype(np.int64)
    kept = np.zeros(len(trace), dtype=bool)
    kept[rows] = True
    counts = np.diff(start)
    owner = np.repeat(np.arange(lo, hi), counts)
    position = np.arange(start[0], start[-1]) - np.repeat(start[:-1], counts)
    source = cols["refs"][start[0]:start[-1]].astype(np.int64)
    ok = (source >= 0) & kept[owner]
    ok[ok] &= kept[source[ok]]
    first = _first_positions(trace, owner[ok])
    for s, t, p in zip(source[ok].tolist(), owner[ok].tolist(), (position[ok] + first).tolist()):
        yield s, t, {"kind": "data", "position": p}


def _first_positions(trace, owners: np.ndarray) -> np.ndarray:
    """Input positions start at 0 for call-shaped nodes (the callee) and 1 otherwise,
    as `Node.referenced(numbered=True)` numbers them."""
    out = np.ones(owners.size, dtype=np.int64)
    cache: dict[int, int] = {}
    for i, r in enumerate(owners.tolist()):
        first = cache.get(r)
        if first is None:
            first = cache[r] = node_at(trace, r)._first_position()
        out[i] = first
    return out


def _control_edges(trace, cols, rows: np.ndarray, hi: int):
    """A jump to the node recorded next in the same call (what the jump led to)."""
    kind = cols["kind"]
    parent = cols["parent"]
    kept = set(rows.tolist())
    for row in rows[kind[rows] == JUMP].tolist():
        nxt = row + 1
        if nxt < hi and parent[nxt] == parent[row] and nxt in kept:
            yield row, nxt, {"kind": "control", "target": node_at(trace, row).target}
