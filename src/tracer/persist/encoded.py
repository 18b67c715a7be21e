"""A trace as plain data (`EncodedTrace`): its columns, value table, code table and
attributes.  Files (parquet.py) and pickles (pickling.py) are two serialisations of
this one encoding, so both load the same way and neither runs code on load (unless
values were pickled by explicit choice)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np

from .. import _core
from .codes import LoadedCode, describe_code
from .encode import PickleRefused, ValueTable, decode_values, encode_values

__all__ = ["EncodedTrace", "encode_trace", "decode_trace", "as_trace", "arena_column",
           "FORMAT_VERSION", "NODE_COLUMNS"]

FORMAT_VERSION = 1
# The arena's node columns and their dtypes (ref_start/refs: CSR of the inputs).
NODE_COLUMNS = {"kind": np.uint8, "flags": np.uint8, "parent": np.int32, "code": np.int32,
                "offset": np.int32, "aux": np.int32}
VALUES_MODES = ("encode", "pickle")


@dataclass
class EncodedTrace:
    """One trace as data.  `columns` holds the node columns plus `ref_start`, `refs`
    and `value` (each row's entry in `values`, -1 for none)."""

    columns: dict[str, np.ndarray]
    values: ValueTable
    pool: list[int]                       # the entries of the constants negative refs name
    codes: list[dict]                     # describe_code rows, index = code column
    metadata: list[tuple[int, int]]       # (row, entry of its metadata dict)
    substituted: list[tuple[int, int]]    # (row, entry of the operator substituted)
    info: dict = field(default_factory=dict)  # stopped, snapshots, exception, events, ...
    source: object = None                 # what the columns were read from (a pyarrow Table)
    # Context(timing=True): the core's timing table (`_core.timing_table`), else None.
    timing: np.ndarray | None = None


def as_trace(root_or_trace):
    """The Trace of a node view, or the Trace itself; a clear error for anything else."""
    trace = getattr(root_or_trace, "trace", root_or_trace)
    if not isinstance(trace, _core.Trace):
        raise TypeError("expected a node of a trace (what tracer.track returns) or a "
                        f"tracer.views.Trace, got {type(root_or_trace).__name__}")
    return trace


def encode_trace(trace, values: str = "encode") -> EncodedTrace:
    """Encode a finished trace (`values="pickle"` pickles each value instead)."""
    if values not in VALUES_MODES:
        raise ValueError(f"values must be one of {VALUES_MODES}, not {values!r}")
    n = len(trace)
    # (a substitution's row kept without a dict gives a fresh {"substituted": f})
    meta = [(row, d) for row, d in trace.metadata_items() if d]
    subst = list(trace.substituted_operators.items())
    objects = trace.values()
    objects += trace.pool
    objects += [d for _, d in meta]
    objects += [fn for _, fn in subst]
    literals = [_float_consts(c) for c in trace.codes]
    for consts in literals:
        objects += consts
    objects.append(trace.exception)
    table, entries = encode_values(objects, use_pickle=values == "pickle")
    index = entries[n:].tolist()  # the entries after the rows' (pool, metadata, ...)
    npool = len(trace.pool)
    at = 0
    pool = index[at:at + npool]
    at += npool
    meta_entries = index[at:at + len(meta)]
    at += len(meta)
    subst_entries = index[at:at + len(subst)]
    at += len(subst)
    literal_entries = []
    for consts in literals:
        literal_entries.append(index[at:at + len(consts)])
        at += len(consts)
    exception = index[-1] if trace.exception is not None else -1
    columns = {name: col for name, col in trace.columns().items()}
    columns["value"] = entries[:n].astype(np.int32)
    return EncodedTrace(
        columns=columns, values=table, pool=pool,
        codes=[describe_code(c) for c in trace.codes],
        metadata=[(row, e) for (row, _), e in zip(meta, meta_entries)],
        substituted=[(row, e) for (row, _), e in zip(subst, subst_entries)],
        timing=_core.timing_table(trace),
        info={"format": FORMAT_VERSION, "stopped": bool(trace.stopped),
              # Pickled one by one, values lose their identity (a return's value is
              # no longer its operand's object): copies, as a snapshot policy keeps.
              "snapshots": bool(trace.snapshots) or values == "pickle",
              "values_kept": trace.values_kept,
              "exception": exception,
              "events": int(trace.events), "root_keywords": list(trace.root_keywords or ()),
              "pickled": values == "pickle",
              # Per code, the entries of its float literals (see LoadedCode.co_consts).
              "float_consts": literal_entries,
              "python": sys.version.split()[0]})


def _float_consts(code) -> list:
    """A code's float constants, the objects themselves: backprop and the tape tell a
    literal from a value a row produced by identity."""
    return [c for c in getattr(code, "co_consts", ()) if type(c) is float]


def decode_trace(enc: EncodedTrace, allow_pickle: bool = False):
    """A Trace rebuilt from `enc`.  Raises ValueError for data that is no trace (and
    PickleRefused for pickled values without `allow_pickle`)."""
    info = enc.info
    if info.get("format") != FORMAT_VERSION:
        raise ValueError(f"trace format {info.get('format')!r}, this tracer reads format "
                         f"{FORMAT_VERSION}")
    try:
        objects = decode_values(enc.values, allow_pickle=allow_pickle)
    except PickleRefused:
        raise
    except (IndexError, KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"the value table is damaged ({type(exc).__name__}: {exc})") from None

    def entry(i: int):
        if not 0 <= i < len(objects):
            raise ValueError(f"value entry {i} does not exist (the table has {len(objects)})")
        return objects[i]

    try:
        codes = [LoadedCode(row) for row in enc.codes]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"the code table is damaged ({type(exc).__name__}: {exc})") from None
    try:
        metadata = {int(row): entry(e) for row, e in enc.metadata}
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the node metadata is damaged ({exc})") from None
    if not all(isinstance(d, dict) for d in metadata.values()):
        raise ValueError("the node metadata is damaged: an entry is no dict")
    try:
        cols = {name: arena_column(enc.columns[name], dtype, name)
                for name, dtype in (*NODE_COLUMNS.items(), ("ref_start", np.int32),
                                    ("refs", np.int32), ("value", np.int32))}
        exception = int(info.get("exception", -1))
        events = int(info.get("events", 0))
        keywords = tuple(str(k) for k in info.get("root_keywords", ()))
        pool = [entry(e) for e in enc.pool]
        literals = info.get("float_consts") or [[] for _ in codes]
        if len(literals) != len(codes):
            raise ValueError(f"{len(literals)} lists of float constants for {len(codes)} codes")
        for code, entries in zip(codes, literals):
            code.co_consts = tuple(entry(int(e)) for e in entries)
        substituted = {int(row): entry(e) for row, e in enc.substituted}
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"the trace's columns or attributes are damaged "
                         f"({type(exc).__name__}: {exc})") from None
    trace = _core.trace_from_columns(
        cols["kind"], cols["flags"], cols["parent"], cols["code"], cols["offset"], cols["aux"],
        cols["ref_start"], cols["refs"], cols["value"], objects, pool, codes, metadata,
        substituted, bool(info.get("stopped")), bool(info.get("snapshots")),
        entry(exception) if exception >= 0 else None, events, keywords, enc.source,
        _values_kept(info))
    if enc.timing is not None:
        try:
            _core.set_timing_table(trace, enc.timing)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the trace's timing is damaged ({exc})") from None
    return trace


def _values_kept(info: dict) -> str | None:
    """The value policy a saved trace was recorded with (files before it was saved:
    None, "keep")."""
    kept = info.get("values_kept")
    if kept is not None and not isinstance(kept, str):
        raise ValueError(f"the trace's attributes are damaged (values_kept {kept!r})")
    return kept


def arena_column(col, dtype, name: str) -> np.ndarray:
    """`col` as the arena reads a column: a 1-d, C-contiguous, aligned array of
    `dtype` in native byte order.  The array itself when it already is one (a loaded
    trace then points into it: no copy); otherwise a converted copy, refusing values
    the arena's type cannot hold (a cast would wrap them into other, valid-looking
    rows)."""
    arr = np.asarray(col)
    if arr.ndim != 1:
        raise ValueError(f"column {name} has {arr.ndim} dimensions, not 1")
    if arr.dtype != dtype:
        if arr.dtype.kind not in "iub":
            raise ValueError(f"column {name} holds {arr.dtype}, not integers")
        if (arr.dtype.kind != "b" and len(arr)
                and not np.can_cast(arr.dtype, dtype)):
            info = np.iinfo(dtype)
            if arr.min() < info.min or arr.max() > info.max:
                raise ValueError(f"column {name} holds values outside {np.dtype(dtype)}")
    return np.require(arr, dtype=dtype, requirements=["C", "A"])
