"""Columns that grow past the size where they become their own mappings keep their rows."""

import numpy as np

import tracer
from tracer._core import NodeKind, spare_columns_limit

N = 120_000   # ~720k rows: the values column passes 4 MiB and grows several times


def loop(n):
    total = 0
    i = 0
    while i < n:
        total += i * 3
        i += 1
    return total


def test_big_columns_keep_their_rows_when_they_grow():
    old = spare_columns_limit(0)   # fresh columns: every growth step runs
    try:
        root = tracer.track(loop, N)
    finally:
        spare_columns_limit(old)
    assert root.value == loop(N)
    trace = root.trace
    assert len(trace) > 600_000
    columns = trace.columns()
    # The rows of `i * 3`: the first operator row that reads the constant 3.
    first = next(r for r in range(len(trace))
                 if trace.kind(r) == NodeKind.K_PRIMITIVE and ("const", 3) in trace.refs(r))
    rows = np.flatnonzero((columns["offset"] == trace.offset(first))
                          & (columns["kind"] == NodeKind.K_PRIMITIVE))
    # Every product in order: rows written before each growth were carried over.
    assert [trace.value(int(r)) for r in rows] == [i * 3 for i in range(N)]
    assert (columns["parent"][1:] < np.arange(1, len(trace))).all()
    tracer.validate(root)
