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


def _many_lines(n_lines):
    # a model drawing at n_lines lines of one function, in a loop: lines from the
    # 255th on share SiteFix's slot 255 (their entries are found by line in Python)
    src = ("def many(r, n):\n    total = 0.0\n    for i in range(n):\n"
           + "".join(f"        total += r.gauss({j}.0, 1.0)\n" for j in range(n_lines))
           + "    return total\n")
    ns: dict = {}
    exec(compile(src, "<many_lines>", "exec"), ns)
    return ns["many"]


def test_fixed_draws_on_many_lines_and_counts_in_loops():
    # SiteFix keeps the last candidate's entry while its frame's context and its
    # line's slot stay the same: draws at one line in a loop, lines interleaved,
    # lines sharing slot 255 and contexts switching (recursion) each count apart
    many = _many_lines(300)
    ct = ppl.trace(many, random.Random(1), 3)
    addrs = list(ct.choices)
    assert len(addrs) == 900
    chosen = [addrs[k] for k in (0, 1, 253, 254, 255, 256, 299, 300 + 254, 300 + 255,
                                 600 + 256, 600 + 299)]
    obs = {a: 1000.0 + i for i, a in enumerate(chosen)}
    for in_loop in (True, False):
        old = filtered_rows_in_loop(in_loop)
        try:
            c = ppl.condition(many, obs, random.Random(1), 3)
        finally:
            filtered_rows_in_loop(old)
        assert list(c.choices) == addrs
        expected = {a: obs.get(a, v) for a, v in ct.values().items()}
        assert c.values() == expected
        assert [a for a, x in c.choices.items() if x.kind == "observed"] == chosen
    deep = [a for a in ppl.trace(tree, random.Random(5), 4).choices if a.count("/") >= 3]
    obs = {a: 0.25 for a in deep[::2]}
    c = ppl.condition(tree, obs, random.Random(5), 4)
    assert all(c[a] == 0.25 for a in obs)
    assert sorted(a for a, x in c.choices.items() if x.kind == "observed") == sorted(obs)


def single_rows(r, bodies, n):
    # one-row segments (a result read where the instruction that consumes it
    # waits: the `*` before STORE_SUBSCR's `-=`, the `+` before `** -1.5`), some
    # of them a draw, under the filters of ppl's contexts (_single_row)
    for i in range(n):
        b1, b2 = bodies[i % 2], bodies[(i + 1) % 2]
        dx = b1[0] - b2[0]
        m2 = r.gauss(1.0, 0.1)
        b1[1] -= dx * m2
        b2[1] += dx * r.gauss(2.0, 0.1)
        d = (dx * dx + r.random() + 1.0) ** -1.5
        b1[2] -= d * r.choices(range(2), weights=[1, 2])[0]
    return sum(b[1] + b[2] for b in bodies)


def _contexts():
    from tracer.ppl._hooks import SequenceContext, fixing_context, plain_context
    from tracer.ppl.run import _fix
    from tracer.ppl.snapshots import Snapshots
    ct = ppl.trace(single_rows, random.Random(2), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], 20)
    addrs = list(ct.choices)
    fixed = _fix({a: ct[a] for a in addrs[::7]}, "observed")
    values = [ct[a] for a in addrs]
    return [lambda: plain_context(Snapshots()), lambda: fixing_context(fixed),
            lambda: fixing_context(fixed, Snapshots()),
            lambda: SequenceContext(values, Snapshots()),
            lambda: tracer.Context(on_call={random.Random.gauss: lambda node: None})]


@pytest.mark.parametrize("which", range(5))
def test_single_row_segments_under_filters_match_the_general_path(which):
    from helpers import assert_same_trace
    make = _contexts()[which]
    roots = []
    for in_loop in (True, False):
        old = filtered_rows_in_loop(in_loop)
        try:
            bodies = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
            roots.append((tracer.track(single_rows, random.Random(5), bodies, 20,
                                       ctx=make()), bodies))
        finally:
            filtered_rows_in_loop(old)
    (a, ba), (b, bb) = roots
    assert ba == bb and a.value == b.value
    assert_same_trace(a, b)
