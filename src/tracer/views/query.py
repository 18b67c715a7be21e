"""Queries along axes, in the spirit of IRTracker's `query` and XPath's axes.

`query(node, axis)` returns a `Query`: a lazy set of rows of one trace.  Axes and
filters run on the columns (int32 arrays, walks in the core); node views are made only
when the caller iterates or indexes.  Filters chain: ::

    q = tracer.query(root, "descendants").where(kind="primitive", callee="sin")
    len(q), q.rows, q.values, list(q)[:3]
    tracer.query(root[-1], "backward", across_calls=True)   # the whole-program slice

Axes:
  ``self``, ``children``, ``descendants``, ``ancestors``, ``parent``, ``siblings``,
  ``preceding_siblings``, ``following_siblings``, ``preceding``, ``following`` (rows
  before / after in document order, ancestors / descendants left out, as in XPath),
  ``referenced`` (what it reads), ``dependents`` (who reads it), ``backward`` and
  ``forward`` (transitively; `across_calls=True` follows arguments into callees and
  returns out to callers).
"""

from __future__ import annotations

import types
from typing import Any, Callable, Iterator

import numpy as np

from .. import _core
from . import queries
from .checks import given
from .mutation import reach_through_mutation
from .names import callable_name, matches_name
from .table import KIND_NAMES, kind_codes, table
from .values import SavedText

__all__ = ["Query", "query", "AXES"]

AXES = ("self", "children", "descendants", "ancestors", "parent", "siblings",
        "preceding_siblings", "following_siblings", "preceding", "following",
        "referenced", "dependents", "backward", "forward")


def query(node, axis: str = "descendants", predicate: Callable[[Any], bool] | None = None,
          *, across_calls: bool = False, through_mutation: bool = False,
          **filters) -> "Query":
    """The nodes on `axis` from `node` (a node view, or a Query to start from each of
    its nodes), filtered by `predicate` (called with each node view) and by `filters`
    (see `Query.where`).  `through_mutation=True` makes `backward`/`forward` follow
    in-place changes: a value read after `xs.append(v)` depends on `v`
    (views/mutation.py)."""
    if isinstance(node, Query):
        trace, starts = node.trace, node.rows
    elif isinstance(node, _core.NodeView):
        trace, starts = node.trace, np.array([node.row], dtype=np.int32)
    else:
        raise TypeError(f"query takes a node (the root tracer.track returns, or any node "
                        f"of a trace) or a Query, got {given(node)}")
    if not isinstance(axis, str):
        raise TypeError(f"query: axis must be a str, one of {', '.join(AXES)}; "
                        f"got {given(axis)}")
    rows = _axis_rows(trace, starts, axis, across_calls, through_mutation)
    q = Query(trace, rows)
    if filters:
        q = q.where(**filters)
    if predicate is not None:
        q = q.filter(predicate)
    return q


class Query:
    """A set of rows of one trace, in row (document) order, read lazily.

    `len`, iteration (node views), indexing, `.rows` (int32 numpy array), `.values`
    (the values, a list), `.where(...)` (column filters), `.filter(fn)` (a predicate
    on views), `.query(axis)` (the next step from every node of this set).
    """

    __slots__ = ("trace", "_rows")

    def __init__(self, trace, rows: np.ndarray):
        self.trace = trace
        self._rows = np.asarray(rows, dtype=np.int32)

    @property
    def rows(self) -> np.ndarray:
        """The rows, ascending, as an int32 array (read-only)."""
        view = self._rows.view()
        view.flags.writeable = False
        return view

    @property
    def values(self) -> list:
        """The nodes' values, in order."""
        value = self.trace.value
        return [value(r) for r in self._rows.tolist()]

    def __len__(self) -> int:
        return len(self._rows)

    def __bool__(self) -> bool:
        return len(self._rows) > 0

    def __iter__(self) -> Iterator:
        from .nodes import node_at
        trace = self.trace
        for r in self._rows.tolist():
            yield node_at(trace, r)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return Query(self.trace, self._rows[k])
        from .nodes import node_at
        return node_at(self.trace, int(self._rows[k]))

    def __repr__(self) -> str:
        return f"<Query of {len(self._rows)} nodes>"

    def first(self):
        """The first node, or None when the set is empty."""
        return self[0] if len(self._rows) else None

    def query(self, axis: str, predicate=None, *, across_calls: bool = False,
              through_mutation: bool = False, **filters):
        """The nodes on `axis` from any node of this set (duplicates removed)."""
        return query(self, axis, predicate, across_calls=across_calls,
                     through_mutation=through_mutation, **filters)

    def filter(self, predicate: Callable[[Any], bool]) -> "Query":
        """The nodes for which `predicate(node_view)` is true (a view per node: put
        the column filters of `where` first)."""
        from .nodes import node_at
        trace = self.trace
        keep = [r for r in self._rows.tolist() if predicate(node_at(trace, r))]
        return Query(trace, np.array(keep, dtype=np.int32))

    def where(self, *, kind=None, callee=None, function=None, code=None, file=None,
              line=None, value=None, raised: bool | None = None) -> "Query":
        """Keep the nodes matching every filter given, on the columns:

        - ``kind``: a kind or several, each a name ("primitive", "nested", "jump",
          ...) or the int code the table's ``kind`` column holds (`Kind.PRIMITIVE`, 2);
        - ``callee``: what a call called: a name (the qualified name or a dotted tail
          of it: "sin" matches "math.sin"), a function or other callable (by identity
          on a live trace, by its name on a loaded one), or a list of either;
        - ``function`` / ``code`` / ``file`` / ``line``: where the node was recorded
          (the enclosing function's qualified name, its code object, the file, the line);
        - ``value``: a predicate on the value (called once per remaining node);
        - ``raised``: whether the operation raised.
        """
        rows = self._rows
        t = self.trace
        cols = t.columns()
        if kind is not None:
            rows = rows[np.isin(cols["kind"][rows], kind_codes(kind))]
        if raised is not None:
            hit = (cols["flags"][rows] & int(_core.NodeFlag.F_RAISED)) != 0
            rows = rows[hit if raised else ~hit]
        if code is not None or function is not None or file is not None:
            rows = rows[_code_mask(t, cols["code"][rows], code, function, file)]
        if line is not None:
            tab = _table(t)
            rows = rows[np.isin(tab["line"][rows], np.atleast_1d(line))]
        if callee is not None:
            rows = rows[_callee_mask(t, rows, callee)]
        if value is not None:
            val = t.value
            rows = np.array([r for r in rows.tolist() if value(val(r))], dtype=np.int32)
        return Query(t, rows)


def _table(trace) -> dict:
    cache = queries._cache(trace)
    found = cache.get("table")
    if found is None:
        found = cache["table"] = table(trace)
    return found


def _code_mask(trace, code_ids: np.ndarray, code, function, file) -> np.ndarray:
    wanted = []
    for cid, co in enumerate(trace.codes):
        if code is not None and co is not getattr(code, "__code__", code):
            continue
        if function is not None and function not in (co.co_qualname, co.co_name):
            continue
        if file is not None and co.co_filename != file:
            continue
        wanted.append(cid)
    return np.isin(code_ids, wanted)


def _callee_mask(trace, rows: np.ndarray, callee) -> np.ndarray:
    """Which of `rows` are calls of `callee`: a name, a callable, or a list of them."""
    if isinstance(callee, (list, tuple, set, frozenset)):
        if not callee:
            raise ValueError("callee is an empty list: give names or functions to match")
        mask = np.zeros(len(rows), dtype=bool)
        for one in callee:
            mask |= _callee_mask(trace, rows, one)
        return mask
    ids, names = _table(trace).ids_and_names("callee")
    ids = ids[rows]
    if isinstance(callee, str):
        hit = np.array([bool(n) and matches_name(n, callee) for n in names.tolist()], dtype=bool)
        return hit[ids]
    if not callable(callee):
        raise TypeError("callee must be a name, a function (or other callable) or a list of "
                        f"them, not {type(callee).__name__}")
    wanted = callable_name(callee)
    hit = np.array([n == wanted for n in names.tolist()], dtype=bool)
    mask = hit[ids]
    for k in np.flatnonzero(mask).tolist():
        mask[k] = _is_call_of(trace, int(rows[k]), callee)
    return mask


def _is_call_of(trace, row: int, callee) -> bool:
    """Whether call `row`, named as `callee` is, called that very object: by identity
    on a live trace (the body's code, or the callee value), by name on a loaded one
    (its code objects and callables are stand-ins)."""
    from .nodes import node_at
    cols = trace.columns()
    first = row + 1
    if (first < len(trace) and cols["parent"][first] == row
            and cols["kind"][first] == int(_core.NodeKind.K_ARGUMENT)):
        code = trace.code(first)
        if not isinstance(code, types.CodeType):
            return True
        target = getattr(getattr(callee, "__func__", callee), "__code__", None)
        return target is None or code is target
    value = node_at(trace, row).function.value
    if isinstance(value, SavedText):
        return True
    if value is callee:
        return True
    if isinstance(value, types.MethodType):
        return value.__func__ is callee or (isinstance(callee, types.MethodType)
                                            and value.__func__ is callee.__func__
                                            and value.__self__ is callee.__self__)
    if isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)):
        if type(value) is type(callee):
            return value == callee      # a new bound builtin per access: same self, same name
        owner = getattr(value, "__self__", None)   # list.append matches a list's append
        return getattr(type(owner), getattr(value, "__name__", ""), None) is callee
    return False


def _axis_rows(trace, starts: np.ndarray, axis: str, across_calls: bool,
               through_mutation: bool = False) -> np.ndarray:
    if axis not in AXES:
        raise ValueError(f"unknown axis {axis!r}: one of {', '.join(AXES)}")
    if across_calls and axis not in ("backward", "forward"):
        raise ValueError("across_calls applies to the 'backward' and 'forward' axes only")
    if through_mutation:
        if axis not in ("backward", "forward"):
            raise ValueError("through_mutation applies to the 'backward' and 'forward' axes only")
        return reach_through_mutation(trace, starts, axis == "forward", across_calls)
    if axis in ("backward", "forward"):
        return queries.reach(trace, starts, axis == "forward", across_calls)
    if len(starts) == 1:
        return _one_start(trace, int(starts[0]), axis)
    parts = [_one_start(trace, int(s), axis) for s in starts.tolist()]
    return np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int32)


def _one_start(trace, row: int, axis: str) -> np.ndarray:
    i32 = np.int32
    if axis == "self":
        return np.array([row], dtype=i32)
    if axis == "children":
        return _core.child_rows(trace, row)
    if axis == "descendants":
        return np.arange(row + 1, trace.end(row), dtype=i32)
    if axis == "ancestors":
        return _core.ancestor_rows(trace, row)[::-1].copy()
    p = trace.parent(row)
    if axis == "parent":
        return np.array([p] if p >= 0 else [], dtype=i32)
    if axis in ("siblings", "preceding_siblings", "following_siblings"):
        if p < 0:
            return np.empty(0, dtype=i32)
        kids = _core.child_rows(trace, p)
        if axis == "siblings":
            return kids[kids != row]
        return kids[kids < row] if axis == "preceding_siblings" else kids[kids > row]
    if axis == "following":
        return np.arange(trace.end(row), len(trace), dtype=i32)
    if axis == "preceding":
        before = np.arange(0, row, dtype=i32)
        return np.setdiff1d(before, _core.ancestor_rows(trace, row), assume_unique=True)
    if axis == "referenced":
        return np.unique(np.array(queries.input_rows(trace, row), dtype=i32))
    return queries.dependents_of(trace, row)  # dependents
