"""Code objects are told apart by identity: equal code objects (the same source
compiled twice) are each instrumented, interned and analysed on their own, and
tracer's caches do not keep code objects alive."""

import collections
import gc
import weakref

import tracer
from helpers import walk

SOURCE = "def g(x):\n    y = x * 2\n    return y + 1\n"


def _compile_twice():
    ns1, ns2 = {}, {}
    exec(compile(SOURCE, "<generated>", "exec"), ns1)
    exec(compile(SOURCE, "<generated>", "exec"), ns2)
    return ns1["g"], ns2["g"]


def test_equal_code_objects_are_each_recorded(traced):
    g1, g2 = _compile_twice()
    assert g1.__code__ == g2.__code__ and g1.__code__ is not g2.__code__

    def f(x):
        return g1(x) + g2(x + 1)

    root = traced(f, 3)
    assert root.value == 7 + 9
    calls = [n for n in root.children if isinstance(n, tracer.views.NestedCallNode)]
    assert [c.value for c in calls] == [7, 9]
    for call, code in zip(calls, (g1.__code__, g2.__code__)):
        assert not call.trace.flags(call.row) & tracer._core.FLAGS["open"]
        body = call.children
        assert body[0].code is code  # each body is recorded against its own code object
        muls = [n for n in body if isinstance(n, tracer.views.PrimitiveCallNode) and n.value in (6, 8)]
        assert len(muls) == 1 and muls[0].arguments[0] == body[1]


def test_namedtuples_with_the_same_fields(traced):
    def f():
        P = collections.namedtuple("P", "x y")
        Q = collections.namedtuple("P", "x y")
        return P(1, 2), Q(3, 4)

    root = traced(f)
    assert root.value == ((1, 2), (3, 4))
    news = [n for n in walk(root) if isinstance(n, tracer.views.NestedCallNode)
            and isinstance(n.value, tuple) and n.children
            and getattr(n.children[0].value, "__name__", None) == "__new__"]
    assert [n.value for n in news] == [(1, 2), (3, 4)]
    assert news[0].children[0].code is not news[1].children[0].code


def test_eval_of_the_same_text_twice(traced):
    def f(x):
        a = eval("x * 3", {"x": x})
        b = eval("x * 3", {"x": x + 1})
        return a + b

    root = traced(f, 2)
    assert root.value == 6 + 9
    tracer.validate(root)


def test_plans_and_ir_do_not_keep_code_alive():
    g1, _ = _compile_twice()
    tracer.track(g1, 1)
    tracer.ir(g1)
    ref = weakref.ref(g1.__code__)
    del g1, _
    tracer.track(len, ())  # last_trace() no longer holds the first trace
    gc.collect()
    assert ref() is None
