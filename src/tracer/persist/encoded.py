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

__all__ = ["EncodedTrace", "encode_trace", "decode_trace", "as_trace", "FORMAT_VERSION",
           "NODE_COLUMNS"]

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


def as_trace(root_or_trace):
    """The Trace of a node view, or the Trace itself; a clear error for anything else."""
    trace = getattr(root_or_trace, "trace", root_or_trace)
    if not isinstance(trace, _core.Trace):
        raise TypeError("expected a node of a trace (what tracer.track returns) or a "
                        f"tracer.Trace, got {type(root_or_trace).__name__}")
    return trace


def encode_trace(trace, values: str = "encode") -> EncodedTrace:
    """Encode a finished trace (`values="pickle"` pickles each value instead)."""
    if values not in VALUES_MODES:
        raise ValueError(f"values must be one of {VALUES_MODES}, not {values!r}")
    n = len(trace)
    meta = [(row, d) for row, d in trace.metadata.items() if d]
    subst = list(trace.substituted_operators.items())
    objects = trace.values()
    objects += trace.pool
    objects += [d for _, d in meta]
    objects += [fn for _, fn in subst]
    objects.append(trace.exception)
    table, index = encode_values(objects, use_pickle=values == "pickle")
    npool = len(trace.pool)
    at = n
    pool = index[at:at + npool]
    at += npool
    meta_entries = index[at:at + len(meta)]
    at += len(meta)
    subst_entries = index[at:at + len(subst)]
    exception = index[-1] if trace.exception is not None else -1
    columns = {name: col for name, col in trace.columns().items()}
    columns["value"] = np.asarray(index[:n], dtype=np.int32)
    return EncodedTrace(
        columns=columns, values=table, pool=pool,
        codes=[describe_code(c) for c in trace.codes],
        metadata=[(row, e) for (row, _), e in zip(meta, meta_entries)],
        substituted=[(row, e) for (row, _), e in zip(subst, subst_entries)],
        info={"format": FORMAT_VERSION, "stopped": bool(trace.stopped),
              "snapshots": bool(trace.snapshots), "exception": exception,
              "events": int(trace.events), "root_keywords": list(trace.root_keywords or ()),
              "pickled": values == "pickle",
              "python": sys.version.split()[0]})


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
    metadata = {int(row): entry(e) for row, e in enc.metadata}
    if not all(isinstance(d, dict) for d in metadata.values()):
        raise ValueError("the node metadata is damaged: an entry is no dict")
    cols = {name: np.ascontiguousarray(enc.columns[name], dtype=dtype)
            for name, dtype in NODE_COLUMNS.items()}
    exception = info.get("exception", -1)
    return _core.trace_from_columns(
        cols["kind"], cols["flags"], cols["parent"], cols["code"], cols["offset"], cols["aux"],
        np.ascontiguousarray(enc.columns["ref_start"], dtype=np.int32),
        np.ascontiguousarray(enc.columns["refs"], dtype=np.int32),
        np.ascontiguousarray(enc.columns["value"], dtype=np.int32),
        objects, [entry(e) for e in enc.pool], codes, metadata,
        {int(row): entry(e) for row, e in enc.substituted},
        bool(info.get("stopped")), bool(info.get("snapshots")),
        entry(exception) if exception >= 0 else None, int(info.get("events", 0)),
        tuple(str(k) for k in info.get("root_keywords", ())))
