"""Pickling traces: `pickle.dumps(root)` carries the trace as its `EncodedTrace`
(columns, value table, code table), so unpicklable values (functions, frames,
open files) do not stop a trace from crossing a process boundary; they arrive as
their display text, as in a saved file.  Node views pickle as (trace, row)."""

from __future__ import annotations

from ..api import HOST
from .encoded import decode_trace, encode_trace

__all__ = ["reduce_trace", "restore_trace"]


def reduce_trace(trace):
    """Trace.__reduce__: rebuilt by `restore_trace` from its encoding."""
    return restore_trace, (encode_trace(trace),)


def restore_trace(encoded):
    """The trace a pickle carried (values were encoded, never pickled: no opt-in needed)."""
    return decode_trace(encoded, allow_pickle=False)


HOST.reduce = reduce_trace   # Trace.__reduce__
