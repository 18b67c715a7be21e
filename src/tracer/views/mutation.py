"""Data flow through in-place changes: a value read after an object was changed in
place depends on the change.

`xs.append(v)` records a call that returns None: without this module the later
`sum(xs)` reads only the node that built `xs`, so a slice of the sum misses `v`.
Here an object is known by its address (values are kept by reference, so the
addresses of a trace's values are distinct objects; a trace recorded under a value
policy keeps stand-ins, and is refused with a ValueError); a *mutation* is a call known to
change one of its arguments in place (list/dict/set/bytearray/deque methods, item
and attribute stores, augmented assignment that returns its target, heapq,
shuffles, ndarray.sort/fill, numpy.copyto).  A Python function that changes an
argument is covered by the mutations recorded in its body; without `across_calls`
the calls that contain such a mutation stand for it.
"""

from __future__ import annotations

import collections
import heapq
import operator
import random

import numpy as np

from .. import _core
from . import queries
from .table import KIND_NAMES, table

__all__ = ["reach_through_mutation", "mutations"]

_PRIMITIVE = int(np.flatnonzero(KIND_NAMES == "primitive")[0])
_NESTED = int(np.flatnonzero(KIND_NAMES == "nested")[0])


def _mutators() -> dict:
    """callable -> (index of the changed argument, 1-based; only if the call returns
    its argument)."""
    out: dict = {}
    for cls, names in ((list, "append extend insert remove pop clear sort reverse __setitem__ "
                              "__delitem__ __iadd__ __imul__"),
                       (dict, "update setdefault pop popitem clear __setitem__ __delitem__ "
                              "__ior__"),
                       (set, "add update discard remove pop clear difference_update "
                             "intersection_update symmetric_difference_update __ior__ "
                             "__iand__ __isub__ __ixor__"),
                       (bytearray, "append extend insert pop remove clear reverse "
                                   "__setitem__ __delitem__ __iadd__"),
                       (collections.deque, "append appendleft extend extendleft pop popleft "
                                           "insert remove rotate clear"),
                       (np.ndarray, "sort fill resize partition put __setitem__")):
        for n in names.split():
            out[getattr(cls, n)] = (1, False)
    for f in (operator.setitem, operator.delitem, setattr, delattr, heapq.heappush,
              heapq.heappop, heapq.heapify, heapq.heapreplace, heapq.heappushpop,
              np.copyto, np.put, np.place, np.putmask):
        out[f] = (1, False)
    for n in ("iadd", "isub", "imul", "imatmul", "itruediv", "ifloordiv", "imod", "ipow",
              "ilshift", "irshift", "iand", "ior", "ixor", "iconcat"):
        out[getattr(operator, n)] = (1, True)
    out[random.Random.shuffle] = (2, False)
    out[np.random.Generator.shuffle] = (2, False)
    out[np.random.RandomState.shuffle] = (2, False)
    return out


_MUTATORS: dict | None = None


def _cache(trace) -> dict:
    c = trace._cache
    if c is None:
        c = trace._cache = {}
    return c


def _addresses(trace, refs: np.ndarray) -> np.ndarray:
    """The address of the value each entry of the refs column names (rows and pool
    constants alike)."""
    out = np.zeros(len(refs), dtype=np.int64)
    rows = refs >= 0
    if rows.any():
        out[rows] = _core.value_addresses(trace, refs[rows])
    consts = np.flatnonzero(~rows)
    if len(consts):
        codes, which = np.unique(refs[consts], return_inverse=True)
        pool = trace.pool
        ids = np.array([id(pool[-int(c) - 1]) for c in codes.tolist()], dtype=np.int64)
        out[consts] = ids[which.reshape(-1)]
    return out


def mutations(trace) -> tuple[np.ndarray, np.ndarray]:
    """`(rows, addresses)`: the rows that change an object in place and the address
    of the object each changes (cached on the trace)."""
    global _MUTATORS
    cache = _cache(trace)
    got = cache.get("mutations")
    if got is not None:
        return got
    kept = trace.values_kept
    if kept != "keep":
        # Under a policy a changed object is a stand-in: NOT_KEPT for every value,
        # or a summary shared by every list of one length ("weak" keeps lists and
        # dicts that way too: they cannot be weakly referenced), so changes would
        # be pinned on unrelated objects.
        raise ValueError(f"following in-place changes needs the objects' identities, and this "
                         f"trace was recorded with values={kept!r}, which keeps stand-ins; "
                         f"record it with values='keep' (the default) to use through_mutation")
    if _MUTATORS is None:
        _MUTATORS = _mutators()
    tb = table(trace)
    names = tb.callee_names.tolist()
    wanted = {getattr(f, "__name__", "") for f in _MUTATORS}
    ok = np.array([str(n).rsplit(".", 1)[-1] in wanted for n in names], dtype=bool)
    cand = np.flatnonzero(ok[tb["callee_id"]] & (tb["kind"] == _PRIMITIVE))
    rows, targets = [], []
    for row, node in zip(cand.tolist(), _core.node_views(trace, cand)):
        try:
            hit = _MUTATORS.get(node.function.value)
        except TypeError:       # an unhashable callee
            continue
        args = node.arguments
        if hit is None or len(args) < hit[0]:
            continue
        target = args[hit[0] - 1]
        where = (int(_core.value_addresses(trace, [target.row])[0])
                 if hasattr(target, "row") else id(target.value))
        if hit[1] and int(_core.value_addresses(trace, [row])[0]) != where:
            continue            # an in-place operator that made a new object
        rows.append(row)
        targets.append(where)
    r = np.array(rows, dtype=np.int32)
    a = np.array(targets, dtype=np.int64)
    cache["mutations"] = (r, a)
    return r, a


def _reads(trace, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(reader, address)` for each input of each row of `rows`."""
    cache = _cache(trace)
    cols = cache.get("mutation_columns")
    if cols is None:
        cols = cache["mutation_columns"] = trace.columns()
    starts = cols["ref_start"]
    lo, hi = starts[rows], starts[rows + 1]
    n = hi - lo
    reader = np.repeat(rows, n)
    idx = np.repeat(lo - np.cumsum(np.concatenate([[0], n[:-1]])), n) + np.arange(n.sum())
    refs = cols["refs"][idx]
    return reader, _addresses(trace, refs)


def _containing_calls(trace, m: int, reader: int) -> list[int]:
    """The recorded calls that contain mutation `m` but not `reader`: the calls that
    changed their argument, as the reader's call sees them."""
    up = set(_core.ancestor_rows(trace, reader).tolist())
    return [a for a in _core.ancestor_rows(trace, m).tolist() if a not in up and a != m]


def reach_through_mutation(trace, rows, forward: bool, across_calls: bool) -> np.ndarray:
    """`queries.reach` plus the data flow through in-place changes, to a fixpoint."""
    mrows, maddr = mutations(trace)
    got = queries.reach(trace, rows, forward, across_calls)
    if len(mrows) == 0:
        return got
    if forward:
        return _forward(trace, got, mrows, maddr, across_calls)
    # sets of rows as sorted arrays: a slice is usually far smaller than the trace
    seen = got
    fresh = got
    while len(fresh):
        reader, addr = _reads(trace, fresh)
        # the latest read of each address: a mutation before it is upstream of it
        order = np.lexsort((reader, addr))
        addr_s, reader_s = addr[order], reader[order]
        last = np.ones(len(addr_s), dtype=bool)
        last[:-1] = addr_s[1:] != addr_s[:-1]
        keys, latest = addr_s[last], reader_s[last]
        pos = np.searchsorted(keys, maddr)
        pos_ok = pos < len(keys)
        match = np.zeros(len(mrows), dtype=bool)
        match[pos_ok] = keys[pos[pos_ok]] == maddr[pos_ok]
        match[match] &= mrows[match] < latest[pos[match]]
        match &= ~np.isin(mrows, seen, assume_unique=True)
        seeds = mrows[match]
        if len(seeds) == 0:
            break
        more = seeds.tolist()
        if not across_calls:
            for m, a in zip(seeds.tolist(), maddr[match].tolist()):
                rdr = int(latest[np.searchsorted(keys, a)])
                more += _containing_calls(trace, m, rdr)
        more = np.unique(np.array(more, dtype=np.int32))
        new = np.union1d(more, queries.reach(trace, more, False, across_calls))
        fresh = np.setdiff1d(new, seen, assume_unique=True)
        seen = np.union1d(seen, fresh)
    return seen.astype(np.int32)


def _forward(trace, got, mrows, maddr, across_calls) -> np.ndarray:
    """Forward: a mutation the set reaches makes every later read of its object
    (and what follows from it) part of the set."""
    cache = _cache(trace)
    allreads = cache.get("reads")
    if allreads is None:
        allreads = cache["reads"] = _reads(trace, np.arange(len(trace), dtype=np.int32))
    reader, addr = allreads
    seen = np.zeros(len(trace), dtype=bool)
    seen[got] = True
    done = np.zeros(len(mrows), dtype=bool)
    while True:
        hit = seen[mrows] & ~done
        if not hit.any():
            break
        done |= hit
        seeds = []
        for m, a in zip(mrows[hit].tolist(), maddr[hit].tolist()):
            sel = (addr == a) & (reader > m)
            seeds.extend(reader[sel].tolist())
        seeds = [s for s in set(seeds) if not seen[s]]
        if not seeds:
            continue
        seeds_arr = np.array(sorted(seeds), dtype=np.int32)
        seen[seeds_arr] = True
        seen[queries.reach(trace, seeds_arr, True, across_calls)] = True
    return np.flatnonzero(seen).astype(np.int32)
