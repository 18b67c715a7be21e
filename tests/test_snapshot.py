"""Snapshot policies: what a trace keeps of values that change after they are recorded."""

import pytest

import tracer


def mutates():
    a = [1, 2]
    a.append(99)
    d = {"k": a}
    a[0] = 5
    return a, d


def _built(root):
    """The values recorded for `a = [1, 2]` and `d = {"k": a}`."""
    lists = [n for n in root.children if isinstance(n, tracer.views.PrimitiveCallNode)
             and n.function.value is tracer.callables.build_list]
    dicts = [n for n in root.children if isinstance(n, tracer.views.PrimitiveCallNode)
             and n.function.value is tracer.callables.build_const_key_map
             or isinstance(n, tracer.views.PrimitiveCallNode) and n.function.value is tracer.callables.build_dict]
    return lists[0].value, dicts[0].value


def test_default_keeps_references_so_mutation_shows(traced):
    root = traced(mutates)
    a, d = _built(root)
    assert a == [5, 2, 99] and a is root.value[0]


def test_copy_keeps_shallow_copies_of_mutable_builtins(traced):
    root = traced(mutates, ctx=tracer.Context(snapshot="copy"))
    a, d = _built(root)
    assert a == [1, 2]
    assert d == {"k": [5, 2, 99]}  # shallow: the dict's list is the live one
    assert root.value == mutates()  # the program itself is unaffected
    assert root.value[0] is root.value[1]["k"]


def test_deepcopy_keeps_the_state_at_record_time(traced):
    root = traced(mutates, ctx=tracer.Context(snapshot="deepcopy"))
    a, d = _built(root)
    assert a == [1, 2] and d == {"k": [1, 2, 99]}
    ret = [n for n in root.children if isinstance(n, tracer.views.ReturnNode)][0]
    assert ret.value == ([5, 2, 99], {"k": [5, 2, 99]})


def test_uncopyable_values_are_kept_themselves(traced):
    def f():
        g = (i for i in range(3))
        return [g]

    root = traced(f, ctx=tracer.Context(snapshot="deepcopy"))
    assert next(root.value[0]) == 0


def test_a_function_policy_and_an_overriding_subclass(traced):
    root = traced(mutates, ctx=tracer.Context(snapshot=lambda v: ("seen", repr(v))))
    a, _ = _built(root)
    assert a == ("seen", "[1, 2]")

    class Lengths(tracer.Context):
        def snapshot(self, value):
            return len(value) if isinstance(value, list) else value

    root = traced(mutates, ctx=Lengths())
    a, _ = _built(root)
    assert a == 2


def test_bad_policies_are_refused():
    with pytest.raises(ValueError, match="snapshot must be one of"):
        tracer.Context(snapshot="shallow")
    with pytest.raises(TypeError, match="snapshot must be"):
        tracer.Context(snapshot=3)


def test_a_failing_policy_stops_tracking_and_the_program_goes_on():
    def bad(value):
        raise RuntimeError("no snapshot")

    with pytest.raises(tracer.TrackingError, match="no snapshot") as info:
        tracer.track(mutates, ctx=tracer.Context(snapshot=bad))
    assert info.value.result == mutates()


def test_a_nested_context_needs_a_root_policy():
    class Snapping(tracer.Context):
        def snapshot(self, value):
            return value

    class Root(tracer.Context):
        def enter(self, f, *args, **kwargs):
            return Snapping()

    def outer():
        return mutates()

    with pytest.raises(tracer.TrackingError, match="snapshot policy"):
        tracer.track(outer, ctx=Root())
