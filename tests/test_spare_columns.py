"""Spare columns: the buffers of a freed trace are kept for the next one.

A traced program pays a page fault for every 4 KiB of fresh trace memory; keeping
the columns of the last freed trace (up to `tracer.views.spare_columns_limit()` bytes)
lets repeated tracing reuse memory it has already touched.  These tests check that
a trace recorded into reused columns is exactly the trace recorded into fresh
ones, what a smaller trace does with a big trace's columns, and the limit.

Every trace made here is validated.
"""

import gc

import pytest

import tracer

from helpers import lazy_free_bytes


def loop(n):
    total = 0.0
    for i in range(n):
        total += i * 0.5
        if i % 3 == 0:
            total -= 1
    return total


def nothing():
    return None


def comparable(value):
    # Numbers compare by value; other objects (the loop's range iterator) are new
    # in every run, so only their type can match.
    return value if isinstance(value, (int, float, type(None))) else type(value)


def snapshot(root):
    """Everything the columns hold, row by row."""
    t = root.trace
    return [(t.kind(i), t.flags(i), t.parent(i), t.offset(i), t.aux(i), t.end(i),
             comparable(t.value(i)), [("const", comparable(r[1])) if isinstance(r, tuple) else r
                                      for r in t.refs(i)])
            for i in range(len(t))]


def record(f, *args):
    root = tracer.track(f, *args)
    tracer.validate(root)
    return root


def drop(root_holder):
    """Free a trace: the caller's reference and the one `last_trace()` keeps."""
    root_holder.clear()
    tracer.api._state.last = None


@pytest.fixture
def limit():
    """Run with the default limit and no spare columns held; restore afterwards."""
    tracer.api._state.last = None     # earlier tests' traces are freed now, not midway
    gc.collect()
    old = tracer.views.spare_columns_limit(0)
    tracer.views.spare_columns_limit(64 << 20)
    yield
    tracer.views.spare_columns_limit(0)
    tracer.views.spare_columns_limit(old)


def test_a_freed_trace_leaves_its_columns_as_spare(limit):
    assert tracer.views.spare_columns_bytes() == 0
    held = [record(loop, 5000)]
    rows = len(held[0].trace)
    assert tracer.views.spare_columns_bytes() == 0          # still in use
    drop(held)
    # at least one byte per row and column besides the refs
    assert tracer.views.spare_columns_bytes() >= rows * 30


def test_a_trace_in_reused_columns_equals_one_in_fresh_columns(limit):
    tracer.views.spare_columns_limit(0)                     # fresh columns
    held = [record(loop, 3000)]
    fresh = snapshot(held[0])
    assert held[0].value == loop(3000)
    tracer.views.spare_columns_limit(64 << 20)
    drop(held)
    assert tracer.views.spare_columns_bytes() > 0
    # A bigger trace first, then the same one again: both in reused columns.
    held = [record(loop, 6000)]
    drop(held)
    held = [record(loop, 3000)]
    assert tracer.views.spare_columns_bytes() == 0          # it took them
    assert snapshot(held[0]) == fresh
    assert held[0].value == loop(3000)


def test_a_trace_growing_past_reused_columns(limit):
    held = [record(loop, 500)]
    drop(held)
    spare = tracer.views.spare_columns_bytes()
    assert spare > 0
    held = [record(loop, 20000)]                      # starts in them, then grows
    assert held[0].value == loop(20000)
    assert len(held[0].trace) > spare // 30


def test_a_small_trace_keeps_big_spare_columns_and_gives_back_their_pages(limit):
    held = [record(loop, 80000)]
    capacity = held[0].trace.capacity
    drop(held)
    # Under a quarter of them: it keeps the columns, nothing copied, and gives
    # the pages past its rows back lazily (where the kernel says how much).
    before = lazy_free_bytes()
    small = [record(nothing)]
    assert small[0].trace.capacity == capacity
    assert tracer.views.spare_columns_bytes() == 0
    if before is not None:
        assert lazy_free_bytes() - before > 8 << 20
    tracer.validate(small[0])
    assert small[0].value is None
    # Freed, they are the spare set again, and a trace recorded into them (over
    # the pages given back) is the trace recorded into fresh columns.
    tracer.views.spare_columns_limit(0)
    fresh = [record(loop, 80000)]
    expected = snapshot(fresh[0])
    drop(fresh)
    tracer.views.spare_columns_limit(64 << 20)
    drop(small)
    assert tracer.views.spare_columns_bytes() > 0
    held = [record(loop, 80000)]
    assert snapshot(held[0]) == expected


def test_a_tiny_trace_in_its_own_columns_makes_no_system_call(limit):
    # Its own growth zeroed rows ahead of it, past a quarter of its rows, but
    # giving back pages is worth it only from a MiB: nothing is advised.
    before = lazy_free_bytes()
    small = record(nothing)
    assert small.trace.capacity == (1024, 2048)
    if before is not None:
        assert lazy_free_bytes() == before


def test_a_trace_that_fills_a_quarter_keeps_its_columns(limit):
    held = [record(loop, 20000)]
    rows, refs = held[0].trace.capacity
    drop(held)
    # Half the rows of the trace before: nothing is given back.
    before = lazy_free_bytes()
    held = [record(loop, 10000)]
    assert held[0].trace.capacity == (rows, refs)
    if before is not None:
        assert lazy_free_bytes() == before


def test_traces_alive_together_do_not_share_columns(limit):
    held = [record(loop, 2000)]
    drop(held)
    first = record(loop, 1000)
    before = snapshot(first)
    second = record(loop, 1500)
    third = record(loop, 800)
    assert snapshot(first) == before
    assert second.value == loop(1500) and third.value == loop(800)
    for root in (first, second, third):
        tracer.validate(root)


def test_limit_zero_keeps_nothing(limit):
    held = [record(loop, 2000)]
    drop(held)
    assert tracer.views.spare_columns_bytes() > 0
    assert tracer.views.spare_columns_limit(0) == 64 << 20  # returns the previous limit
    assert tracer.views.spare_columns_bytes() == 0          # and frees what it held
    held = [record(loop, 2000)]
    drop(held)
    assert tracer.views.spare_columns_bytes() == 0


def test_columns_bigger_than_the_limit_are_freed(limit):
    held = [record(loop, 20000)]
    rows = len(held[0].trace)
    tracer.views.spare_columns_limit(rows)                  # far below rows * 30 bytes
    drop(held)
    assert tracer.views.spare_columns_bytes() == 0
    held = [record(loop, 10)]
    drop(held)
    assert 0 < tracer.views.spare_columns_bytes() <= rows


@pytest.mark.parametrize("bad", [-1, 1.5, "64M", True])
def test_a_bad_limit_is_refused(limit, bad):
    with pytest.raises(TypeError, match="number of bytes"):
        tracer.views.spare_columns_limit(bad)
    assert tracer.views.spare_columns_limit() == 64 << 20
