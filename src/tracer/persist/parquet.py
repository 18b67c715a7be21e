"""Save and load traces as one Apache Parquet file, or one Arrow IPC file (through
pyarrow).

Layout: one table, one row per node (in Parquet, in one row group).

- ``kind flags parent code offset aux``: the arena's columns as they are.
- ``refs``: ``list<int32>`` whose offsets *are* the ``ref_start`` column and whose
  values are the ``refs`` column, so both go in and out without a copy on the Arrow
  side (a separate table is impossible: a Parquet file has one schema).
- ``value``: each node's entry in the value table (-1: none); for queries over many
  files without decoding, ``value_kind`` (the entry's kind: "int", "true", "str",
  "opaque", ...) and ``number`` (bool, int and float values as float64, else null).
- ``function``: the qualified name of the node's code (dictionary-encoded over the
  code column), and ``line``: the source line of its instruction.
- The side tables, each as a list column whose row 0 holds the whole table (the
  other rows hold empty lists, which cost a few bits each): ``values`` (the value
  table, see encode.py), ``pool`` (entries of the constants), ``codes`` (the code
  table: qualname, file, first line, bytecode hash, IR text, analysis as JSON),
  ``metadata`` and ``substituted`` ((row, entry) pairs).  They would not fit in
  Parquet's key-value metadata for large traces (readers cap it, and it is parsed
  whole); as list columns they are ordinary, compressed Parquet data.
- Key-value metadata ``tracer``: a small JSON object with the trace's attributes
  (format version, stopped, snapshots, exception entry, events, root keywords,
  whether values were pickled).

Loading reads the columns with pyarrow (an Arrow file memory-mapped) and copies them
into a new arena (one memcpy per column, far below the cost of decoding Parquet):
the arena owns and reuses its buffers, so it cannot borrow Arrow's; its `columns()`
are then zero-copy views of the arena, as for a live trace.
"""

from __future__ import annotations

import json
import os

import numpy as np

from .encode import TAG_NAMES, T_FALSE, T_FLOAT, T_INT, T_TRUE, ValueTable
from .encoded import NODE_COLUMNS, EncodedTrace, as_trace, decode_trace, encode_trace

__all__ = ["save", "load", "to_table", "from_table", "read_table", "write_table",
           "require_pyarrow"]

META_KEY = b"tracer"
SIDE_TABLES = ("values", "pool", "codes", "metadata", "substituted")


def require_pyarrow():
    """pyarrow, or an ImportError saying how to install it."""
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise ImportError("saving and loading traces needs pyarrow: pip install "
                          "'tracer[arrow]' (or pip install pyarrow)") from None
    return pyarrow


def _types(pa):
    code_row = pa.struct([("qualname", pa.string()), ("name", pa.string()),
                          ("filename", pa.string()), ("firstlineno", pa.int32()),
                          ("flags", pa.int32()), ("bytecode_sha256", pa.string()),
                          ("ir_text", pa.large_string()), ("analysis", pa.large_string())])
    value_row = pa.struct([("tag", pa.uint8()), ("integer", pa.int64()), ("real", pa.float64()),
                           ("text", pa.large_string()), ("blob", pa.large_binary()),
                           ("type_name", pa.string()), ("repr_text", pa.large_string()),
                           ("items", pa.list_(pa.int32()))])
    pair = pa.struct([("row", pa.int32()), ("value", pa.int32())])
    return {"codes": code_row, "values": value_row, "pool": pa.int32(), "metadata": pair,
            "substituted": pair}


def _row0(pa, n: int, items, item_type):
    """A list column of n rows: row 0 holds `items`, the others are empty."""
    offsets = np.full(n + 1, len(items), dtype=np.int32)
    offsets[0] = 0
    return pa.ListArray.from_arrays(pa.array(offsets), items, type=pa.list_(item_type))


def _line_column(enc: EncodedTrace, codes: list, pa):
    """Each node's source line (null where none: the root, parameters)."""
    code = enc.columns["code"]
    offset = enc.columns["offset"]
    line = np.zeros(len(code), dtype=np.int32)
    known = np.zeros(len(code), dtype=bool)
    for c, loaded in enumerate(codes):
        rows = np.flatnonzero(code == c)
        if not len(rows):
            continue
        instrs = json.loads(loaded["analysis"])["instrs"]
        top = max((i[0] for i in instrs), default=0)
        table = np.full(top + 2, -1, dtype=np.int64)
        for off, _, ln, _, _ in instrs:
            table[off] = -1 if ln is None else ln
        offs = offset[rows]
        ok = (offs >= 0) & (offs <= top)
        got = np.full(len(rows), -1, dtype=np.int64)
        got[ok] = table[offs[ok]]
        line[rows] = got
        known[rows] = got >= 0
    return pa.array(line, mask=~known)


def to_table(enc: EncodedTrace):
    """The pyarrow Table of an encoded trace (the file's one table)."""
    pa = require_pyarrow()
    cols = enc.columns
    n = len(cols["kind"])
    types = _types(pa)
    arrays = {name: pa.array(np.asarray(cols[name])) for name in NODE_COLUMNS}
    arrays["refs"] = pa.ListArray.from_arrays(pa.array(cols["ref_start"]),
                                              pa.array(cols["refs"]))
    value = np.asarray(cols["value"])
    arrays["value"] = pa.array(value)
    v = enc.values
    tags = np.asarray(v.tag, dtype=np.uint8)
    node_tag = tags[value] if len(tags) else np.zeros(n, dtype=np.uint8)
    arrays["value_kind"] = pa.DictionaryArray.from_arrays(
        pa.array(node_tag.astype(np.int8)), pa.array(TAG_NAMES))
    numbers = np.where(tags == T_FLOAT, np.asarray(v.real, dtype=np.float64),
                       np.asarray(v.integer, dtype=np.float64))
    numbers = np.where(tags == T_TRUE, 1.0, np.where(tags == T_FALSE, 0.0, numbers))
    numeric = np.isin(tags, (T_INT, T_FLOAT, T_TRUE, T_FALSE))
    arrays["number"] = pa.array(numbers[value] if len(tags) else np.zeros(n),
                                mask=~numeric[value] if len(tags) else np.ones(n, bool))
    code = np.asarray(cols["code"])
    arrays["function"] = pa.DictionaryArray.from_arrays(
        pa.array(np.maximum(code, 0), mask=code < 0),
        pa.array([c["qualname"] for c in enc.codes] or [""], type=pa.string()))
    arrays["line"] = _line_column(enc, enc.codes, pa)
    values_struct = pa.StructArray.from_arrays(
        [pa.array(v.tag, pa.uint8()), pa.array(v.integer, pa.int64()),
         pa.array(v.real, pa.float64()), pa.array(v.text, pa.large_string()),
         pa.array(v.blob, pa.large_binary()), pa.array(v.type_name, pa.string()),
         pa.array(v.repr_text, pa.large_string()), pa.array(v.items, pa.list_(pa.int32()))],
        fields=list(types["values"]))
    arrays["values"] = _row0(pa, n, values_struct, types["values"])
    arrays["pool"] = _row0(pa, n, pa.array(enc.pool, pa.int32()), pa.int32())
    arrays["codes"] = _row0(pa, n, pa.array(enc.codes, types["codes"]), types["codes"])
    for name in ("metadata", "substituted"):
        pairs = [{"row": r, "value": e} for r, e in getattr(enc, name)]
        arrays[name] = _row0(pa, n, pa.array(pairs, types[name]), types[name])
    table = pa.table(arrays)
    return table.replace_schema_metadata({META_KEY: json.dumps(enc.info).encode()})


def from_table(table) -> EncodedTrace:
    """The encoded trace a table written by `to_table` holds."""
    pa = require_pyarrow()
    meta = table.schema.metadata or {}
    if META_KEY not in meta:
        raise ValueError("not a tracer trace file (its Parquet metadata has no 'tracer' entry)")
    try:
        info = json.loads(meta[META_KEY])
    except ValueError:
        raise ValueError("the trace file's 'tracer' metadata is not JSON") from None
    if not isinstance(info, dict):
        raise ValueError("the trace file's 'tracer' metadata is not a JSON object")
    missing = [c for c in (*NODE_COLUMNS, "refs", "value", *SIDE_TABLES)
               if c not in table.column_names]
    if missing:
        raise ValueError(f"not a tracer trace file: no column {', '.join(missing)}")

    def chunk(name):
        col = table.column(name)
        return col.chunk(0) if col.num_chunks == 1 else pa.concat_arrays(col.chunks)

    def numbers(arr):
        if arr.null_count:
            raise ValueError(f"the trace file has nulls in a column that has none")
        return arr.to_numpy(zero_copy_only=False)

    columns = {name: numbers(chunk(name)) for name in NODE_COLUMNS}
    refs = chunk("refs")
    offsets = numbers(refs.offsets)
    columns["ref_start"] = offsets - offsets[0] if len(offsets) else offsets
    columns["refs"] = numbers(refs.values)[offsets[0]:offsets[-1]] if len(offsets) else offsets
    columns["value"] = numbers(chunk("value"))

    def side(name):
        arr = chunk(name)
        if len(arr) == 0 or not arr.is_valid()[0].as_py():
            raise ValueError(f"the trace file's {name} table is missing")
        return arr[0].values

    vals = side("values")
    table_v = ValueTable(
        tag=vals.field("tag").to_pylist(), integer=vals.field("integer").to_pylist(),
        real=vals.field("real").to_pylist(), text=vals.field("text").to_pylist(),
        blob=vals.field("blob").to_pylist(), type_name=vals.field("type_name").to_pylist(),
        repr_text=vals.field("repr_text").to_pylist(),
        items=vals.field("items").to_pylist())
    return EncodedTrace(
        columns=columns, values=table_v, pool=side("pool").to_pylist(),
        codes=side("codes").to_pylist(),
        metadata=[(p["row"], p["value"]) for p in side("metadata").to_pylist()],
        substituted=[(p["row"], p["value"]) for p in side("substituted").to_pylist()],
        info=info)


# Files whose name ends so are written as Arrow IPC files; others as Parquet.
ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")
FORMATS = ("parquet", "arrow")
# Parquet: dictionary encoding only where the alphabet is small (it costs a hash per
# value elsewhere, for nothing); statistics only for the columns queries filter on.
_DICTIONARY_COLUMNS = ["kind", "flags", "code", "function", "value_kind", "line"]
_STATISTICS_COLUMNS = ["kind", "function", "line", "value_kind"]


def _format_of(path, format: str | None) -> str:
    if format is None:
        return "arrow" if os.fspath(path).lower().endswith(ARROW_SUFFIXES) else "parquet"
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS} (or None: by the file's suffix), "
                         f"not {format!r}")
    return format


def save(root_or_trace, path, *, values: str = "encode", format: str | None = None,
         compression: str | None = None) -> None:
    """Save a trace (a node of it, or the Trace) to `path` as one file.

    The format is Apache Parquet (compressed with zstd by default), or an Arrow IPC
    file (lz4 by default: several times faster to write and read, larger) when
    `format="arrow"` or the name ends in .arrow, .feather or .ipc; both hold the
    same table (see this module's docstring) and `load` reads either.

    `values="encode"` (the default) stores values losslessly where their type allows
    (None, bool, int, float, complex, str, bytes, numpy scalars and arrays, and
    tuples, lists, dicts and sets of those) and as display text plus type name
    otherwise.  `values="pickle"` pickles each value instead: loading such a file
    then needs `allow_pickle=True`, since unpickling can run any code.
    """
    require_pyarrow()
    fmt = _format_of(path, format)
    trace = as_trace(root_or_trace)
    table = to_table(encode_trace(trace, values))
    write_table(table, path, fmt, compression)


def write_table(table, path, format: str = "parquet", compression: str | None = None) -> None:
    """Write a table made by `to_table` as a Parquet or an Arrow IPC file."""
    pa = require_pyarrow()
    if format == "arrow":
        options = pa.ipc.IpcWriteOptions(compression=compression or "lz4")
        with pa.OSFile(os.fspath(path), "wb") as sink:
            with pa.ipc.new_file(sink, table.schema, options=options) as writer:
                writer.write_table(table)
        return
    import pyarrow.parquet as pq

    pq.write_table(table, os.fspath(path), compression=compression or "zstd",
                   row_group_size=max(table.num_rows, 1), use_dictionary=_DICTIONARY_COLUMNS,
                   write_statistics=_STATISTICS_COLUMNS)


def read_table(path):
    """The table of a trace file, Parquet or Arrow IPC (told apart by its first bytes);
    an Arrow file is memory-mapped, so uncompressed columns are not copied."""
    pa = require_pyarrow()
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            magic = f.read(6)
    except FileNotFoundError:
        raise FileNotFoundError(f"no trace file {name!r}") from None
    try:
        if magic == b"ARROW1":
            with pa.memory_map(name) as source:
                return pa.ipc.open_file(source).read_all()
        import pyarrow.parquet as pq

        return pq.read_table(name)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"{name!r} is not a Parquet or Arrow file ({exc})") from None


def load(path, *, allow_pickle: bool = False):
    """Load a trace saved by `save`; return its root node, as `tracer.track` does.

    Nothing in the file is run: code objects come back as `LoadedCode` stand-ins
    (names, lines, IR), values as encoded (see `save`).  A file saved with
    `values="pickle"` raises `PickleRefused` unless `allow_pickle=True`.
    """
    from ..views.nodes import node_at

    trace = decode_trace(from_table(read_table(path)), allow_pickle=allow_pickle)
    return node_at(trace, 0)
