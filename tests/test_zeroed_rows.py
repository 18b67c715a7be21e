"""Rows the op loop writes without storing their aux and flags (arena.pxi's zcap).

A primitive's or special op's row has aux 0 and flags 0, and every row the op
loop writes has flags 0: the loop (`_run_ops`) and the one-row writers
(`_single_row`, `_straight_ops`, `_bool_row` through `_commit_row`) store neither,
relying on `Trace.open_rows` / `_row_room` to hand them rows whose two columns
were zeroed ahead.  Columns that held another trace's rows before (spare columns),
columns grown by realloc (a heap block that held anything) and runs longer than
one zeroed chunk must all give the trace the per-row writers give, column by
column.
"""

import gc

import pytest

import tracer

from helpers import assert_same_trace, track_both, ReturnHook


def _callee(a, b, c):
    if a > b:
        return c
    return a


def dirty(n):
    # Rows whose aux and flags are not 0: call rows (aux: their subtree's end),
    # arguments (aux: their position), jumps (aux: where they went).
    total = 0
    for i in range(n):
        total += _callee(i, 3, i)
    return total


def loop(x, n):
    r = 0.0
    i = 0
    while i < n:
        r += x ** i
        i += 1
    return r


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def stores(xs):
    out = [0] * len(xs)
    for i, v in enumerate(xs):
        out[i] = v * 2          # a no-result row (STORE_SUBSCR)
        if v > 3:
            out[i] -= 1
    return out


CALLS = [
    (loop, (1.0001, 3000)),     # 18,000 rows: runs across several zeroed chunks
    (fib, (14,)),               # one-row segments: _single_row, _straight_ops
    (stores, (list(range(2000)),)),
]


@pytest.fixture
def spare():
    """The default spare limit, nothing held; restored afterwards."""
    tracer.api._state.last = None
    gc.collect()
    old = tracer.views.spare_columns_limit(0)
    tracer.views.spare_columns_limit(64 << 20)
    yield
    tracer.views.spare_columns_limit(0)
    tracer.views.spare_columns_limit(old)


def _leave_dirty_columns(size):
    # A trace full of rows with non-zero aux and flags, freed: its columns are the
    # spare set the next trace takes (or, with no spare kept, heap blocks malloc
    # hands out again).
    held = [tracer.track(dirty, size)]
    cols = held[0].trace.columns()
    assert (cols["aux"] != 0).sum() > len(held[0].trace) // 4
    del cols
    held.clear()
    tracer.api._state.last = None
    gc.collect()


@pytest.mark.parametrize("call", CALLS, ids=lambda c: c[0].__name__)
def test_rows_in_reused_columns_that_held_other_rows(spare, call):
    f, args = call
    _leave_dirty_columns(6000)
    assert tracer.views.spare_columns_bytes() > 0
    fast, slow = track_both(f, args, ReturnHook())   # the first takes the spare set
    assert fast.value == slow.value == f(*args)
    assert_same_trace(fast, slow, fewer_events=True)   # (a hook keeps events on)


@pytest.mark.parametrize("call", CALLS, ids=lambda c: c[0].__name__)
def test_rows_in_columns_grown_from_reused_heap_blocks(spare, call):
    f, args = call
    tracer.views.spare_columns_limit(0)
    _leave_dirty_columns(3000)                        # freed to malloc, not kept
    fast, slow = track_both(f, args, ReturnHook(), fresh=True)
    assert fast.value == slow.value == f(*args)
    assert_same_trace(fast, slow, fewer_events=True)   # (a hook keeps events on)


def test_a_second_trace_into_the_same_spare_columns(spare):
    # The same columns three times: each trace's rows written over the last one's.
    _leave_dirty_columns(4000)
    first = tracer.track(loop, 1.0001, 2500)
    expected = {name: col.tolist() for name, col in first.trace.columns().items()}
    rows = len(first.trace)
    del first
    tracer.api._state.last = None
    gc.collect()
    _leave_dirty_columns(4000)
    again = tracer.track(loop, 1.0001, 2500)
    cols = again.trace.columns()
    for name in ("kind", "flags", "parent", "offset", "aux", "ref_start", "refs"):
        assert cols[name].tolist() == expected[name], name
    assert rows == len(again.trace)
    del cols
    tracer.validate(again)
