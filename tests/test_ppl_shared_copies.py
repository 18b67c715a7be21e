"""The copies tracer.ppl's runs make at the draws (_core.CopyAtCall) shared where a
short list of numbers has the items of one copied before, kept as C arrays of
rows (`columns()`); a list of plain floats read in C for scoring
(_core.float_column); small ints read inline by _core.number_lists.  Every
choice's address, value, parameters, log-density and kind is the same as with
a copy per draw (`share=False`, snapshots.SHARE_COPIES) and the Python readers
(densities.COLUMNS_IN_C)."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

import tracer
import tracer.ppl as ppl
from tracer import _core
from tracer.context import Context
from tracer.ppl import densities, snapshots


# -- the core's readers and copier -----------------------------------------------------

def test_float_column_is_numpys_array():
    vals = [0.5, -0.0, float("nan"), float("inf"), -1e308, 5e-324, 3.0]
    got = _core.float_column(vals)
    ref = np.asarray(vals)
    assert got.dtype == ref.dtype == np.float64 and got.shape == ref.shape
    assert got.tobytes() == ref.tobytes()


@pytest.mark.parametrize("bad", [[], [1.0, 2], [True], [np.float64(0.5)], [1.0, None],
                                 [1.0, "a"]])
def test_float_column_declines_other_items(bad):
    assert _core.float_column(bad) is None


def test_number_lists_reads_small_and_large_ints_alike():
    edge = [0, 1, -1, 255, 256, -5, -6, 2 ** 30 - 1, 2 ** 30, -(2 ** 30) + 1, -(2 ** 30),
            2 ** 31, -(2 ** 31) - 7, 2 ** 53, -(2 ** 53), 2 ** 62 // 2 ** 10]
    lists = [edge, [3, 2.5], [True, 4], (7, -8)]
    lens, flat, ints, all_lists = _core.number_lists(lists)
    assert np.array_equal(flat, np.fromiter(itertools.chain.from_iterable(lists), float))
    assert lens.tolist() == [len(x) for x in lists] and not ints and not all_lists
    lens, flat, ints, all_lists = _core.number_lists([edge])
    assert ints and flat.tolist() == [float(x) for x in edge]
    assert _core.number_lists([[2 ** 53 + 1]]) is None


def _prog(r, w, other):
    out = []
    for i in range(12):
        out.append(r.choices(range(3), weights=w)[0])
        if i % 4 == 3:
            w[0] += 1.0                 # changed in place after some draws
        out.append(r.choices(range(3), weights=list(w))[0])      # equal, another list
        out.append(r.choices(range(2), weights=other)[0])       # items not all numbers
        b = r.choices(range(3), weights=w, k=2)
        b[0] = 99                       # the drawn list changed after the draw
        out.append(b)
    return out


def _copier_run(share):
    copier = _core.CopyAtCall(np.ndarray, share=share)
    keys = snapshots.snapshot_keys()
    root = tracer.track(_prog, random.Random(4), [1.0, 2.0, 3.0], [1, 2.0], ctx=Context(
                            primitives=keys, modules=["random"],
                            on_call={k: copier for k in keys}))
    return root, copier


def test_shared_copies_equal_a_copy_per_draw():
    root, shared = _copier_run(True)
    _, own = _copier_run(False)
    assert shared.share and not own.share
    assert shared.input_rows == own.input_rows and shared.input_ks == own.input_ks
    assert shared.value_rows == own.value_rows
    assert shared.input_copies == own.input_copies
    assert shared.value_copies == own.value_copies
    # the weights as they were at each draw: 1, then 2, 3, 4 after each change
    firsts = [c[0] for c in shared.input_copies if type(c) is list and len(c) == 3]
    assert sorted(set(firsts)) == [1.0, 2.0, 3.0, 4.0]
    # equal items share one copy; no copy is the program's list; a copy per draw
    # gives distinct objects
    assert len({id(c) for c in shared.input_copies}) < len(shared.input_copies)
    assert len({id(c) for c in own.input_copies}) == len(own.input_copies)
    assert all(not tracer_gc_tracked(c) for c in shared.input_copies)
    # a drawn list changed after the draw: its copy is the drawn one
    for v in shared.value_copies:
        assert 99 not in v
    # columns(): the same as the lists, rows as int64 arrays
    rows, ks, ins, vrows, vals = shared.columns()
    assert rows.dtype == ks.dtype == vrows.dtype == np.int64
    assert rows.tolist() == shared.input_rows and ks.tolist() == shared.input_ks
    assert vrows.tolist() == shared.value_rows
    assert ins is shared.input_copies and vals is shared.value_copies
    tracer.validate(root)


def tracer_gc_tracked(o):
    import gc
    return gc.is_tracked(o)


def test_a_list_holding_a_container_is_copied_each_time():
    copier = _core.CopyAtCall(share=True)
    outer = [[2.0], [1.0]]

    def prog():
        return sorted(outer), sorted(outer)
    tracer.track(prog, ctx=Context(on_call={sorted: copier}))
    assert len(copier.value_copies) == 2 and len(copier.input_copies) == 2
    a, b = copier.value_copies
    assert a == b and a is not b


# -- whole runs: the same choices with shared copies and C readers as without ----------

# The CRP and the HMM of tests/test_ppl_update.py (the models bench/ppl.py times).
from test_ppl_update import TRANS, crp, hmm  # noqa: E402


def mutating(r, n):
    w = [1.0, 2.0, 3.0]
    out = []
    for i in range(n):
        k = r.choices(range(3), weights=w)[0]
        w[k] += 0.5                     # the weights change after each draw
        drawn = r.choices([10, 20, 30], weights=[1, 1, 2], k=2)
        drawn.append(k)                 # the drawn list changed after the draw
        out.append(drawn)
        out.append(r.gauss(float(k), 1.0))
    return out


MODELS = [(crp, (200, 2.0)), (hmm, (200, TRANS, [-2.0, 0.0, 2.0])), (mutating, (60,))]


def _general(fn):
    """fn() with a copy per draw and the Python readers."""
    old = snapshots.SHARE_COPIES, densities.COLUMNS_IN_C
    snapshots.SHARE_COPIES, densities.COLUMNS_IN_C = False, False
    try:
        return fn()
    finally:
        snapshots.SHARE_COPIES, densities.COLUMNS_IN_C = old


def _same_choices(got, ref):
    assert list(got.choices) == list(ref.choices)
    for a in got.choices:
        x, y = got.choices[a], ref.choices[a]
        assert x.value == y.value and type(x.value) is type(y.value), a
        assert x.params == y.params and x.kind == y.kind and x.distribution == y.distribution
        assert x.logp == y.logp or (math.isnan(x.logp) and math.isnan(y.logp)), a
    assert got.log_joint == ref.log_joint


@pytest.mark.parametrize("model,args", MODELS, ids=[m.__name__ for m, _ in MODELS])
def test_trace_condition_do_replay_as_the_general_path(model, args):
    got = ppl.trace(model, random.Random(5), *args)
    ref = _general(lambda: ppl.trace(model, random.Random(5), *args))
    _same_choices(got, ref)
    addrs = list(got.choices)
    fixed = {a: got[a] for a in addrs[3::25]}
    for how in (ppl.condition, ppl.do):
        g = how(model, fixed, random.Random(6), *args)
        r = _general(lambda: how(model, fixed, random.Random(6), *args))
        _same_choices(g, r)
    _same_choices(ppl.replay(got), _general(lambda: ppl.replay(ref)))


# -- SiteFix's counts in C (_core._FixCount) ---------------------------------------------

def _fixing(r, n):
    out = []
    for i in range(n):
        out.append(r.gauss(0.0, 1.0))
        if i % 7 == 0:
            out.append(r.gauss(5.0, 1.0))      # a second line, fewer draws
    return out


def test_counted_fixes_exactly_the_named_draws_of_a_line():
    ct = ppl.trace(_fixing, random.Random(1), 300)
    addrs = list(ct.choices)
    line_a = [a for a in addrs if ct.choices[a].params["mu"] == 0.0]
    line_b = [a for a in addrs if ct.choices[a].params["mu"] == 5.0]
    fixed = {a: 100.0 + i for i, a in enumerate(line_a[:1] + line_a[17:300:41] + line_a[-1:]
                                                  + line_b[2::9])}
    for how, kind in ((ppl.condition, "observed"), (ppl.do, "intervened")):
        got = how(_fixing, fixed, random.Random(2), 300)
        assert list(got.choices) == addrs
        assert {a: c.value for a, c in got.choices.items() if c.kind == kind} == fixed
        assert all(c.kind == "sampled" for a, c in got.choices.items() if a not in fixed)


def _entry_counts(first_entry):
    # a SiteFix given by hand: the count of a line's entry as `first` made it
    seen = []

    def places(code):
        return b"\x01" * (len(code.co_code) // 2) if code.co_name == "prog" else b""

    def first(ctx, code, offset, key):
        return first_entry

    def fixed(entry, k, trace, row):
        seen.append(k)
        return -1.0

    def prog(r):
        return [r.gauss(0.0, 1.0), r.gauss(0.0, 1.0), r.gauss(0.0, 1.0), r.gauss(0.0, 1.0)]
    fix = _core.SiteFix(places, first, fixed, root_only=True)

    class Ctx(Context):
        pass
    ctx = Ctx(primitives=[random.Random.gauss], modules=["random"],
              override={random.Random.gauss: fix})
    ctx._sites = {}
    root = tracer.track(prog, random.Random(0), ctx=ctx)
    return root.value, seen, first_entry


@pytest.mark.parametrize("wanted", [{1: None, 3: None}, {1: None, "x": None, 3: None}])
def test_counted_with_int_and_other_keys(wanted):
    value, seen, entry = _entry_counts([0, "base", wanted])
    assert seen == [1, 3]
    assert value[1] == value[3] == -1.0 and value[0] != -1.0 and value[2] != -1.0
    assert int(entry[0]) == 4


# -- a fixing run overrides only the samplers a fixed address names ---------------------

def test_fixing_context_overrides_the_named_samplers_only():
    from tracer.ppl._hooks import fixing_context
    from tracer.ppl.samplers import sample
    ct = ppl.trace(hmm, random.Random(8), 50, TRANS, [-2.0, 0.0, 2.0])
    gauss = [a for a in ct.choices if "gauss" in a][:2]
    choices = [a for a in ct.choices if "choices" in a][:1]
    fx = fixing_context({a: (ct[a], "observed") for a in gauss})
    flt = fx._call_filter
    overridden = [f for f, o in zip(flt.callables, flt.override) if o is not None]
    assert sample in overridden
    assert random.Random.gauss in overridden or any(
        getattr(f, "__name__", "") == "gauss" for f in overridden)
    assert not any(getattr(f, "__name__", "") == "choices" for f in overridden)
    # both kinds fixed at once: each sampler's draws fixed where named
    fixed = {gauss[0]: 9.0, choices[0]: [2]}
    got = ppl.condition(hmm, fixed, random.Random(9), 50, TRANS, [-2.0, 0.0, 2.0])
    assert got[gauss[0]] == 9.0 and got[choices[0]] == [2]
    assert [a for a, c in got.choices.items() if c.kind == "observed"] == \
        [a for a in got.choices if a in fixed]
    ref = _general(lambda: ppl.condition(hmm, fixed, random.Random(9), 50, TRANS,
                                         [-2.0, 0.0, 2.0]))
    _same_choices(got, ref)
