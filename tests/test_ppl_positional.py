"""Replay by position: the k-th draw gets the k-th value from `_core.NextValue`, a
callable written in C substituted for every sampler, and the replayed run takes the
addresses of the run it replays when both recorded the same call tree
(scan.same_shape)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import tracer
import tracer.ppl as ppl
from tracer import _core
from tracer.ppl import scan as scan_mod
from tracer.ppl.kinds import REPLAYED


class _Done(BaseException):
    pass


def test_next_value_answers_in_order_and_copies_what_may_change():
    arr, lst = np.arange(3.0), [1, 2]
    nv = _core.NextValue([0.5, lst, arr, "x"], _Done, np.ndarray)
    assert nv(1, 2) == 0.5 and nv.count == 1
    got_list = nv(mu=3)
    assert got_list == lst and got_list is not lst
    got_arr = nv()
    assert np.array_equal(got_arr, arr) and got_arr is not arr
    assert nv() == "x" and nv.count == 4
    with pytest.raises(_Done):
        nv()
    assert nv.count == 4
    with pytest.raises(TypeError):
        _core.NextValue(None, _Done)


def hier(r, groups, per_group, pad):
    mu = r.gauss(0.0, 5.0)
    ys = []
    for g in range(groups):
        a = r.gauss(mu, 1.0)
        for i in range(per_group):
            ys.append(r.gauss(a, 0.5))
    total = 0.0
    for _ in range(pad):          # operations, no draws: the call tree's size varies
        total += 1.0
    return sum(ys) + total


def _fresh_addresses(draws):
    draws._addresses = None
    return scan_mod._addresses(draws)


def test_replay_by_position_runs_no_python_per_draw_and_keeps_addresses(monkeypatch):
    ct = ppl.trace(hier, random.Random(0), 3, 4, 2)
    seen = []
    real = scan_mod.same_shape

    def spy(old, new):
        seen.append(real(old, new))
        return seen[-1]
    monkeypatch.setattr("tracer.ppl.run.same_shape", spy)
    again = ppl.replay(ct, random.Random(7), 3, 4, 2)
    tracer.validate(again.root)
    assert seen == [True]
    d = again._draws
    assert d.addresses == list(ct.choices) == _fresh_addresses(d)
    # every draw called the one C substitute; what the program called is in the metadata
    md = again.root.trace.metadata
    assert all(type(_core.node_view(again.root.trace, int(r)).function.value) is
               _core.NextValue and md[int(r)]["substituted"] is not None for r in d.rows)
    assert again.values() == ct.values() and again.log_joint == ct.log_joint
    assert all(c.kind == REPLAYED for c in again.choices.values())


def test_replay_on_other_arguments_checks_the_addresses_themselves():
    ct = ppl.trace(hier, random.Random(0), 3, 4, 2)
    again = ppl.replay(ct, random.Random(1), 3, 4, 9)     # more rows, the same draws
    tracer.validate(again.root)
    assert not scan_mod.same_shape(ct._draws, again._draws)
    assert list(again.choices) == list(ct.choices) and again.values() == ct.values()
    assert again.value == pytest.approx(ct.value + 7.0)
    with pytest.raises(ValueError, match="no draw was made"):
        ppl.replay(ct, random.Random(1), 2, 4, 2)


def arrays(g):
    xs = g.normal(size=3)
    xs *= 2.0                     # changes the drawn array in place
    return float(xs.sum()) + g.normal()


def test_replayed_arrays_are_fresh_copies():
    ct = ppl.trace(arrays, np.random.default_rng(3))
    first = list(ct.values().values())[0].copy()
    again = ppl.replay(ct, np.random.default_rng(4))
    tracer.validate(again.root)
    assert again.value == pytest.approx(ct.value)
    assert np.array_equal(list(ct.values().values())[0], first)
    assert again.log_joint == pytest.approx(ct.log_joint)
    twice = ppl.replay(again, np.random.default_rng(5))
    assert twice.value == pytest.approx(ct.value)
