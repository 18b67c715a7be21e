"""The common call's one-routine paths (events.pxi) record what the general paths do.

A Python function called by the op its caller's pending segment is at, under a
context with no hooks, enters through `_enter_plain` (call row, argument rows,
frame record in one routine), returns through `_return_plain` (ReturnNode, the
call row closed, the frame popped), and its caller's next event completes the
call's row in `_close_open_call`.  A context with a `canrecur` hook takes the
general paths (`_enter`, `_leave`, `_record`) for every call and answers the same
(it follows everything): both must give the same trace, column by column, also
for the calls the plain paths hand over (closures over parameters, classes,
generators, `*args`, exceptions, keyword calls, constants first used as
arguments) and when the columns grow.

Under `Context(modules=[...])` a callee's verdict is kept per code object
(`_may_recur_cached`); a context that also has `canrecur` asks `_may_recur` every
time: both record the same calls as primitive.
"""

import random

import pytest

import tracer
from helpers import assert_same_trace, track_both
from tracer.context import Context



class FollowAll(Context):
    """A canrecur hook that follows every call: the general entry and exit paths."""

    def canrecur(self, f, /, *args, **kwargs) -> bool:
        return True


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def kw(a, b=2, *, c=3):
    return a * b + c


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm1(self):
        return abs(self.x) + abs(self.y)


def closure_over(p):
    def inner():
        return p + 1
    return inner() + inner()


def gen(n):
    for i in range(n):
        yield kw(i, c=i)


def fails(x):
    if x > 3:
        raise ValueError(x)
    return x


def calls(n):
    total = 0
    for i in range(n):
        total += kw(i) + kw(i, 3) + kw(i, c=1) + kw(*(i, 2))
        total += Point(i, -i).norm1()
        total += closure_over(i)
        total += sum(gen(3))
        try:
            total += fails(i % 5)
        except ValueError:
            total -= 1
        total += fib(i % 6)
    return total


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("call", [(fib, (12,)), (calls, (60,)), (closure_over, (5,))])
def test_plain_call_paths_match_the_general_ones(call, fresh):
    f, args = call
    # fresh: no spare columns, so the first capacity is small and the columns grow
    # between calls (the plain paths hand a call that needs growth over).
    plain, general = track_both(f, args, FollowAll(), fresh=fresh)
    assert plain.value == general.value == f(*args)
    assert_same_trace(plain, general, fewer_events=True)


def test_plain_entry_writes_the_rows_of_a_call():
    root = tracer.track(fib, 3)
    trace = root.trace
    cols = trace.columns()
    kind, flags, parent = cols["kind"].tolist(), cols["flags"].tolist(), cols["parent"].tolist()
    nested = [row for row in range(1, len(trace)) if kind[row] == 3]   # K_NESTED
    assert len(nested) == 4   # fib(2), fib(1) in it, fib(0) in it, fib(1)
    for row in nested:
        # each: its function and its parameter as ArgumentNodes right after it
        assert kind[row + 1] == kind[row + 2] == 0
        assert trace.value(row + 1) is fib
        assert parent[row + 1] == parent[row + 2] == row
        assert not flags[row] & 4   # closed (F_OPEN cleared)
    tracer.validate(root)


class ModulesFollowAll(Context):
    """modules=[...] with a canrecur hook: _may_recur asked at every call."""

    def canrecur(self, f, /, *args, **kwargs) -> bool:
        return True


def draws(r, n):
    total = 0.0
    for i in range(n):
        total += r.gauss(i, 1.0) + r.uniform(0, 1) + kw(i)
    return total


def test_module_verdicts_kept_per_code_match_asking_every_call():
    cached = tracer.track(draws, random.Random(0), 300, ctx=Context(modules=["random"]))
    asked = tracer.track(draws, random.Random(0), 300, ctx=ModulesFollowAll(modules=["random"]))
    assert cached.value == asked.value
    assert_same_trace(cached, asked, fewer_events=True)
    trace = cached.trace
    # r.gauss and r.uniform are Python functions of `random`: primitive, no frame
    # of theirs recorded; kw is followed.
    followed = {c.co_name for c in trace.codes}
    assert "kw" in followed and "gauss" not in followed and "uniform" not in followed


def test_module_verdicts_are_per_context():
    # The same code under two contexts in one process: each context's verdict.
    primitive = tracer.track(draws, random.Random(0), 5, ctx=Context(modules=["random"]))
    followed = tracer.track(draws, random.Random(0), 5, ctx=Context())
    assert "gauss" not in {c.co_name for c in primitive.trace.codes}
    assert "gauss" in {c.co_name for c in followed.trace.codes}
    tracer.validate(primitive)
    tracer.validate(followed)


# -- contexts with call filters and primitives (tracer.ppl's contexts) ------------
# A frame whose callee no filter of its context names, under a context whose only
# hooks are primitives and filters, takes the plain paths (_plain_entry_ok and the
# verdict kept per code and context, _plain_close_ok, _plain_return_ok); a filtered
# callee takes the general ones and gets its hook, its replacement or its override.
# The same context with a `canrecur` that follows everything takes the general
# paths everywhere: the traces and the hooks' calls must be the same.

def _double(x):
    return 2 * x


def helpers(r, n):
    total = 0
    for i in range(n):
        total += kw(i) + closure_over(i) + fib(i % 5)
        total += fails(i % 3) + r.gauss(0.0, 1.0) + r.choices([1, 2, 3], weights=[1, 1, i])[0]
        total += Point(i, 1).norm1() + sum(gen(2))
    return total


def _filter_context(which, cls, log):
    """Context `which` of class `cls`, its hooks writing what they saw into `log`
    (on_call, override, substitute and argument copies on some of helpers'
    callees), and the names of the codes it must follow and must not."""
    from tracer.context import KEEP

    def seen(node):
        log.append(("on_call", node._row, node.value))

    def over(node):
        log.append(("override", node._row, node.value))
        return node.value + 1 if isinstance(node.value, int) else KEEP

    cases = [
        (dict(on_call={kw: seen}), {"kw", "inner", "norm1", "gauss"}, set()),
        (dict(primitives=[fails], modules=["random"], on_call={closure_over: seen}),
         {"kw", "inner", "norm1"}, {"fails", "gauss", "choices"}),
        (dict(override={fib: over}, modules=["random"]), {"fib", "kw", "fails"}, {"gauss"}),
        (dict(substitute={fails: _double}, primitives=[Point.norm1]), {"kw", "_double"},
         {"norm1", "fails"}),
        (dict(on_call={random.Random.choices: log.copier},
              primitives=[random.Random.choices], modules=["random"]), {"kw", "inner"},
         {"choices", "gauss"}),
    ]
    kwargs, followed, primitive = cases[which]
    return cls(**kwargs), followed, primitive


class _Log(list):
    def __init__(self):
        super().__init__()
        from tracer._core import CopyAtCall
        self.copier = CopyAtCall()


class FiltersFollowAll(Context):
    """The same filters and primitives with a canrecur hook: the general paths."""

    def canrecur(self, f, /, *args, **kwargs) -> bool:
        return True


@pytest.mark.parametrize("which", range(5))
def test_plain_paths_under_filters_match_the_general_ones(which):
    logs, roots = [], []
    for cls in (Context, FiltersFollowAll):
        log = _Log()
        ctx, followed, primitive = _filter_context(which, cls, log)
        roots.append(tracer.track(helpers, random.Random(3), 40, ctx=ctx))
        logs.append(log)
    plain, general = roots
    assert plain.value == general.value
    assert_same_trace(plain, general, fewer_events=True)
    assert logs[0] == logs[1]
    a, b = logs[0].copier, logs[1].copier
    assert (a.input_rows, a.input_ks, a.value_rows) == (b.input_rows, b.input_ks, b.value_rows)
    assert a.input_copies == b.input_copies and a.value_copies == b.value_copies
    if which in (0, 1, 2):
        assert len(logs[0]) >= 40, "the filtered callee's hook ran at each of its calls"
    if which == 4:
        assert len(a.value_rows) == 40 and len(a.input_rows) == 80   # the list arguments
    codes = {c.co_name for c in plain.trace.codes}
    assert followed <= codes and not primitive & codes


def test_filtered_callee_gets_its_hook_at_each_call():
    # kw is called 4 times per iteration of `calls` (one through *args): its
    # on_call hook sees each, in the order they were made, with the call's value.
    seen = []
    root = tracer.track(calls, 7, ctx=Context(on_call={kw: lambda n: seen.append(n.value)}))
    assert len(seen) == 7 * 4 + 7 * 3   # + gen's kw calls: sum(gen(3)) per iteration
    expected = []
    for i in range(7):
        expected += [kw(i), kw(i, 3), kw(i, c=1), kw(*(i, 2))] + [kw(j, c=j) for j in range(3)]
    assert sorted(seen) == sorted(expected)
    tracer.validate(root)


def test_kept_verdicts_with_primitive_callables_match_asking_every_call():
    # Context(primitives=[...]) with a module: a kept verdict per code and context
    # (V_MEMBERS: the callables a set lookup) against _may_recur at every call.
    prims = [random.Random.uniform, kw]
    cached = tracer.track(draws, random.Random(0), 200, ctx=Context(primitives=prims,
                                                                    modules=["random"]))
    asked = tracer.track(draws, random.Random(0), 200,
                         ctx=ModulesFollowAll(primitives=prims, modules=["random"]))
    assert cached.value == asked.value
    assert_same_trace(cached, asked, fewer_events=True)
    followed = {c.co_name for c in cached.trace.codes}
    assert "kw" not in followed and "gauss" not in followed and "uniform" not in followed


# -- rows under call filters written in the op loop (replay.pxi: _run_ops, filtered) ------
# Under a context whose only per-row hooks are call filters (on_call=, override=,
# substitute=), _run_ops writes the rows itself and sends a row to _recorded only
# when a filter names its callee; `_core.filtered_rows_in_loop(False)` sends every
# row of such a frame through _record, as before.  The traces, the hooks' calls,
# the values they replaced and the copies must be the same.

def _numpy_draws(g, n):
    # (`g` the same Generator in the runs compared, its state set back: its repr
    # shows its address in capitals, which the trace comparison keeps)
    m = g.normal
    xs = []
    for i in range(n):
        v = m(0.0, 1.0) + g.normal(1.0, 2.0)     # C calls: rows of the op loop
        xs.append(v if v > 0 else -v)
        w = g.normal()
    return sum(xs) + w


@pytest.mark.parametrize("which", range(5))
def test_rows_under_filters_in_the_loop_match_the_general_path(which):
    from tracer._core import filtered_rows_in_loop
    logs, roots = [], []
    for in_loop in (True, False):
        log = _Log()
        ctx, _, _ = _filter_context(which, Context, log)
        old = filtered_rows_in_loop(in_loop)
        try:
            roots.append(tracer.track(helpers, random.Random(3), 40, ctx=ctx))
        finally:
            filtered_rows_in_loop(old)
        logs.append(log)
    loop, general = roots
    assert loop.value == general.value
    assert_same_trace(loop, general)
    assert logs[0] == logs[1]
    a, b = logs[0].copier, logs[1].copier
    assert (a.input_rows, a.input_ks, a.value_rows) == (b.input_rows, b.input_ks, b.value_rows)
    assert a.input_copies == b.input_copies and a.value_copies == b.value_copies


def test_overrides_of_c_calls_written_in_the_loop_replace_their_values():
    # numpy's normal is C: its rows are op-loop rows; an override of it replaces
    # each value (stack slot at the event after the call), in the loop and not
    import numpy as np
    from tracer._core import filtered_rows_in_loop

    out = []
    g = np.random.default_rng(0)
    state = g.bit_generator.state
    for in_loop in (True, False):
        seen = []
        g.bit_generator.state = state

        def over(node):
            seen.append((node._row, node.value))
            return float(len(seen))

        old = filtered_rows_in_loop(in_loop)
        try:
            root = tracer.track(_numpy_draws, g, 30,
                                ctx=Context(override={np.random.Generator.normal: over}))
        finally:
            filtered_rows_in_loop(old)
        out.append((root, seen))
    (loop, seen_loop), (general, seen_general) = out
    assert len(seen_loop) == 90 and seen_loop == seen_general
    assert loop.value == general.value
    assert_same_trace(loop, general)
    rows = [row for row, _ in seen_loop]
    assert [loop.trace.value(row) for row in rows] == [float(k) for k in range(1, 91)]


def test_filtered_rows_in_loop_reads_and_sets():
    from tracer._core import filtered_rows_in_loop
    assert filtered_rows_in_loop() is True
    assert filtered_rows_in_loop(False) is True
    assert filtered_rows_in_loop(None) is False
    assert filtered_rows_in_loop(True) is False
    assert filtered_rows_in_loop() is True
