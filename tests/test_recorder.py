"""The recorder's structure: exceptions, nesting details, attribute loads, frames the
interpreter enters by itself.

Every trace made here is validated (through the `traced` fixture, or explicitly with
`tracer.validate(tracer.last_trace())` after a raising call).
"""

import gc
import operator
import os
import subprocess
import sys
import types
import weakref

import pytest

import tracer
from helpers import walk
from recorder_helpers import (
    C, STORED, boom, calls_boom, calls_to, catches_boom, catches_keyerror, g, gen,
    subscript_missing,
)


# == 5. exceptions ============================================================================

def test_escaping_exception_keeps_identity_and_partial_trace_validates():
    STORED.clear()
    with pytest.raises(ValueError) as info:
        tracer.track(calls_boom, 1)
    exc = info.value
    assert exc is STORED["exc"]
    assert str(exc) == "bad 2"
    assert exc.__traceback__ is not None
    root = tracer.last_trace()
    tracer.validate(root)
    assert root.raised and root.value is exc
    # the partial trace holds what ran: the addition, then the raising nested call
    add = [c for c in root.children if isinstance(c, tracer.views.PrimitiveCallNode)]
    assert [c.value for c in add] == [2]
    (call,) = calls_to(root, boom)
    assert isinstance(call, tracer.views.NestedCallNode)
    assert call.raised and call.value is exc
    assert call.arguments[0] == add[0]
    # inside boom: the raise itself is the last node, raised, with the exception
    assert call[len(call) - 1].raised and call[len(call) - 1].value is exc


def test_exception_in_nested_call_caught_by_caller(traced):
    STORED.clear()
    root = traced(catches_boom, 5)
    assert root.value == "bad 5!"
    assert not root.raised
    exc = STORED["exc"]
    (call,) = calls_to(root, boom)
    assert isinstance(call, tracer.views.NestedCallNode)
    assert call.raised and call.value is exc
    # the handler sees the same exception object, as a special node
    specials = [c for c in root.children
                if isinstance(c, tracer.views.SpecialCallNode) and c.value is exc]
    assert len(specials) == 1
    assert specials[0].index > call.index
    # tracing went on after the handler: str(e), then + "!", then the return
    (to_str,) = calls_to(root, str)
    assert to_str.value == "bad 5" and to_str.arguments[0] == specials[0]
    ret = root[len(root) - 1]
    assert isinstance(ret, tracer.views.ReturnNode) and ret.value == "bad 5!"
    concat = ret.referenced()[0]
    assert concat.value == "bad 5!" and concat.index > to_str.index
    assert to_str in concat.referenced()


def test_exception_caught_inside_is_recorded_and_tracing_goes_on(traced):
    root = traced(catches_keyerror, {})
    assert root.value == -2
    specials = [c for c in root.children
                if isinstance(c, tracer.views.SpecialCallNode) and isinstance(c.value, KeyError)]
    assert len(specials) == 1
    assert specials[0].value.args == ("missing",)
    ret = root[len(root) - 1]
    assert isinstance(ret, tracer.views.ReturnNode) and ret.value == -2
    mul = ret.referenced()[0]
    assert mul.value == -2 and mul.index > specials[0].index


def test_failing_primitive_call_is_recorded_raised_when_caught(traced):
    root = traced(catches_keyerror, {})
    (failed,) = calls_to(root, operator.getitem)
    assert isinstance(failed, tracer.views.PrimitiveCallNode)
    assert failed.raised and isinstance(failed.value, KeyError)
    (special,) = [c for c in root.children if isinstance(c, tracer.views.SpecialCallNode)
                  and c.value is failed.value]
    assert failed in special.referenced()


def test_failing_primitive_call_is_recorded_raised_when_escaping():
    with pytest.raises(KeyError) as info:
        tracer.track(subscript_missing, {})
    root = tracer.last_trace()
    tracer.validate(root)
    assert root.raised and root.value is info.value
    last = root[len(root) - 1]
    assert isinstance(last, tracer.views.PrimitiveCallNode)
    assert last.raised and last.value is info.value


# == 8. structure details =====================================================================

def method_call(v):
    obj = C(3)
    return obj.m(v)


def test_method_call_records_plain_function_and_self(traced):
    root = traced(method_call, 4)
    assert root.value == 7
    (ctor,) = calls_to(root, C)
    (call,) = calls_to(root, C.m)
    assert call.function == tracer.views.Const(C.m)
    assert call.function.value is C.m
    assert isinstance(call, tracer.views.NestedCallNode)
    assert call.arguments[0] == ctor  # self is the node that made obj
    assert call.arguments[1] == root[1]  # v, the root's argument
    assert call.value == 7
    # inside: the callee and the bound parameters come first
    assert [type(c) for c in call.children[:3]] == [tracer.views.ArgumentNode] * 3
    assert [c.value for c in call.children[:3]] == [C.m, ctor.value, 4]


def keyword_call(x, y):
    return g(1, b=2) + g(x, b=y)


def test_keyword_call(traced):
    root = traced(keyword_call, 10, 20)
    assert root.value == 33
    first, second = calls_to(root, g)
    assert first.arguments == [tracer.views.Const(1)]
    assert list(first.keywords) == ["b"]
    assert isinstance(first.keywords["b"], tracer.views.Const) and first.keywords["b"].value == 2
    assert first.value == 3
    assert second.arguments == [root[1]]
    assert second.keywords == {"b": root[2]}
    assert second.call_values() == (g, (10,), {"b": 20})
    # the root records track's own keywords
    kwroot = traced(g, 1, b=2)
    assert kwroot.value == 3
    assert list(kwroot.keywords) == ["b"] and kwroot.keywords["b"].value == 2


def sorts(xs):
    return sorted(xs, key=lambda v: -v)


def test_sorted_with_key_records_key_calls(traced):
    root = traced(sorts, [3, 1, 2])
    assert root.value == [3, 2, 1]
    (call,) = calls_to(root, sorted)
    assert isinstance(call, tracer.views.NestedCallNode)
    assert call.arguments == [root[1]]
    assert list(call.keywords) == ["key"]
    key = call.keywords["key"].value
    assert len(call) == 3
    for child, x in zip(call.children, [3, 1, 2]):
        assert isinstance(child, tracer.views.NestedCallNode)
        assert child.function.value is key
        assert child.value == -x
        kinds = [type(c) for c in child.children]
        assert tracer.views.ArgumentNode in kinds and tracer.views.ReturnNode in kinds
        args = [c for c in child.children if isinstance(c, tracer.views.ArgumentNode)]
        assert [a.value for a in args] == [key, x]
        ret = child[len(child) - 1]
        assert isinstance(ret, tracer.views.ReturnNode) and ret.value == -x and not ret.is_yield


def constructs(x):
    return C(x)


def test_constructor_records_init_body(traced):
    root = traced(constructs, 5)
    obj = root.value
    assert isinstance(obj, C) and obj.a == 5
    (ctor,) = calls_to(root, C)
    assert isinstance(ctor, tracer.views.NestedCallNode)
    assert ctor.value is obj
    assert ctor.arguments == [root[1]]
    (init,) = ctor.children
    assert isinstance(init, tracer.views.NestedCallNode)
    assert init.function.value is C.__init__
    assert [a.value for a in init.arguments] == [obj, 5]
    assert init.value is None
    setattrs = calls_to(init, setattr)
    assert len(setattrs) == 1 and setattrs[0].value is None
    ret = init[len(init) - 1]
    assert isinstance(ret, tracer.views.ReturnNode) and ret.value is None
    assert root[len(root) - 1].referenced() == [ctor]


def consumes(n):
    t = 0
    for y in gen(n):
        t += y
    return t


def test_generator_in_for_loop_records_next_with_yields(traced):
    root = traced(consumes, 3)
    assert root.value == 6
    nexts = calls_to(root, next)
    assert all(isinstance(c, tracer.views.NestedCallNode) for c in nexts)
    assert len(nexts) == 4  # three yields, then the generator returns
    yielded = []
    for nx in nexts[:3]:
        frames = nx.children
        assert len(frames) == 1 and isinstance(frames[0], tracer.views.NestedCallNode)
        assert frames[0].function.value is gen
        rets = [c for c in frames[0].children if isinstance(c, tracer.views.ReturnNode)]
        assert len(rets) == 1 and rets[0].is_yield
        assert rets[0].value == nx.value
        yielded.append(nx.value)
    assert yielded == [0, 2, 4]
    final = [c for c in walk(nexts[3]) if isinstance(c, tracer.views.ReturnNode)]
    assert len(final) == 1 and not final[0].is_yield and final[0].value is None
    # the loop's additions read the values next produced
    adds = [c for c in root.children if isinstance(c, tracer.views.PrimitiveCallNode)
            and any(r in nexts for r in c.referenced())]
    assert [a.value for a in adds] == [0, 2, 6]


# == 9. attribute loads =======================================================================


def reads_attr(o):
    return o.a + 1


def test_attribute_load_records_the_attribute_value(traced):
    o = types.SimpleNamespace(a=3)
    root = traced(reads_attr, o)
    assert root.value == 4
    (get,) = calls_to(root, getattr)
    obj, name = get.arguments
    assert obj == root[1] and isinstance(name, tracer.views.Const) and name.value == "a"
    assert get.value == 3


_CRASH_SCRIPT = """
import threading, tracer

def f(o):
    a = ()
    return o.clear(*a)          # PUSH_NULL, LOAD_ATTR (not a method load), CALL_FUNCTION_EX

for i in range(5):
    r = tracer.track(f, [1]); tracer.validate(r); assert r.value is None
    (get,) = [c for c in r.children if isinstance(c, tracer.views.PrimitiveCallNode)
              and isinstance(c.function, tracer.views.Const) and c.function.value is getattr]
    assert get.value.__self__ is r[1].value, get   # the bound method, read while live

ev = threading.Event()          # Condition.__exit__ is `return self._lock.__exit__(*args)`

def g():
    ev.set()
    return ev.is_set()

for i in range(5):
    r = tracer.track(g); tracer.validate(r); assert r.value is True
print("ok")
"""


def test_tracking_star_call_of_attribute_does_not_crash(tmp_path):
    script = tmp_path / "star_call.py"
    script.write_text(_CRASH_SCRIPT)
    src = os.path.dirname(os.path.dirname(tracer.__file__))
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


# -- compares that feed a branch directly (no event between them on 3.13) -------------------

class TruthyLt:
    """`<` runs Python code and returns a truthy non-bool."""

    def __lt__(self, other):
        return [other]


class FailingLt:
    def __lt__(self, other):
        raise ValueError("no order")


def branch_on_compare(a, b):
    if a < b:
        return "yes"
    return "no"


def branch_on_failing_compare(a):
    try:
        if a < 1:
            return "yes"
        return "no"
    except ValueError:
        return "caught"


def branch_on_membership(x, items, marker):
    n = 0
    for v in items:
        if v in x:
            n += 1
        if v is marker:
            n -= 1
    return n


def test_compare_feeding_a_branch_has_the_value_the_branch_saw(traced):
    for a, b, expect in [(1, 2, True), (3, 2, False)]:
        root = traced(branch_on_compare, a, b)
        lt = calls_to(root, operator.lt)
        assert [n.value for n in lt] == [expect]
        jump = next(c for c in root.children if isinstance(c, tracer.views.JumpNode))
        assert jump.referenced() == lt
        assert jump.value is expect


def test_compare_with_python_dunder_feeding_a_branch(traced):
    root = traced(branch_on_compare, TruthyLt(), 5)
    assert root.value == "yes"
    (lt,) = calls_to(root, operator.lt)
    # 3.13 converts the result to bool inside COMPARE_OP; 3.12 keeps what __lt__ returned.
    assert lt.value == (True if sys.version_info >= (3, 13) else [5])
    # __lt__'s frame is recorded under the compare, returning what it returned.
    returns = [n for n in walk(lt) if isinstance(n, tracer.views.ReturnNode)]
    assert [r.value for r in returns] == [[5]]


def test_failing_compare_feeding_a_branch_is_recorded_raised(traced):
    root = traced(branch_on_failing_compare, FailingLt())
    assert root.value == "caught"
    (lt,) = calls_to(root, operator.lt)
    assert lt.raised and isinstance(lt.value, ValueError)


def test_membership_and_identity_tests_feeding_branches(traced):
    marker = object()
    root = traced(branch_on_membership, {1, 2}, [1, marker, 3, 2], marker)
    assert root.value == 1
    contains = calls_to(root, operator.contains)
    assert [n.value for n in contains] == [True, False, False, True]
    is_ = calls_to(root, operator.is_)
    assert [n.value for n in is_] == [False, True, False, False]


# -- the end of an except block (a silent jump on 3.13) ------------------------------------------

def handled_then_add(x, z):
    try:
        y = 1 / x
    except ZeroDivisionError:
        y = 0
    y += z
    return y


def test_end_of_except_block_is_a_jump_on_every_version(traced):
    root = traced(handled_then_add, 0, 5)
    assert root.value == 5
    kinds = [n.kind for n in root.children]
    assert kinds == ["argument"] * 3 + ["primitive", "special", "primitive", "jump",
                                         "constant", "jump", "primitive", "return"]
    exc = root[4]
    assert exc.location.line == handled_then_add.__code__.co_firstlineno + 3  # `except`
    goto = root[8]
    assert goto.value is None and goto.referenced() == []
    stmt = goto.ir[goto.location]  # a statement of the IR
    assert stmt.id.startswith("&") and stmt.text.startswith("br §")


def test_raise_after_the_end_of_an_except_block_is_recorded():
    with pytest.raises(TypeError):
        tracer.track(handled_then_add, 0, "s")
    root = tracer.last_trace()
    tracer.validate(root)
    last = root.children[-1]
    assert last.kind == "primitive" and last.raised and isinstance(last.value, TypeError)
    assert last.function.value is operator.iadd and root.children[-2].kind == "jump"


# -- memory ---------------------------------------------------------------------------------------

class Marker:
    pass


def raises_key_error(x):
    raise KeyError(x)


def catches(o):
    try:
        raises_key_error(o)
    except KeyError:
        pass
    return 1


def test_trace_holding_a_caught_exception_is_collected():
    # The recorded exception's traceback holds track()'s frame, which holds the
    # trace: a cycle the garbage collector must be able to see through the values.
    import gc

    o = Marker()
    base = sys.getrefcount(o)
    for _ in range(50):
        root = tracer.track(catches, o)
        tracer.validate(root)
    del root
    tracer.api._state.last = None
    gc.collect()
    assert sys.getrefcount(o) == base


class Box:
    """A value the trace keeps (weak-referenceable)."""


def boxes(n):
    return [Box() for _ in range(n)]


def test_trace_is_freed_without_the_cycle_collector():
    gc.disable()
    try:
        root = tracer.track(boxes, 3)
        tracer.validate(root)
        witness = weakref.ref(root.value[0])
        del root
        tracer.api._state.last = None
        assert witness() is None
    finally:
        gc.enable()


def test_cell_assigned_by_a_nested_function_is_read_as_it_is(traced):
    # A `nonlocal` assignment in a nested function changes the outer frame's cell
    # where the outer frame's shadow cannot see it: the outer read must show the
    # value the program used (a $load_deref node: a read of the cell), never the
    # node the cell held before.
    def outer(x):
        total = x

        def bump(k):
            nonlocal total
            total = total + k

        bump(3)
        bump(4)
        return total * 2

    root = traced(outer, 1)
    assert root.value == 16
    mul = [n for n in root.children if isinstance(n, tracer.views.CallNode)
           and isinstance(n.function, tracer.views.Const) and n.function.value is operator.mul]
    assert len(mul) == 1
    (total, two) = mul[0].arguments
    assert total.value == 8 and tracer.format_node(total).split(" → ")[0].endswith("$load_deref()")
    assert two.value == 2


def test_cell_only_read_by_nested_functions_keeps_its_node(traced):
    # Closures that only read a cell leave the outer frame's shadow right: the
    # dependency on the node that set it is kept.
    def outer(x):
        total = x + 1

        def peek():
            return total

        peek()
        return total * 2

    root = traced(outer, 1)
    mul = [n for n in root.children if isinstance(n, tracer.views.CallNode)
           and isinstance(n.function, tracer.views.Const) and n.function.value is operator.mul]
    (total, _two) = mul[0].arguments
    assert isinstance(total, tracer.views.Node) and total.value == 2
    assert total.function.value is operator.add


def test_init_of_each_instance_is_recorded_after_specialization(traced):
    # 3.13 specializes `Task(p, n)` to CALL_ALLOC_AND_ENTER_INIT, which runs __init__
    # above a shim frame: every __init__ body is recorded, not only the first.
    def local_class(pairs):
        class Task:
            def __init__(self, p, n):
                self.p = p * n

        return [Task(p, n).p for p, n in pairs]

    pairs = [(1, 2), (3, 4), (5, 6), (7, 8)]
    root = traced(local_class, pairs)
    assert root.value == [2, 12, 30, 56]
    inits = [n for n in walk(root) if isinstance(n, tracer.views.NestedCallNode) and n.children
             and getattr(n.children[0].value, "__name__", "") == "__init__"]
    assert len(inits) == len(pairs)
    products = [n.value for n in walk(root) if isinstance(n, tracer.views.PrimitiveCallNode)
                and isinstance(n.function, tracer.views.Const) and n.function.value is operator.mul]
    assert products == [2, 12, 30, 56]


# -- a finalizer that runs as a returning frame is torn down ---------------------------------

_finalized, _weakrefs = [], []


class _Dies:
    pass


def _on_death(ref):
    _finalized.append("finalized")


def _makes_garbage():
    o = _Dies()
    _weakrefs.append(__import__("weakref").ref(o, _on_death))
    return 1


def _calls_it():
    x = _makes_garbage()
    return x + 1


def test_a_finalizer_run_after_a_return_is_recorded_beside_the_call():
    # With a snapshot policy that keeps no objects, `o` dies when _makes_garbage's
    # frame is cleared, after its return event: the weakref callback is a frame the
    # interpreter enters while the caller's call instruction is still in flight.
    # It used to be recorded under the call that had already returned (the fuzzer's
    # rare "return that is not the last node of its call", in WeakSet's guards).
    _finalized.clear()
    root = tracer.track(_calls_it, ctx=tracer.Context(snapshot=repr))
    assert _finalized == ["finalized"]
    tracer.validate(root)
    call, finalizer = root[1], root[2]
    assert call.function.value is _makes_garbage
    assert isinstance(call[-1], tracer.views.ReturnNode)
    assert finalizer.from_c and finalizer[0].value is _on_death
    assert root.value == 2
