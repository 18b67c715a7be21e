"""Slices that follow in-place changes (tracer.query(..., through_mutation=True))."""

from __future__ import annotations

import random

import pytest

import tracer
from tracer.context import Context


class Box:
    pass


def lists(r):
    xs = [0.0, 0.0]
    xs[1] = r.random()            # item store
    ys = []
    ys.append(r.random())         # append
    ys.extend([r.random()])       # extend
    ys.insert(0, r.random())      # insert
    zs = [1.0]
    zs += [r.random()]            # augmented assignment on a list (same object)
    unused = [r.random()]
    unused.append(1)
    return sum(xs) + sum(ys) + sum(zs)


def dicts(r):
    d = {}
    d["a"] = r.random()
    d.update(b=r.random())
    e = {"c": r.random()}         # never read
    return d["a"] + d["b"]


def attrs(r):
    b = Box()
    b.x = r.random()
    c = Box()
    c.y = r.random()              # c is not read
    return b.x * 2


def _fill(out, v):
    out.append(v)


def via_call(r):
    ys = []
    _fill(ys, r.random())
    _fill([], r.random())         # a list nobody reads
    return sum(ys)


def _draws(root, q):
    return sorted(q.where(callee="Random.random").rows.tolist())


def _all_draws(root):
    return sorted(tracer.query(root, "descendants", callee="Random.random").rows.tolist())


@pytest.mark.parametrize("model, used", [(lists, [0, 1, 2, 3, 4]), (dicts, [0, 1]),
                                         (attrs, [0]), (via_call, [0])])
@pytest.mark.parametrize("across", [False, True])
def test_backward_through_mutation(model, used, across):
    root = tracer.track(model, random.Random(0), ctx=Context(modules=["random"]))
    tracer.validate(root)
    draws = _all_draws(root)
    plain = tracer.query(root[-1], "backward", across_calls=True)
    slice_ = tracer.query(root[-1], "backward", across_calls=across, through_mutation=True)
    assert _draws(root, slice_) == [draws[i] for i in used]
    assert set(plain.rows.tolist()) <= set(slice_.rows.tolist())


def test_forward_through_mutation_reaches_the_reads():
    root = tracer.track(lists, random.Random(0), ctx=Context(modules=["random"]))
    first = tracer.query(root, "descendants", callee="Random.random")[1]   # appended to ys
    fwd = tracer.query(first, "forward", through_mutation=True)
    assert root[-1].row in fwd.rows.tolist()
    assert root[-1].row not in tracer.query(first, "forward").rows.tolist()
    last = tracer.query(root, "descendants", callee="Random.random")[-1]  # unused
    assert root[-1].row not in tracer.query(last, "forward", through_mutation=True).rows


def test_through_mutation_only_on_slices():
    root = tracer.track(lists, random.Random(0), ctx=Context(modules=["random"]))
    with pytest.raises(ValueError, match="through_mutation"):
        tracer.query(root, "descendants", through_mutation=True)


def regression(r, n):
    a = r.gauss(0.0, 1.0)
    b = r.gauss(0.0, 1.0)
    ys = []
    for i in range(n):
        ys.append(r.gauss(a + b * i, 0.5))
    return sum(ys) / len(ys)


def test_regression_mean_depends_on_every_draw():
    root = tracer.track(regression, random.Random(0), 50, ctx=Context(modules=["random"]))
    draws = tracer.query(root, "descendants", callee="Random.gauss").rows.tolist()
    assert len(draws) == 52
    without = tracer.query(root[-1], "backward", across_calls=True)
    assert len(without.where(callee="Random.gauss")) == 0
    with_ = tracer.query(root[-1], "backward", across_calls=True, through_mutation=True)
    assert sorted(with_.where(callee="Random.gauss").rows.tolist()) == draws
