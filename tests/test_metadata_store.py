"""A substituted row's metadata kept without a dict per row (src/tracer/_core/metadata.pxi):
`Trace.metadata`, a node's `metadata`, the readers that read without making dicts
(`metadata_get`, `metadata_items`, `substitutions`), saving and the ppl scan all give
what the dict per row gave."""

import gc
import random

import pytest

import tracer
import tracer.ppl as ppl
from tracer.context import KEEP, Context
from tracer.persist.encoded import decode_trace, encode_trace
from tracer.ppl.scan import scan
from tracer.views.nodes import node_at


def model(n):
    s = 0.0
    for i in range(n):
        s += random.gauss(0, 1) * 2
    return s


def one():
    return Context(substitute={"random.gauss": lambda mu, sigma: 1.0})


def _expected_rows(root):
    # the draws: the call rows whose recorded callee is the substitute
    return [n.row for n in root.children if getattr(n, "callee", None) is not None
            and getattr(n.callee, "__name__", "") == "<lambda>"]


def test_substituted_rows_make_no_dict_each():
    n = 3000
    tracer.track(model, 5, ctx=one())      # warm: plans, caches
    gc.collect()
    gc.disable()
    try:
        before = sum(type(o) is dict for o in gc.get_objects(0))
        root = tracer.track(model, n, ctx=one())
        made = sum(type(o) is dict for o in gc.get_objects(0)) - before
    finally:
        gc.enable()
    rows, index, called = root.trace.substitutions()
    assert len(rows) == n
    assert made < n // 10          # a dict per draw made at least n
    assert len(root.trace.metadata) == n


def test_the_readers_agree_with_the_dicts():
    root = tracer.track(model, 50, ctx=one())
    t = root.trace
    want = _expected_rows(root)
    assert len(want) == 50
    rows, index, called = t.substitutions()
    assert rows.tolist() == want
    assert called == [random.gauss] and set(index.tolist()) == {0}
    assert all(t.metadata_get(r, "substituted") is random.gauss for r in want)
    assert t.metadata_get(want[0], "original", "none") == "none"
    assert t.metadata_get(want[0] + 1, "substituted") is None
    pairs = t.metadata_items()
    assert [r for r, _ in pairs] == want
    assert all(d == {"substituted": random.gauss} for _, d in pairs)
    md = t.metadata                        # every row's dict, from here on the trace's own
    assert list(md) == want and len(md) == 50
    assert all(r in md and md[r] == {"substituted": random.gauss} for r in want)
    assert md.get(want[0] + 1) is None
    assert md[want[3]] is t.metadata[want[3]] is root.trace.node_metadata(want[3])
    # after it the same readers read the dicts
    assert t.substitutions()[0].tolist() == want
    assert [r for r, _ in t.metadata_items()] == want


def test_one_node_metadata_leaves_the_others_without_dicts():
    root = tracer.track(model, 20, ctx=one())
    t = root.trace
    want = _expected_rows(root)
    node = node_at(t, want[7])
    d = node.metadata
    assert d == {"substituted": random.gauss}
    d["note"] = 1
    assert node.metadata is d
    assert t.metadata_get(want[7], "note") == 1
    assert [r for r, _ in t.metadata_items()] == want
    md = t.metadata
    assert list(md) == want                        # in row order, as recorded
    assert md[want[7]] is d and md[want[7]] == {"substituted": random.gauss, "note": 1}
    assert all(md[r] == {"substituted": random.gauss} for r in want if r != want[7])
    # an annotation of a row without a substitution comes after them
    other = want[0] + 1
    node_at(t, other).metadata["x"] = 2
    assert list(t.metadata) == want + [other]


def test_substitution_and_override_of_one_row():
    ctx = Context(substitute={"random.gauss": lambda mu, s: 1.0},
                  override={"random.gauss": lambda node: 9.0})
    root = tracer.track(model, 3, ctx=ctx)
    assert root.value == 54.0
    md = root.trace.metadata
    assert list(md) == _expected_rows(root)
    assert all(list(d.items()) == [("substituted", random.gauss), ("original", 1.0)]
               for d in md.values())


def test_metadata_read_while_recording():
    # a hook that reads the trace's metadata dict mid-run moves the rows so far into
    # it; the later rows are kept without dicts again, and all read alike at the end
    class Reads(Context):
        def override(self, node):
            if "substituted" in node.trace.metadata.get(node.row, {}):
                return 7.0
            return KEEP

    root = tracer.track(model, 4, ctx=Reads(substitute={"random.gauss": lambda mu, s: 1.0}))
    assert root.value == 4 * 14.0
    t = root.trace
    want = _expected_rows(root)
    assert t.substitutions()[0].tolist() == want
    assert [r for r, _ in t.metadata_items()] == want
    assert {r: d for r, d in t.metadata.items()} == {
        r: {"substituted": random.gauss, "original": 1.0} for r in want}


def test_many_distinct_callables():
    # more distinct callables substituted than the short list holds (a dict of ids)
    def make(i):
        def f(x):
            return x + i
        return f

    fs = [make(i) for i in range(40)]
    ids = {id(f) for f in fs}

    class Each(Context):
        def substitute(self, f, /, *args, **kwargs):
            return (lambda x: -x) if id(f) in ids else None

    def prog():
        return sum(f(1) for _ in range(3) for f in fs)

    root = tracer.track(prog, ctx=Each())
    assert root.value == -120
    t = root.trace
    rows, index, called = t.substitutions()
    assert len(rows) == 120 and len(called) == 40
    got = [called[i] for i in index.tolist()]
    assert got == fs * 3 and all(a is b for a, b in zip(got, fs * 3))
    assert all(t.metadata_get(r, "substituted") is f for r, f in zip(rows.tolist(), got))
    md = t.metadata
    assert list(md) == rows.tolist()
    assert all(md[r]["substituted"] is f for r, f in zip(rows.tolist(), got))


@pytest.mark.parametrize("materialized", [False, True])
def test_saved_and_loaded_alike(materialized, tmp_path):
    root = tracer.track(model, 30, ctx=one())
    t = root.trace
    if materialized:
        t.metadata          # the dict per row, as before the store
    enc = encode_trace(t)
    assert [r for r, _ in enc.metadata] == _expected_rows(root)
    back = decode_trace(enc, allow_pickle=True)
    assert list(back.metadata) == _expected_rows(root)
    assert all(list(d) == ["substituted"] and "Random.gauss" in repr(d["substituted"])
               for d in back.metadata.values())
    tracer.save(t, tmp_path / "t.parquet")
    loaded = tracer.load(tmp_path / "t.parquet").trace
    assert {r: repr(d) for r, d in loaded.metadata.items()} == \
        {r: repr(d) for r, d in back.metadata.items()}
    assert loaded.substitutions()[0].tolist() == _expected_rows(root)


def _regression(r, n):
    a = r.gauss(0.0, 1.0)
    return [r.gauss(a * i, 1.0) for i in range(n)]


def test_ppl_scan_reads_the_store_as_the_dicts():
    ct = ppl.trace(_regression, random.Random(1), 40)
    again = ppl.replay(ct)
    assert again.log_joint == pytest.approx(ct.log_joint)
    root = again.root
    first = scan(root, dispatched=True)
    root.trace.metadata                   # every row's dict made: the scan reads them
    second = scan(root, dispatched=True)
    assert first.rows.tolist() == second.rows.tolist()
    assert first.addresses == second.addresses
    assert first.site_of.tolist() == second.site_of.tolist()
    assert [first.params(i) for i in range(len(first))] == \
        [second.params(i) for i in range(len(second))]
    assert [first.distribution(i) for i in range(len(first))] == ["norm"] * 41
