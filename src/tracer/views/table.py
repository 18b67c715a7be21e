"""The whole trace as a table of numpy columns: one entry per node, no Python object
per node.

Questions about a whole run ("how many times did each line run", "which branch was
taken how often", "which calls took most nodes") are one vectorized expression over
these columns.  Names (function, file, callee) are decoded through the code table and
the call sites, a few Python steps per distinct code object, call site or callee, then
spread over the rows with numpy indexing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..analysis.instructions import R_CALL, R_CALL_EX, R_SPECIAL
from ..analysis.ir import ir
from .values import _name

__all__ = ["table", "to_pandas", "to_arrow", "KIND_NAMES"]

_K = _core.NodeKind
#: The names of the node kinds, indexed by the `kind` column.
KIND_NAMES = np.array(["argument", "constant", "primitive", "nested", "special", "jump",
                       "return"], dtype=object)


def table(trace, values: bool = False) -> dict[str, np.ndarray]:
    """The trace as a dict of equal-length numpy columns, one entry per node in row
    (document) order.

    - ``row``, ``kind`` (int, names in `KIND_NAMES`), ``flags``, ``parent``, ``depth``
      (the root is 0), ``size`` (nodes in the subtree, the node included), ``aux``;
    - ``code`` (index into ``trace.codes``, -1 for the root), ``offset``, ``line``
      (-1 where unknown); ``function`` and ``file``: the code the node was recorded in;
    - ``callee``: for calls, the name of what was called (the function, the operator,
      ``$build_list`` for a special); ``""`` for other nodes;
    - ``target``: for jumps, the bytecode offset control went to; -1 otherwise;
    - with ``values=True``, ``value``: the values as an object array.
    """
    cols = trace.columns()
    n = len(trace)
    kind = cols["kind"]
    parent = cols["parent"]
    code = cols["code"]
    offset = cols["offset"]
    aux = cols["aux"]
    rows = np.arange(n, dtype=np.int32)
    size = np.ones(n, dtype=np.int32)
    nested = kind == _K.K_NESTED
    size[nested] = aux[nested] - rows[nested]
    if n and size[0] <= 0:                  # a trace still open: the root spans it all
        size[0] = n
    out: dict[str, Any] = {
        "row": rows,
        "kind": kind,
        "flags": cols["flags"],
        "parent": parent,
        "depth": _core.depths(trace),
        "size": size,
        "aux": aux,
        "code": code,
        "offset": offset,
        "line": _lines(trace, code, offset),
    }
    codes = trace.codes
    # One entry per code plus a last "" that the root's code -1 indexes.
    qualnames = np.array([c.co_qualname for c in codes] + [""], dtype=object)
    files = np.array([c.co_filename for c in codes] + [""], dtype=object)
    out["function"] = qualnames[code]
    out["file"] = files[code]
    out["callee"] = _callees(trace, cols, qualnames)
    out["target"] = np.where(kind == _K.K_JUMP, aux, -1).astype(np.int32)
    if values:
        vals = np.empty(n, dtype=object)
        vals[:] = trace.values()
        out["value"] = vals
    return out


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


def _callees(trace, cols, qualnames: np.ndarray) -> np.ndarray:
    """What each call called, by name; "" for the nodes that are not calls."""
    kind, parent, code, offset = cols["kind"], cols["parent"], cols["code"], cols["offset"]
    ref_start, refs = cols["ref_start"], cols["refs"]
    n = len(kind)
    out = np.full(n, "", dtype=object)
    is_call = (kind == _K.K_PRIMITIVE) | (kind == _K.K_NESTED) | (kind == _K.K_SPECIAL)
    calls = np.flatnonzero(is_call)
    if not len(calls):
        return out
    # A call whose body was recorded: its callee is the code of its first child.
    first = calls + 1
    entered = first < n
    entered[entered] &= parent[first[entered]] == calls[entered]
    entered &= kind[calls] == _K.K_NESTED
    out[calls[entered]] = qualnames[code[first[entered]]]
    rest = calls[~entered]
    # Operators and specials: the function of their call site, from the plan.
    by_value = np.zeros(len(rest), dtype=bool)
    site_code, site_offset = code[rest], offset[rest]
    if len(rest):
        codes, offsets, which = group_sites(site_code, site_offset)
        for s, (cid, off) in enumerate(zip(codes.tolist(), offsets.tolist())):
            members = which == s
            rec = ir(trace.codes[cid]).recs.get(off) if cid >= 0 and off >= 0 else None
            if rec is None or rec.sem in (R_CALL, R_CALL_EX):
                by_value |= members            # call-shaped: named by the callee value
            elif rec.sem == R_SPECIAL:
                out[rest[members]] = f"${rec.fn}"
            else:
                out[rest[members]] = _name(rec.fn)
    # Calls named by their callee (input 0): group equal callee objects first.
    named = rest[by_value]
    has_input = ref_start[named + 1] > ref_start[named]
    named = named[has_input]
    callee_refs = refs[ref_start[named]]
    from_pool = callee_refs < 0
    pool = trace.pool
    for ref in np.unique(callee_refs[from_pool]).tolist():
        out[named[from_pool & (callee_refs == ref)]] = _name(pool[-ref - 1])
    rows = callee_refs[~from_pool]
    if len(rows):
        addresses = _core.value_addresses(trace, rows)
        uniq, first_at, which = np.unique(addresses, return_index=True, return_inverse=True)
        names = np.array([_name(trace.value(int(rows[i]))) for i in first_at.tolist()],
                         dtype=object)
        out[named[~from_pool]] = names[which.reshape(-1)]
    return out


def to_pandas(trace, values: bool = False):
    """`table(trace)` as a pandas DataFrame, `kind` as a categorical of its names
    (pandas is not a dependency of tracer: install it to use this)."""
    import pandas as pd
    cols = table(trace, values=values)
    frame = pd.DataFrame(cols)
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
