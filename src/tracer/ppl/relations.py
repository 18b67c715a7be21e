"""Which choices each choice, and the model's value, depend on (Pyro's model
relations), in one pass over the trace's columns.

Provenance flows forward in row order, as data does: a row's provenance is that of
its inputs; a draw's is the draw itself (a choice is a barrier: what flows out of
it is its value), and the provenance of its inputs is its *parents*.  Across calls,
a parameter has the provenance of the argument it was bound from and a call's value
that of its body's return (views/binding.py's table, as `tracer.query(...,
across_calls=True)` follows them).  Through in-place changes: a mutation (views/
mutation.py: `append`, item and attribute stores, ...) adds its inputs' provenance
to its object's, and a later read of the object (by its address) gets it.

Provenances are shared, not copied: a node is a pair (draw rows, child nodes), a row
with one non-empty input reuses that input's node, so a list filled by ten thousand
appends is a chain of ten thousand small nodes.  The pass is linear in the trace;
reading a choice's parents walks its node's DAG, so the cost of the answer is that
of its size (a CRP seating depends on every earlier seating through the counts).
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..views.binding import GATHERED, NO_SOURCE, arg_sources
from ..views.mutation import _addresses, mutations
from ..views.table import KIND_NAMES

__all__ = ["relations", "parents"]

_ARGUMENT = int(np.flatnonzero(KIND_NAMES == "argument")[0])
_NESTED = int(np.flatnonzero(KIND_NAMES == "nested")[0])
_RETURN = int(np.flatnonzero(KIND_NAMES == "return")[0])
_FRAME = int(_core.FLAGS["frame"])
_CARRIED = int(_core.FLAGS["carried"])
_YIELD = int(_core.FLAGS["yield"])
_OPEN = int(_core.FLAGS["open"])


def _union(nodes: list):
    """One node for the union of `nodes` (None: empty)."""
    distinct = []
    ids = set()
    for n in nodes:
        if n is not None and id(n) not in ids:
            ids.add(id(n))
            distinct.append(n)
    if not distinct:
        return None
    if len(distinct) == 1:
        return distinct[0]
    return ((), tuple(distinct))


def _rows_of(node) -> set:
    """The draw rows in the DAG under `node`."""
    out: set = set()
    if node is None:
        return out
    seen = {id(node)}
    stack = [node]
    while stack:
        own, kids = stack.pop()
        out.update(own)
        for k in kids:
            if id(k) not in seen:
                seen.add(id(k))
                stack.append(k)
    return out


def parents(trace, draw_rows) -> tuple[dict, list]:
    """`({draw row: parents node}, provenance per row)` in one pass over `trace`."""
    cols = trace.columns()
    kind = cols["kind"].tolist()
    flags = cols["flags"].tolist()
    parent = cols["parent"].tolist()
    ref_start = cols["ref_start"]
    refs_arr = cols["refs"].astype(np.int64)
    refs = refs_arr.tolist()
    starts = ref_start.tolist()
    n = len(kind)
    mrows, maddr = mutations(trace)
    # the address of the object each input names: reads of changed objects
    addr = _addresses(trace, refs_arr).tolist() if len(mrows) else None
    changed = set(maddr.tolist())
    mutated_at = dict(zip(mrows.tolist(), maddr.tolist()))
    bound_rows, bound_src = arg_sources(trace)
    source = dict(zip(bound_rows.tolist(), bound_src.tolist()))
    values = trace.values()
    pool = trace.pool
    draws = set(int(r) for r in draw_rows)
    prov: list = [None] * n
    obj: dict = {}                # address -> provenance node of the object's changes
    out: dict = {}

    def value_of(c):
        return values[c] if c >= 0 else pool[-c - 1]

    for row in range(n):
        k = kind[row]
        lo, hi = starts[row], starts[row + 1]
        if k == _ARGUMENT and not flags[row] & _CARRIED:
            call = parent[row]
            if call > 0 and kind[call] == _NESTED and not flags[call] & _FRAME:
                prov[row] = _bound(row, call, source, starts, refs, prov, value_of, values)
                continue
        target = mutated_at.get(row)
        ins = []
        for e in range(lo, hi):
            c = refs[e]
            if c >= 0:
                p = prov[c]
                if p is not None:
                    ins.append(p)
            if addr is not None:
                a = addr[e]
                if a in changed and a != target:
                    p = obj.get(a)
                    if p is not None:
                        ins.append(p)
        here = _union(ins)
        if row in draws:
            out[row] = here
            here = ((row,), ())
        prov[row] = here
        if target is not None and here is not None:
            before = obj.get(target)
            obj[target] = here if before is None or before is here else ((), (before, here))
        if k == _RETURN and not flags[row] & _YIELD:
            call = parent[row]
            if call > 0 and kind[call] == _NESTED and call not in draws and \
                    not flags[call] & _OPEN and call + 1 < n and parent[call + 1] == call \
                    and kind[call + 1] == _ARGUMENT and not flags[call] & _FRAME:
                prov[call] = here        # a call's value: what its body returned
    return out, prov


def _bound(row, call, source, starts, refs, prov, value_of, values):
    """The provenance of parameter `row` of `call`: that of the input it was bound
    from (checked against the objects, as the core's _arg_source does)."""
    lo, hi = starts[call], starts[call + 1]
    src = source.get(row, -1)
    if src == NO_SOURCE:
        return None
    if src >= 0 and lo + src < hi and value_of(refs[lo + src]) is values[row]:
        c = refs[lo + src]
        return prov[c] if c >= 0 else None
    # unknown or gathered (*args, **kwargs): every input (a gathered one: not the callee)
    first = lo + (1 if src == GATHERED else 0)
    return _union([prov[refs[e]] for e in range(first, hi) if refs[e] >= 0])


def relations(choice_trace, transitive: bool = False) -> dict:
    """`{"choices": {address: [upstream addresses]}, "value": [addresses]}`.

    By default the *parents* of each choice, as Pyro's model relations give them:
    the choices whose values flow into its parameters without passing through another
    choice (across calls, and through lists, dicts and attributes changed in place);
    and the choices the model's value is computed from that way.  With
    `transitive=True`, every upstream choice (parents, their parents, ...).
    """
    trace = choice_trace.root.trace
    by_row = {c.node.row: a for a, c in choice_trace.choices.items()}
    direct, prov = parents(trace, by_row)
    rows_of = {}
    for r in by_row:
        rows_of[r] = sorted(_rows_of(direct.get(r)) - {r})
    root = choice_trace.root
    value_rows = sorted(_rows_of(prov[root[-1].row])) if len(root) else []
    if transitive:
        closed: dict = {}
        for r in sorted(by_row):
            up = set(rows_of[r])
            for p in rows_of[r]:
                up |= closed[p]
            closed[r] = up
        rows_of = {r: sorted(up) for r, up in closed.items()}
        vs = set(value_rows)
        for p in value_rows:
            vs |= closed[p]
        value_rows = sorted(vs)
    per_choice = {a: [by_row[p] for p in rows_of[c.node.row] if p in by_row]
                  for a, c in choice_trace.choices.items()}
    return {"choices": per_choice, "value": [by_row[r] for r in value_rows if r in by_row]}
