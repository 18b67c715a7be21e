"""A categorical site's drawn items, `range` populations and weight lists read into
arrays in C (_core.number_lists, _core.range_columns; densities.COLUMNS_IN_C)
give the arrays numpy.fromiter and map give, so every draw's log-mass is the
same as on the Python path, through trace, condition, do and replay; what the C
readers decline (other number types, huge ints, tuples of draws, other
populations) takes the Python path."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats as st

import tracer.ppl as ppl
from tracer import _core
from tracer.ppl import densities


@pytest.fixture
def python_columns():
    """Run with the Python readers (restored after)."""
    old = densities.COLUMNS_IN_C
    densities.COLUMNS_IN_C = False
    yield
    densities.COLUMNS_IN_C = old


# -- the readers ----------------------------------------------------------------------

def test_number_lists_gives_numpys_arrays():
    lists = [[1, 2.5, True, False], (3, -4.0), [], [2 ** 53, -(2 ** 53)], [0.1, 7]]
    lens, flat, ints, all_lists = _core.number_lists(lists)
    assert lens.dtype == np.int64 and lens.tolist() == [4, 2, 0, 2, 2]
    ref = np.fromiter(itertools.chain.from_iterable(lists), dtype=float)
    assert flat.dtype == np.float64 and np.array_equal(flat, ref)
    assert not ints and not all_lists
    lens, flat, ints, all_lists = _core.number_lists([[3], [0], [-7]])
    assert ints and all_lists and flat.tolist() == [3.0, 0.0, -7.0]
    assert _core.number_lists([]) is not None


@pytest.mark.parametrize("bad", [
    [[1.0], ["a"]],                 # not a number
    [[2 ** 53 + 1]],                # an int whose float is not exact
    [[2 ** 80]],                    # beyond int64
    [[np.float64(0.5)]],            # a float subclass: numpy's own conversion
    [[Fraction(1, 3)]],
    [[1.0], {1: 2}],                # an entry neither list nor tuple
    [range(3)],
    [None],
])
def test_number_lists_declines_what_it_does_not_read(bad):
    assert _core.number_lists(bad) is None


def test_range_columns():
    rs = [range(3), range(3), range(0, 3), range(2, 9, 3), range(5), range(0, 5, 1),
          range(-4, 0)]
    starts, lens, steps = _core.range_columns(rs)
    assert starts.tolist() == [r.start for r in rs]
    assert lens.tolist() == [len(r) for r in rs]
    assert steps.tolist() == [r.step for r in rs]
    # equal as sequences after one another: the same start, length and step
    starts, lens, steps = _core.range_columns([range(0, 3, 2), range(0, 4, 2)])
    assert lens.tolist() == [2, 2] and steps.tolist() == [2, 2]
    for bad in ([range(3), [0, 1, 2]], [range(0)], [range(2 ** 70, 2 ** 70 + 2)],
                [(0, 1)]):
        assert _core.range_columns(bad) is None


# -- models ---------------------------------------------------------------------------

def crp(r, n, alpha):
    counts = []
    for i in range(n):
        weights = counts + [alpha]
        k = r.choices(range(len(weights)), weights=weights)[0]
        if k == len(counts):
            counts.append(0)
        counts[k] += 1
    return len(counts)


def hmm(r, n, trans):
    z = 0
    out = []
    for _ in range(n):
        z = r.choices(range(3), weights=trans[z])[0]
        out.append(r.gauss(float(z), 1.0))
    return out


TRANS = [[0.8, 0.1, 0.1], (0.1, 0.8, 0.1), [1, 1, 8]]   # floats, a tuple, ints


def mixed_weights(r, n):
    out = []
    for i in range(n):
        kind = i % 6
        if kind == 0:
            w = [True, True, False, True]           # bools
        elif kind == 1:
            w = (1, 2, 3, 4)                        # a tuple of ints
        elif kind == 2:
            w = [0.5, 2, 0.25, 1]                   # floats and ints
        elif kind == 3:
            w = [np.float64(1.0), 2.0, 3.0, 4.0]    # a numpy scalar: Python path
        elif kind == 4:
            w = [2 ** 60, 1, 1, 1]                  # a huge int: Python path
        else:
            w = [Fraction(1, 2), 1, 1, 1]           # a Fraction: Python path
        out.append(r.choices(range(4), weights=w)[0])
    return out


def shared_population(r, n):
    pop = [10, 20, 30]
    ws = [[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]
    return [r.choices(pop, weights=ws[i % 2])[0] for i in range(n)]


def other_ranges(r, n):
    # populations that are ranges not starting at 0 or with steps: Python path
    return [r.choices(range(1, 4) if i % 2 else range(0, 6, 2), weights=[1, 2, 3])[0]
            for i in range(n)]


def negative_and_zero(r, n):
    # a negative weight (random.choices allows it while the total is positive) and
    # weights of zero at the pick are scored as the Python path scores them
    out = []
    for i in range(n):
        w = [-0.5, 3.0, 1.0] if i % 3 == 0 else [0.0, 1.0, 1.0]
        out.append(r.choices(range(3), weights=w)[0])
    return out


MODELS = [(crp, (300, 2.0)), (hmm, (300, TRANS)), (mixed_weights, (60,)),
          (shared_population, (40,)), (other_ranges, (30,)), (negative_and_zero, (30,))]


def _logps(ct):
    return {a: c.logp for a, c in ct.choices.items()}


def _same(a, b):
    assert list(a) == list(b)
    for k in a:
        x, y = a[k], b[k]
        assert (x == y) or (math.isnan(x) and math.isnan(y)), (k, x, y)


@pytest.mark.parametrize("model,args", MODELS, ids=[m.__name__ for m, _ in MODELS])
def test_trace_scores_as_the_python_path(model, args, request):
    got = ppl.trace(model, random.Random(3), *args)
    old = densities.COLUMNS_IN_C
    densities.COLUMNS_IN_C = False
    try:
        ref = ppl.trace(model, random.Random(3), *args)
    finally:
        densities.COLUMNS_IN_C = old
    assert got.value == ref.value
    assert {a: c.value for a, c in got.choices.items()} == \
        {a: c.value for a, c in ref.choices.items()}
    _same(_logps(got), _logps(ref))
    lj, rj = got.log_joint, ref.log_joint
    assert lj == rj or (math.isnan(lj) and math.isnan(rj))


def test_crp_log_masses_against_scipy():
    ct = ppl.trace(crp, random.Random(7), 200, 2.0)
    counts = []
    for c in ct.choices.values():
        w = c.params["weights"]
        k = c.value[0]
        assert c.logp == pytest.approx(st.bernoulli.logpmf(1, w[k] / math.fsum(w)))
        if k == len(counts):
            counts.append(0)
        counts[k] += 1


@pytest.mark.parametrize("how", ["condition", "do"])
@pytest.mark.parametrize("model,args", MODELS[:2], ids=["crp", "hmm"])
def test_condition_and_do_as_the_python_path(model, args, how):
    first = ppl.trace(model, random.Random(11), *args)
    addrs = list(first.choices)
    fixed = {a: first[a] for a in addrs[5::40]}
    fn = getattr(ppl, how)
    got = fn(model, fixed, random.Random(12), *args)
    old = densities.COLUMNS_IN_C
    densities.COLUMNS_IN_C = False
    try:
        ref = fn(model, fixed, random.Random(12), *args)
    finally:
        densities.COLUMNS_IN_C = old
    assert list(got.choices) == list(ref.choices)
    assert [c.value for c in got.choices.values()] == [c.value for c in ref.choices.values()]
    assert [c.kind for c in got.choices.values()] == [c.kind for c in ref.choices.values()]
    _same(_logps(got), _logps(ref))
    assert got.log_joint == ref.log_joint
    again = ppl.replay(got)
    _same(_logps(again), _logps(got))


def test_the_python_path_is_taken_when_asked(python_columns, monkeypatch):
    calls = []
    real = _core.number_lists
    monkeypatch.setattr(_core, "number_lists", lambda x: calls.append(1) or real(x))
    ppl.trace(crp, random.Random(1), 50, 2.0).log_joint
    assert calls == []
    densities.COLUMNS_IN_C = True
    ppl.trace(crp, random.Random(1), 50, 2.0).log_joint
    assert calls
