"""Fixing runs (condition, do, update's re-run) through `_core.SiteGate`: a draw runs
Python code only at a line of a fixed address (the first of its call there, and the
fixed ones); the others are counted in C, and every address is the one the scan of
the finished trace gives."""

from __future__ import annotations

import random

import numpy as np
import pytest

import tracer
import tracer.ppl as ppl
from tracer import _core


def _step(r, x):
    return x + r.gauss(0.0, 1.0) + r.gauss(0.0, 2.0)     # two draws on one line


def gated(r, g, n):
    xs = []
    for i in range(n):
        xs.append(r.gauss(0.0, 1.0))
        if i % 3 == 0:
            xs.append(_step(r, xs[-1]))
    m = r.gauss                                            # a bound method
    xs.append(m(5.0, 1.0) + g.normal() + r.random())
    return sum(xs)


def _run(obs, seed=1):
    return ppl.condition(gated, obs, random.Random(seed), np.random.default_rng(seed), 12)


def test_condition_fixes_exactly_the_named_draws_at_busy_lines():
    ct = ppl.trace(gated, random.Random(0), np.random.default_rng(0), 12)
    addrs = list(ct.choices)
    # draws on the loop's line, in the helper (second draw of a line), the bound
    # method and the numpy generator
    chosen = [a for a in addrs if "/_step@" in a][1::3] + addrs[3:9:2] + addrs[-3:-1]
    obs = {a: float(i) + 0.5 for i, a in enumerate(chosen)}
    c = _run(obs)
    tracer.validate(c.root)
    assert list(c.choices) == addrs
    assert c.observed == obs
    assert [a for a, x in c.choices.items() if x.kind == "observed"] == \
        [a for a in addrs if a in obs]
    # the addresses the run fixed by are the scan's: a replay reproduces it
    again = ppl.replay(c, random.Random(9), np.random.default_rng(9), 12)
    assert again.values() == c.values() and again.log_joint == pytest.approx(c.log_joint)
    assert c.log_likelihood == pytest.approx(sum(c.choices[a].logp for a in obs))


def test_only_the_first_draw_of_a_busy_line_and_the_fixed_ones_run_python(monkeypatch):
    import sys
    import types
    from tracer.ppl import _hooks
    calls = []

    def getframe(depth=0):          # each dispatch starts with sys._getframe(1)
        calls.append(depth)         # (enter asks for depth 2)
        return sys._getframe(depth + 1)
    monkeypatch.setattr(_hooks, "sys", types.SimpleNamespace(_getframe=getframe))
    ct = ppl.trace(gated, random.Random(0), np.random.default_rng(0), 300)
    loop = [a for a in ct.choices if "/_step@" not in a][:-3]
    obs = {a: 1.0 for a in loop[10:300:50]}
    c = ppl.condition(gated, obs, random.Random(1), np.random.default_rng(1), 300)
    assert c.observed == obs and len(c) == len(ct)
    # the first draw on the loop's line, then only the fixed ones; the bound method
    # always goes to Python (the gate cannot call it unbound)
    assert calls.count(1) == 1 + len(obs) + 1


def test_draws_not_fixed_keep_the_generator_sequence():
    ct = ppl.trace(gated, random.Random(4), np.random.default_rng(4), 12)
    last = list(ct.choices)[-1]                  # r.random() on the last line
    c = ppl.condition(gated, {last: 0.25}, random.Random(4), np.random.default_rng(4), 12)
    # fixing the last draw changes no earlier one
    assert [c[a] for a in list(ct.choices)[:-1]] == [ct[a] for a in list(ct.choices)[:-1]]
    assert c[last] == 0.25


def test_site_gate_counts_in_c_and_sends_the_rest_to_the_dispatcher():
    calls = []

    def dispatcher(*args):
        calls.append(args)
        return "fixed"

    def program(f):
        a = f(1)
        b = f(2)
        return a, b

    line = program.__code__.co_firstlineno

    def places(code):
        if code is not program.__code__:
            return b""
        units = bytearray(len(code.co_code) // 2)
        for start, end, ln in code.co_lines():
            if ln == line + 1:                   # `a = f(1)` only: slot 1
                units[start // 2:end // 2] = b"\x01" * ((end - start) // 2)
        return bytes(units)

    count = _core.DrawCount()
    gate = _core.SiteGate(lambda x: x * 10, dispatcher, places, count)
    assert program(gate) == ("fixed", 20) and calls == [(1,)] and count.n == 2
    assert _core.SiteGate(abs, dispatcher, places, count, everywhere=True)(-3) == "fixed"
    assert _core.SiteGate(abs, dispatcher, places, count, generators=(int,))(-3) == 3
    assert _core.SiteGate(abs, dispatcher, places, count, generators=(str,))(-3) == "fixed"
    assert count.n == 5
    with pytest.raises(TypeError, match="bytes"):
        program(_core.SiteGate(abs, dispatcher, lambda code: "x", count))
