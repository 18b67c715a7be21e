"""Contexts: primitive boundary, per-node hooks, nesting, metadata, interventions
(substitute, override) and hook errors.  Every trace made here is validated."""

import gc
import operator
import random
import sys
import weakref

import pytest

import tracer
from helpers import load_example, walk
from tracer import _core
from tracer.context import HOOK_BITS, KEEP, NODE_HOOKS

MON = sys.monitoring


# -- programs ------------------------------------------------------------------------------

def square(x):
    return x * x


def cube(x):
    return x ** 3


def uses_square(x):
    y = square(x) + 1
    if y > 3:
        y = y - square(2)
    return y


def nested(x):
    return uses_square(x) * 2


class Box:
    def __init__(self, v):
        self.v = v

    def scaled(self, k, offset=0):
        return self.v * k + offset


def method_and_keywords(b, k):
    return b.scaled(k, offset=1) + b.scaled(*(k,), **{"offset": 2})


def draws(rng):
    return rng.gauss(0.0, 1.0) + rng.random()


# -- the hook mask ------------------------------------------------------------------------------

def test_core_and_context_agree_on_hook_bits():
    core = _core.HOOK_BITS
    assert core["canrecur"] == HOOK_BITS["canrecur"]
    assert core["enter"] == HOOK_BITS["enter"]
    assert core["substitute"] == HOOK_BITS["substitute"]
    assert core["override"] == HOOK_BITS["override"]
    for kind, name in enumerate(NODE_HOOKS):
        assert HOOK_BITS[name] == core["node"] << kind


def test_only_overridden_hooks_are_in_the_mask():
    class OnlyCanrecur(tracer.Context):
        def canrecur(self, f, *args, **kwargs):
            return True

    assert tracer.context.DEFAULT.hook_mask() == 0
    assert type("Nothing", (tracer.Context,), {})().hook_mask() == 0
    assert OnlyCanrecur().hook_mask() == HOOK_BITS["canrecur"]
    assert tracer.Context(primitives=[len]).hook_mask() != 0


# -- the primitive boundary --------------------------------------------------------------------

def test_primitive_callables_are_not_recorded_inside(traced):
    root = traced(uses_square, 3, ctx=tracer.Context(primitives=[square]))
    assert root.value == uses_square(3)
    calls = [c for c in root.children if isinstance(c, tracer.views.CallNode)
             and c.function.value is square]
    assert len(calls) == 2
    assert all(isinstance(c, tracer.views.PrimitiveCallNode) and len(c) == 0 for c in calls)


def test_primitive_bound_method_makes_its_function_primitive(traced):
    b = Box(2)
    root = traced(method_and_keywords, b, 3, ctx=tracer.Context(primitives=[b.scaled]))
    assert root.value == method_and_keywords(b, 3)
    assert not any(isinstance(n, tracer.views.NestedCallNode) for n in walk(root) if n != root)


def test_primitive_modules_include_submodules(traced):
    ctx = tracer.Context(modules=["random"])
    assert ctx.is_primitive_module("random") and not ctx.is_primitive_module("randomx")
    assert tracer.Context(modules=["os"]).is_primitive_module("os.path")
    rng = random.Random(5)
    root = traced(draws, rng, ctx=ctx)
    assert root.value == draws(random.Random(5))
    assert [type(c) for c in root.children if isinstance(c, tracer.views.CallNode)][:2] == \
        [tracer.views.PrimitiveCallNode, tracer.views.PrimitiveCallNode]
    # Without the module set, Random.gauss (Python code) is recorded inside.
    root = traced(draws, random.Random(5))
    gauss = root[2]
    assert isinstance(gauss, tracer.views.NestedCallNode) and len(gauss) > 0


def test_bad_primitives_raise_type_error():
    with pytest.raises(TypeError, match="callables"):
        tracer.Context(primitives=[3])
    with pytest.raises(TypeError, match="module names"):
        tracer.Context(modules=[random])


def test_canrecur_sees_the_call_and_c_callables_stay_primitive(traced):
    seen = []

    class NotSquare(tracer.Context):
        def canrecur(self, f, *args, **kwargs):
            seen.append((f, args))
            return f is not square

    root = traced(nested, 3, ctx=NotSquare())
    assert root.value == nested(3)
    assert (uses_square, (3,)) in seen and (square, (3,)) in seen
    assert all(callable(f) and hasattr(f, "__code__") for f, _ in seen)  # C calls never asked
    squares = [n for n in walk(root) if isinstance(n, tracer.views.CallNode)
               and isinstance(n.function, tracer.views.Const) and n.function.value is square]
    assert squares and all(isinstance(n, tracer.views.PrimitiveCallNode) for n in squares)


# -- per-node hooks and nesting ------------------------------------------------------------------

class Recording(tracer.Context):
    """Notes every node each hook is called with, and which context saw it."""

    def __init__(self, log, depth=0):
        super().__init__()
        self.log = log
        self.depth = depth

    def enter(self, f, *args, **kwargs):
        return Recording(self.log, self.depth + 1)


for _kind, _name in enumerate(NODE_HOOKS):
    def _hook(self, node, _kind=_kind):
        self.log.append((_kind, node, self.depth))
        node.metadata.setdefault("seen_by", []).append(self.depth)
    setattr(Recording, _name, _hook)


def test_every_node_reaches_the_hook_of_its_kind_once(traced):
    log = []
    root = traced(nested, 3, ctx=Recording(log))
    nodes = [n for n in walk(root) if n != root]
    kinds = {n: _core.KINDS.index(n.kind) for n in nodes}
    assert sorted((n.row, k) for k, n, _ in log) == sorted((n.row, kinds[n]) for n in nodes)


def test_hooks_of_a_nested_call_see_that_calls_context(traced):
    log = []
    root = traced(nested, 3, ctx=Recording(log))
    for kind, node, depth in log:
        level = 0
        p = node.parent
        while p != root:
            level += 1
            p = p.parent
        # The root call's body is seen by the context entered for it (depth 1), a
        # body one call deeper by depth 2, ...; a call node by its caller's context.
        assert depth == level + 1, (node, kind, depth, level)


def test_metadata_is_sparse_and_kept_with_the_trace(traced):
    class MarkJumps(tracer.Context):
        def trackedjump(self, node):
            node.metadata["taken"] = node.value

    root = traced(uses_square, 3, ctx=MarkJumps())
    jumps = [n for n in walk(root) if isinstance(n, tracer.views.JumpNode)]
    assert jumps and set(root.trace.metadata) == {j.row for j in jumps}
    root[1].metadata["user"] = 1  # writable after tracking
    assert root.trace.metadata[root[1].row] == {"user": 1}


# -- interventions: substitute --------------------------------------------------------------------

def test_umlaut_counting_and_replacing_example(traced):
    example = load_example("umlaut_replace")
    ctx = example.CountingReplacer()
    root = traced(example.loop1, 2.0, 3, ctx=ctx)
    assert root.value == 13.0 and ctx.count == 4
    assert example.loop1(2.0, 3) == 108.0  # untouched outside tracking
    adds = [n for n in root.children if isinstance(n, tracer.views.CallNode)
            and n.function == tracer.views.Const(operator.add)]
    assert [n.value for n in adds] == [4.0, 7.0, 10.0, 13.0]
    assert all(n.metadata["substituted"] is operator.mul for n in adds)
    assert [n.metadata["operator_result"] for n in adds] == [4.0, 12.0, 21.0, 30.0]


class Calls:
    n = 0


def counted_square(x):
    Calls.n += 1
    return x * x


def calls_counted(x):
    return counted_square(x) + counted_square(x + 1)


def test_substituted_call_runs_the_replacement_instead(traced):
    class ToCube(tracer.Context):
        def substitute(self, f, *args, **kwargs):
            return cube if f is counted_square else None

    Calls.n = 0
    root = traced(calls_counted, 2, ctx=ToCube())
    assert Calls.n == 0  # the original never ran: no double evaluation
    assert root.value == 8 + 27
    calls = [c for c in root.children if isinstance(c, tracer.views.NestedCallNode)]
    assert [c.function.value for c in calls] == [cube, cube]
    assert all(c.metadata["substituted"] is counted_square for c in calls)
    assert [c.value for c in calls] == [8, 27]
    assert isinstance(calls[0][2], tracer.views.PrimitiveCallNode)  # cube's body is recorded


def test_substituted_method_and_keyword_calls_get_the_same_arguments(traced):
    got = []

    def fake(*args, **kwargs):
        got.append((args, kwargs))
        return -1

    class Fake(tracer.Context):
        def substitute(self, f, *args, **kwargs):
            return fake if getattr(f, "__func__", f) is Box.scaled else None

    b = Box(5)
    root = traced(method_and_keywords, b, 3, ctx=Fake())
    assert root.value == -2
    # b.scaled(k, offset=1) is recorded as Box.scaled(b, k, offset=1); the star call
    # calls the bound method b.scaled with (k,) and {"offset": 2}.
    assert got == [((b, 3), {"offset": 1}), ((3,), {"offset": 2})]


def test_substituted_c_function(traced):
    class NoLen(tracer.Context):
        def substitute(self, f, *args, **kwargs):
            return (lambda v: 100) if f is len else None

    root = traced(lambda xs: len(xs) + 1, [1, 2], ctx=NoLen())
    assert root.value == 101


def test_substitute_must_return_a_callable():
    class Bad(tracer.Context):
        def substitute(self, f, *args, **kwargs):
            return 3

    with pytest.raises(tracer.TrackingError, match="substitute must return a callable") as err:
        tracer.track(uses_square, 3, ctx=Bad())
    assert isinstance(err.value.__cause__, TypeError)


# -- interventions: override --------------------------------------------------------------------

def test_override_replaces_the_value_the_program_goes_on_with(traced):
    class Force(tracer.Context):
        def override(self, node):
            if node.function == tracer.views.Const(square) and node.value == 9:
                return 100
            return KEEP

    root = traced(uses_square, 3, ctx=Force())
    assert root.value == 100 + 1 - 4
    (sq,) = [c for c in root.children if isinstance(c, tracer.views.CallNode)
             and c.function.value is square and c.metadata]
    assert sq.value == 100 and sq.metadata["original"] == 9
    add = root.children[root.children.index(sq) + 1]
    assert add.value == 101 and add.referenced()[0] == sq


def test_override_of_compare_feeding_a_branch_changes_the_branch(traced):
    class Flip(tracer.Context):
        def override(self, node):
            if node.function == tracer.views.Const(operator.gt):
                return not node.value
            return KEEP

    root = traced(uses_square, 3, ctx=Flip())
    assert root.value == 10  # y > 3 was True, forced False: no subtraction
    jump = next(n for n in root.children if isinstance(n, tracer.views.JumpNode))
    assert jump.value is False


# -- reference counts under interventions -----------------------------------------------------------

class Tracked:
    """Counts live instances, so a leaked or over-released reference shows."""

    alive = 0

    def __init__(self, v):
        self.v = v
        Tracked.alive += 1

    def __del__(self):
        Tracked.alive -= 1

    def __mul__(self, other):
        return Tracked(self.v * other.v)

    def __add__(self, other):
        return Tracked(self.v + other.v)


def tracked_work(a, b, n):
    for _ in range(n):
        a = a * b
        b = make(b.v + 1)
    return a


def make(v):
    return Tracked(v)


def test_interventions_keep_reference_counts_exact():
    class Both(tracer.Context):
        def substitute(self, f, *args, **kwargs):
            if f is operator.mul:
                return operator.add
            if f is make:
                return lambda v: Tracked(-v)
            return None

        def override(self, node):
            if isinstance(node.value, Tracked) and node.value.v % 3 == 0:
                return Tracked(node.value.v + 1000)
            return KEEP

    gc.collect()
    start = Tracked.alive
    a, b = Tracked(1), Tracked(2)
    a_refs, b_refs = sys.getrefcount(a), sys.getrefcount(b)
    for _ in range(300):
        root = tracer.track(tracked_work, a, b, 4, ctx=Both())
        tracer.validate(root)
        witness = weakref.ref(root.value)
    del root
    tracer.api._state.last = None
    gc.collect()
    assert witness() is None
    assert Tracked.alive == start + 2
    assert (sys.getrefcount(a), sys.getrefcount(b)) == (a_refs, b_refs)


# -- hook errors --------------------------------------------------------------------------------------

def test_hook_error_stops_tracking_at_once_and_leaves_nothing_instrumented():
    calls = []

    class Fails(tracer.Context):
        def trackedjump(self, node):
            calls.append(node.row)
            raise KeyError("bad hook")

    with pytest.raises(tracer.TrackingError, match="bad hook") as err:
        tracer.track(nested, 3, ctx=Fails())
    assert isinstance(err.value.__cause__, KeyError)
    assert len(calls) == 1  # no hook ran after the failing one
    assert all(MON.get_tool(i) is None for i in range(6))
    for code in (nested.__code__, uses_square.__code__, square.__code__):
        assert all(MON.get_local_events(i, code) == 0 for i in range(6))
    partial = tracer.last_trace()
    tracer.validate(partial)
    assert nested(3) == 12  # the function runs normally afterwards
    root = tracer.track(nested, 3)
    assert root.value == 12


def test_canrecur_error_is_reported():
    class Fails(tracer.Context):
        def canrecur(self, f, *args, **kwargs):
            raise ValueError("nope")

    with pytest.raises(tracer.TrackingError, match="nope"):
        tracer.track(nested, 3, ctx=Fails())
    assert all(MON.get_tool(i) is None for i in range(6))


def chain(x):
    a = x + 1
    b = a * 2
    return b - a


def test_queries_inside_hooks_see_the_trace_so_far_and_do_not_stale_it(traced):
    seen = []

    class Peek(tracer.Context):
        def trackedprimitive(self, node):
            seen.append((repr(node), node.index, [d.row for d in node.dependents()],
                         len(node.parent)))

    root = traced(chain, 1, ctx=Peek())
    assert [s[1] for s in seen] == [2, 3, 4]       # positions while the call is open
    assert all(s[2] == [] for s in seen)           # nothing depends on it yet
    assert [s[3] for s in seen] == [3, 4, 5]       # the call's children so far
    a, b, c = root[2], root[3], root[4]
    assert a.forward() == [b, c, root[5]] and c.referenced() == [b, a]
    assert [n.index for n in root.children] == list(range(len(root)))


def with_keywords(a, b=0, *, c=1):
    return sorted([a, b, c], key=lambda v: -v)


def test_canrecur_and_enter_get_the_call_as_made(traced):
    asked = []

    class Log(tracer.Context):
        def canrecur(self, f, *args, **kwargs):
            asked.append(("canrecur", getattr(f, "__name__", f), args, kwargs))
            return True

        def enter(self, f, *args, **kwargs):
            asked.append(("enter", getattr(f, "__name__", f), args, kwargs))
            return self

    root = traced(with_keywords, 3, b=5, c=4, ctx=Log())
    assert root.value == [5, 4, 3]
    assert asked[0] == ("enter", "with_keywords", (3,), {"b": 5, "c": 4})
    # sorted is asked once, because it runs Python code (the key function); the key
    # function's frames, entered from C, get their parameters by position.
    assert asked[1][:2] == ("canrecur", "sorted") and asked[1][2] == ([3, 5, 4],)
    assert [a[2] for a in asked[2:]] == [(3,), (5,), (4,)]
    root = traced(nested, 2, ctx=Log())
    assert ("canrecur", "square", (2,), {}) in asked
    assert ("canrecur", "uses_square", (2,), {}) in asked


def test_intervening_context_under_a_passive_root_is_a_clear_error():
    class Intervenes(tracer.Context):
        def override(self, node):
            return KEEP

    class Root(tracer.Context):
        def enter(self, f, *args, **kwargs):
            return Intervenes()

    with pytest.raises(tracer.TrackingError, match="pass a root context") as err:
        tracer.track(nested, 3, ctx=Root())
    assert isinstance(err.value.__cause__, TypeError)
    assert all(MON.get_tool(i) is None for i in range(6))


# -- what interventions may touch -----------------------------------------------------------------

def many_constructs(xs, d):
    squares = [x * x for x in xs]
    table = {k: v for k, v in d.items()}
    total = 0
    for s in squares:
        total += s
    both = [*xs, *squares]
    return total, table, max(*both), f"{total}"


def test_interventions_are_asked_only_for_calls_and_plain_operators(traced):
    asked_override, asked_substitute = [], []

    class Everything(tracer.Context):
        def substitute(self, f, *args, **kwargs):
            asked_substitute.append(f)
            return None

        def override(self, node):
            asked_override.append(node.function.value)
            return KEEP

    root = traced(many_constructs, [1, 2, 3], {"a": 1}, ctx=Everything())
    assert root.value == many_constructs([1, 2, 3], {"a": 1})
    # Results that later instructions use as a list, dict or iterator are never
    # offered: replacing them could crash the interpreter.
    from tracer import callables as ops
    never = {iter, next, ops.build_list, ops.build_dict, ops.list_append}
    assert not never & set(asked_override) and not never & set(asked_substitute)
    assert operator.mul in asked_override and max in asked_override
    assert operator.iadd in asked_substitute


def bool_tests(x, items):
    hits = 0
    if x in items:
        hits += 1
    if x < 3:
        hits += 10
    return hits


def test_override_of_a_bool_consumed_by_a_branch_must_stay_a_bool():
    class NonBool(tracer.Context):
        def override(self, node):
            return 1 if node.function.value is operator.contains else KEEP

    with pytest.raises(tracer.TrackingError, match="must give a bool") as err:
        tracer.track(bool_tests, 2, [2], ctx=NonBool())
    assert err.value.result == 11  # the call ran on, untracked, to its end

    class Flip(tracer.Context):
        def override(self, node):
            return (not node.value) if node.function.value is operator.contains else KEEP

    root = tracer.track(bool_tests, 2, [2], ctx=Flip())
    tracer.validate(root)
    assert root.value == 10


def takes_all(*args, **kwargs):
    return args, kwargs


def star_generator(n):
    return takes_all(*(i * i for i in range(n)), **{"k": n})


def test_star_call_of_an_iterator_is_not_consumed_by_contexts(traced):
    asked = []

    class Watch(tracer.Context):
        def canrecur(self, f, *args, **kwargs):
            asked.append((f, args, kwargs))
            return True

        def substitute(self, f, *args, **kwargs):
            return None

    root = traced(star_generator, 3, ctx=Watch())
    assert root.value == ((0, 1, 4), {"k": 3})
    # Asked when the generator feeding `*` starts: the arguments are not known yet.
    assert asked[0] == (takes_all, (tracer.views.UNKNOWN,), {"k": 3})


def test_primitives_are_matched_against_the_operator_not_its_operand(traced):
    class Adds:
        def __add__(self, other):
            return square(other)

        def __call__(self):
            return None

    a = Adds()
    root = traced(lambda v: v + 2, a, ctx=tracer.Context(primitives=[a]))
    assert root.value == 4
    add = root[2]
    assert isinstance(add, tracer.views.NestedCallNode) and len(add) > 0


def test_keyboard_interrupt_in_a_hook_interrupts_the_program():
    class Interrupts(tracer.Context):
        def trackedjump(self, node):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tracer.track(uses_square, 3, ctx=Interrupts())
    assert all(MON.get_tool(i) is None for i in range(6))


def test_tracking_error_keeps_what_the_call_did():
    class Fails(tracer.Context):
        def trackedreturn(self, node):
            raise RuntimeError("hook")

    def raises(x):
        square(x)
        raise ValueError("program")

    with pytest.raises(tracer.TrackingError) as err:
        tracer.track(raises, 2, ctx=Fails())
    assert isinstance(err.value.exception, ValueError) and err.value.result is None
    with pytest.raises(tracer.TrackingError) as err:
        tracer.track(uses_square, 3, ctx=Fails())
    assert err.value.result == uses_square(3) and err.value.exception is None
    for code in (uses_square.__code__, square.__code__):
        assert all(MON.get_local_events(i, code) == 0 for i in range(6))


def test_collector_waits_while_hooks_run(traced):
    # A hook runs in the middle of one of the program's instructions: an automatic
    # collection there could run the program's finalizers where they never run
    # untraced.  Collections are held back while a hook runs, then allowed again.
    seen = []

    class Probe(tracer.Context):
        def trackedprimitive(self, node):
            seen.append(gc.isenabled())

    assert gc.isenabled()
    traced(tracked_work, Tracked(1), Tracked(2), 3, ctx=Probe())
    assert seen and not any(seen)
    assert gc.isenabled()
    gc.disable()
    try:
        seen.clear()
        traced(tracked_work, Tracked(1), Tracked(2), 3, ctx=Probe())
        assert seen and not gc.isenabled()  # a disabled collector stays disabled
    finally:
        gc.enable()


def test_depth_limit_subclass_stays_itself_below(traced):
    seen = []

    class Logged(tracer.context.DepthLimitContext):
        def trackedprimitive(self, node):
            seen.append((type(self).__name__, self.level))

    def inner(x):
        return abs(x)

    def outer(x):
        return inner(x) + abs(x)

    root = traced(outer, -2, ctx=Logged(3))
    assert root.value == 4
    assert ("Logged", 3) in seen and ("Logged", 2) in seen
