"""Silent branches written without the op loop (tracer.analysis.silent.straight_sides,
the core's replay.pxi _straight_branch).

A side of a silent conditional jump is marked (the sign of its successor word in
plan.branch_sides) when the ops of the branch's segments and of the segment that
side leads to are all of the kinds the core's straight-line writer takes; the
core's _take_silent_branch then writes that branch's rows, and the segment after
it, without the op loop's set-up.

Each program is run three ways: on plans with the marks (the straight writer), on
plans built with the marks switched off (silent.STRAIGHT_SIDES = False: the op
loop writes the same branches), and on the marked plans under a node hook (every
row by the per-row writers, the general path): every column, value and edge the
same.  The shapes: a branch to a return (fib), to a jump, into a loop, a side that
raises, generator frames, a bool call's branch (aftercall.pxi), 3.12's guarded
compares (a compare of exact builtins and of a subclass), the writer stopping for
a reason known only at run time (a constant or a callable first used, a value
carried in), fresh columns that grow inside runs, a second trace, value policies.
"""

import gc
import sys

import pytest

import tracer
from tracer import Context
from tracer.analysis import cache, silent
from tracer.analysis.microops import (M_BRANCH, M_FOR_ITER, OP_WORDS, PLAN_PLAIN,
                                      SIDE_OFFSET, SIDE_STRAIGHT)
from tracer.analysis.plan import _Builder

from helpers import (ReturnHook, assert_same_columns, assert_same_rows, assert_same_trace,
                     branch_entries, load_planned)

PY312 = sys.version_info < (3, 13)

PROGRAMS = {
    # fib: the branch to a return (`return n`, the leaf's PY_RETURN) and to the
    # first call's event (the not-taken side, an INSTRUCTION event at its END).
    "fib": """
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

def main(n):
    return fib(n)
ARGS = (12,)
STRAIGHT = {"fib": 2}
""",
    # A record at the leaf's return (read from the value returned), a branch
    # with no bool record (`is None`, `if x:`), a truthy parameter.
    "returns": """
def leaf(n, m):
    if n < m:
        return n * 2
    return leaf(n - 1, m) + twice(n - 2)

def twice(x):
    return x + x

def none_or(x, y):
    if x is None:
        return y
    return x - y

def truthy(x, y):
    if x:
        return twice(y) + 1
    return -y

def main(n):
    out = []
    for k in range(n):
        out.append(leaf(k % 6 + 2, 2))
        out.append(none_or(None if k % 3 else k, k))
        out.append(truthy(k % 2, k))
    return out
ARGS = (30,)
STRAIGHT = {"leaf": 2, "none_or": 2, "truthy": 2}
""",
    # The side the branch takes ends at a jump (a conditional expression's
    # JUMP_FORWARD to where both sides meet), and one side is a loop's head.
    "to_a_jump": """
def pick(x, y):
    return (x * 2 if x < y else y - 1) + 1

def main(n):
    t = 0
    for k in range(n):
        t += pick(k, n // 2)
    return t
ARGS = (40,)
STRAIGHT = {"pick": 2}
""",
    # A side that leads into a loop (its segment ends at the FOR_ITER).
    "into_a_loop": """
def total(xs, k):
    if k < 1:
        return k
    for x in xs:
        k += x
    return k

def main(n):
    return [total(list(range(i)), i % 3) for i in range(n)]
ARGS = (25,)
STRAIGHT = {"total": 2}
""",
    # A side that raises (an exception at its record: the branch is caught up
    # at the RAISE event inside the side), the caller catching it.
    "side_raises": """
def ratio(x, y):
    if x < y:
        return y // x
    return x - y

def main(xs):
    out = []
    for x in xs:
        try:
            out.append(ratio(x, 3))
        except ZeroDivisionError as e:
            out.append(str(e))
    return out
ARGS = ([1, 0, 5, 0, 2, 7, 0],)
STRAIGHT = {"ratio": 2}
""",
    # Generator frames: the branch in a generator's body after its RESUME, a
    # side ending at a yield, a side ending at the generator's return.
    "generators": """
def gen(n, m):
    if n < m:
        yield n
        return
    yield n - m
    yield n * 2

def main(n):
    out = []
    for k in range(n):
        out.extend(gen(k, 4))
    return out
ARGS = (12,)
STRAIGHT = {"gen": 2}
""",
    # A bool call into the branch (isinstance: its END's event off, the call
    # completed with the bool its side shows, aftercall.pxi), then the branch.
    "bool_call": """
def kind(x):
    if isinstance(x, int):
        return x + 1
    return x

def main(xs):
    return [kind(x) for x in xs]
ARGS = ([1, 2.5, "a", 3, None, 4, 5.5],)
STRAIGHT = {"kind": 2}
""",
    # Compares of exact builtins (3.12: a guarded compare, its jump's event off)
    # and of a subclass with a Python __lt__ (the guard switches it on; on 3.13 a
    # frame entered inside the branch's segment).
    "compares": """
class I(int):
    def __lt__(self, other):
        return int(self) < int(other)

def below(x, y):
    if x < y:
        return x
    return y + 0.5

def main(xs):
    out = []
    for x in xs:
        out.append(below(x, 3))
        out.append(below(x, 2.5))
    return out
ARGS = ([1, 4, 2.0, 7.5, 1, 0],)
STRAIGHT = {"below": 2}
""",
    "compares_then_subclass": """
class I(int):
    def __lt__(self, other):
        return int(self) < int(other)

def below(x, y):
    if x < y:
        return x
    return y + 0.5

def main(xs):
    out = []
    for x in xs:
        out.append(below(x, 3))
    for x in xs:
        out.append(below(I(x), 3))
    for x in xs:
        out.append(below(x, 3))
    return out
ARGS = ([1, 4, 2, 7, 1, 0],)
STRAIGHT = {"below": 2}
""",
    # The writer stopping for run-time reasons: constants first used in the
    # trace on the side (an input to pool first), a builtin captured for the
    # first time, a value carried into the frame (a generator's local).
    "stops": """
def first_uses(n):
    if n < 3:
        return n * 1.25 + len("abc")
    return abs(n - 7.5)

def main(n):
    return [first_uses(k) for k in range(n)]
ARGS = (8,)
STRAIGHT = {"first_uses": 2}
""",
}


def _load(name, straight):
    """PROGRAMS[name] compiled afresh with the straight sides marked or not, its
    plans built."""
    return load_planned(PROGRAMS[name], f"<straight-branches {name}>", STRAIGHT_SIDES=straight)


def _successors(sides):
    # The successor words (`next`, `target`) of each silent branch in branch_sides.
    return [w for k in branch_entries(sides) for w in (sides[k + 1], sides[k + 2])]


def _unmarked(sides):
    # branch_sides with SIDE_STRAIGHT masked off its successor words.
    out = list(sides)
    for k in branch_entries(sides):
        out[k + 1] &= SIDE_OFFSET
        out[k + 2] &= SIDE_OFFSET
    return out


def _marked(code):
    # The successor words with SIDE_STRAIGHT set in code's plan (the one the runs use).
    return sum(1 for w in _successors(tracer._core.plan_of(code).branch_sides) if w < 0)


def _run(ns, ctx=None):
    gc.collect()   # (a generator an earlier program left is not finalized inside a run)
    return tracer.track(ns["main"], *ns["ARGS"], ctx=ctx)



def _check_marks(on, off):
    expected = on["STRAIGHT"]
    for fname in expected or ():
        assert _marked(on[fname].__code__) == expected[fname], fname
    for v in off.values():
        if hasattr(v, "__code__"):
            assert _marked(v.__code__) == 0


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_straight_branches_equal_the_op_loops_and_the_general_path(name):
    on = _load(name, True)
    off = _load(name, False)
    _check_marks(on, off)
    straight = _run(on)
    loop = _run(off)
    general = _run(on, ReturnHook())
    assert repr(straight.value) == repr(loop.value) == repr(on["main"](*on["ARGS"]))
    assert_same_rows(straight, loop, same_events=True)
    assert_same_trace(straight, general, fewer_events=True)
    # Again, with what the first runs switched off off from the start, and the
    # pool's constants and callables known (the writer's common case).
    assert_same_rows(_run(on), _run(off), same_events=True)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_straight_branches_with_fresh_columns(name):
    # No spare columns: the columns start small and grow inside the runs (the
    # writer's room check hands such a branch to the loop).
    from tracer._core import spare_columns_limit
    on = _load(name, True)
    off = _load(name, False)
    old = spare_columns_limit(0)
    try:
        a = _run(on)
        b = _run(off)
    finally:
        spare_columns_limit(old)
    assert_same_rows(a, b, same_events=True)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
@pytest.mark.parametrize("name", ["fib", "returns", "side_raises", "compares"])
def test_straight_branches_under_a_value_policy(name, values):
    on = _load(name, True)
    off = _load(name, False)
    a = _run(on, Context(values=values))
    b = _run(off, Context(values=values))
    assert_same_columns(a, b)
    assert a.trace.events == b.trace.events
    tracer.validate(a)
    tracer.validate(b)


def test_a_deep_fib_equals_the_op_loops():
    # Many leaves: the columns grow and are zeroed ahead between branch runs.
    on = _load("fib", True)
    off = _load("fib", False)
    a = tracer.track(on["fib"], 18)
    b = tracer.track(off["fib"], 18)
    assert a.value == b.value == 2584
    assert_same_rows(a, b, same_events=True)


@pytest.mark.parametrize("fail_at", [1, 2, 5, 40])
def test_a_hook_error_inside_the_straight_writer_stops_tracking(fail_at):
    # A per-row hook hands a marked branch to the op loop from inside the
    # straight writer (_branch_by_loop, reached through _take_silent_branch's
    # tail call): a hook that raises at a jump's row there stops tracking as on
    # the unmarked plan: at once, after the same hooks, with the same partial
    # trace.  (The hook's error is caught where it runs, _stop_for_hook: it
    # does not come back as the writer's -1, which only an internal failure,
    # a column that cannot grow, returns.)
    class Fails(Context):
        def __init__(self):
            super().__init__()
            self.rows = []

        def trackedjump(self, node):
            self.rows.append(node.row)
            if len(self.rows) == fail_at:
                raise KeyError("bad hook")

    results = []
    for straight in (True, False):
        ns = _load("fib", straight)
        assert (_marked(ns["fib"].__code__) > 0) == straight
        ctx = Fails()
        with pytest.raises(tracer.TrackingError, match="bad hook") as err:
            tracer.track(ns["fib"], 10, ctx=ctx)
        assert isinstance(err.value.__cause__, KeyError)
        assert len(ctx.rows) == fail_at   # no hook ran after the failing one
        partial = tracer.last_trace()
        tracer.validate(partial)
        assert ns["fib"](10) == 55   # the function runs normally afterwards
        results.append((ctx.rows, partial))
    (rows_on, a), (rows_off, b) = results
    assert rows_on == rows_off
    assert_same_rows(a, b, same_events=True)
    assert tracer.track(_load("fib", True)["fib"], 10).value == 55


def test_only_conditional_jumps_are_marked():
    # Silent loops' FOR_ITERs are never marked, and a side whose segment holds a
    # store (h's `while i < n` shape) is not either.
    src = """
def loop(xs, n):
    t = 0
    for x in xs:
        t += x
    i = 0
    while i < n:
        i += 1
    return t + i
"""
    ns = {}
    exec(compile(src, "<straight-branches loops>", "exec"), ns)
    plan = _Builder(ns["loop"].__code__, PLAN_PLAIN).build()
    ops, sides = plan.ops, plan.branch_sides
    assert all(w >= 0 for w in _successors(sides))
    if not PY312:
        # (3.12 keeps these evented: its FOR_ITER, and the compare's guard)
        assert any(ops[k * OP_WORDS] == M_FOR_ITER and plan.branch_sides_at[k] >= 0
                   for k in range(len(ops) // OP_WORDS))


def test_marks_are_the_reference_builders():
    # The typed builder's pass (_fastplan.straight_sides) and the Python one
    # (silent.straight_sides) mark the same sides; the offsets under the marks
    # are the unmarked plan's.
    for name in sorted(PROGRAMS):
        ns = {}
        exec(compile(PROGRAMS[name], f"<straight-branches {name}>", "exec"), ns)
        codes = [v.__code__ for v in ns.values() if hasattr(v, "__code__")]
        for code in codes:
            fast = _Builder(code, PLAN_PLAIN).build()
            ref = _Builder(code, PLAN_PLAIN, reference=True).build()
            assert list(fast.branch_sides) == list(ref.branch_sides), (name, code.co_name)
            saved = silent.STRAIGHT_SIDES
            try:
                silent.STRAIGHT_SIDES = False
                plain = _Builder(code, PLAN_PLAIN).build()
            finally:
                silent.STRAIGHT_SIDES = saved
            assert _unmarked(fast.branch_sides) == list(plain.branch_sides)
            assert list(fast.ops) == list(plain.ops)


def test_the_fib_sides_are_marked_and_checked():
    # Both of fib's sides are marked, and a plan with the marks passes the
    # plan checks (Python's and the core's) that a cached plan must pass.
    from tracer.analysis.plancheck import plan_violation
    ns = _load("fib", True)
    code = ns["fib"].__code__
    plan = _Builder(code, PLAN_PLAIN).build()
    sides = plan.branch_sides
    (k,) = {k for k in plan.branch_sides_at if k >= 0}
    assert plan.ops[[i for i in range(len(plan.ops) // OP_WORDS)
                     if plan.branch_sides_at[i] == k][-1] * OP_WORDS] == M_BRANCH
    assert sides[k + 1] < 0 and sides[k + 2] < 0
    assert sides[k + 1] & SIDE_STRAIGHT and sides[k + 2] & SIDE_STRAIGHT
    assert plan_violation(plan, code) is None
    assert tracer._core.plan_problem(plan, code) is None


def _fib(n):
    if n < 2:
        return n
    return _fib(n - 1) + _fib(n - 2)


def test_marks_read_back_from_the_plan_cache(plan_dir):
    # A plan with marked sides written to the plan cache (format 6) and read back
    # as a new process would: the same words, marks and all, through both checks.
    from plan_compare import plan_difference
    from tracer.analysis.plan import CodePlan, build_plan
    code = _fib.__code__
    built = build_plan(code)
    assert any(w < 0 for w in _successors(built.branch_sides))
    cache.forget()
    fields = cache.entry(code, PLAN_PLAIN).read()
    assert fields is not None
    loaded = CodePlan(code, PLAN_PLAIN, **fields)
    assert list(loaded.branch_sides) == list(built.branch_sides)
    assert plan_difference(loaded, built) is None
    assert cache.FORMAT == 6
