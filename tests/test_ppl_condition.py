"""Fixing runs (condition, do, update's re-run) through `_core.SiteFix` overrides:
the program calls its samplers itself, and a draw at a fixed address has its value
replaced at the event after it.  Python runs only at the first draw of a call at
a line of a fixed address and for the fixed draws; the others are counted in C.
Every address is the one ppl.trace gives (recursion, loops, generators,
exceptions), condition scores what it fixes and do does not."""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest
import scipy.stats as st

import tracer
import tracer.ppl as ppl
from tracer import _core
from tracer.context import Context


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


def _counting(monkeypatch):
    from tracer.ppl import _hooks
    calls = {"first": 0, "fix": 0, "named": 0}
    real = _hooks._fix_hooks

    def counted(name, fn):
        def wrapper(*args):
            calls[name] += 1
            return fn(*args)
        return wrapper

    def fix_hooks(run, sites):
        first, fix, fix_shuffled, named = real(run, sites)
        return (counted("first", first), counted("fix", fix), counted("fix", fix_shuffled),
                counted("named", named))
    monkeypatch.setattr(_hooks, "_fix_hooks", fix_hooks)
    return calls


def test_python_runs_only_at_a_calls_first_candidate_and_the_fixed_draws(monkeypatch):
    calls = _counting(monkeypatch)
    ct = ppl.trace(gated, random.Random(0), np.random.default_rng(0), 300)
    loop = [a for a in ct.choices if "/_step@" not in a][:-3]
    obs = {a: 1.0 for a in loop[10:300:50]}
    c = ppl.condition(gated, obs, random.Random(1), np.random.default_rng(1), 300)
    assert c.observed == obs and len(c) == len(ct)
    # the loop's line once (one call: the model), then only the fixed draws; the
    # bound method needs nothing more (the program's own call ran)
    assert calls == {"first": 1, "fix": len(obs), "named": 0}


def test_draws_not_fixed_keep_the_generator_sequence():
    ct = ppl.trace(gated, random.Random(4), np.random.default_rng(4), 12)
    last = list(ct.choices)[-1]                  # r.random() on the last line
    c = ppl.condition(gated, {last: 0.25}, random.Random(4), np.random.default_rng(4), 12)
    # fixing the last draw changes no earlier one
    assert [c[a] for a in list(ct.choices)[:-1]] == [ct[a] for a in list(ct.choices)[:-1]]
    assert c[last] == 0.25


def test_fixed_draws_run_as_untraced_and_only_their_values_change():
    # the program makes every call itself: with a fixed draw whose value is the
    # one it draws, the run is the untraced one, draw for draw
    ct = ppl.trace(gated, random.Random(2), np.random.default_rng(2), 12)
    addrs = list(ct.choices)
    obs = {a: ct[a] for a in addrs[::4]}
    c = ppl.condition(gated, obs, random.Random(2), np.random.default_rng(2), 12)
    assert c.values() == ct.values() and c.value == ct.value


def test_condition_scores_observations_and_do_does_not():
    ct = ppl.trace(gated, random.Random(0), np.random.default_rng(0), 6)
    a = list(ct.choices)[3]                       # gauss(0, 1) on the loop's line
    assert ct.choices[a].params == {"mu": 0.0, "sigma": 1.0}
    c = ppl.condition(gated, {a: 0.75}, random.Random(3), np.random.default_rng(3), 6)
    d = ppl.do(gated, {a: 0.75}, random.Random(3), np.random.default_rng(3), 6)
    assert c.choices[a].kind == "observed" and d.choices[a].kind == "intervened"
    assert c.choices[a].logp == pytest.approx(st.norm.logpdf(0.75, 0.0, 1.0))
    others = sum(x.logp for b, x in c.choices.items() if b != a)
    assert c.log_joint == pytest.approx(others + c.choices[a].logp)
    assert d.log_joint == pytest.approx(others)
    assert c.values() == d.values()


# -- addresses below the model's own body ----------------------------------------------------
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


def mixed(r):
    total = sum(drawing_gen(r, 3))
    for _ in range(3):
        try:
            failing(r)
        except ValueError as e:
            total += e.args[0]
    total += sum(r.gauss(1.0, 1.0) for _ in range(2))
    return total + tree(r, 3)


@pytest.mark.parametrize("model, args", [(tree, (4,)), (mixed, ())], ids=["recursion", "mixed"])
def test_every_address_can_be_fixed_and_is_ppl_traces(model, args):
    ct = ppl.trace(model, random.Random(5), *args)
    addrs = list(ct.choices)
    assert any(a.count("/") >= 2 for a in addrs)
    for chosen in (addrs[::3], addrs[1::3], addrs[2::3]):
        obs = {a: ct[a] + 0.0 for a in chosen}
        c = ppl.condition(model, obs, random.Random(5), *args)
        tracer.validate(c.root)
        # the values drawn are the trace's (the fixed ones equal), so the run and
        # its addresses are too
        assert list(c.choices) == addrs and c.values() == ct.values()
        assert [a for a, x in c.choices.items() if x.kind == "observed"] == chosen
    # a changed value at a nested address changes what follows, and the addresses
    # are those ppl.trace gives to a run that draws the same values
    deep = max(addrs, key=lambda a: a.count("/"))
    c = ppl.condition(model, {deep: -3.0}, random.Random(5), *args)
    again = ppl.replay(c, random.Random(0), *args)
    assert c[deep] == -3.0 and list(again.choices) == list(c.choices)


def test_a_root_address_is_not_fixed_in_a_recursive_call():
    ct = ppl.trace(tree, random.Random(5), 2)
    root_draw = "tree/gauss@L" + list(ct.choices)[0].split("@L")[1]
    assert root_draw in ct.choices
    c = ppl.condition(tree, {root_draw: -1.0}, random.Random(5), 2)
    assert [a for a, x in c.choices.items() if x.kind == "observed"] == [root_draw]
    assert sum(1 for x in c.choices.values() if x.value == -1.0) == 1


def test_site_fix_is_run_by_the_recorder_only():
    fix = _core.SiteFix(lambda code: b"", lambda *a: [0, "", None], lambda *a: 0.0)
    with pytest.raises(TypeError, match="run by the recorder"):
        fix(None)
    # an override-only filter: exact plans, no event before a call
    ctx = Context(override={random.Random.gauss: fix})
    assert _core.plan_mode_for(ctx) == _core.PlanMode.PLAN_EXACT


def test_places_must_be_bytes():
    def model(r):
        return r.gauss(0.0, 1.0)
    fix = _core.SiteFix(lambda code: "x", lambda *a: [0, "", None], lambda *a: 0.0)
    with pytest.raises(tracer.TrackingError) as info:
        tracer.track(model, random.Random(0), ctx=Context(override={random.Random.gauss: fix}))
    assert "bytes" in str(info.value.__cause__)


def test_site_gate_counts_in_c_and_sends_the_rest_to_the_dispatcher():
    # (_core.SiteGate: a replacement callable by place, run in C)
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


def test_each_single_deep_address_fixes_that_draw_alone():
    # one fixed address: the calls off its path share a context that names
    # nothing; the draw at the address (and no other) takes the value
    for model, args in ((tree, (4,)), (mixed, ())):
        ct = ppl.trace(model, random.Random(5), *args)
        addrs = list(ct.choices)
        for a in addrs:
            c = ppl.condition(model, {a: ct[a] + 0.0}, random.Random(5), *args)
            assert list(c.choices) == addrs and c.values() == ct.values()
            assert [b for b, x in c.choices.items() if x.kind == "observed"] == [a]


def _draw_at(r, mu):
    return r.gauss(mu, 1.0)


def helpers(r, n):
    total = 0.0
    for i in range(n):
        total += _draw_at(r, i * 0.1)                    # a call per draw
        if i % 4 == 0:
            total += _draw_at(r, -1.0) + sum(sorted([_draw_at(r, 0.0)], key=abs))
    total += sum(_draw_at(r, 2.0) for _ in range(3))     # frames entered from C
    return total + tree(r, 2)


@pytest.mark.parametrize("model, args", [(helpers, (30,)), (tree, (4,)), (mixed, ())],
                         ids=["helpers", "recursion", "mixed"])
def test_calls_named_in_c_as_enter_names_them(model, args, monkeypatch):
    ct = ppl.trace(model, random.Random(5), *args)
    addrs = list(ct.choices)
    deep = [a for a in addrs if a.count("/") >= 2]
    assert deep
    runs = []
    for chosen in (deep[::5], deep[1::7] + addrs[:2], [deep[-1]]):
        # new values on the same side of tree's branch (x > 1.5): the same calls
        obs = {a: ct[a] - 0.001 if ct[a] <= 1.5 else ct[a] + 0.001 for a in chosen}
        runs.append((obs, ppl.condition(model, obs, random.Random(5), *args)))
    from tracer.ppl import _hooks
    entered = []
    real_start = _hooks._CallNaming._start

    def user_frame():          # _hooks._user_frame, counting the calls enter names
        entered.append(1)
        f = sys._getframe(2)
        while f is not None and f.f_globals.get("__name__", "").startswith("tracer."):
            f = f.f_back
        return f
    monkeypatch.setattr(_hooks, "_user_frame", user_frame)
    c = ppl.condition(model, runs[0][0], random.Random(5), *args)
    # the recorder asks enter at the model's call, and in a call on a path with
    # none below it (tree's leaves), not at the calls _core.CallPaths counts
    assert 1 <= len(entered) < len(c.choices) // 3
    assert c.values() == runs[0][1].values()

    def start(self):
        real_start(self)
        self._call_paths = None     # every call named by enter, in Python
    monkeypatch.setattr(_hooks._CallNaming, "_start", start)
    for obs, c in runs:
        del entered[:]
        py = ppl.condition(model, obs, random.Random(5), *args)
        assert len(entered) > len(runs[0][0])
        # the C counts fixed the same draws as enter's do
        assert list(py.choices) == list(c.choices) and py.values() == c.values()
        assert [a for a, x in py.choices.items() if x.kind == "observed"] == \
            [a for a, x in c.choices.items() if x.kind == "observed"] == \
            [a for a in c.choices if a in obs]
        assert all(c[a] == v for a, v in obs.items())
