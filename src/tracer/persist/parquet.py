"""Save and load traces as one Apache Parquet file, or one Arrow IPC file (through
pyarrow).

Layout: one table, one row per node (in Parquet, in one row group).

- ``kind flags parent code offset aux``: the arena's columns as they are (declared
  non-null: Parquet then stores no definition levels for them).
- ``value``: each node's entry in the value table (-1: none); for queries over many
  files without decoding, ``value_kind`` (the entry's kind: "int", "true", "str",
  "opaque", ...) and ``number`` (bool, int and float values as float64, else null).
- ``function``: the qualified name of the node's code (dictionary-encoded over the
  code column), ``line``: the source line of its instruction, and ``callee``: for a
  call, the qualified name of what it called (`table()`'s callee column,
  dictionary-encoded; null for other nodes), so counts over many files are one
  Arrow or Dask query.
- Two blob columns, ``inputs`` and ``tables``: row 0 of each holds an Arrow IPC
  stream of a one-row table of list columns (``read_blob`` reads it with plain
  pyarrow), the other rows are null.  ``inputs``: the inputs of the nodes as CSR,
  ``ref_start`` (n + 1 offsets into ``refs``) and ``refs`` (row numbers; negative:
  a constant of ``pool``).  ``tables``: the side tables ``values`` (the value table,
  see encode.py), ``pool``, ``codes`` (qualname, file, first line, bytecode hash,
  IR text, analysis as JSON), ``metadata`` and ``substituted`` ((row, entry) pairs).
  Why blobs: as list columns of n rows, Parquet writes repetition and definition
  levels per row and per item, which cost more than all the other columns (refs as
  a list column alone was 60 % of saving the node columns, the side tables 5x the
  node columns); a blob costs one value.  Two of them, because a loaded trace's
  ``ref_start`` and ``refs`` are views of the decoded ``inputs`` blob, which it
  keeps alive; the side tables are decoded into Python objects and let go.
- ``start_ns`` and ``end_ns``, only in a trace recorded with ``Context(timing=True)``:
  for each timed call (an activation of a followed frame) the monotonic clock's
  nanoseconds when it started and when it returned, yielded or unwound; null for
  every other row (so ``end_ns - start_ns`` by ``function`` is one Arrow query).
- Key-value metadata ``tracer``: a small JSON object with the trace's attributes
  (format version, stopped, snapshots, exception entry, events, root keywords,
  whether values were pickled).

Files of the first layout (``refs`` a list column, each side table a list column)
still load.

Writing: the node columns go to pyarrow as arrays over the arena's own memory (no
copy), Parquet-encoded PLAIN (no dictionary, no statistics: both cost a pass per
value for nothing on these columns) and compressed with LZ4 (see PARQUET_COMPRESSION).
A file is written beside its target and renamed over it: a trace loaded from the
old file may still point into its memory-mapped pages.

Loading reads the table with pyarrow (an Arrow file memory-mapped: uncompressed
buffers are the file's pages; Parquet pages are decoded into fresh buffers), checks
the columns and builds an arena that points into those Arrow buffers (see
`_core.trace_from_columns`): `trace.columns()` of a loaded trace are views of them,
nothing is copied after decoding.
"""

from __future__ import annotations

import json
import os
import secrets
from functools import cache

import numpy as np

from .. import _core
from ..views.table import table as table_of
from .codes import line_table
from .encode import TAG_NAMES, T_FALSE, T_FLOAT, T_INT, T_TRUE, ValueTable
from .encoded import NODE_COLUMNS, EncodedTrace, as_trace, decode_trace, encode_trace

__all__ = ["save", "load", "file_format", "to_table", "from_table", "node_arrays", "node_columns", "node_table",
           "side_tables", "read_blob", "blob_column", "read_table", "write_table",
           "require_pyarrow"]

META_KEY = b"tracer"
SIDE_TABLES = ("values", "pool", "codes", "metadata", "substituted")
INPUTS_COLUMN = "inputs"               # blob: the nodes' inputs as CSR (CSR_COLUMNS)
TABLES_COLUMN = "tables"               # blob: the side tables (SIDE_TABLES)
CSR_COLUMNS = ("ref_start", "refs")


def require_pyarrow():
    """pyarrow, or an ImportError saying how to install it."""
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise ImportError("saving and loading traces needs pyarrow: pip install "
                          "'tracer[arrow]' (or pip install pyarrow)") from None
    return pyarrow


@cache
def _types():
    pa = require_pyarrow()
    code_row = pa.struct([("qualname", pa.string()), ("name", pa.string()),
                          ("filename", pa.string()), ("firstlineno", pa.int32()),
                          ("flags", pa.int32()), ("bytecode_sha256", pa.string()),
                          ("ir_text", pa.large_string()), ("analysis", pa.large_string())])
    value_row = pa.struct([("tag", pa.uint8()), ("integer", pa.int64()), ("real", pa.float64()),
                           ("text", pa.large_string()), ("blob", pa.large_binary()),
                           ("type_name", pa.string()), ("repr_text", pa.large_string()),
                           ("items", pa.list_(pa.int32())), ("name", pa.string())])
    pair = pa.struct([("row", pa.int32()), ("value", pa.int32())])
    return {"codes": code_row, "values": value_row, "pool": pa.int32(), "metadata": pair,
            "substituted": pair}


@cache
def _schema():
    """The file's schema (without its metadata), built once."""
    pa = require_pyarrow()
    types = _types()
    fields = [pa.field(name, pa.from_numpy_dtype(dtype), nullable=False)
              for name, dtype in NODE_COLUMNS.items()]
    fields += [
        pa.field("value", pa.int32(), nullable=False),
        pa.field("value_kind", pa.dictionary(pa.int8(), pa.string()), nullable=False),
        pa.field("number", pa.float64()),
        pa.field("function", pa.dictionary(pa.int32(), pa.string())),
        pa.field("line", pa.int32()),
        pa.field("callee", pa.dictionary(pa.int32(), pa.string())),
    ]
    fields += [pa.field(INPUTS_COLUMN, pa.binary()), pa.field(TABLES_COLUMN, pa.binary())]
    return pa.schema(fields)


def _with_blob_types(schema, arrays):
    """`schema` with each blob column typed as its array is (binary, or large_binary
    for a blob of 2 GiB or more)."""
    for i, field in enumerate(schema):
        if field.name in (INPUTS_COLUMN, TABLES_COLUMN) and arrays[i].type != field.type:
            schema = schema.set(i, field.with_type(arrays[i].type))
    return schema


@cache
def _blob_schemas():
    """The schemas of the one-row tables in the blob columns: a list column each."""
    pa = require_pyarrow()
    types = _types()
    return {INPUTS_COLUMN: pa.schema([pa.field(name, pa.list_(pa.int32()), nullable=False)
                                      for name in CSR_COLUMNS]),
            TABLES_COLUMN: pa.schema([pa.field(name, pa.list_(types[name]), nullable=False)
                                      for name in SIDE_TABLES])}


def node_arrays(columns: dict) -> list:
    """The flat node columns (kind .. aux, value) as Arrow arrays over the same
    memory as `columns` (numpy arrays: an arena's `columns()` plus `value`)."""
    pa = require_pyarrow()
    return [pa.array(np.asarray(columns[name])) for name in (*NODE_COLUMNS, "value")]


def _inputs_column(columns: dict, n: int):
    """The `inputs` column: `ref_start` and `refs` (over the same memory, until
    serialised) in row 0's IPC stream."""
    pa = require_pyarrow()
    lists = [_one_list(pa, pa.array(np.asarray(columns[name])), pa.int32())
             for name in CSR_COLUMNS]
    return blob_column(pa.Table.from_arrays(lists, schema=_blob_schemas()[INPUTS_COLUMN]), n)


def node_table(columns: dict):
    """A trace table of the node columns alone (the flat ones, and `inputs`): what
    the columns of a trace cost to save."""
    pa = require_pyarrow()
    arrays = node_arrays(columns)
    arrays.append(_inputs_column(columns, len(arrays[0])))
    schema = _schema()
    schema = pa.schema([schema.field(name) for name in (*NODE_COLUMNS, "value", INPUTS_COLUMN)])
    return pa.Table.from_arrays(arrays, schema=_with_blob_types(schema, arrays))


def _one_list(pa, items, item_type):
    """A list column of one row holding `items`."""
    return pa.ListArray.from_arrays(pa.array(np.array([0, len(items)], dtype=np.int32)),
                                    items, type=pa.list_(item_type))


def blob_column(one_row, n: int):
    """A blob column of a file of n nodes: row 0 holds the one-row table `one_row`
    as an Arrow IPC stream, the other rows are null.  One flat column costs the
    Parquet writer and reader little per node; the same data as list columns of n
    rows cost more than all the node columns (see this module's docstring)."""
    pa = require_pyarrow()
    # Measured first, then written into a buffer of its size: a growing buffer would
    # copy the node columns in it several times over.
    measure = pa.MockOutputStream()
    with pa.ipc.new_stream(measure, one_row.schema) as writer:
        writer.write_table(one_row)
    blob = pa.allocate_buffer(measure.size())
    with pa.ipc.new_stream(pa.FixedSizeBufferWriter(blob), one_row.schema) as writer:
        writer.write_table(one_row)
    # 32-bit offsets while they fit: n + 1 of them, half the bytes of 64-bit ones.
    large = blob.size >= 2 ** 31 - 1
    offsets = np.full(n + 1, blob.size, dtype=np.int64 if large else np.int32)
    offsets[0] = 0
    valid = np.zeros((n + 7) // 8, dtype=np.uint8)
    valid[0] = 1
    return pa.Array.from_buffers(pa.large_binary() if large else pa.binary(), n,
                                 [pa.py_buffer(valid), pa.py_buffer(offsets), blob],
                                 null_count=n - 1)


def _first_value(column, name: str):
    """Row 0 of a binary column as a slice of its data buffer: its bytes where they
    are (a scalar's `as_buffer` copies them), so the node columns in `inputs` stay
    views of what pyarrow read (of a memory-mapped file's pages)."""
    pa = require_pyarrow()
    if column.type not in (pa.binary(), pa.large_binary()):
        raise ValueError(f"the trace file's {name} column is {column.type}, not binary")
    if len(column) == 0 or not column[0].is_valid:
        raise ValueError(f"the trace file's {name} column has no first row")
    _, offsets, data = column.buffers()
    width = 8 if column.type == pa.large_binary() else 4
    start, end = np.frombuffer(offsets, dtype=np.int64 if width == 8 else np.int32, count=2,
                               offset=column.offset * width).tolist()
    if not 0 <= start <= end <= data.size:
        raise ValueError(f"the trace file's {name} column is damaged")
    return data.slice(start, end - start)


def read_blob(table, name: str):
    """The one-row table in blob column `name` (INPUTS_COLUMN or TABLES_COLUMN) of a
    trace table, checked: its IPC stream, its offsets, text and schema."""
    pa = require_pyarrow()
    if name not in table.column_names:
        raise ValueError(f"not a tracer trace file: no column {name}")
    try:
        with pa.ipc.open_stream(_first_value(_one_chunk(table, name), name)) as reader:
            one_row = reader.read_all()
        one_row.validate(full=True)  # offsets in bounds, text UTF-8: then safe to read
    except (pa.ArrowException, OSError, ValueError, TypeError) as exc:
        raise ValueError(f"the trace file's {name} column is damaged ({exc})") from None
    return _checked(one_row, name)


def _checked(one_row, name: str):
    """`one_row`, if it has the columns of blob `name`'s schema, of their types."""
    for field in _blob_schemas()[name]:
        if field.name not in one_row.column_names:
            raise ValueError(f"the trace file's {name} column has no {field.name} table")
        if one_row.schema.field(field.name).type != field.type and not _older_values(
                one_row.schema.field(field.name).type, field):
            raise ValueError(f"the trace file's {field.name} table is not a "
                             f"{field.type} column")
        if one_row.num_rows < 1 or not one_row[field.name][0].is_valid:
            raise ValueError(f"the trace file's {field.name} table is missing")
    return one_row


def _older_values(found, field) -> bool:
    """Whether `found` is the value table's type before callables' names were saved:
    the current struct without its last field, `name`."""
    if field.name != "values":
        return False
    pa = require_pyarrow()
    struct = field.type.value_type
    older = pa.list_(pa.struct([struct.field(k) for k in range(struct.num_fields - 1)]))
    return found == older


def side_tables(table):
    """The side tables of a trace table: a one-row pyarrow Table with list columns
    values, pool, codes, metadata and substituted."""
    if TABLES_COLUMN not in table.column_names and all(
            c in table.column_names for c in SIDE_TABLES):
        # Files of the first layout held each side table as a list column.
        return _checked(table.select(list(SIDE_TABLES)).slice(0, 1), TABLES_COLUMN)
    return read_blob(table, TABLES_COLUMN)


def _line_column(enc: EncodedTrace, pa):
    """Each node's source line (null where none: the root, parameters), looked up
    in one pass over the nodes in the line tables of all codes laid end to end."""
    code = np.asarray(enc.columns["code"])
    offset = np.asarray(enc.columns["offset"])
    tables = [line_table(row) for row in enc.codes]
    sizes = np.array([len(t) for t in tables] + [0], dtype=np.int32)
    starts = np.zeros(len(sizes), dtype=np.int32)
    np.cumsum(sizes[:-1], out=starts[1:])
    flat = np.concatenate([*tables, np.array([-1], dtype=np.int32)])
    # Code -1 (the root) reads the last, empty table; an offset outside its code's
    # table reads the final -1.
    which = np.where(code < 0, len(tables), code)
    at = starts[which] + offset
    at[(offset < 0) | (offset >= sizes[which])] = len(flat) - 1
    line = flat[at]
    return pa.array(line, mask=line < 0)


def to_table(enc: EncodedTrace, callee=None):
    """The pyarrow Table of an encoded trace (the file's one table).  `callee`:
    `(ids, names)` of the trace's callee column (`Table.ids_and_names("callee")`,
    id 0 for nodes that are not calls); without it the column is null."""
    pa = require_pyarrow()
    cols = enc.columns
    n = len(cols["kind"])
    types = _types()
    arrays = node_arrays(cols)
    value = arrays[-1]
    v = enc.values
    tags = np.asarray(v.tag, dtype=np.int8)
    # Per node, by its value entry: Arrow's take gathers the entry columns (and
    # their nulls) in one pass each.
    arrays.append(pa.DictionaryArray.from_arrays(pa.array(tags).take(value), _tag_names()))
    numeric = np.isin(tags, (T_INT, T_FLOAT, T_TRUE, T_FALSE))
    numbers = np.where(tags == T_FLOAT, np.asarray(v.real, dtype=np.float64),
                       np.asarray(v.integer, dtype=np.float64))
    numbers[tags == T_TRUE] = 1.0
    numbers[tags == T_FALSE] = 0.0
    arrays.append(pa.array(numbers, mask=~numeric).take(value))
    code = np.asarray(cols["code"])
    arrays.append(pa.DictionaryArray.from_arrays(
        pa.array(code, mask=code < 0),
        pa.array([c["qualname"] for c in enc.codes] or [""], type=pa.string())))
    arrays.append(_line_column(enc, pa))
    arrays.append(_callee_column(pa, n, callee))
    values_struct = pa.StructArray.from_arrays(
        [pa.array(v.tag, pa.uint8()), pa.array(v.integer, pa.int64()),
         pa.array(v.real, pa.float64()), _sparse_column(pa, v, "text", pa.large_string()),
         _sparse_column(pa, v, "blob", pa.large_binary()),
         _sparse_column(pa, v, "type_name", pa.string()),
         _sparse_column(pa, v, "repr_text", pa.large_string()),
         _sparse_column(pa, v, "items", pa.list_(pa.int32())),
         _sparse_column(pa, v, "name", pa.string())],
        fields=list(types["values"]))
    arrays.append(_inputs_column(cols, n))
    side = [_one_list(pa, values_struct, types["values"]),
            _one_list(pa, pa.array(enc.pool, pa.int32()), pa.int32()),
            _one_list(pa, pa.array(enc.codes, types["codes"]), types["codes"])]
    for name in ("metadata", "substituted"):
        pairs = [{"row": r, "value": e} for r, e in getattr(enc, name)]
        side.append(_one_list(pa, pa.array(pairs, types[name]), types[name]))
    arrays.append(blob_column(pa.Table.from_arrays(side, schema=_blob_schemas()[TABLES_COLUMN]),
                              n))
    schema = _with_blob_types(_schema(), arrays)
    if enc.timing is not None:
        for name, arr in _timing_columns(pa, enc.timing, n).items():
            schema = schema.append(pa.field(name, pa.int64()))
            arrays.append(arr)
    schema = schema.with_metadata({META_KEY: json.dumps(enc.info).encode()})
    return pa.Table.from_arrays(arrays, schema=schema)


TIMING_COLUMNS = ("start_ns", "end_ns")


def _timing_columns(pa, timing, n: int) -> dict:
    """The timing table as per-row columns, null but at the timed calls' rows."""
    out = {}
    rows = timing["row"]
    timed = np.zeros(n, dtype=bool)
    timed[rows] = True
    for name, field in zip(TIMING_COLUMNS, ("start", "end")):
        col = np.zeros(n, dtype=np.int64)
        col[rows] = timing[field]
        out[name] = pa.array(col, mask=~timed)
    return out


def _timing_of(table, columns: dict):
    """The timing table of a file's start_ns/end_ns columns (None without them)."""
    if TIMING_COLUMNS[0] not in table.column_names:
        return None
    if TIMING_COLUMNS[1] not in table.column_names:
        raise ValueError("the trace file has a start_ns column but no end_ns")
    start = _one_chunk(table, "start_ns")
    end = _one_chunk(table, "end_ns")
    timed = start.is_valid().to_numpy(zero_copy_only=False)
    if not np.array_equal(timed, end.is_valid().to_numpy(zero_copy_only=False)):
        raise ValueError("the trace file's start_ns and end_ns are null at different rows")
    rows = np.flatnonzero(timed).astype(np.int32)
    out = np.empty(len(rows), dtype=_core.TIMING_DTYPE)
    out["row"] = rows
    out["parent"] = _core.timing_parents(rows, columns["aux"])
    out["start"] = start.fill_null(0).to_numpy()[rows]
    out["end"] = end.fill_null(0).to_numpy()[rows]
    return out


def _sparse_column(pa, v: ValueTable, name: str, kind):
    """Value-table column `name` as an Arrow array: from the encoder's {entry: item}
    when it has one (the items, then a gather that leaves the other entries null: a
    pass in C instead of converting a Python None per entry), else from the list."""
    column = getattr(v, name)
    sparse = v.sparse.get(name) if v.sparse is not None else None
    if sparse is None or len(sparse) * 4 > len(column):
        return pa.array(column, kind)
    where = np.full(len(column), -1, dtype=np.int32)
    where[np.fromiter(sparse.keys(), dtype=np.int64, count=len(sparse))] = np.arange(
        len(sparse), dtype=np.int32)
    return pa.array(list(sparse.values()), kind).take(pa.array(where, mask=where < 0))


def _callee_column(pa, n: int, callee):
    """The callee names as a dictionary column over the callee ids (null: no call)."""
    if callee is None:
        return pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), pa.array([""]))
    ids, names = callee
    ids = np.asarray(ids, dtype=np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(ids, mask=ids == 0),
                                          pa.array([str(x) for x in names], type=pa.string()))


@cache
def _tag_names():
    return require_pyarrow().array(TAG_NAMES, type=require_pyarrow().string())


def _one_chunk(table, name: str):
    # A column in several chunks (a file written in record batches) is combined
    # once; pyarrow reads this module's files as one chunk per column.
    col = table.column(name)
    if col.num_chunks == 1:
        return col.chunk(0)
    return require_pyarrow().concat_arrays(col.chunks)


def _numbers(arr, name: str) -> np.ndarray:
    # A numpy view of a column's Arrow buffer (a copy only for a type numpy cannot
    # view, which `arena_column` then converts or refuses).
    if arr.null_count:
        raise ValueError(f"the trace file has nulls in column {name}, which has none")
    return arr.to_numpy(zero_copy_only=False)


def node_columns(table) -> tuple[dict, dict]:
    """The node columns of a trace table (kind .. aux, ref_start, refs, value) as
    numpy views of its Arrow buffers (a loaded arena points into them), and the
    Arrow arrays they view."""
    missing = [c for c in (*NODE_COLUMNS, "value") if c not in table.column_names]
    if missing:
        raise ValueError(f"not a tracer trace file: no column {', '.join(missing)}")
    arrays = {name: _one_chunk(table, name) for name in (*NODE_COLUMNS, "value")}
    if "refs" in table.column_names:  # the first layout: refs as a list column
        refs = _one_chunk(table, "refs")
        if not hasattr(refs, "offsets"):
            raise ValueError(f"the trace file's refs column is {refs.type}, not a list")
        arrays["ref_start"], arrays["refs"] = refs.offsets, refs.values
    else:
        inputs = read_blob(table, INPUTS_COLUMN)
        for name in CSR_COLUMNS:
            arrays[name] = _one_chunk(inputs, name)[0].values
    columns = {name: _numbers(arr, name) for name, arr in arrays.items()}
    offsets = columns["ref_start"]
    if len(offsets):  # a sliced list array's offsets are rebased (a copy)
        if offsets[0] != 0:
            columns["ref_start"] = offsets - offsets[0]
        columns["refs"] = columns["refs"][offsets[0]:offsets[-1]]
    return columns, arrays


def from_table(table) -> EncodedTrace:
    """The encoded trace a table written by `to_table` holds."""
    meta = table.schema.metadata or {}
    if META_KEY not in meta:
        raise ValueError("not a tracer trace file (its Parquet metadata has no 'tracer' entry)")
    try:
        info = json.loads(meta[META_KEY])
    except ValueError:
        raise ValueError("the trace file's 'tracer' metadata is not JSON") from None
    if not isinstance(info, dict):
        raise ValueError("the trace file's 'tracer' metadata is not a JSON object")
    tables = side_tables(table)
    columns, arrays = node_columns(table)

    def side(name):
        arr = _one_chunk(tables, name)
        if not arr[0].is_valid:
            raise ValueError(f"the trace file's {name} table is missing")
        return arr[0].values

    vals = side("values")
    table_v = ValueTable(
        tag=vals.field("tag").to_pylist(), integer=vals.field("integer").to_pylist(),
        real=vals.field("real").to_pylist(), text=vals.field("text").to_pylist(),
        blob=vals.field("blob").to_pylist(), type_name=vals.field("type_name").to_pylist(),
        repr_text=vals.field("repr_text").to_pylist(),
        # Files saved before callables' names were have no name field.
        name=vals.field("name").to_pylist() if vals.type.get_field_index("name") >= 0 else [],
        items=vals.field("items").to_pylist())
    return EncodedTrace(
        columns=columns, values=table_v, pool=side("pool").to_pylist(),
        codes=side("codes").to_pylist(),
        metadata=[(p["row"], p["value"]) for p in side("metadata").to_pylist()],
        substituted=[(p["row"], p["value"]) for p in side("substituted").to_pylist()],
        info=info, source=arrays, timing=_timing_of(table, columns))


# What a file's suffix names: Arrow IPC files, Parquet files.  Other suffixes are
# refused unless `format` is given (a trace.csv that holds Parquet misleads).
ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")
PARQUET_SUFFIXES = (".parquet", ".pq")
FORMATS = ("parquet", "arrow")
# Default codecs, chosen by measurement (bench/persist.py, bench/RESULTS.md): with
# LZ4 the node columns save at 12 M nodes/s and load at 22 M nodes/s as Parquet;
# zstd makes files about half as large (4-5 bytes per node for the node columns,
# against 8-9) but saves below 10 M nodes/s; snappy loads at half LZ4's rate; no
# codec loads fastest but writes 37-40 bytes per node.  Parquet's LZ4 is LZ4_RAW,
# which pyarrow, pandas, DuckDB and Polars read.
PARQUET_COMPRESSION = "lz4"
ARROW_COMPRESSION = "lz4"
# Parquet dictionary encoding only for the columns that are Arrow dictionaries (it
# is their cheap path; elsewhere it costs a hash per value for a file a little
# smaller); no statistics (min/max per column: a pass per value, and a file is one
# row group, so no reader could skip anything by them).
_DICTIONARY_COLUMNS = ["function", "value_kind", "callee"]


def file_format(path, format: str | None) -> str:
    """The format to write `path` in: the one its suffix names, or `format`; an error
    when they disagree or when neither says."""
    if format is not None and format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS} (or None: by the file's suffix), "
                         f"not {format!r}")
    name = os.fspath(path).lower()
    named = ("arrow" if name.endswith(ARROW_SUFFIXES)
             else "parquet" if name.endswith(PARQUET_SUFFIXES) else None)
    if named is None and format is None:
        suffix = os.path.splitext(name)[1]
        raise ValueError(f"cannot tell the file format from {os.fspath(path)!r}"
                         f"{f' (suffix {suffix})' if suffix else ' (no suffix)'}: name it "
                         f"*.parquet (Parquet) or *.arrow, *.feather, *.ipc (Arrow IPC), "
                         f"or pass format='parquet' or 'arrow'"
                         + ("; for a timeline (Chrome trace-event JSON) use "
                            "tracer.export.chrome.write" if name.endswith(".json") else ""))
    if named is not None and format is not None and named != format:
        raise ValueError(f"{os.fspath(path)!r} names a {named} file but format={format!r}: "
                         f"change the suffix or the format")
    return format or named


def save(root_or_trace, path, *, values: str = "encode", format: str | None = None,
         compression: str | None = None) -> None:
    """Save a trace (a node of it, or the Trace) to `path` as one file.

    The format is the one the name's suffix says: Apache Parquet for .parquet (or
    .pq), an Arrow IPC file for .arrow, .feather or .ipc (larger, faster to load,
    memory-mapped on load); `format="parquet"` or `"arrow"` for another name.  Any
    other suffix is refused (ValueError), as is a format the suffix contradicts.
    Both hold the same table (see this module's docstring) and `load` reads either.
    Both are compressed with LZ4 unless `compression` names another codec
    ("zstd": smaller and slower; "none": an Arrow file whose columns a loaded trace
    then reads straight from the mapped file).

    `values="encode"` (the default) stores values losslessly where their type allows
    (None, bool, int, float, complex, str, bytes, numpy scalars and arrays, and
    tuples, lists, dicts and sets of those) and as display text plus type name
    otherwise.  `values="pickle"` pickles each value instead: loading such a file
    then needs `allow_pickle=True`, since unpickling can run any code.
    """
    require_pyarrow()
    fmt = file_format(path, format)
    trace = as_trace(root_or_trace)
    callee = table_of(trace).ids_and_names("callee")
    write_table(to_table(encode_trace(trace, values), callee), path, fmt, compression)


def write_table(table, path, format: str = "parquet", compression: str | None = None) -> None:
    """Write a table made by `to_table` as a Parquet or an Arrow IPC file.

    The file is written under a temporary name beside `path` and renamed over it, so
    a trace loaded from the old file (whose columns may be its memory-mapped pages)
    keeps its pages, and no half-written file is left behind."""
    pa = require_pyarrow()
    name = os.fspath(path)
    head, tail = os.path.split(name)
    temporary = os.path.join(head, f".{tail}.{secrets.token_hex(6)}.tmp")
    try:
        if format == "arrow":
            codec = compression or ARROW_COMPRESSION
            options = pa.ipc.IpcWriteOptions(compression=None if codec == "none" else codec)
            with pa.OSFile(temporary, "wb") as sink:
                with pa.ipc.new_file(sink, table.schema, options=options) as writer:
                    writer.write_table(table)
        else:
            import pyarrow.parquet as pq

            pq.write_table(table, temporary, compression=compression or PARQUET_COMPRESSION,
                           row_group_size=max(table.num_rows, 1),
                           use_dictionary=_DICTIONARY_COLUMNS, write_statistics=False)
        os.replace(temporary, name)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def read_table(path):
    """The table of a trace file, Parquet or Arrow IPC (told apart by its first bytes).

    An Arrow file is memory-mapped: its uncompressed buffers are the file's pages
    (the mapping lives as long as they do).  A Parquet file is read in one go
    (pre-buffered) and its columns decoded on pyarrow's threads."""
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
                table = pa.ipc.open_file(source).read_all()
            table.validate()  # buffers as large as the lengths claim (a crafted file)
            return table
        import pyarrow.parquet as pq

        # ParquetFile, not read_table: read_table sets up a dataset scan, several times
        # the cost of reading a small trace.
        parquet = pq.ParquetFile(name, memory_map=True, pre_buffer=True)
        try:
            return parquet.read(use_threads=True)
        finally:
            parquet.close()
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
