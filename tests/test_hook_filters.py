"""Hooks for chosen callables (Context(on_call=, substitute=, override=)), matched in C,
and the hook calling convention (a traced keyword named like a hook's parameter)."""

import math
import operator
import random

import numpy as np
import pytest

import tracer
from tracer import _core
from tracer.context import KEEP, Context, DepthLimitContext


def model(n):
    s = 0.0
    for i in range(n):
        s += random.gauss(0, 1) * 2
        s += math.sqrt(abs(s))
    return s


def test_on_call_sees_only_its_callee(traced):
    seen = []
    root = traced(model, 5, ctx=Context(on_call={random.gauss: seen.append}))
    assert len(seen) == 5
    assert all(node.callee is random.gauss for node in seen)
    draws = [n for n in root.children if getattr(n, "callee", None) is random.gauss]
    assert [n.row for n in draws] == [n.row for n in seen]


def test_on_call_by_qualified_name_and_nested_calls(traced):
    def helper(x):
        return x + 1

    seen = []
    # A nested (Python) call is reported once its body has returned.
    def prog():
        return helper(1) + helper(2) + len("abc")

    root = traced(prog, ctx=Context(on_call={helper: seen.append, "builtins.len": seen.append}))
    assert [n.value for n in seen] == [2, 3, 3]
    assert [type(n).__name__ for n in seen] == ["NestedCallNode", "NestedCallNode",
                                              "PrimitiveCallNode"]
    assert root.value == 8


def test_substitute_by_callee_runs_natively(traced):
    ctx = Context(substitute={"random.gauss": lambda mu, sigma: 1.0})
    root = traced(model, 3, ctx=ctx)
    expected = 0.0
    for _ in range(3):
        expected += 2.0
        expected += math.sqrt(abs(expected))
    assert root.value == expected
    subst = [row for row, md in root.trace.metadata.items() if "substituted" in md]
    assert len(subst) == 3
    assert all(root.trace.metadata[r]["substituted"] is random.gauss for r in subst)


def test_override_by_callee(traced):
    # random.gauss is primitive here: its own calls of sqrt are not recorded.
    root = traced(model, 3, ctx=Context([random.gauss], override={math.sqrt: lambda node: 0.0}))
    originals = [md["original"] for md in root.trace.metadata.values() if "original" in md]
    assert len(originals) == 3
    assert all(isinstance(v, float) for v in originals)


def test_override_keep_leaves_the_value(traced):
    plain = model  # the same seed gives the same draws
    random.seed(3)
    want = plain(4)
    random.seed(3)
    root = traced(model, 4, ctx=Context([random.gauss], override={math.sqrt: lambda node: KEEP}))
    assert root.value == want
    assert not root.trace.metadata


def test_operators_match_their_function(traced):
    seen = []
    ctx = Context([random.gauss], on_call={operator.mul: seen.append},
                  substitute={operator.mul: lambda a, b: 100.0})
    random.seed(0)
    root = traced(model, 2, ctx=ctx)
    assert [n.value for n in seen] == [100.0, 100.0]
    # The node's callee is the replacement; the operator it replaced is in metadata.
    assert all(n.metadata["substituted"] is operator.mul for n in seen)
    assert all(n.callee is ctx.call_filter.substitute[0] for n in seen)
    assert root.value > 200


def test_methods_match_through_any_instance(traced):
    r = random.Random(1)

    def prog():
        return r.gauss(0, 1) + r.random()

    seen = []
    traced(prog, ctx=Context(on_call={random.Random.gauss: seen.append}))
    assert len(seen) == 1 and seen[0].value == random.Random(1).gauss(0, 1)
    seen.clear()
    traced(prog, ctx=Context(on_call={r.gauss: seen.append}))  # a bound method: its function
    assert len(seen) == 1


def test_builtin_methods_match_every_bound_builtin(traced):
    g = np.random.default_rng(0)

    def prog():
        normal = g.normal           # a bound builtin, called later
        return g.normal(0, 1) + normal(1, 1) + g.random()

    seen = []
    traced(prog, ctx=Context(on_call={"numpy.random.Generator.normal": seen.append}))
    assert len(seen) == 2
    lst = []
    seen.clear()
    traced(lambda: (lst.append(1), [].append(2)), ctx=Context(on_call={list.append: seen.append}))
    assert len(seen) == 2


def test_unmatched_calls_run_no_python():
    calls = []

    class Counting(Context):
        pass

    ctx = Counting(on_call={math.floor: lambda node: calls.append(1)})
    flt = ctx.call_filter
    assert flt.find(math.floor) == 0 and flt.find(math.ceil) == -1 and len(flt) == 1
    tracer.track(model, 10, ctx=ctx)
    assert calls == []


def test_filters_combine_with_the_substitute_method(traced):
    class Both(Context):
        def substitute(self, f, /, *args, **kwargs):
            return (lambda x: -1.0) if f is math.sqrt else None

    root = traced(model, 2, ctx=Both([random.gauss],
                                     substitute={random.gauss: lambda mu, sigma: 1.0}))
    assert root.value == 2.0 - 1.0 + 2.0 - 1.0


def test_bad_filters_say_what_to_do():
    with pytest.raises(TypeError, match="on_call must map"):
        Context(on_call=[math.sqrt])
    with pytest.raises(TypeError, match="must be callable"):
        Context(on_call={math.sqrt: 3})
    with pytest.raises(ValueError, match="cannot resolve"):
        Context(substitute={"nosuchmodule_xyz.f": print})
    with pytest.raises(TypeError, match="callable or its qualified name"):
        Context(override={3: print})


def test_a_hook_error_stops_tracking():
    def bad(node):
        raise ValueError("no")

    with pytest.raises(tracer.TrackingError) as info:
        tracer.track(model, 3, ctx=Context(on_call={random.gauss: bad}))
    assert isinstance(info.value.__cause__, ValueError)
    assert isinstance(info.value.result, float)


def test_entered_context_with_filters_needs_an_intervening_root():
    class Enter(Context):
        def enter(self, f, /, *args, **kwargs):
            return Context(substitute={math.sqrt: abs})

    def outer():
        return model(1)

    with pytest.raises(tracer.TrackingError, match="substitute"):
        tracer.track(outer, ctx=Enter())


def test_core_bits_are_declared():
    assert {"on_call", "substitute_by", "override_by"} <= set(_core.HOOK_BITS)


# -- the calling convention: traced keyword arguments named like hook parameters ----------

def kw_target(**kw):
    return sorted(kw)


@pytest.mark.parametrize("name", ["f", "fn", "self", "ctx", "node", "args", "kwargs"])
def test_hooks_take_any_keyword_argument(traced, name):
    seen = []

    class All(Context):
        def canrecur(self, f, *args, **kwargs):     # written without `/`
            seen.append(("canrecur", sorted(kwargs)))
            return True

        def enter(self, f, *args, **kwargs):
            seen.append(("enter", sorted(kwargs)))
            return self

        def substitute(self, f, *args, **kwargs):
            if f is kw_target:
                seen.append(("substitute", sorted(kwargs)))
            return None

    def prog():
        return kw_target(**{name: 1})

    root = traced(prog, ctx=All())
    assert root.value == [name]
    assert ("canrecur", [name]) in seen and ("enter", [name]) in seen
    assert ("substitute", [name]) in seen
    root = traced(prog, ctx=DepthLimitContext(2))
    assert root.value == [name]
    root = traced(prog, ctx=DepthLimitContext(3))
    assert root.value == [name]


def test_hook_parameters_become_positional_only():
    class C(Context):
        def canrecur(self, f, *args, **kwargs):
            return kwargs

    assert C().canrecur(print, f=1, self=2) == {"f": 1, "self": 2}
    assert C.canrecur.__name__ == "canrecur" and C.canrecur.__qualname__.endswith("C.canrecur")


@pytest.mark.parametrize("name", ["tape", "fn", "self"])
def test_record_primitive_takes_any_keyword_argument(name):
    from tracer.tape import Call

    class Keep(Context):
        def record_primitive(self, tape, fn, *args, **kwargs):
            return tape.push(Call(fn, args, kwargs))

    def prog():
        return kw_target(**{name: 1})

    val, tape = tracer.tape(prog, ctx=Keep())
    assert val == [name]
    tape.validate()


def test_const_compared_with_a_function_raises():
    root = tracer.track(lambda a, b: a * b, 2, 3)
    (mul,) = [n for n in root.children if getattr(n, "callee", None) is operator.mul]
    with pytest.raises(TypeError, match=r"\.callee"):
        mul.function == operator.mul
    assert mul.function != None  # noqa: E711  (not a callable: just unequal)
    assert mul.callee is operator.mul


# -- the typed seam between the core and the Python layers --------------------------------

def test_the_core_reads_its_callbacks_from_one_host():
    from tracer import api

    host = _core.host()
    assert host is api.HOST
    for name in _core.HOST_FUNCTIONS:
        assert callable(getattr(host, name)), name   # persist set save and reduce
    assert host.track_code is tracer.track.__code__

    class Partial:
        build_plan = node_at = None

    with pytest.raises(TypeError, match="the host lacks ask_enter"):
        _core.set_host(Partial())
    assert _core.host() is api.HOST
