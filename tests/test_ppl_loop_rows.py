"""tracer.ppl's runs (ppl.trace, condition, do, replay by position and by
address) with the rows of its filtered contexts written in the op loop
(`_core.filtered_rows_in_loop(True)`, the default) against every row sent down the
general path (False): the same choices, values, log-densities, kinds and
addresses, on models with recursion, loops, numpy draws, helper samplers,
generators and exceptions."""

from __future__ import annotations

import random

import numpy as np
import pytest

import tracer
import tracer.ppl as ppl
from tracer._core import filtered_rows_in_loop


def tree(r, depth):
    x = r.gauss(0.0, 1.0)
    if depth == 0 or x > 1.5:
        return x
    return x + tree(r, depth - 1) + tree(r, depth - 1)


def drawing_gen(r, n):
    for _ in range(n):
        yield r.gauss(0.0, 1.0)


def failing(r):
    v = r.gauss(0.0, 1.0)
    if v > -10:
        raise ValueError(v)


@ppl.sampler(lambda value, mu: -abs(value - mu))
def laplace_ish(r, mu):
    return mu + r.expovariate(1.0) - r.expovariate(1.0)


def _draw_at(r, mu):
    return r.gauss(mu, 1.0)


def everything(r, g, n):
    total = sum(drawing_gen(r, 3))
    for i in range(n):
        try:
            failing(r)
        except ValueError as e:
            total += e.args[0]
        k = r.choices(range(3), weights=[1.0, 2.0, i + 1.0])[0]
        total += _draw_at(r, k) + g.normal(k, 1.0) + laplace_ish(r, 0.5)
        if k == 2:
            total += float(g.normal(size=2).sum())
        xs = [r.random(), r.random()]
        r.shuffle(xs)
        total += xs[0] + r.randrange(4)
    return total + tree(r, 3)


def _runs(in_loop):
    old = filtered_rows_in_loop(in_loop)
    try:
        ct = ppl.trace(everything, random.Random(4), np.random.default_rng(4), 12)
        addrs = list(ct.choices)
        chosen = addrs[1::9] + [a for a in addrs if a.count("/") >= 2][:3]
        obs = {a: ct[a] for a in chosen}
        return [ct,
                ppl.condition(everything, obs, random.Random(9), np.random.default_rng(9), 12),
                ppl.do(everything, obs, random.Random(9), np.random.default_rng(9), 12),
                ppl.replay(ct),
                ppl.replay(ct, random.Random(1), np.random.default_rng(1), 12)]
    finally:
        filtered_rows_in_loop(old)


def _same(a, b):
    assert list(a.choices) == list(b.choices)
    for (addr, x), y in zip(a.choices.items(), b.choices.values()):
        assert x.kind == y.kind, addr
        assert x.distribution == y.distribution, addr
        if isinstance(x.value, np.ndarray):
            assert np.array_equal(x.value, y.value), addr
        else:
            assert x.value == y.value, addr
        assert x.logp == pytest.approx(y.logp), addr
    assert a.log_joint == pytest.approx(b.log_joint)
    assert a.value == pytest.approx(b.value)
    tracer.validate(a.root)


def test_ppl_runs_with_rows_in_the_loop_match_the_general_path():
    loop, general = _runs(True), _runs(False)
    for a, b in zip(loop, general):
        _same(a, b)
    ct, cond, do, replay, replay_args = loop
    assert any(c.kind == "observed" for c in cond.choices.values())
    assert any(c.kind == "intervened" for c in do.choices.values())
    for again in (replay, replay_args):
        assert list(again.choices) == list(ct.choices)
        assert all(np.array_equal(x, y) for x, y in zip(again.values().values(),
                                                        ct.values().values()))
    assert any(a.count("/") >= 2 for a in ct.choices)
