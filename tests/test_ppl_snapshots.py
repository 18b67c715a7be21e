"""A draw is scored with its parameters as they were at the draw, and recorded with
its value as it was then, also when the program changes the list or array in place
later in the run (tracer.ppl.snapshots): random, numpy Generator, legacy numpy and
user samplers, through trace, replay, condition and do."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import scipy.stats as st

import tracer
import tracer.ppl as ppl


def weights_changed_after(r, n, seen):
    w = [1.0, 1.0]
    out = []
    for i in range(n):
        w[0] = abs(r.gauss(0.0, 1.0)) + 0.1
        seen.append(list(w))
        out.append(r.choices([0, 1], weights=w)[0])
    w[0] = 100.0
    return out


def generator_arrays_changed_after(g, n, seen):
    mu = np.zeros(3)
    p = np.array([0.5, 0.5])
    out = []
    for i in range(n):
        x = g.normal(mu, 1.0)            # mu changed below: scored at its value now
        seen.append((mu.copy(), x.copy(), p.copy()))
        k = g.choice(2, p=p)
        out.append(int(k))
        mu += 1.0
        x *= 10.0                       # the drawn array changed in place
        p[0] = 0.2 + 0.6 * (i % 2)
        p[1] = 1.0 - p[0]
    return out


def legacy_arrays_changed_after(rs, n, seen):
    mu = np.zeros(2)
    xs = []
    for i in range(n):
        x = np.random.normal(mu, 2.0)    # the module function: the global RandomState
        y = rs.normal(mu, 0.5)
        seen.append((mu.copy(), x.copy(), y.copy()))
        mu[0] += 3.0
        xs.append(x)
    return xs


def _pick_logp(k, ws):
    return math.log(ws[k] / sum(ws))


@ppl.sampler(_pick_logp)
def pick(r, ws):
    return r.choices(range(len(ws)), weights=ws)[0]


def user_list_changed_after(r, n, seen):
    ws = [1.0, 2.0, 3.0]
    out = []
    for i in range(n):
        seen.append(list(ws))
        k = pick(r, ws)
        ws[k] += 5.0
        out.append(k)
    return out


def shuffled_then_changed(r, seen):
    xs = [1, 2, 3, 4, 5]
    r.shuffle(xs)
    seen.append(tuple(xs))
    xs[0] = 99
    return xs


def _runs(model, fresh, *args):
    """(the traced ChoiceTrace, what the model saw) for trace, replay, condition on
    the first choice and do on it."""
    seen: list = []
    ct = ppl.trace(model, fresh(), *args, seen)
    tracer.validate(ct.root)
    out = [(ct, seen)]
    seen2: list = []
    ct2 = ppl.replay(ct, fresh(), *args, seen2)
    out.append((ct2, seen2))
    first = next(iter(ct))
    for how in (ppl.condition, ppl.do):
        seen3: list = []
        got = how(model, {first: ct[first]}, fresh(), *args, seen3)
        tracer.validate(got.root)
        out.append((got, seen3))
    return out


def test_random_choices_scored_with_the_weights_at_the_draw():
    for ct, seen in _runs(weights_changed_after, lambda: random.Random(6), 6):
        addrs = list(ct)
        assert len(addrs) == 12
        for i in range(6):
            c = ct.choices[addrs[2 * i + 1]]
            assert c.params["weights"] == seen[i]
            assert c.logp == pytest.approx(math.log(seen[i][c.value[0]] / sum(seen[i])))
        assert ct.log_joint == pytest.approx(
            math.fsum(c.logp for c in ct.choices.values() if c.scored))


def test_numpy_generator_parameters_and_values_at_the_draw():
    for ct, seen in _runs(generator_arrays_changed_after, lambda: np.random.default_rng(3), 4):
        ch = list(ct.choices.values())
        assert len(ch) == 8
        for i, (mu, x, p) in enumerate(seen):
            normal, choice = ch[2 * i], ch[2 * i + 1]
            np.testing.assert_array_equal(normal.value, x)
            np.testing.assert_array_equal(normal.params["loc"], mu)
            assert normal.logp == pytest.approx(st.norm.logpdf(x, mu, 1.0).sum())
            assert choice.logp == pytest.approx(math.log(p[choice.value]))


def test_legacy_numpy_parameters_at_the_draw():
    def fresh():
        np.random.seed(5)
        return np.random.RandomState(9)
    for ct, seen in _runs(legacy_arrays_changed_after, fresh, 3):
        ch = list(ct.choices.values())
        assert len(ch) == 6
        for i, (mu, x, y) in enumerate(seen):
            np.testing.assert_array_equal(ch[2 * i].value, x)
            assert ch[2 * i].logp == pytest.approx(st.norm.logpdf(x, mu, 2.0).sum())
            assert ch[2 * i + 1].logp == pytest.approx(st.norm.logpdf(y, mu, 0.5).sum())


def test_user_sampler_scored_with_its_arguments_at_the_draw():
    for ct, seen in _runs(user_list_changed_after, lambda: random.Random(2), 5):
        ch = list(ct.choices.values())
        assert [c.sampler.name for c in ch] == ["pick"] * 5
        for c, ws in zip(ch, seen):
            assert c.logp == pytest.approx(_pick_logp(c.value, ws))


def test_a_shuffle_is_the_order_it_left_at_the_draw():
    seen: list = []
    ct = ppl.trace(shuffled_then_changed, random.Random(4), seen)
    (c,) = ct.choices.values()
    assert c.value == seen[0]
    assert c.logp == pytest.approx(-math.log(120))
    seen2: list = []
    again = ppl.replay(ct, random.Random(0), seen2)
    assert seen2 == seen and again.value == ct.value


def test_copy_at_call_in_the_core():
    from tracer import _core
    from tracer.context import Context

    def prog(xs, d):
        out = repr((1, xs))            # a tuple holding a list
        xs.append(d["k"])
        d["k"] = 0
        return out, sorted(xs)
    copier = _core.CopyAtCall(np.ndarray)
    root = tracer.track(prog, [3, 1], {"k": 5},
                        ctx=Context(on_call={sorted: copier, repr: copier}))
    tracer.validate(root)
    repr_row, sorted_row = sorted(copier.inputs)
    assert copier.inputs[repr_row] == {1: (1, [3, 1])}
    assert list(copier.values) == [sorted_row]
    assert copier.values[sorted_row] == [1, 3, 5]
    assert copier.inputs[sorted_row] == {1: [3, 1, 5]}
    # called as a plain hook on a node, it makes the same copies
    # kept flat, in the order made (no dict per call): what the dicts are made from
    assert copier.input_rows == [repr_row, sorted_row] and copier.input_ks == [1, 1]
    assert copier.input_copies == [(1, [3, 1]), [3, 1, 5]]
    assert copier.value_rows == [sorted_row] and copier.value_copies == [[1, 3, 5]]
    again = _core.CopyAtCall()
    again(_core.node_view(root.trace, sorted_row))
    assert again.values == {sorted_row: [1, 3, 5]}


def test_copies_read_as_site_columns_for_user_and_categorical_sites():
    # a declared sampler (an irregular site, read row by row) and a categorical site
    # (its weights column read at once) given one list that a call changes after each
    from tracer.ppl.snapshots import Snapshots

    @ppl.sampler(lambda x, w: st.norm.logpdf(x, w[0], 1.0))
    def outer(r, w):
        return r.gauss(w[0], 1.0)

    def model(r, n):
        w = [1.0, 3.0]
        out = []
        for i in range(n):
            w.reverse()
            out.append(outer(r, w))                       # w is [3, 1]
            w.reverse()
            out.append(r.choices([0, 1], weights=w)[0])   # w is [1, 3]
        w.append(9.0)                                     # and [1, 3, 9] at the end
        return out

    ct = ppl.trace(model, random.Random(0), 4)
    tracer.validate(ct.root)
    cs = list(ct.choices.values())
    assert [c.sampler.name for c in cs] == ["outer", "choices"] * 4
    for c in cs[0::2]:                                    # as at the draw
        assert c.params["args"][0] == [3.0, 1.0]
        assert c.logp == pytest.approx(st.norm.logpdf(c.value, 3.0, 1.0))
    for c in cs[1::2]:
        assert c.params["weights"] == [1.0, 3.0]
        assert c.logp == pytest.approx(math.log([0.25, 0.75][c.value[0]]))
    empty = Snapshots()
    rows, ks, copies = empty.input_columns()
    assert len(rows) == len(ks) == len(copies) == 0 and empty.inputs_of(3) is None


def test_a_store_right_after_the_draw_is_not_seen():
    # The copying context gets PLAN_EXACT plans: the draw's row (and its copy) is
    # recorded at the event right after the call, before the store.
    def model(r):
        w = [1.0, 3.0]
        b = r.choices([0, 1], weights=w)
        w[0] = 7.0
        return b

    ct = ppl.trace(model, random.Random(0))
    assert next(iter(ct.choices.values())).params["weights"] == [1.0, 3.0]
