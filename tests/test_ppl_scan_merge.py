"""Session 19's readers of a ppl run (issue 21): a scan's values merged with their
copies in C (`CopyAtCall.values_of`), a site's values taken in C
(`_core.take_items`), weight lists shared by many draws totalled once
(`densities._shared_lists`), a ppl context's CallFilter made from callables
(`_hooks._call_filter`): each against the path it replaces; and a C sampler's
rows under a fixing context in the op loop against the general path, on both
interpreters."""

from __future__ import annotations

import random

import numpy as np
import pytest

import tracer.ppl as ppl
from tracer import _core
from tracer._core import filtered_rows_in_loop
from tracer.api import track
from tracer.context import Context, _call_filter as context_call_filter
from tracer.ppl import densities
from tracer.ppl._hooks import _call_filter, fixing_context, plain_context
from tracer.ppl.kinds import OBSERVED
from tracer.ppl.run import _fix
from tracer.ppl.scan import scan
from tracer.ppl.snapshots import Snapshots

# The HMM of tests/test_ppl_update.py (the model bench/ppl.py times).
from test_ppl_update import TRANS, hmm


def changing_weights(r, n):
    # weight lists changed in place after each draw: copies, mostly distinct
    w = [1.0, 2.0, 3.0]
    out = []
    for i in range(n):
        k = r.choices(range(3), weights=w)[0]
        w[k] += 0.5
        out.append(k)
    return out


def _normal_at(g, mu):
    # the draw's row is its segment's only one, its result returned (a
    # one-row segment whose callee a filter names: its hooks run)
    return g.normal(mu, 1.0)


def numpy_draws(g, n):
    # a C sampler (Generator.normal) drawing in a loop, in a helper and inline,
    # and a C categorical
    total = 0.0
    for i in range(n):
        total += _normal_at(g, i * 0.1)
        total += g.normal(i * 0.1, 1.0)
        total += float(g.choice(3, p=[0.2, 0.3, 0.5]))
    return total


# -- take_items ---------------------------------------------------------------------------
def test_take_items_is_the_comprehension():
    items = [object(), 1.5, "a", None, [1], (2,)]
    for idx in ([0, 2, 4], [5, 5, 0], [], [3], list(range(6))[::-1]):
        got = _core.take_items(items, np.array(idx, dtype=np.int64))
        assert type(got) is list and len(got) == len(idx)
        assert all(a is items[i] for a, i in zip(got, idx))


def test_take_items_refuses_positions_outside():
    with pytest.raises(IndexError):
        _core.take_items([1, 2], np.array([2], dtype=np.int64))
    with pytest.raises(IndexError):
        _core.take_items([1, 2], np.array([-1], dtype=np.int64))


# -- CopyAtCall.values_of -------------------------------------------------------------------
def _run_with_copies(model, *args):
    snaps = Snapshots()
    root = track(model, *args, ctx=plain_context(snaps))
    return root.trace, snaps


@pytest.mark.parametrize("model,args", [(hmm, (40, TRANS, [-2.0, 0.0, 2.0])),
                                        (changing_weights, (30,))])
def test_values_of_is_the_dict_merge(model, args):
    trace, snaps = _run_with_copies(model, random.Random(3), *args)
    copier = snaps.copier
    rows = np.array(sorted(set(copier.value_rows) | set(range(0, len(trace), 7))),
                    dtype=np.int64)
    got = copier.values_of(trace, rows)
    copies = copier.values
    want = [copies[r] if r in copies else trace.value(r) for r in rows.tolist()]
    assert len(got) == len(want)
    assert all(a is b for a, b in zip(got, want))
    # a copy stands for the value the trace holds now (a list changed later)
    assert any(r in copies for r in rows.tolist())


def test_values_of_declines_rows_out_of_order_and_refuses_rows_outside():
    trace, snaps = _run_with_copies(hmm, random.Random(3), 10, TRANS, [-2.0, 0.0, 2.0])
    assert snaps.copier.values_of(trace, np.array([5, 3], dtype=np.int64)) is None
    assert snaps.copier.values_of(trace, np.array([3, 3], dtype=np.int64)) is None
    with pytest.raises(IndexError):
        snaps.copier.values_of(trace, np.array([len(trace)], dtype=np.int64))
    assert snaps.copier.values_of(trace, np.empty(0, dtype=np.int64)) == []


@pytest.mark.parametrize("model,args", [(hmm, (40, TRANS, [-2.0, 0.0, 2.0])),
                                        (changing_weights, (30,))])
def test_scan_values_are_the_copies_then_the_trace(model, args):
    snaps2 = Snapshots()
    root = track(model, random.Random(5), *args, ctx=plain_context(snaps2))
    draws = scan(root, "error", snaps=snaps2)
    copies = snaps2.copier.values
    want = [copies[r] if r in copies else root.trace.value(r) for r in draws.rows.tolist()]
    assert all(a is b for a, b in zip(draws.values, want))


# -- _shared_lists ------------------------------------------------------------------------
def _general_probabilities(weights, picks, sizes, monkeypatch):
    monkeypatch.setattr(densities, "_shared_lists", lambda *a: None)
    try:
        return densities._picked_probabilities(weights, True, picks, sizes)
    finally:
        monkeypatch.undo()


def test_shared_lists_same_bits_as_reduceat(monkeypatch):
    rows = [[0.8, 0.1, 0.1], [1, 2, 3.5], [0.3, 0.3, 0.3, 0.1]]
    rng = random.Random(1)
    weights = [rows[rng.randrange(3)] for _ in range(400)]
    sizes = np.array([len(w) for w in weights], dtype=np.int64)
    picks = np.array([rng.randrange(len(w)) for w in weights], dtype=np.int64)
    got = _core.number_lists(weights)
    shared = densities._shared_lists(weights, got, picks, sizes)
    general = _general_probabilities(weights, picks, sizes, monkeypatch)
    assert shared is not None
    assert shared.tobytes() == general.tobytes()
    assert shared.tobytes() == densities._picked_probabilities(weights, True, picks,
                                                               sizes).tobytes()


@pytest.mark.parametrize("rows", [[[0.0, 0.0], [1.0, 2.0]],        # a zero total
                                  [[-1.0, 2.0], [1.0, 2.0]],       # a negative weight
                                  [[float("inf"), 1.0], [1.0, 2.0]]])
def test_shared_lists_declines_what_the_general_path_declines(rows, monkeypatch):
    weights = [rows[i % 2] for i in range(40)]
    sizes = np.full(40, 2, dtype=np.int64)
    picks = np.zeros(40, dtype=np.int64)
    assert densities._shared_lists(weights, _core.number_lists(weights), picks, sizes) is None
    assert _general_probabilities(weights, picks, sizes, monkeypatch) is None


def test_shared_lists_leaves_distinct_lists_to_the_general_path():
    weights = [[1.0, float(i)] for i in range(1, 41)]
    sizes = np.full(40, 2, dtype=np.int64)
    picks = np.ones(40, dtype=np.int64)
    assert densities._shared_lists(weights, _core.number_lists(weights), picks, sizes) is None


def _logps(ct):
    return {a: (c.value, c.logp, c.kind, c.distribution) for a, c in ct.choices.items()}


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        va, lpa, ka, da = a[k]
        vb, lpb, kb, db = b[k]
        assert va == vb and type(va) is type(vb) and ka == kb and da == db
        assert (lpa == lpb) or (np.isnan(lpa) and np.isnan(lpb)) or lpa is lpb


@pytest.mark.parametrize("how", ["trace", "condition", "do"])
def test_hmm_scores_as_without_shared_lists(how, monkeypatch):
    args = (random.Random(7), 200, TRANS, [-2.0, 0.0, 2.0])
    base = ppl.trace(hmm, *args)
    obs = {a: base[a] for a in list(base.choices)[2::37]}

    def run():
        r = random.Random(11)
        if how == "trace":
            return ppl.trace(hmm, r, *args[1:])
        return getattr(ppl, how)(hmm, obs, r, *args[1:])
    fast = _logps(run())
    monkeypatch.setattr(densities, "_shared_lists", lambda *a: None)
    _same(fast, _logps(run()))


# -- the contexts' filters ------------------------------------------------------------------
def test_call_filter_is_the_contexts():
    snaps = Snapshots()
    fixed = _fix({"hmm/gauss@L5[3]": 1.0}, OBSERVED)
    fx = fixing_context(fixed, snaps)
    mine = fx._call_filter
    on_call = snaps.on_call()
    override = {f: hook for f, hook in zip(mine.callables, mine.override) if hook is not None}
    theirs = context_call_filter(on_call, None, override)
    assert mine.callables == theirs.callables
    assert mine.on_call == theirs.on_call
    assert mine.override == theirs.override
    assert mine.substitute == theirs.substitute
    assert mine.bits == theirs.bits and mine.copies == theirs.copies
    assert plain_context(snaps)._call_filter.on_call == \
        Context(on_call=on_call)._call_filter.on_call
    assert _call_filter(None) is None
    with pytest.raises(TypeError):
        _call_filter({"random.gauss": print})


# -- a C sampler's filtered rows ------------------------------------------------------------
def _numpy_runs(in_loop):
    old = filtered_rows_in_loop(in_loop)
    try:
        ct = ppl.trace(numpy_draws, np.random.default_rng(2), 30)
        addrs = list(ct.choices)
        obs = {a: ct[a] for a in addrs[1::7]}
        return [ct,
                ppl.condition(numpy_draws, obs, np.random.default_rng(5), 30),
                ppl.do(numpy_draws, obs, np.random.default_rng(5), 30),
                ppl.replay(ct, np.random.default_rng(8), 30)], obs
    finally:
        filtered_rows_in_loop(old)


def test_c_sampler_rows_under_filters_as_the_general_path():
    fast, obs = _numpy_runs(True)
    slow, _ = _numpy_runs(False)
    for a, b in zip(fast, slow):
        _same(_logps(a), _logps(b))
        assert a.value == b.value
        assert len(a.root.trace) == len(b.root.trace)
    cond = fast[1]
    for addr, v in obs.items():
        assert cond[addr] == v and cond.choices[addr].kind == OBSERVED
    # the fixed draws' values are what the program went on with
    total = sum(c.value if c.distribution != "categorical" else float(c.value)
                for c in cond.choices.values())
    assert cond.value == pytest.approx(total)
