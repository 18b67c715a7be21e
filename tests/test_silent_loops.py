"""A `for` loop's FOR_ITER without its BRANCH event (tracer.analysis.silent's
silent loops): where the loop's body starts by storing the next value in a
plain local that its segment assigns nowhere else, the value is read back from
that local at the frame's next event and the direction is where that event
finds the frame.

Each program is run three ways: on the plain paths with the loop silent, on the
same plan with the general paths (a `canrecur` context: per-frame hooks), and
on plans built with silent loops switched off (the loop's BRANCH evented, as
before): every column, value and edge the same, the silent run with fewer
events where a loop is silent.  Then the traps: a generator iterated (its frames
run inside FOR_ITER), a Python `__next__`, `__next__` raising, break/continue,
nested loops, a generator whose loop ends in a conditional jump, the loop
variable stored again, unpacking bodies, cells, comprehensions, and 3.12's
guarded compares around loops.
"""

import dis
import gc
import sys

import pytest

import tracer
from tracer import Context
from tracer.analysis.microops import M_FOR_ITER, OP_WORDS, PLAN_PLAIN
from tracer.analysis.plan import _Builder

from helpers import assert_same_columns, assert_same_rows, assert_same_trace, load_planned
from test_call_paths import FollowAll

PY312 = sys.version_info < (3, 13)

PROGRAMS = {
    "simple": """
def main(xs):
    t = 0
    for x in xs:
        t += x * 2
    return t
ARGS = ([3, 1, 4, 1, 5],)
SILENT = 1
""",
    "empty": """
def main(xs):
    t = 0
    for x in xs:
        t += x * 2
    return t
ARGS = ([],)
SILENT = 1
""",
    "generator_iterated": """
def gen(n):
    for i in range(n):
        yield i * 3

def main(n):
    out = 0
    for v in gen(n):
        out += v
    return out
ARGS = (6,)
SILENT = 1
""",
    "generator_returns_value": """
def gen(n):
    for i in range(n):
        yield i
    return 'done'

def main(n):
    out = []
    for v in gen(n):
        out.append(v * v)
    return out
ARGS = (4,)
SILENT = 1
""",
    "generator_body_ends_in_branch": """
def gen(xs):
    for x in xs:
        if x % 2:
            yield x

def main(xs):
    t = 0
    for v in gen(xs):
        t += v
    return t
ARGS = (list(range(9)),)
SILENT = 1
""",
    "python_next": """
class Count:
    def __init__(self, n):
        self.i = 0
        self.n = n
    def __iter__(self):
        return self
    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.i * 10

def main(n):
    t = 0
    for v in Count(n):
        t += v
    return t
ARGS = (4,)
SILENT = 1
""",
    "next_raises": """
class Bad:
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        return self
    def __next__(self):
        self.n -= 1
        if self.n < 0:
            raise ValueError('no more')
        return self.n

def gen_raises(n):
    for i in range(n):
        yield i
    raise KeyError('gen')

def main(n):
    t = 0
    try:
        for v in Bad(n):
            t += v
    except ValueError as e:
        t += 100
    try:
        for v in gen_raises(n):
            t += v
    except KeyError:
        t += 1000
    return t
ARGS = (3,)
SILENT = 2
""",
    "break_continue": """
import sys
def main(xs):
    t = 0
    for x in xs:
        if x < 0:
            continue
        if x > 8:
            break
        t += x
    for y in xs:
        t -= y
        break
    for z in xs:
        t += z
        continue
    return t
ARGS = ([3, -1, 4, 1, -5, 9, 2, -6],)
# (the second loop's sides meet after the loops: evented; 3.12: the first loop's
# body starts with guarded compares, checked at the loop's INSTRUCTION event)
SILENT = 2
""",
    "nested": """
def main(n):
    t = 0
    for i in range(n):
        for j in range(i):
            t += i * j
        for k in range(2):
            t -= k
    return t
ARGS = (5,)
SILENT = 3
""",
    "stored_again": """
def main(xs):
    t = 0
    for x in xs:
        x += 1
        t += x
    return t
ARGS = ([1, 2, 3],)
SILENT = 0
""",
    "deleted": """
def main(xs):
    t = 0
    for x in xs:
        t += x
        del x
    return t
ARGS = ([1, 2, 3],)
SILENT = 0
""",
    "unpacking": """
def main(d):
    t = 0
    for k, v in d.items():
        t += len(k) * v
    for i, (a, b) in enumerate([(1, 2), (3, 4)]):
        t += i * a * b
    return t
ARGS = ({'a': 1, 'bb': 2, 'ccc': 3},)
SILENT = 0
""",
    "cell": """
def main(xs):
    fs = []
    for x in xs:
        fs.append(lambda: x)
    return [f() for f in fs]
ARGS = ([1, 2, 3],)
SILENT = None
""",
    "calls_and_raises_in_body": """
def leaf(x):
    if x == 3:
        raise ValueError(x)
    return x + 1

def main(xs):
    t = 0
    for x in xs:
        try:
            t += leaf(x)
        except ValueError:
            t -= 1
    for x in xs:
        t += leaf(x) if x != 3 else 0
    return t
ARGS = ([1, 2, 3, 4],)
SILENT = None
""",
    "return_and_yield_in_body": """
def first(xs):
    for x in xs:
        return x
    return None

def doubled(xs):
    for x in xs:
        yield x * 2

def main(xs):
    return first(xs), first([]), list(doubled(xs)), sum(doubled(xs))
ARGS = ([5, 6, 7],)
SILENT = None
""",
    "comprehensions": """
def main(xs):
    a = [x * 2 for x in xs]
    b = {x: x + 1 for x in xs}
    c = sum(x * x for x in xs)
    d = [y for x in xs for y in range(x)]
    return a, b, c, d
ARGS = ([1, 2, 3],)
SILENT = None
""",
    "comprehensions_over_generators": """
def gen(n):
    for i in range(n):
        yield i + 1

def inv(x):
    return 10 // (x - 3)

def main(n):
    a = [v * v for v in gen(n)]
    b = {v: [w for w in gen(v)] for v in gen(3)}
    g = gen(n)
    try:
        c = [inv(v) for v in g]
    except ZeroDivisionError:
        c = None
    finally:
        g.close()   # (not left suspended for a later collection to finalize)
    d = list(v - 1 for v in gen(n))
    return a, b, c, d
ARGS = (5,)
SILENT = None
""",
    "statement_calls": """
def leaf(x, out):
    out.append(x)

def gen(xs):
    for x in xs:
        yield x

def main(xs):
    out = []
    for x in xs:
        leaf(x, out)
    for y in xs:
        out.append(y)
    for z in gen(xs):
        out.append(-z)
    return out
ARGS = ([1, 2, 3],)
SILENT = 3
""",
    "compares_around_loops": """
def main(n, m):
    t = 0
    if n < m:
        t += 1
    for i in range(n):
        t += i * 2
    if t > m:
        t -= 1
    for j in range(m):
        k = j * 3
        if k < n:
            t += k
    while t < 100:
        for i in range(3):
            t += i + 7
    return t
ARGS = (4, 6)
SILENT = None
""",
    "body_starts_with_a_compare": """
import sys
def main(xs, lo):
    t = 0
    for j in xs:
        if j < lo:
            continue
        t += j
    if t > lo:
        t -= 1
    return t
ARGS = ([5, 1, 7, 2, 9, 3], 3)
# (the body's jump keeps its BRANCH event, which shows the side; 3.12: the
# compare's guard is checked at the loop's INSTRUCTION event, the item peeked)
SILENT = 1
""",
    "guarded_compares_at_the_body": """
class Odd:
    def __init__(self, v):
        self.v = v
    def __lt__(self, other):
        return 'less' if self.v < other else ''

def gen(xs):
    yield from xs

def main(xs, lo):
    t = 0
    for j in xs:
        if j < lo:
            continue
        t += j
    for j in [Odd(1), 5, Odd(7), 2]:
        if j < lo:
            t += 100
    for j in gen(xs):
        if j < lo:
            t -= 1
    for j in (4, 1.5, True, 'a'):
        if j != lo:
            t += 1
    for j in range(6):
        if j < lo:
            t += 2
    for j in [3.5, 2]:
        if lo > j:
            t += 5
    for j in [1, 6, Odd(0), 8]:
        if j < lo:
            t += 7
    t += len([x for x in xs if x < lo])
    for j in xs:
        if j < lo:
            continue
        t += j
        leaf(j)
    return t + sum(below(xs, lo))

def leaf(x):
    return x

def below(xs, lo):
    for j in xs:
        if j >= lo:
            continue
        yield j

class F(float):
    pass

def second(xs, lo):
    t = 0
    for j in xs:
        t += j
    if t > lo:
        t -= 1
    return t
    for j in xs:
        t += j
    if t > lo:
        t -= 1
    return t + second(xs, F(lo)) + second(xs, lo)
ARGS = ([5, 1, 7, 2, 9, 3], 3)
# (3.12: a list, tuple or range iterator's next item peeked at the loop's event;
# an Odd item, whose `<` gives a str, or a generator: the jump's event switched
# on for good, which takes the loop first; a float subclass after the loop: the
# exit's guard fails at the loop's event; the comprehension's loop: evented, its
# body's compare leads to the loop's own FOR_ITER; the loop whose body ends in a
# call statement: evented, as on 3.13)
SILENT = 7
""",
    "body_starts_with_a_test": """
def gen(xs):
    yield from xs

def main(xs):
    t = 0
    for v in gen(xs):
        if v:
            t += v
    for w in xs:
        if not w:
            break
        t -= w
    else:
        t += 1000
    return t
ARGS = ([4, 0, 5, 6, 0, 1],)
# (the second loop's body ends in a silent branch: it keeps its BRANCH event)
SILENT = 1
""",
    "body_with_a_silent_branch": """
def main(xs):
    t = 0
    for x in xs:
        y = 1 if x else 2
        t += y * x
    return t
ARGS = ([0, 3, 0, 4],)
SILENT = None
""",
    "words": """
def main(words):
    counts = {}
    for word in words:
        key = word.lower().strip()
        counts[key] = counts.get(key, 0) + 1
    frequent = [(w, c) for w, c in counts.items() if c > 1]
    frequent.sort(key=lambda item: (-item[1], item[0]))
    return frequent
ARGS = (['a', 'B ', 'b', 'A', 'c', 'd', 'D'] * 3,)
SILENT = 1
""",
}


def _load(name, silent_loops):
    """PROGRAMS[name] compiled afresh with silent loops on or off, its plans built."""
    return load_planned(PROGRAMS[name], f"<silent-loops {name}>", SILENT_FOR_ITER=silent_loops)


def _silent_loops(code):
    plan = tracer._core.plan_of(code)   # (the plan the runs used: on the code object)
    ops = plan.ops
    return sum(1 for k in range(len(ops) // OP_WORDS)
               if ops[k * OP_WORDS] == M_FOR_ITER and plan.branch_sides_at[k] >= 0)


def _run(ns, ctx=None):
    # (collected first: a generator an earlier program left suspended would be
    # finalized inside the traced run, a frame entered from C in one run only)
    gc.collect()
    return tracer.track(ns["main"], *ns["ARGS"], ctx=ctx)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_silent_loop_traces_equal_the_evented_and_general_ones(name):
    on = _load(name, True)
    off = _load(name, False)
    quiet = _run(on)
    evented = _run(off)
    general = _run(on, FollowAll())
    assert quiet.value == evented.value == on["main"](*on["ARGS"])
    # The same plan on the general paths: the same rows (no more events: the
    # general paths keep some events the plain ones switch off).
    assert_same_trace(quiet, general, fewer_events=True)
    # Against the loops evented: the same rows, values and edges, fewer events.
    assert_same_rows(quiet, evented)
    assert quiet.trace.events <= evented.trace.events
    expected = on["SILENT"]
    if expected is not None:
        assert _silent_loops(on["main"].__code__) == expected
        assert _silent_loops(off["main"].__code__) == 0
    if _silent_loops(on["main"].__code__):
        assert quiet.trace.events < evented.trace.events
    # Again, with whatever the first runs switched off (events after calls, the
    # loops' BRANCHes) off from the start.
    again = _run(on)
    assert_same_rows(again, quiet)
    assert again.trace.events <= quiet.trace.events


@pytest.mark.parametrize("name", ["simple", "nested", "generator_iterated", "words",
                                  "compares_around_loops", "python_next"])
def test_silent_loop_rows_equal_an_exact_plans(name):
    # A snapshot context uses the exact plans (every value read at an event right
    # after its instruction, every loop evented): the same rows and values.
    on = _load(name, True)
    quiet = _run(on)
    exact = _run(on, Context(snapshot="copy"))
    ta, tb = assert_same_columns(quiet, exact)
    for row in range(len(ta)):
        va, vb = ta.value(row), tb.value(row)
        if isinstance(va, (int, str, type(None))):
            assert va == vb, f"row {row}"
    assert ta.events < tb.events
    tracer.validate(quiet)
    tracer.validate(exact)


def test_items_of_a_silent_loop():
    on = _load("simple", True)
    root = _run(on)
    nexts = [n for n in tracer.views.walk(root) if isinstance(n, tracer.views.PrimitiveCallNode)
             and n.function.value is next] if hasattr(tracer.views, "walk") else None
    if nexts is not None:
        assert [n.value for n in nexts] == [3, 1, 4, 1, 5]
    # Three events a round before: the FOR_ITER's INSTRUCTION and BRANCH, and one
    # in the body (`x * 2` read before `+=`); two now.
    off = _load("simple", False)
    assert _run(off).trace.events - root.trace.events == 6   # 5 rounds and the exit


def test_restarted_events_leave_a_silent_loop_as_it_was():
    # restart_events() switches the loop's BRANCH on again (any tool may call it):
    # it fires, is answered DISABLE and changes nothing.
    src = """
import sys
def main(xs):
    t = 0
    for x in xs:
        t += x * 2
        if x == 4:
            sys.monitoring.restart_events()
    return t
"""
    nss = [load_planned(src, "<silent-loops restart>", SILENT_FOR_ITER=loops)
           for loops in (True, False)]
    xs = [3, 4, 1, 4, 5]
    quiet = tracer.track(nss[0]["main"], xs)
    evented = tracer.track(nss[1]["main"], xs)
    general = tracer.track(nss[0]["main"], xs, ctx=FollowAll())
    assert quiet.value == 34
    assert_same_rows(quiet, evented)
    assert_same_rows(quiet, general)



def test_plans_of_silent_loops_are_the_reference_builders():
    # The typed builder and the reference one (dis, Python passes) agree.
    for name in sorted(PROGRAMS):
        ns = {}
        exec(compile(PROGRAMS[name], f"<silent-loops {name}>", "exec"), ns)
        codes = [v.__code__ for v in ns.values() if hasattr(v, "__code__")]
        for code in codes:
            fast = _Builder(code, PLAN_PLAIN).build()
            ref = _Builder(code, PLAN_PLAIN, reference=True).build()
            for field in ("ops", "branch_sides", "branch_sides_at", "unit_flags"):
                assert list(getattr(fast, field)) == list(getattr(ref, field)), (name, field)


def test_a_silent_loops_value_is_read_from_its_local():
    ns = {}
    exec(compile(PROGRAMS["simple"], "<silent-loops b>", "exec"), ns)
    code = ns["main"].__code__
    plan = _Builder(code, PLAN_PLAIN).build()
    ops = plan.ops
    (k,) = [k for k in range(len(ops) // OP_WORDS) if ops[k * OP_WORDS] == M_FOR_ITER]
    assert ops[k * OP_WORDS + 3] == code.co_varnames.index("x") + 1
    loop = ops[k * OP_WORDS + 1]
    assert plan.unit_flags[loop // 2] & int(tracer._core.UnitFlag.SILENT_BRANCH)
    # (the loop's INSTRUCTION event stays: GET_ITER's iterator is read there)
    assert loop in plan.events
    fors = [i for i in dis.get_instructions(code) if i.opname == "FOR_ITER"]
    assert [i.offset for i in fors] == [loop]


def test_a_silent_loops_body_compare_needs_no_event():
    # `for j in xs: if j < lo: continue`: the loop's BRANCH off, and on 3.12 the
    # compare's guard passes at the loop's INSTRUCTION event (a list of ints:
    # the next item peeked), so the jump's event stays off too: one event fewer
    # per round and at the exit, on both interpreters.
    on = _load("body_starts_with_a_compare", True)
    off = _load("body_starts_with_a_compare", False)
    quiet, evented = _run(on), _run(off)
    assert_same_rows(quiet, evented)
    assert evented.trace.events - quiet.trace.events == len(on["ARGS"][0]) + 1
