"""Fewer events, same graph: results read back from locals, jumps without events.

The plan gives a result no event of its own when the next instruction stores it in
a plain local: the recorder reads it from that local when it replays the segment at
a later event.  Unconditional jumps fire no event either: their JumpNodes are written
on replay.  These tests pin what that must not change (every node, its value and
its references), above all where a segment is replayed early: a raise, a nested
Python call, a frame entered by a destructor.
"""

import operator

import pytest

import tracer
from corpus import CASES
from helpers import load_example, walk
from tracer import _core
from tracer.analysis.plan import SILENT_BRANCH


h = load_example("irtracker_examples").h  # IRTracker's `h`, as bench/ times it


def primitives(root, fn):
    return [c for c in root.children
            if isinstance(c, tracer.views.PrimitiveCallNode) and isinstance(c.function, tracer.views.Const)
            and c.function.value is fn]


def test_h_loop_has_no_jump_event_and_stores_need_no_event():
    plan = _core.plan_of(h.__code__)
    assert not plan.jump_events
    # Per iteration only `x ** i` (consumed by +=, never stored) needs an
    # INSTRUCTION event; on 3.12 the compares are planned as on 3.13 (their
    # jumps' events off while their operands are proved exact builtins: the
    # core's compare312.pxi, tests/test_compare_guard.py).
    assert len(plan.events) == 1


def test_h_values_and_references_every_iteration(traced):
    root = traced(h, 1.5, 4)
    assert root.value == h(1.5, 4)
    pows = primitives(root, operator.pow)
    iadds = primitives(root, operator.iadd)
    assert [p.value for p in pows] == [1.5 ** k for k in range(4)]
    r_adds, i_adds = iadds[0::2], iadds[1::2]
    assert [n.value for n in i_adds] == [1, 2, 3, 4]
    expected_r = 0.0
    for k, (p, add) in enumerate(zip(pows, r_adds)):
        expected_r += 1.5 ** k
        assert add.value == expected_r
        assert add.referenced()[-1] == p  # r += (the pow of this iteration)
        if k:
            assert add.referenced()[0] == r_adds[k - 1]  # ... r from the last one
            assert p.referenced()[1] == i_adds[k - 1]  # x ** i, i from the last +=
    jumps = [c for c in root.children if isinstance(c, tracer.views.JumpNode)]
    # each loop test (5: before the loop, then at the end of each iteration, the
    # last one false) and each back edge (3: after the true tests at the end)
    assert len(jumps) == 8
    back_edges = [j for j in jumps if not j.referenced()]
    assert len(back_edges) == 3


def stores_then_raises(x):
    a = x + 1
    b = a * 2
    c = b // (a - a)
    return c


def test_raise_after_values_stored_in_locals():
    with pytest.raises(ZeroDivisionError):
        tracer.track(stores_then_raises, 4)
    root = tracer.last_trace()
    tracer.validate(root)
    (add,) = primitives(root, operator.add)
    (mul,) = primitives(root, operator.mul)
    (sub,) = primitives(root, operator.sub)
    (div,) = primitives(root, operator.floordiv)
    assert (add.value, mul.value, sub.value) == (5, 10, 0)
    assert mul.referenced()[0] == add
    assert div.raised and isinstance(div.value, ZeroDivisionError)
    assert div.referenced() == [mul, sub]
    assert add.index < mul.index < sub.index < div.index


class Num:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return Num(self.v + other)


def two_python_adds(n):
    a = n + 1
    b = n + 2
    return a.v + b.v


def test_second_python_operator_is_its_own_nested_call(traced):
    root = traced(two_python_adds, Num(10))
    assert root.value == 23
    adds = [c for c in root.children if isinstance(c, tracer.views.NestedCallNode)]
    assert len(adds) == 2
    first, second = adds
    assert first.value.v == 11 and second.value.v == 12
    # each call holds its own body (the Num(...) it built), not the other call
    assert not any(isinstance(c, tracer.views.NestedCallNode) and c == second for c in first.children)
    for call, k in ((first, 11), (second, 12)):
        inner = [c for c in call.children if isinstance(c, tracer.views.NestedCallNode)]
        assert len(inner) == 1 and inner[0].value.v == k
    getattrs = [c for c in root.children if isinstance(c, tracer.views.PrimitiveCallNode)
                and c.value in (11, 12)]
    assert [g.referenced()[0] for g in getattrs] == [first, second]


class NotFirst(tracer.Context):
    """Records inside every Python call but the first one."""

    def __init__(self):
        self.calls = 0

    def canrecur(self, f, *args, **kwargs):
        self.calls += 1
        return self.calls > 1


def test_primitive_first_call_then_recorded_second(traced):
    root = traced(two_python_adds, Num(10), ctx=NotFirst())
    assert root.value == 23
    kinds = [type(c).__name__ for c in root.children
             if isinstance(c, tracer.views.CallNode) and getattr(c.value, "v", None) in (11, 12)]
    assert kinds == ["PrimitiveCallNode", "NestedCallNode"]


class Truthy:
    def __bool__(self):
        return True


def stores_then_tests_truth(x, t):
    a = x + 1
    if t:  # Truthy.__bool__ runs at an instruction that records nothing
        a = a * 2
    return a


def test_frame_entered_at_an_unrecorded_instruction_is_not_taken_for_a_call(traced):
    root = traced(stores_then_tests_truth, 2, Truthy())
    assert root.value == 6
    (add,) = primitives(root, operator.add)
    (mul,) = primitives(root, operator.mul)
    assert (add.value, mul.value) == (3, 6)
    assert mul.referenced()[0] == add
    frames = [c for c in root.children if isinstance(c, tracer.views.NestedCallNode)]
    assert len(frames) == 1
    assert frames[0].function.value is Truthy.__bool__ and frames[0].value is True
    assert add.index < frames[0].index < mul.index


def stores_twice(x):
    a = x + 1
    a = a * 2
    return a


def test_local_assigned_again_in_the_segment(traced):
    root = traced(stores_twice, 5)
    (add,) = primitives(root, operator.add)
    (mul,) = primitives(root, operator.mul)
    assert (add.value, mul.value, root.value) == (6, 12, 12)
    assert mul.referenced()[0] == add


class Collect(tracer.Context):
    def __init__(self):
        self.seen = []

    def trackedprimitive(self, node):
        self.seen.append((node.index, node.value))


def test_hooks_see_values_read_back_from_locals(traced):
    ctx = Collect()
    root = traced(h, 2.0, 3, ctx=ctx)
    recorded = [(c.index, c.value) for c in root.children
                if isinstance(c, tracer.views.PrimitiveCallNode)]
    assert ctx.seen == recorded


def loop_until_unbound():
    x = 1
    try:
        while True:
            del x  # the second iteration raises UnboundLocalError
    except UnboundLocalError:
        return "done"


def test_loop_without_any_other_event_keeps_its_jump_event(traced):
    plan = _core.plan_of(loop_until_unbound.__code__)
    assert len(plan.jump_events) == 1
    root = traced(loop_until_unbound)
    assert root.value == "done"
    jumps = [c for c in root.children if isinstance(c, tracer.views.JumpNode)]
    assert len(jumps) >= 1
    specials = [c for c in root.children if isinstance(c, tracer.views.SpecialCallNode)
                and isinstance(c.value, UnboundLocalError)]
    assert len(specials) == 1


# Pure operators on immutable values: their recorded result must be what the
# operator gives for the recorded inputs, whichever event the value was read at.
PURE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
        operator.mod, operator.pow, operator.lt, operator.le, operator.gt, operator.ge,
        operator.eq, operator.ne, operator.neg, operator.iadd, operator.isub,
        operator.imul, operator.and_, operator.or_, operator.xor, operator.lshift,
        operator.rshift, operator.not_}
IMMUTABLE = (int, float, str, bool, type(None), bytes)


def _recomputable(node):
    if not isinstance(node, tracer.views.PrimitiveCallNode) or node.raised:
        return False
    fn = node.function
    if not isinstance(fn, tracer.views.Const) or fn.value not in PURE or node.keywords:
        return False
    return all(type(a.value) in IMMUTABLE for a in node.arguments)


def _check_recomputed(case) -> int:
    """Check the case's recomputable nodes; return how many there were."""
    args, kwargs = case.arguments()
    try:
        root = tracer.track(case.func, *args, **kwargs)
    except BaseException:
        root = tracer.last_trace()
    checked = 0
    for node in walk(root):
        if _recomputable(node):
            expected = node.function.value(*[a.value for a in node.arguments])
            assert type(node.value) is type(expected) and node.value == expected, node
            checked += 1
    return checked


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_recorded_operator_results_recompute(case):
    _check_recomputed(case)


def test_recompute_check_covers_much_of_the_corpus():
    counts = [_check_recomputed(case) for case in CASES]
    assert sum(1 for c in counts if c) >= 40 and sum(counts) >= 200


def returns_expression(a, b):
    return a * b + 1


def returns_python_operator(n):
    return n + 5


def test_returned_results_need_no_event_of_their_own(traced):
    plan = _core.plan_of(returns_expression.__code__)
    adds = [off for off, rec in plan.rec_at.items() if rec.fn is operator.add]
    assert adds and all(plan.layout.by_offset[off].next not in plan.events for off in adds)
    root = traced(returns_expression, 3, 4)
    (mul,) = primitives(root, operator.mul)
    (add,) = primitives(root, operator.add)
    assert (mul.value, add.value, root.value) == (12, 13, 13)
    ret = root[len(root) - 1]
    assert isinstance(ret, tracer.views.ReturnNode) and ret.referenced() == [add]
    root = traced(returns_python_operator, Num(1))
    (call,) = [c for c in root.children if isinstance(c, tracer.views.NestedCallNode)]
    assert call.value is root.value and call.value.v == 6
    assert root[len(root) - 1].referenced() == [call]


def returns_quotient(a, b):
    return a / b


def test_returned_expression_that_raises():
    with pytest.raises(ZeroDivisionError):
        tracer.track(returns_quotient, 3, 0)
    root = tracer.last_trace()
    tracer.validate(root)
    (div,) = primitives(root, operator.truediv)
    assert div.raised and isinstance(div.value, ZeroDivisionError) and root.value is div.value
    assert not any(isinstance(c, tracer.views.ReturnNode) for c in root.children)


# -- branches without events --------------------------------------------------------

def silent_branches_of(f):
    plan = _core.plan_of(f.__code__)
    return [off for off in range(0, 2 * len(plan.unit_flags), 2)
            if plan.unit_flags[off // 2] & SILENT_BRANCH]


def either_way(x, y):
    if x > y:
        z = x - y
    else:
        z = y - x
    return z * 2


def test_branch_taken_is_seen_at_the_next_event(traced):
    assert silent_branches_of(h)  # the loop test goes without its BRANCH event
    for x, y, expected in ((5, 3, 4), (3, 5, 4)):
        root = traced(either_way, x, y)
        assert root.value == expected
        (jump,) = [j for j in root.children if isinstance(j, tracer.views.JumpNode) and j.referenced()]
        (cmp,) = primitives(root, operator.gt)
        assert jump.referenced() == [cmp] and cmp.value is (x > y) and jump.value is (x > y)
        (sub,) = primitives(root, operator.sub)
        assert sub.value == 2 and (sub.referenced()[0].value, sub.referenced()[1].value) == (
            (x, y) if x > y else (y, x))


def raise_on_one_side(x):
    if x > 0:
        return 10 // x
    return 10 // (x - x)


def test_branch_resolved_by_a_raise():
    with pytest.raises(ZeroDivisionError):
        tracer.track(raise_on_one_side, -1)
    root = tracer.last_trace()
    tracer.validate(root)
    (jump,) = [j for j in root.children if isinstance(j, tracer.views.JumpNode)]
    assert jump.value is False
    (div,) = primitives(root, operator.floordiv)
    assert div.raised and div.index > jump.index


def call_on_one_side(n, x):
    if x:
        n = n + 1  # Num.__add__: a Python frame starts on this side
    return n


def test_branch_resolved_by_a_nested_frame(traced):
    root = traced(call_on_one_side, Num(1), True)
    (jump,) = [j for j in root.children if isinstance(j, tracer.views.JumpNode)]
    (call,) = [c for c in root.children if isinstance(c, tracer.views.NestedCallNode)]
    assert jump.value is True and jump.index < call.index and call.value.v == 2
    root = traced(call_on_one_side, Num(1), False)
    (jump,) = [j for j in root.children if isinstance(j, tracer.views.JumpNode)]
    assert jump.value is False and root.value.v == 1


def reassigned_on_one_side(x, c):
    y = x + 1  # read back from y when the branch is replayed...
    if c:
        y = 0  # ... so this side's store keeps the branch evented
    return y


def test_local_read_late_is_not_reassigned_on_either_side(traced):
    assert not silent_branches_of(reassigned_on_one_side)
    root = traced(reassigned_on_one_side, 4, True)
    (add,) = primitives(root, operator.add)
    assert add.value == 5 and root.value == 0


def nested_ifs(a, b):
    r = 0
    if a:
        if b:
            r = 1
    return r


def test_nested_branches_take_the_right_ways(traced):
    for a in (0, 1):
        for b in (0, 1):
            root = traced(nested_ifs, a, b)
            assert root.value == (1 if a and b else 0)
            tests = [j.value for j in root.children if isinstance(j, tracer.views.JumpNode)
                     and j.referenced()]
            assert tests == ([bool(a), bool(b)] if a else [False])


def counts_up(n):
    i = 0
    while i < n:
        i += 1
    return i


def test_loop_with_no_other_event_keeps_its_branch_event(traced):
    root = traced(counts_up, 3)
    assert root.value == 3
    tests = [j.value for j in root.children if isinstance(j, tracer.views.JumpNode) and j.referenced()]
    assert tests == [True, True, True, False]
    adds = primitives(root, operator.iadd)
    assert [a.value for a in adds] == [1, 2, 3]


def test_events_per_loop_iteration(traced):
    # Counted by the recorder: one event per iteration of h (the pow result
    # consumed by +=; on 3.12 the compare's jump fires only at its first
    # execution in the trace: its operands are exact builtins), for six nodes each.
    n = 200
    root = traced(h, 1.01, n)
    per_iteration = 1
    assert n * per_iteration <= root.trace.events <= n * per_iteration + 10
    assert len(root.trace) >= 6 * n


# -- records with no result, results yielded (session 12) ----------------------------

class Box:
    """A property setter: a Python frame under a STORE_ATTR."""

    def __init__(self):
        self.seen = []

    @property
    def v(self):
        return self.seen[-1]

    @v.setter
    def v(self, x):
        self.seen.append(x)


def stores_then_more(xs, d, box):
    squares = [x * x for x in xs]          # LIST_APPEND per item
    for x in xs:
        d[x] = x + 1                       # STORE_SUBSCR (a dict's: no frame)
        box.v = x * 2                      # STORE_ATTR through a Python setter
    d["n"] = len(squares)
    return squares


def test_records_without_result_get_no_event_after_them(traced):
    plan = _core.plan_of(stores_then_more.__code__)
    no_result = [off for off, rec in plan.rec_at.items() if not rec.outputs]
    assert len(no_result) >= 4   # LIST_APPEND, STORE_SUBSCR twice, STORE_ATTR
    assert all(plan.layout.by_offset[off].next not in plan.events for off in no_result)
    d, box = {}, Box()
    root = traced(stores_then_more, [1, 2, 3], d, box)
    assert root.value == [1, 4, 9] and d == {1: 2, 2: 3, 3: 4, "n": 3}
    assert box.seen == [2, 4, 6]
    setitems = primitives(root, operator.setitem)
    assert [n.value for n in setitems] == [None] * 4
    # each store references the value it stored: the add of its iteration
    adds = primitives(root, operator.add)
    assert [s.referenced()[-1] for s in setitems[:3]] == adds
    # the setter's frame is a nested call under the STORE_ATTR, with the product
    setters = [c for c in root.children if isinstance(c, tracer.views.NestedCallNode)
               and c.arguments and c.arguments[-1].value in (2, 4, 6)]
    assert [c.arguments[-1].value for c in setters] == [2, 4, 6]


def store_then_divide(d, k):
    d[k] = k * 3
    return d[k] / 0


def test_record_without_result_replayed_at_a_raise():
    d = {}
    with pytest.raises(ZeroDivisionError):
        tracer.track(store_then_divide, d, 2)
    root = tracer.last_trace()
    tracer.validate(root)
    (store,) = primitives(root, operator.setitem)
    (mul,) = primitives(root, operator.mul)
    assert store.value is None and store.referenced()[-1] == mul and d == {2: 6}
    assert root.children.index(store) < root.children.index(mul) + 2


def yields_results(xs):
    for x in xs:
        yield x * 10
        yield abs(x)


def test_results_yielded_right_away_need_no_event(traced):
    plan = _core.plan_of(yields_results.__code__)
    yielded = [off for off, rec in plan.rec_at.items()
               if plan.layout.by_offset[plan.layout.by_offset[off].next].opname == "YIELD_VALUE"]
    assert len(yielded) == 2
    assert all(plan.layout.by_offset[off].next not in plan.events for off in yielded)
    root = traced(lambda xs: list(yields_results(xs)), [1, -2])
    assert root.value == [10, 1, -20, 2]
    prims = [n for n in walk(root) if isinstance(n, tracer.views.PrimitiveCallNode)
             and isinstance(n.function, tracer.views.Const)
             and n.function.value in (operator.mul, abs)]
    assert [p.value for p in prims] == [10, 1, -20, 2]
    # every yield references the record whose value it yielded, read from PY_YIELD
    yields = [n for n in walk(root) if isinstance(n, tracer.views.ReturnNode)
              and n.referenced() and n.referenced()[0] in prims]
    assert [y.referenced()[0] for y in yields] == prims
    assert all(y.value is y.referenced()[0].value for y in yields)
