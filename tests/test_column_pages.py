"""Big columns are their own mappings, grown in place or moved by page tables, and a
freed big trace's columns are kept lazily (MADV_FREE) for the next big trace.

A column of 4 MiB and more (the values column past 512k rows) is a 2 MiB-aligned
mapping advised for huge pages (`src/tracer/_core/pages.pxi`); it grows by mremap,
so no row is copied.  These tests check that such traces hold exactly what traces
in heap columns hold (the rows, the zero-copy numpy columns, a Parquet round trip),
that a trace recorded into lazily freed columns is the trace recorded into fresh
ones, how much of a big spare set stays resident, and the limits; and that the
object arenas a dropped trace's values free are kept (the program's own are not).
Every trace made here is validated.
"""

import gc
import sys

import numpy as np
import pytest

import tracer
from tracer.views import (
    column_memory, spare_columns_bytes, spare_columns_lazy_limit, spare_columns_limit,
)

from helpers import lazy_free_bytes

N = 100_000   # ~600k rows: the values column (8 B a row) is a mapping and grows twice

linux = pytest.mark.skipif(not sys.platform.startswith("linux"),
                           reason="columns are mappings (mremap, MADV_FREE) only on Linux")


def loop(n):
    total = 0.0
    i = 0
    while i < n:
        total += i * 0.5
        i += 1
    return total


def drop(holder):
    """Free a trace: the caller's reference and the one `last_trace()` keeps."""
    holder.clear()
    tracer.api._state.last = None
    gc.collect()


def columns_of(root):
    return {name: np.array(column) for name, column in root.trace.columns().items()}


@pytest.fixture
def limits():
    """Default limits and no spare columns held; restored afterwards."""
    old, old_lazy = spare_columns_limit(0), spare_columns_lazy_limit(0)
    spare_columns_limit(64 << 20)
    spare_columns_lazy_limit(1 << 32)
    yield
    spare_columns_limit(0)
    spare_columns_lazy_limit(old_lazy)
    spare_columns_limit(old)


def fresh_trace():
    """A big trace recorded into fresh columns (nothing spare to take)."""
    spare_columns_limit(0)
    try:
        root = tracer.track(loop, N)
    finally:
        spare_columns_limit(64 << 20)
    return root


@linux
def test_big_columns_are_mappings_and_freed_with_the_trace(limits):
    before = column_memory()
    held = [fresh_trace()]
    mapped, count = column_memory()
    # kind and flags (1 B a row) stay on the heap at 600k rows; parent, offset, aux,
    # ref_start (4 B) and values (8 B) are mappings of 2 MiB multiples.
    assert count - before[1] >= 5
    assert mapped - before[0] >= len(held[0].trace) * 24
    assert (mapped - before[0]) % (2 << 20) == 0
    tracer.validate(held[0])
    spare_columns_limit(0)
    drop(held)
    assert column_memory() == before


def test_rows_and_exports_of_mapped_columns(limits):
    root = fresh_trace()
    tracer.validate(root)
    assert root.value == loop(N)
    trace = root.trace
    cols = trace.columns()
    assert len(cols["kind"]) == len(trace) > 500_000
    # The numpy columns are views of the trace's memory and read what the rows say.
    for r in (0, 1, len(trace) // 2, len(trace) - 1):
        assert cols["parent"][r] == trace.parent(r)
        assert cols["offset"][r] == trace.offset(r)
        assert cols["aux"][r] == trace.aux(r)
        refs = cols["refs"][cols["ref_start"][r]:cols["ref_start"][r + 1]]
        assert [int(x) for x in refs if x >= 0] == [x for x in trace.refs(r) if isinstance(x, int)]
        assert len(refs) == len(trace.refs(r))
    # Views outlive the trace's last other reference (they keep it alive).
    parent = cols["parent"]
    del cols, trace, root
    gc.collect()
    assert parent[-1] >= 0 and parent[0] == -1


def test_parquet_round_trip_of_mapped_columns(limits, tmp_path):
    pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")
    from tracer.persist.parquet import load, save
    root = fresh_trace()
    save(root, tmp_path / "big.parquet")
    loaded = load(tmp_path / "big.parquet")
    tracer.validate(loaded)
    a, b = columns_of(root), columns_of(loaded)
    for name in ("kind", "flags", "parent", "offset", "aux", "ref_start", "refs", "code"):
        assert np.array_equal(a[name], b[name]), name


@linux
def test_a_freed_big_trace_is_kept_lazily_and_reused(limits):
    spare_columns_limit(1 << 20)             # resident spare: far below this trace
    held = [tracer.track(loop, N)]
    expected = columns_of(held[0])
    size = held[0].trace.nbytes
    drop(held)
    # Kept although bigger than the resident limit: given back lazily.
    assert spare_columns_bytes() >= size
    held = [tracer.track(loop, N)]
    assert spare_columns_bytes() == 0        # the new trace took them
    tracer.validate(held[0])
    assert held[0].value == loop(N)
    again = columns_of(held[0])
    for name in ("kind", "flags", "parent", "offset", "aux", "ref_start", "refs"):
        assert np.array_equal(expected[name], again[name]), name
    drop(held)
    # A small trace takes the lazy set and keeps it, mappings and all (nothing
    # copied, no column made afresh), and gives it back when it is freed.
    kept, mappings = spare_columns_bytes(), column_memory()
    small = [tracer.track(loop, 10)]
    tracer.validate(small[0])
    assert small[0].value == loop(10)
    assert spare_columns_bytes() == 0
    assert column_memory() == mappings
    drop(small)
    assert spare_columns_bytes() == kept


def lazily_freed_when_dropped(resident_limit):
    """How much of a dropped big trace's columns was given back lazily."""
    spare_columns_limit(0)                   # nothing spare: fresh columns
    held = [tracer.track(loop, N)]
    spare_columns_limit(resident_limit)
    before = lazy_free_bytes()
    if before is None:
        pytest.skip("this kernel does not report LazyFree in /proc/self/smaps_rollup")
    drop(held)
    return lazy_free_bytes() - before


@linux
def test_a_big_spare_set_keeps_the_limit_resident(limits):
    # Over the resident limit, each column's first rows stay resident in the
    # proportion the limit is of the set, and only the rest is given back lazily:
    # a limit 12 MiB higher leaves about 12 MiB more resident.
    small_limit = lazily_freed_when_dropped(1 << 20)
    big_limit = lazily_freed_when_dropped(13 << 20)
    assert small_limit > 8 << 20
    assert 6 << 20 < small_limit - big_limit <= 13 << 20


@linux
def test_lazy_limits(limits):
    spare_columns_limit(1 << 20)
    held = [tracer.track(loop, N)]
    drop(held)
    assert spare_columns_bytes() > 1 << 20
    assert spare_columns_lazy_limit(0) == 1 << 32   # returns the previous limit
    assert spare_columns_bytes() == 0               # and frees the set held
    held = [tracer.track(loop, N)]
    drop(held)
    assert spare_columns_bytes() == 0               # nothing kept lazily now
    spare_columns_lazy_limit(1 << 32)
    spare_columns_limit(0)                          # 0 keeps none, lazily either
    held = [tracer.track(loop, N)]
    drop(held)
    assert spare_columns_bytes() == 0


@pytest.mark.parametrize("bad", [-1, 1.5, "4G", True])
def test_a_bad_lazy_limit_is_refused(limits, bad):
    with pytest.raises(TypeError, match="number of bytes"):
        spare_columns_lazy_limit(bad)
    assert spare_columns_lazy_limit() == 1 << 32


# -- freed object arenas kept for the next trace (pages.pxi) ---------------------------

@pytest.fixture
def arenas():
    from tracer.views import arena_cache_limit
    old = arena_cache_limit()
    yield arena_cache_limit
    arena_cache_limit(old)


def floats(n):
    """n distinct floats alive at once: about n / 32k arenas of pymalloc's."""
    return [i * 0.5 + 0.25 for i in range(n)]


@linux
def test_importing_tracer_changes_no_allocator_and_the_first_trace_does():
    # Fresh processes: importing tracer changes no allocator; the first trace made
    # puts the cache in front of it, unless the limit is 0 then.
    import subprocess
    code = ("import tracer, tracer.views as v, tracer._core as c; "
            "print(v.arena_cache_limit(), v.arena_cache_bytes(), c._arena_cache_in_place()); "
            "{}; tracer.track(len, 'ab'); print(c._arena_cache_in_place())")
    out = subprocess.run([sys.executable, "-c", code.format("pass")], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == [str(1 << 30), "0", "False", "True"]
    out = subprocess.run([sys.executable, "-c", code.format("v.arena_cache_limit(0)")],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(1 << 30), "0", "False", "False"]


@linux
def test_arenas_a_dropped_trace_frees_are_kept_and_reused(arenas):
    from tracer.views import arena_cache_bytes
    arenas(0)
    assert arena_cache_bytes() == 0
    arenas(256 << 20)
    held = [tracer.track(floats, 400_000)]     # ~13 MB of floats kept by the trace
    assert held[0].value[-1] == 399_999 * 0.5 + 0.25
    tracer.validate(held[0])
    drop(held)
    kept = arena_cache_bytes()
    assert kept >= 8 << 20                     # their arenas, kept
    again = floats(400_000)                    # new objects land in them
    assert arena_cache_bytes() < kept
    assert again == [i * 0.5 + 0.25 for i in range(400_000)]
    del again
    assert arenas(0) == 256 << 20              # returns the previous limit
    assert arena_cache_bytes() == 0            # and frees what it kept


@linux
def test_arenas_the_program_frees_go_back_as_untraced(arenas):
    from tracer.views import arena_cache_bytes
    arenas(0)
    arenas(256 << 20)
    tracer.track(len, "ab")                    # the cache is in place
    mine = floats(400_000)
    before = arena_cache_bytes()
    del mine                                   # freed by the program, not by a trace
    gc.collect()
    assert arena_cache_bytes() == before


@pytest.mark.parametrize("bad", [-1, 1.5, "1G", True])
def test_a_bad_arena_limit_is_refused(arenas, bad):
    before = arenas()
    with pytest.raises(TypeError, match="number of bytes"):
        arenas(bad)
    assert arenas() == before


def test_huge_page_advice_is_a_setting(limits):
    from tracer.views import column_huge_pages
    old = column_huge_pages()
    assert old is False                        # off unless asked for
    try:
        assert column_huge_pages(True) is False
        root = fresh_trace()                   # mappings advised for huge pages
        tracer.validate(root)
        assert root.value == loop(N)
        assert column_huge_pages() is True
        with pytest.raises(TypeError, match="True or False"):
            column_huge_pages(1)
    finally:
        column_huge_pages(old)
    assert column_huge_pages() is False
