"""Incremental update (issue 11, item 5): only what depends on a change re-runs."""

import math
import operator

import pytest

import tracer
from tracer.tapes import Call, Guard, TapeError


def tape_validated(f, *args, **kwargs):
    """tracer.tape, and validate the tape it made."""
    val, tape = tracer.tape(f, *args, **kwargs)
    tape.validate()
    return val, tape


N = 1000


def branch(x):
    y = math.sin(x) * 2.0 + x * x
    if y > 10.0:
        y = y - 10.0
    return y


def tree(xs, lo, hi):
    if hi - lo == 1:
        return branch(xs[lo])
    mid = (lo + hi) // 2
    return tree(xs, lo, mid) + tree(xs, mid, hi)


def model(xs):
    """N independent branches of work, summed pairwise."""
    return tree(xs, 0, len(xs))


@pytest.fixture
def traced():
    xs = [0.003 * i for i in range(N)]
    val, tape = tape_validated(model, xs)
    tape.validate()
    leaves = [op for op in tape if isinstance(op, Call) and op.fn is operator.getitem
              and op.args[0] is tape.inputs[1]]
    assert len(leaves) == N
    return xs, tape, leaves


def test_one_changed_branch_reruns_only_its_ops(traced):
    xs, tape, leaves = traced
    k = 417
    new = tape.update({leaves[k]: 2.5})
    xs2 = list(xs)
    xs2[k] = 2.5
    assert new == model(xs2)
    assert new == tape.compile()(xs2) == tape.play(xs2)
    rerun = tape.last_update
    # The branch: sin, * 2.0, x * x, +, > 10.0 and its guard; then one sum per level
    # of the pairwise tree on the way to the root.
    branch_ops = [op for op in rerun if op.id < leaves[k + 1].id]
    assert [getattr(op, "fn", "guard") for op in branch_ops] == [
        math.sin, operator.mul, operator.mul, operator.add, operator.gt, "guard"]
    levels = len(rerun) - len(branch_ops)
    assert math.floor(math.log2(N)) <= levels <= math.ceil(math.log2(N))
    assert all(op.fn is operator.add for op in rerun[len(branch_ops):])
    assert tape.result is rerun[-1] and tape.result.value == new


def test_guard_changing_outcome_raises_and_keeps_the_tape(traced):
    xs, tape, leaves = traced
    before = [op.value for op in tape]
    with pytest.raises(tracer.GuardError, match="if y > 10.0"):
        tape.update({leaves[10]: 50.0})
    assert [op.value for op in tape] == before


def test_retrace_on_an_input_change():
    def f(x, y):
        return x * 2 if x > y else y - x

    val, tape = tape_validated(f, 5, 1)
    x = tape.inputs[1]
    assert tape.update({x: 6}) == 12
    assert len(tape.last_update) == 3  # x * 2, x > y, its guard
    with pytest.raises(tracer.GuardError):
        tape.update({x: 0})
    assert tape.update({x: 0}, retrace=True) == 1
    tape.validate()
    assert tape.compile()(0, 4) == 4


def test_mutable_values_are_made_afresh():
    def acc(a, b):
        out = [a]
        out.append(b)
        return sum(out) + len(out)

    val, tape = tape_validated(acc, 1, 2)
    b = tape.inputs[2]
    assert tape.update({b: 10}) == 13  # the list is rebuilt, not appended to twice
    assert tape.update({b: 20}) == 23


def test_update_checks_its_input(traced):
    xs, tape, leaves = traced
    with pytest.raises(TapeError, match="not an op"):
        tape.update({Call(operator.neg, (1,)): 2})
    guard = next(op for op in tape if isinstance(op, Guard))
    with pytest.raises(TapeError, match="guard"):
        tape.update({guard: True})
    assert tape.update({}) == tape.result.value and tape.last_update == ()
