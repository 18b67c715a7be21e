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
from enum import IntEnum
from typing import Any

import numpy as np

from .. import _core
from ..analysis.instructions import R_CALL, R_CALL_EX, R_SPECIAL
from ..analysis.ir import ir
from .checks import trace_arg
from .names import callable_name

__all__ = ["table", "Table", "to_pandas", "to_arrow", "KIND_NAMES", "Kind", "kind_codes"]

# Plain ints, not the IntEnum members: numpy takes a slow, int64 path for those.
_NESTED = int(_core.NodeKind.K_NESTED)
_JUMP = int(_core.NodeKind.K_JUMP)
_SPECIAL = int(_core.NodeKind.K_SPECIAL)
_F_EXCEPTION = int(_core.NodeFlag.F_EXCEPTION)
_F_RAISED = int(_core.NodeFlag.F_RAISED)
#: The names of the node kinds, indexed by the `kind` column.
KIND_NAMES = np.array(["argument", "constant", "primitive", "nested", "special", "jump",
                       "return"], dtype=object)


class Kind(IntEnum):
    """The node kinds as the table's ``kind`` column holds them: `Kind.PRIMITIVE` is
    2, `Kind(2).label` is "primitive" (a node's `kind`, and a name in KIND_NAMES)."""

    ARGUMENT = int(_core.NodeKind.K_ARGUMENT)
    CONSTANT = int(_core.NodeKind.K_CONSTANT)
    PRIMITIVE = int(_core.NodeKind.K_PRIMITIVE)
    NESTED = int(_core.NodeKind.K_NESTED)
    SPECIAL = int(_core.NodeKind.K_SPECIAL)
    JUMP = int(_core.NodeKind.K_JUMP)
    RETURN = int(_core.NodeKind.K_RETURN)

    @property
    def label(self) -> str:
        """The kind's name as nodes and `where(kind=...)` spell it ("primitive")."""
        return str(KIND_NAMES[int(self)])


_KIND_CODES = {name: k for k, name in enumerate(KIND_NAMES)}


def kind_codes(kind: Any) -> list[int]:
    """The codes of a kind filter: a name, an int code (a `Kind`), or several of
    those; TypeError or ValueError for anything else."""
    kinds = [kind] if isinstance(kind, (str, int, np.integer)) else kind
    try:
        kinds = list(kinds)
    except TypeError:
        kinds = [kind]  # not iterable: reported below as what it is
    codes = []
    for k in kinds:
        if isinstance(k, str):
            if k not in _KIND_CODES:
                raise ValueError(f"unknown node kind {k!r}: one of {', '.join(KIND_NAMES)} "
                                 f"(or their codes 0..{len(KIND_NAMES) - 1}, tracer.views.Kind)")
            codes.append(_KIND_CODES[k])
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            if not 0 <= int(k) < len(KIND_NAMES):
                raise ValueError(f"unknown node kind code {int(k)}: the codes are "
                                 f"0..{len(KIND_NAMES) - 1} (tracer.views.Kind)")
            codes.append(int(k))
        else:
            raise TypeError(f"a kind is a name ({', '.join(KIND_NAMES)}) or its int code "
                            f"(tracer.views.Kind), got {type(k).__name__}")
    return codes


#: Rows per step of the column builders: their temporaries (masks, int64 indexes)
#: stay a few MiB whatever the trace's size, and each step works in the CPU caches.
_CHUNK = 1 << 20


def row_chunks(n: int):
    """`(lo, hi)` bounds of the chunks of `_CHUNK` rows that cover n rows."""
    for lo in range(0, n, _CHUNK):
        yield lo, min(n, lo + _CHUNK)


class Table(Mapping):
    """The columns of `table()`: a read-only mapping of names to numpy arrays.

    Every column is built when first read and then kept, so a question pays only for
    the columns it reads: the stored ones (``kind``, ``parent``, ``offset`` ...) share
    the trace's memory, a derived int32 column costs 4 bytes per node, and a name
    column (``function``, ``file``, ``callee``) is an object array of one pointer per
    node.  Their codes are columns too (``code`` indexes `function_names` and
    `file_names`, ``callee_id`` indexes `callee_names`), for grouping without strings.
    """

    _STORED = ("kind", "flags", "parent", "aux", "code", "offset")
    _DECODED = {"function": ("function_names", "code"), "file": ("file_names", "code"),
                "callee": ("callee_names", "callee_id")}

    def __init__(self, trace, values: bool = False):
        self._trace = trace
        self._stored = trace.columns()
        self._columns: dict[str, np.ndarray] = {}
        self._callee_names: np.ndarray | None = None
        codes = trace.codes
        #: Per code id (and a last "" for the root's -1): the qualified name, the file.
        self.function_names = np.array([c.co_qualname for c in codes] + [""], dtype=object)
        self.file_names = np.array([c.co_filename for c in codes] + [""], dtype=object)
        self._names = ("row", "kind", "flags", "parent", "depth", "size", "aux", "code",
                       "offset", "line", "callee_id", "target") + \
            (("value",) if values else ()) + tuple(self._DECODED)

    @property
    def callee_names(self) -> np.ndarray:
        """Per callee id: the name of what was called ("" for nodes that are not calls)."""
        if self._callee_names is None:
            self["callee_id"]
        return self._callee_names

    def __getitem__(self, name: str) -> np.ndarray:
        col = self._columns.get(name)
        if col is None:
            if name not in self._names:
                raise KeyError(name)
            col = self._columns[name] = self._build(name)
        return col

    def _build(self, name: str) -> np.ndarray:
        trace, stored = self._trace, self._stored
        if name in self._STORED:
            return stored[name]
        if name in self._DECODED:
            names, codes = self._DECODED[name]
            return getattr(self, names)[self[codes]]
        if name == "row":
            return np.arange(len(trace), dtype=np.int32)
        if name == "depth":
            return _core.depths(trace)
        if name == "size":
            return _sizes(stored["kind"], stored["aux"])
        if name == "line":
            return _lines(trace, stored["code"])
        if name == "target":
            return _targets(stored["kind"], stored["aux"])
        if name == "callee_id":
            ids, self._callee_names = _callees(trace, stored, self.function_names)
            return ids
        vals = np.empty(len(trace), dtype=object)          # "value"
        vals[:] = trace.values()
        return vals

    def counts(self, name: str, where: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """How many rows have each value of column `name`: `(values, counts)`, the
        values that occur, ascending, and their counts (int64).  `where`, a boolean
        array of one entry per row, counts only the rows where it is true.

        Counted a chunk of rows at a time: "how many times did each line run" over
        6·10^7 rows holds no temporary per row.  A name column (``function``,
        ``file``, ``callee``) is counted on its int32 codes and answered with names.
        """
        if where is not None and len(where) != len(self._trace):
            raise ValueError(f"where has {len(where)} entries for a table of "
                             f"{len(self._trace)} rows")
        if name in self._DECODED:
            ids, names = self.ids_and_names(name)
            codes, per_code = _count_ints(ids, where)
            merged, of_code = np.unique(names[codes].astype(str), return_inverse=True)
            return merged.astype(object), np.bincount(of_code.reshape(-1), weights=per_code,
                                                      minlength=len(merged)).astype(np.int64)
        col = self[name]
        if col.dtype == object:
            raise TypeError(f"column {name!r} holds objects: count a column of ints or names")
        return _count_ints(col, where)

    def ids_and_names(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The int32 codes and the names of a name column, without decoding it:
        `names[ids]` is the column (an id of -1 is the last name, "")."""
        names, codes = self._DECODED[name]
        return self[codes], getattr(self, names)

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"<tracer table of {len(self._trace)} rows: {', '.join(self)}>"


def _count_ints(col: np.ndarray, where: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """`(values, counts)` of an int column, by chunks: one bincount over the values'
    range when it is small, else a sort per chunk."""
    if not len(col):
        return col[:0], np.zeros(0, dtype=np.int64)
    low, high = int(col.min()), int(col.max())
    span = high - low + 1
    if span > 4 * len(col) + (1 << 20):                # sparse values: sort instead
        picked = col if where is None else col[where]
        values, counts = np.unique(picked, return_counts=True)
        return values, counts.astype(np.int64)
    counts = np.zeros(span, dtype=np.int64)
    for lo, hi in row_chunks(len(col)):
        part = col[lo:hi] if where is None else col[lo:hi][where[lo:hi]]
        counts += np.bincount((part - low).astype(np.intp, copy=False), minlength=span)
    present = np.flatnonzero(counts)
    return (present + low).astype(col.dtype), counts[present]


def table(trace, values: bool = False) -> Table:
    """The trace as a mapping of equal-length numpy columns, one entry per node in row
    (document) order, each built when first read (see `Table`).

    - ``row``, ``kind`` (int, names in `KIND_NAMES`), ``flags``, ``parent``, ``depth``
      (the root is 0), ``size`` (nodes in the subtree, the node included), ``aux``;
    - ``code`` (index into ``trace.codes``, -1 for the root), ``offset``, ``line``
      (-1 where unknown); ``function`` and ``file``: the code the node was recorded in;
    - ``callee``: for calls, the name of what was called (the function, the operator,
      ``$build_list`` for a special); ``""`` for other nodes; ``callee_id`` its code;
    - ``target``: for jumps, the bytecode offset control went to; -1 otherwise;
    - with ``values=True``, ``value``: the values as an object array.

    `trace` is a node (the root tracer.track returns) or its Trace.
    """
    return Table(trace_arg(trace, "table"), values=values)


def _sizes(kind: np.ndarray, aux: np.ndarray) -> np.ndarray:
    """Nodes in each row's subtree: 1, or for a nested call its end (aux) minus it."""
    n = len(kind)
    size = np.ones(n, dtype=np.int32)
    for lo, hi in row_chunks(n):
        nested = np.flatnonzero(kind[lo:hi] == _NESTED).astype(np.int32)
        size[lo + nested] = aux[lo + nested] - nested - lo
    if n and size[0] <= 0:                  # a trace still open: the root spans it all
        size[0] = n
    return size


def _targets(kind: np.ndarray, aux: np.ndarray) -> np.ndarray:
    """Where each jump went (its aux), -1 for the other rows."""
    target = np.full(len(kind), -1, dtype=np.int32)
    for lo, hi in row_chunks(len(kind)):
        jumps = kind[lo:hi] == _JUMP
        target[lo:hi][jumps] = aux[lo:hi][jumps]
    return target


def _lines(trace, code: np.ndarray) -> np.ndarray:
    """The source line of each row, from each code object's line table."""
    return _core.unit_lookup(trace, code, *_unit_tables(trace, _line_table), fill=-1)


def _unit_tables(trace, per_code) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(table, start, length)`: `per_code(code)`'s int32 array (an entry per code
    unit) for every code object some row was recorded in, end to end; the other
    codes get no entries."""
    ncodes = len(trace.codes)
    start = np.zeros(ncodes, dtype=np.int32)
    length = np.zeros(ncodes, dtype=np.int32)
    present = np.unique(trace.frames()[1])             # every row's code is a frame's
    if not len(present):
        return np.zeros(0, dtype=np.int32), start, length
    tables = [per_code(trace.codes[cid]) for cid in present.tolist()]
    sizes = np.array([len(t) for t in tables], dtype=np.int32)
    start[present] = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int32)
    length[present] = sizes
    return np.concatenate(tables).astype(np.int32, copy=False), start, length


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
    names; id 0 is "" (the nodes that are not calls).

    One pass in the core names the calls whose body was recorded (by the body's code)
    and the operators and specials (by their call site); the calls named by their
    callee object are then named once per pooled constant or per object."""
    names: list[str] = [""]
    ids: dict[str, int] = {"": 0}

    def name_id(name: str) -> int:
        found = ids.get(name)
        if found is None:
            found = ids[name] = len(names)
            names.append(name)
        return found

    by_code = np.array([name_id(q) for q in qualnames[:-1].tolist()], dtype=np.int32)

    def site_names(co) -> np.ndarray:
        # Per code unit: the name of an operator or special recorded there, -1 for
        # call-shaped sites (named by their callee) and units without a record.
        recs = ir(co).recs
        out = np.full(max(recs, default=0) // 2 + 1, -1, dtype=np.int32)
        for off, rec in recs.items():
            if rec.sem not in (R_CALL, R_CALL_EX):
                out[off // 2] = name_id(f"${rec.fn}" if rec.sem == R_SPECIAL else callable_name(rec.fn))
        return out

    out = _core.callee_ids(trace, cols["code"], *_unit_tables(trace, site_names), by_code)
    by_value = np.flatnonzero(out < 0)
    special = cols["kind"][by_value] == _SPECIAL
    if special.any():
        # A special without a record at its site (a caught exception, a raise): named
        # as its node view's `function` names it, not by its input.
        for row in by_value[special].tolist():
            out[row] = name_id(_special_name(trace, cols, row))
        by_value = by_value[~special]
    if len(by_value):
        _name_by_value(trace, cols, by_value, out, name_id)
    return out, np.array(names, dtype=object)


def _special_name(trace, cols, row: int) -> str:
    """"$exception" for a handler's caught exception, "$raise" for a `raise`, else ""."""
    flags = int(cols["flags"][row])
    if flags & _F_EXCEPTION:
        return "$exception"
    code, off = trace.codes[cols["code"][row]] if cols["code"][row] >= 0 else None, \
        int(cols["offset"][row])
    if flags & _F_RAISED and code is not None and off >= 0:
        ins = ir(code).layout.by_offset.get(off)
        if ins is not None and ins.opname == "RAISE_VARARGS":
            return "$raise"
    return ""


def _name_by_value(trace, cols, rows: np.ndarray, out: np.ndarray, name_id) -> None:
    """Name the calls `rows` by their callee object: -2 - k in `out` is entry k of the
    constant pool, -1 another row's value.  Equal objects are named once."""
    marks = out[rows]
    pooled = rows[marks <= -2]
    if len(pooled):
        distinct, which = group_keys(-2 - out[pooled].astype(np.int64), len(trace.pool))
        pool = trace.pool
        pool_name = np.array([name_id(callable_name(pool[k])) for k in distinct.tolist()],
                             dtype=np.int32)
        out[pooled] = pool_name[which]
    valued = rows[marks == -1]
    if len(valued):
        refs = cols["refs"][cols["ref_start"][valued]]
        addresses = _core.value_addresses(trace, refs)
        _, first_at, which = np.unique(addresses, return_index=True, return_inverse=True)
        value_name = np.array([name_id(callable_name(trace.value(int(refs[i]))))
                               for i in first_at.tolist()], dtype=np.int32)
        out[valued] = value_name[which.reshape(-1)]


def to_pandas(trace, values: bool = False):
    """`table(trace)` as a pandas DataFrame, `kind` and the name columns as
    categoricals (pandas is not a dependency of tracer: install it to use this)."""
    import pandas as pd
    cols = table(trace, values=values)
    frame = pd.DataFrame({name: cols[name] for name in cols if name not in Table._DECODED})
    frame["kind"] = pd.Categorical.from_codes(cols["kind"], categories=list(KIND_NAMES))
    for name in Table._DECODED:
        codes, categories = _distinct_codes(*cols.ids_and_names(name))
        frame[name] = pd.Categorical.from_codes(codes, categories=categories.tolist())
    return frame


def _distinct_codes(ids: np.ndarray, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, an index into the distinct names (two codes may share a qualified
    name or a file; a categorical's categories must be distinct)."""
    categories, of_name = np.unique(names.astype(str), return_inverse=True)
    return of_name.reshape(-1).astype(np.int32)[ids], categories


def to_arrow(trace, values: bool = False):
    """`table(trace)` as a pyarrow Table (install pyarrow, the `arrow` extra);
    `kind` and the name columns dictionary-encoded, so no string per row is made."""
    import pyarrow as pa
    cols = table(trace, values=values)
    arrays = {}
    for name in cols:
        if name == "kind":
            arrays[name] = pa.DictionaryArray.from_arrays(
                pa.array(cols[name].astype(np.int8)), pa.array(list(KIND_NAMES)))
        elif name in Table._DECODED:
            codes, categories = _distinct_codes(*cols.ids_and_names(name))
            arrays[name] = pa.DictionaryArray.from_arrays(
                pa.array(codes), pa.array(categories.tolist(), type=pa.string()))
        elif name == "value":
            arrays[name] = pa.array([repr(v) for v in cols[name]])
        else:
            arrays[name] = pa.array(cols[name])
    return pa.table(arrays)
