"""Comparing two traces: tracer.diff and the value equality it uses."""

import math
import random

import numpy as np
import pytest

import tracer
from helpers import load_example
from tracer.compare.values import same_value

_examples = load_example("irtracker_examples")
geom, h = _examples.geom, _examples.h


def _draws(seed, beta=0.5):
    """The uniform draws geom makes with `seed`, up to its first success."""
    rng = random.Random(seed)
    out = []
    while True:
        out.append(rng.random())
        if out[-1] < beta:
            return out


def _first_diverging_level(s1, s2):
    a, b = _draws(s1), _draws(s2)
    for level, (u, v) in enumerate(zip(a, b), start=1):
        if (u < 0.5) != (v < 0.5):
            return level
    return None


def _seed_stopping_at(level):
    """A seed with which geom(1, 0.5, ...) recurses exactly `level` - 1 times."""
    return next(s for s in range(1000) if len(_draws(s)) == level)


# Runs that part at the first, second and third level, each way round.
@pytest.mark.parametrize("seeds", [(2, 1), (1, 5), (_seed_stopping_at(2), 2), (2, 5), (5, 2)])
def test_diff_of_geom_under_two_seeds_names_the_first_diverging_branch(traced, seeds):
    s1, s2 = seeds
    level = _first_diverging_level(s1, s2)
    assert level is not None  # the seeds were picked so the runs differ
    a = traced(geom, 1, 0.5, random.Random(s1))
    b = traced(geom, 1, 0.5, random.Random(s2))
    d = tracer.diff(a, b)
    v = d.divergence
    assert v is not None and v.reason == "branch"
    # The call path: the root call, then one recursive call (@8) per level before.
    assert v.path == " › ".join(["geom"] + ["@8 geom"] * (level - 1))
    assert v.function == "geom" and v.line == geom.__code__.co_firstlineno + 1
    node_a = a
    for _ in range(level - 1):
        node_a = node_a[8]
    jump = node_a[6]
    assert v.row_a == jump.row and isinstance(jump, tracer.views.JumpNode)
    assert v.a == tracer.format_node(jump) and "goto" in v.b
    went_on = _draws(s1)[level - 1] >= 0.5  # a recursed at that level, so b returned
    assert (d.removed if went_on else d.added)[0].path == v.path
    assert (d.removed if went_on else d.added)[0].function == "geom"
    assert not (d.added if went_on else d.removed)
    # The draws before and at the divergence differ: values on the common path.
    assert d.values_total >= level
    assert not d.same
    text = str(d)
    assert "first divergence: a branch went another way, in geom" in text
    assert f"call path: {v.path}" in text


def test_diff_of_the_same_run_finds_nothing(traced):
    a = traced(geom, 1, 0.5, random.Random(8))
    b = traced(geom, 1, 0.5, random.Random(8))
    d = tracer.diff(a, b)
    assert d.same and d.divergence is None and d.paired == len(a.trace) == d.nodes_b
    assert str(d).startswith("no difference:")
    assert d.as_dict()["same"] is True


def test_diff_compares_floats_with_a_tolerance(traced):
    a = traced(h, 2.0, 3)
    b = traced(h, 2.0 + 1e-12, 3)
    assert tracer.diff(a, b).same
    d = tracer.diff(a, b, rel_tol=1e-15)
    assert d.divergence is None and d.values_total == 7
    c = tracer.diff(a, traced(h, 2.001, 3))
    assert c.divergence is None
    assert [(v.index, v.a, v.b) for v in c.values[:2]] == [(None, "7.0", "7.005001"), (1, "2.0", "2.001")]


def test_diff_of_a_loop_that_runs_longer(traced):
    a = traced(h, 2.0, 3)
    b = traced(h, 2.0, 5)
    d = tracer.diff(a, b)
    v = d.divergence
    assert v.reason == "branch" and v.path == "h" and v.row_a == a[23].row
    assert "goto §4" in v.a and "goto §3" in v.b  # a left the loop, b went round again
    assert d.only_a == 0 and d.only_b == len(b.trace) - len(a.trace)
    assert not d.added and not d.removed  # no calls inside h


def test_diff_of_a_raised_exception_is_a_structural_divergence(traced):
    def safe_div(x, y):
        s = x + y
        return x / y, s

    a = traced(safe_div, 1.0, 2.0)
    with pytest.raises(ZeroDivisionError):
        tracer.track(safe_div, 1.0, 0.0)
    b = tracer.last_trace()
    d = tracer.diff(a, b)
    assert d.divergence is not None and d.divergence.reason == "structure"


def test_diff_reports_calls_added_and_removed(traced):
    def leaf(x):
        return x + 1

    def other(x):
        return x - 1

    def program(flag):
        y = leaf(1)
        if flag:
            y = leaf(y)
        else:
            y = other(y)
        return y

    d = tracer.diff(traced(program, True), traced(program, False))
    assert [c.function.rsplit(".", 1)[-1] for c in d.removed] == ["leaf"]
    assert [c.function.rsplit(".", 1)[-1] for c in d.added] == ["other"]
    assert d.divergence.reason == "branch"


def test_diff_walks_deep_recursion_without_recursing(traced):
    def down(n):
        return 0 if n == 0 else 1 + down(n - 1)

    import sys
    depth = min(sys.getrecursionlimit() - 100, 800)
    a, b = tracer.track(down, depth), tracer.track(down, depth)
    assert tracer.diff(a, b).same


def test_diff_of_loaded_traces(traced, tmp_path):
    pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")
    a = traced(geom, 1, 0.5, random.Random(2))
    b = traced(geom, 1, 0.5, random.Random(5))
    tracer.save(a, tmp_path / "a.parquet")
    tracer.save(b, tmp_path / "b.parquet")
    la, lb = tracer.load(tmp_path / "a.parquet"), tracer.load(tmp_path / "b.parquet")
    live, loaded = tracer.diff(a, b), tracer.diff(la, lb)
    assert loaded.divergence == live.divergence
    assert [(v.path, v.index, v.a, v.b) for v in loaded.values] == \
        [(v.path, v.index, v.a, v.b) for v in live.values]
    assert tracer.diff(a, la).same  # a live trace and its saved copy


def test_diff_refuses_what_is_not_a_node():
    with pytest.raises(TypeError, match="two nodes"):
        tracer.diff(1, 2)


# -- value equality ------------------------------------------------------------------------

class Plain:
    pass


def test_same_value_rules():
    assert same_value(1.0, 1.0 + 1e-12) and not same_value(1.0, 1.001)
    assert same_value(1.0, 1.001, rel_tol=1e-2)
    assert same_value(math.nan, math.nan) and not same_value(math.nan, 1.0)
    assert same_value(10**30, 10**30) and not same_value(10**30, 10**30 + 1)
    assert same_value(np.float64(0.5), 0.5) and same_value(np.arange(1.0, 4.0), np.arange(1.0, 4.0) + 1e-12)
    assert not same_value(np.arange(3.0), np.arange(4.0))
    assert same_value([1.0, (2.0, "x")], [1.0 + 1e-13, (2.0, "x")])
    assert not same_value([1, 2], (1, 2))
    assert same_value({"a": 1.0}, {"a": 1.0}) and not same_value({"a": 1}, {"b": 1})
    assert same_value(Plain(), Plain())  # no equality of their own: compared by repr
    assert same_value(random.Random(1), random.Random(2))  # likewise: same type, no eq
    assert same_value(ValueError("x"), ValueError("x")) and not same_value(ValueError("x"), ValueError("y"))
    assert not same_value("a", "b")
