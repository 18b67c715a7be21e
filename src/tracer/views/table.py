"""The whole trace as a table of numpy columns: one entry per node, no Python object
per node.

Questions about a whole run ("how many times did each line run", "which branch was
taken how often", "which calls took most nodes") are one vectorized expression over
these columns.  Names (function, file, callee) are decoded through the code table and
the call sites, a few Python steps per distinct code object, call site or callee, then
spread over the rows with numpy indexing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import _core
from ..analysis.instructions import R_CALL, R_CALL_EX, R_SPECIAL
from ..analysis.ir import ir
from .values import _name

__all__ = ["table", "Table", "to_pandas", "to_arrow", "KIND_NAMES"]

_K = _core.NodeKind
#: The names of the node kinds, indexed by the `kind` column.
KIND_NAMES = np.array(["argument", "constant", "primitive", "nested", "special", "jump",
                       "return"], dtype=object)


class Table(Mapping):
    """The columns of `table()`: a read-only mapping of names to numpy arrays.

    The name columns (``function``, ``file``, ``callee``) are decoded when first read:
    each is an object array of one pointer per node, so a question that needs none
    of them does not pay for them.  Their codes are columns too (``code`` indexes
    `function_names` and `file_names`, ``callee_id`` indexes `callee_names`), for
    grouping without strings.
    """

    def __init__(self, columns: dict, function_names, file_names, callee_names):
        self._columns = columns
        #: Per code id (and a last "" for the root's -1): the qualified name, the file.
        self.function_names = function_names
        self.file_names = file_names
        #: Per callee id: the name of what was called ("" for nodes that are not calls).
        self.callee_names = callee_names

    _DECODED = {"function": ("function_names", "code"), "file": ("file_names", "code"),
                "callee": ("callee_names", "callee_id")}

    def __getitem__(self, name: str) -> np.ndarray:
        col = self._columns.get(name)
        if col is None:
            if name not in self._DECODED:
                raise KeyError(name)
            names, codes = self._DECODED[name]
            col = self._columns[name] = getattr(self, names)[self._columns[codes]]
        return col

    def __iter__(self):
        yield from self._columns
        yield from (k for k in self._DECODED if k not in self._columns)

    def __len__(self) -> int:
        return len(set(self._columns) | set(self._DECODED))

    def __repr__(self) -> str:
        n = len(self._columns["row"])
        return f"<tracer table of {n} rows: {', '.join(self)}>"


def table(trace, values: bool = False) -> Table:
    """The trace as a mapping of equal-length numpy columns, one entry per node in row
    (document) order.

    - ``row``, ``kind`` (int, names in `KIND_NAMES`), ``flags``, ``parent``, ``depth``
      (the root is 0), ``size`` (nodes in the subtree, the node included), ``aux``;
    - ``code`` (index into ``trace.codes``, -1 for the root), ``offset``, ``line``
      (-1 where unknown); ``function`` and ``file``: the code the node was recorded in;
    - ``callee``: for calls, the name of what was called (the function, the operator,
      ``$build_list`` for a special); ``""`` for other nodes; ``callee_id`` its code;
    - ``target``: for jumps, the bytecode offset control went to; -1 otherwise;
    - with ``values=True``, ``value``: the values as an object array.

    The name columns are decoded when first read (see `Table`).
    """
    cols = trace.columns()
    n = len(trace)
    kind = cols["kind"]
    code = cols["code"]
    offset = cols["offset"]
    aux = cols["aux"]
    rows = np.arange(n, dtype=np.int32)
    size = np.ones(n, dtype=np.int32)
    nested = kind == _K.K_NESTED
    size[nested] = aux[nested] - rows[nested]
    if n and size[0] <= 0:                  # a trace still open: the root spans it all
        size[0] = n
    codes = trace.codes
    # One entry per code plus a last "" that the root's code -1 indexes.
    qualnames = np.array([c.co_qualname for c in codes] + [""], dtype=object)
    files = np.array([c.co_filename for c in codes] + [""], dtype=object)
    callee_id, callee_names = _callees(trace, cols, qualnames)
    out: dict[str, Any] = {
        "row": rows,
        "kind": kind,
        "flags": cols["flags"],
        "parent": cols["parent"],
        "depth": _core.depths(trace),
        "size": size,
        "aux": aux,
        "code": code,
        "offset": offset,
        "line": _lines(trace, code, offset),
        "callee_id": callee_id,
        "target": np.where(kind == _K.K_JUMP, aux, -1).astype(np.int32),
    }
    if values:
        vals = np.empty(n, dtype=object)
        vals[:] = trace.values()
        out["value"] = vals
    return Table(out, qualnames, files, callee_names)


def _lines(trace, code: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """The source line of each row, from each code object's line table: the tables of
    the codes present, end to end, indexed once for all rows."""
    lines = np.full(len(code), -1, dtype=np.int32)
    known = np.flatnonzero((code >= 0) & (offset >= 0))
    if not len(known):
        return lines
    present = np.flatnonzero(np.bincount(code[known], minlength=len(trace.codes)))
    tables = [_line_table(trace.codes[cid]) for cid in present.tolist()]
    start = np.zeros(len(trace.codes), dtype=np.int64)
    length = np.ones(len(trace.codes), dtype=np.int64)
    sizes = np.array([len(t) for t in tables], dtype=np.int64)
    start[present] = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    length[present] = sizes
    cids = code[known]
    units = np.minimum(offset[known] // 2, length[cids] - 1)
    lines[known] = np.concatenate(tables)[start[cids] + units]
    return lines


def _line_table(co) -> np.ndarray:
    """Line per code unit (2 bytes) of a code object, as the node views report it
    (`node.location.line`, from the analysed IR): -1 where there is none."""
    by_offset = ir(co).layout.by_offset
    size = max(by_offset, default=0) // 2 + 1
    table = np.full(size, -1, dtype=np.int32)
    for off, ins in by_offset.items():
        if ins.line is not None:
            table[off // 2] = ins.line
    return table


def group_sites(code: np.ndarray, offset: np.ndarray):
    """Group rows by their (code, offset) site in linear time: `(codes, offsets,
    which)`, the distinct sites and, per row, the index of its site.

    A site is a position in a small space (code objects x code units), so it is
    marked in a table of that size instead of sorted; a sort of 10^7 keys takes
    seconds, the table a few hundred milliseconds at most.
    """
    unit = (offset.astype(np.int64) + 2) // 2          # offset -1 (no instruction) -> 0
    width = int(unit.max(initial=0)) + 1
    dense = (code.astype(np.int64) + 1) * width + unit
    size = (int(code.max(initial=-1)) + 2) * width
    keys, which = group_keys(dense, size)
    return (keys // width - 1).astype(np.int32), (keys % width * 2 - 2).astype(np.int32), which


def group_keys(keys: np.ndarray, size: int):
    """`(distinct, which)` of non-negative int keys below `size`, like
    `np.unique(keys, return_inverse=True)`, in linear time when `size` is small."""
    if size > 4 * len(keys) + (1 << 20):               # sparse keys: sorting is cheaper
        distinct, which = np.unique(keys, return_inverse=True)
        return distinct, which.reshape(-1)
    present = np.zeros(size, dtype=bool)
    present[keys] = True
    distinct = np.flatnonzero(present)
    rank = np.cumsum(present, dtype=np.int64) - 1
    return distinct, rank[keys]


def _callees(trace, cols, qualnames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What each call called: `(ids, names)`, an int32 id per row into an array of
    names; id 0 is "" (the nodes that are not calls)."""
    kind, parent, code, offset = cols["kind"], cols["parent"], cols["code"], cols["offset"]
    ref_start, refs = cols["ref_start"], cols["refs"]
    n = len(kind)
    names: list[str] = [""]
    ids: dict[str, int] = {"": 0}

    def name_id(name: str) -> int:
        found = ids.get(name)
        if found is None:
            found = ids[name] = len(names)
            names.append(name)
        return found

    out = np.zeros(n, dtype=np.int32)
    is_call = (kind == _K.K_PRIMITIVE) | (kind == _K.K_NESTED) | (kind == _K.K_SPECIAL)
    calls = np.flatnonzero(is_call)
    if not len(calls):
        return out, np.array(names, dtype=object)
    # A call whose body was recorded: its callee is the code of its first child.
    first = calls + 1
    entered = first < n
    entered[entered] &= parent[first[entered]] == calls[entered]
    entered &= kind[calls] == _K.K_NESTED
    by_code = np.array([name_id(q) for q in qualnames.tolist()], dtype=np.int32)
    out[calls[entered]] = by_code[code[first[entered]]]
    rest = calls[~entered]
    # Operators and specials: the function of their call site, from the plan.
    by_value = np.zeros(len(rest), dtype=bool)
    if len(rest):
        site_codes, site_offsets, which = group_sites(code[rest], offset[rest])
        site_name = np.full(len(site_codes), -1, dtype=np.int32)
        for s, (cid, off) in enumerate(zip(site_codes.tolist(), site_offsets.tolist())):
            rec = ir(trace.codes[cid]).recs.get(off) if cid >= 0 and off >= 0 else None
            if rec is None or rec.sem in (R_CALL, R_CALL_EX):
                continue                       # call-shaped: named by the callee value
            site_name[s] = name_id(f"${rec.fn}" if rec.sem == R_SPECIAL else _name(rec.fn))
        per_row = site_name[which]
        by_value = per_row < 0
        out[rest[~by_value]] = per_row[~by_value]
    # Calls named by their callee (input 0): equal callee objects grouped first.
    named = rest[by_value]
    named = named[ref_start[named + 1] > ref_start[named]]
    callee_refs = refs[ref_start[named]]
    from_pool = callee_refs < 0
    pool = trace.pool
    pooled = -callee_refs[from_pool] - 1
    if len(pooled):
        distinct, which = group_keys(pooled, len(pool))
        pool_name = np.array([name_id(_name(pool[k])) for k in distinct.tolist()], dtype=np.int32)
        out[named[from_pool]] = pool_name[which]
    rows = callee_refs[~from_pool]
    if len(rows):
        addresses = _core.value_addresses(trace, rows)
        _, first_at, which = np.unique(addresses, return_index=True, return_inverse=True)
        value_name = np.array([name_id(_name(trace.value(int(rows[i]))))
                               for i in first_at.tolist()], dtype=np.int32)
        out[named[~from_pool]] = value_name[which.reshape(-1)]
    return out, np.array(names, dtype=object)


def to_pandas(trace, values: bool = False):
    """`table(trace)` as a pandas DataFrame, `kind` as a categorical of its names
    (pandas is not a dependency of tracer: install it to use this)."""
    import pandas as pd
    cols = table(trace, values=values)
    frame = pd.DataFrame(dict(cols))
    frame["kind"] = pd.Categorical.from_codes(cols["kind"], categories=list(KIND_NAMES))
    return frame


def to_arrow(trace, values: bool = False):
    """`table(trace)` as a pyarrow Table (install pyarrow, the `arrow` extra);
    `kind` dictionary-encoded by name."""
    import pyarrow as pa
    cols = table(trace, values=values)
    arrays = {}
    for name, col in cols.items():
        if name == "kind":
            arrays[name] = pa.DictionaryArray.from_arrays(
                pa.array(col.astype(np.int8)), pa.array(list(KIND_NAMES)))
        elif name == "value":
            arrays[name] = pa.array([repr(v) for v in col])
        elif col.dtype == object:
            arrays[name] = pa.array(col.tolist(), type=pa.string())
        else:
            arrays[name] = pa.array(col)
    return pa.table(arrays)
