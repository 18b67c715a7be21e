"""Conditional jumps chained without their BRANCH event (tracer.analysis.silent's
chained round): a jump whose side ends in another conditional jump that keeps its
event (`if isinstance(k, str): ... elif ...: ...` then `if first:`) is silent too;
the later jump's event lies on that side and takes the earlier branch first.

Each program is run three ways: on plans with chains (silent.SILENT_CHAINS), on
plans built without them (the earlier jump evented, as before), and on the chained
plans on the general paths (a `canrecur` context): every column, value and edge
the same, the chained run with fewer events.  The shapes: json's (a bool call's
branch chained to the next `if`: the BRANCH event of that `if` completes the call
and takes its branch, aftercall.pxi), elif chains of `is` tests and of compares
(3.12 keeps a compare's jump out of chains: its guard is checked where its segment
starts, compare312.pxi), `continue`/`break` in a loop (difflib's) and a Python
call on a side (nothing chained: nothing may change), a raise inside a chained
side, generators, a `while` loop, value policies, columns that grow inside the
runs.
"""

import gc
import sys

import pytest

import tracer
from tracer import Context
from tracer.analysis.microops import PLAN_PLAIN
from tracer.analysis.plan import _Builder

from helpers import (assert_same_columns, assert_same_rows, assert_same_trace, branch_entries,
                     load_planned)
from test_call_paths import FollowAll

PY312 = sys.version_info < (3, 13)

PROGRAMS = {
    # json's _iterencode_dict: isinstance() tests (bool calls whose END is off)
    # chained to `if first:`.
    "keys": """
def encode(items):
    out = []
    first = True
    for key, value in items:
        if isinstance(key, str):
            pass
        elif isinstance(key, float):
            key = repr(key)
        elif key is True:
            key = 'true'
        elif key is None:
            key = 'null'
        elif isinstance(key, int):
            key = str(key)
        else:
            raise TypeError(key)
        if first:
            first = False
        else:
            out.append(',')
        out.append(key)
        out.append(value)
    return out

def main(items):
    return encode(items) + encode(items[::-1])
ARGS = ([("a", 1), (1.5, 2), (True, 3), (None, 4), (7, 5), ("b", 6), ("c", 7)],)
CHAINED = {"encode": 1}
""",
    # An elif chain of `is` tests and of compares: `x is None` ends the silent
    # loop's side (it keeps its event), `x is True` is chained to `x < 0`'s jump
    # on 3.13 and not on 3.12 (a guarded compare's jump), `if first:` keeps its
    # event (a side assigns `first`, which its segment reads back late).  A
    # compare whose operand is no exact builtin (3.12's guard fails: its jump's
    # event switched on).
    "elifs": """
class Odd:
    def __lt__(self, other):
        return [1]          # truthy, not a bool
    def __eq__(self, other):
        return []           # falsy
    __hash__ = object.__hash__

def classify(xs):
    out = []
    first = True
    for x in xs:
        if x is None:
            r = 'none'
        elif x is True:
            r = 'true'
        elif x < 0:
            r = 'neg'
        elif x == 0:
            r = 'zero'
        else:
            r = 'pos'
        if first:
            first = False
        else:
            out.append(',')
        out.append(r)
    return out

def main(xs):
    return classify(xs) + classify(xs[::-1])
ARGS = ([None, True, -3, 0, 5, 2.5, None, Odd(), 7],)
CHAINED = None
""",
    # difflib's find_longest_match: `continue` and `break` in a loop's body.
    "loop_continue": """
def scan(xs, lo, hi):
    t = 0
    for j in xs:
        if j is None:
            continue
        if j >= hi:
            break
        t += j
    return t

def main(xs, lo, hi):
    return scan(xs, lo, hi) + scan(xs[::-1], lo, hi)
ARGS = ([1, None, 5, 2, None, 9, 3, 30, 4], 2, 20)
CHAINED = None
""",
    # A Python call on a side: the call's END ends that side (calls are never
    # inside a chain), the callee raising through the frame with the branch
    # pending; nothing chained, nothing changed.
    "call_in_side": """
def f(x):
    if x == 13:
        raise ValueError(x)
    return x % 3

def g(x, t):
    if x is None:
        return t - 1
    y = f(x)
    if y:
        t += y
    return t

def main(xs):
    t = 0
    for x in xs:
        try:
            t = g(x, t)
        except ValueError:
            t += 100
    return t
ARGS = ([1, None, 3, 4, 13, None, 5, 6],)
CHAINED = None
""",
    # A raise on the chained side, caught in the frame.
    "raise_in_side": """
def h(x, d):
    try:
        if x is None:
            r = 0
        else:
            r = x // d
            if r:
                r += 1
    except ZeroDivisionError:
        r = -1
    return r

def main(xs):
    return [h(x, d) for x in xs for d in (0, 1, 2)]
ARGS = ([None, 4, 1, 0],)
CHAINED = {"h": 1}
""",
    # Chains in a generator, a yield on the chained side.  (`x is None` ends the
    # silent loop's side: it keeps its event; `x is True` is chained to `x is
    # False`, whose sides meet before the next event: never silent.)
    "generator": """
def gen(xs):
    first = True
    for x in xs:
        if x is None:
            yield 0
        elif x is True:
            yield 1
        elif x is False:
            r = 2
        else:
            r = x
        if first:
            first = False
        yield -1

def main(xs):
    return list(gen(xs))
ARGS = ([None, True, 3, 0, None, False, 5],)
CHAINED = {"gen": 1}
""",
    # A comprehension's chained compare (`total < total <= 9`, free variables):
    # a side of its first jump goes back to the comprehension's silent loop,
    # which no chained side may end in (the loop's rounds would run with no
    # event to take the branch: fuzz seed 2400900's rows lost).
    "comprehension": """
def make(total):
    def add(step):
        nonlocal total
        total = max([4 if total < total <= 9 else step for v in range(step % 4)], default=1)
        return total
    return add

def main(n):
    add = make(3)
    return [add(k) for k in range(n)]
ARGS = (9,)
CHAINED = None
""",
    # A `while` loop whose body is a chain.
    "while_loop": """
def count(n, flags):
    i = 0
    t = 0
    while i < n:
        f = flags[i % len(flags)]
        if f is None:
            t += 1
        elif f:
            t += 2
        if t is None:
            break
        i += 1
    return t

def main(n):
    return count(n, [None, True, False, 0, None])
ARGS = (12,)
CHAINED = None
""",
}


def _load(name, chains):
    """PROGRAMS[name] compiled afresh with chains on or off, its plans built."""
    return load_planned(PROGRAMS[name], f"<silent-chains {name}>", SILENT_CHAINS=chains)


def _silent_count_of(plan):
    # The silent branches and loops of `plan`.
    return sum(1 for _ in branch_entries(plan.branch_sides))


def _silent_count(code):
    return _silent_count_of(tracer._core.plan_of(code))   # (the plan the runs use)


def _chained(on, off):
    # Per function: how many more silent branches the chained plan has.
    return {name: _silent_count(v.__code__) - _silent_count(off[name].__code__)
            for name, v in on.items() if hasattr(v, "__code__")}


def _run(ns, ctx=None):
    gc.collect()   # (a generator an earlier program left is not finalized inside a run)
    return tracer.track(ns["main"], *ns["ARGS"], ctx=ctx)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_chained_traces_equal_the_evented_and_general_ones(name):
    on = _load(name, True)
    off = _load(name, False)
    chained = _run(on)
    evented = _run(off)
    general = _run(on, FollowAll())
    assert repr(chained.value) == repr(evented.value) == repr(on["main"](*on["ARGS"]))
    assert_same_trace(chained, general, fewer_events=True)
    assert_same_rows(chained, evented)
    more = _chained(on, off)
    assert all(n >= 0 for n in more.values()), more   # a chain never costs a silent branch
    for fname, n in (on["CHAINED"] or {}).items():
        assert more[fname] >= n, (fname, more)
    if any(more.values()):
        assert chained.trace.events < evented.trace.events
    else:
        assert chained.trace.events == evented.trace.events
    # Again, with what the first runs switched off off from the start.
    again = _run(on)
    assert_same_rows(again, chained)
    assert again.trace.events <= chained.trace.events


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_chained_traces_with_fresh_columns(name):
    # No spare columns: the columns start small and grow inside the runs.
    from tracer._core import spare_columns_limit
    on = _load(name, True)
    off = _load(name, False)
    old = spare_columns_limit(0)
    try:
        a = _run(on)
        b = _run(off)
    finally:
        spare_columns_limit(old)
    assert_same_rows(a, b)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
@pytest.mark.parametrize("name", ["keys", "elifs", "call_in_side", "generator"])
def test_chained_traces_under_a_value_policy(name, values):
    on = _load(name, True)
    off = _load(name, False)
    a = _run(on, Context(values=values))
    b = _run(off, Context(values=values))
    assert_same_columns(a, b)
    assert a.trace.events <= b.trace.events
    tracer.validate(a)
    tracer.validate(b)


def test_chains_are_the_reference_builders():
    # The typed builder (_fastplan.silent_branches) and the Python one
    # (silent.SilentBranches.silent_branches) choose the same branches.
    for name in sorted(PROGRAMS):
        ns = {}
        exec(compile(PROGRAMS[name], f"<silent-chains {name}>", "exec"), ns)
        codes = [v.__code__ for v in ns.values() if hasattr(v, "__code__")]
        codes += [c for code in codes for c in code.co_consts if hasattr(c, "co_code")]
        for code in codes:
            fast = _Builder(code, PLAN_PLAIN).build()
            ref = _Builder(code, PLAN_PLAIN, reference=True).build()
            assert list(fast.branch_sides) == list(ref.branch_sides), (name, code.co_name)
            assert list(fast.branch_sides_at) == list(ref.branch_sides_at), (name, code.co_name)


def test_a_compares_jump_stays_out_of_chains_on_312():
    # 3.12: `x is True`'s side ends in `x < 0`'s jump, a guarded compare's (its
    # operands checked where its segment starts): not chained.  3.13: chained.
    on = _load("elifs", True)
    off = _load("elifs", False)
    assert _chained(on, off)["classify"] == (0 if PY312 else 1)
    assert_same_rows(_run(on), _run(off))

