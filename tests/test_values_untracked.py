"""What the value policies make is left out of the garbage collector's lists when it
can never be part of a cycle (session 16, issue 19): a ValueSummary that refers only
to leaves (a static type, None, ints, floats, str, bytes, a tuple of ints, an object
of a type the collector never follows), a WeakValue whose summary is such and whose
reference has no callback (that reference itself, the object's basic weakref shared
with the program's weakref.ref(obj), is left as the program has it).  Each is
still freed when the last reference to it goes, traces are the same whether or not
collections run while they are recorded, and summaries that can be in a cycle (the
program's own classes, bound methods) stay tracked, so such a cycle is still found."""

import gc
import sys
import weakref

import pytest

import tracer
from tracer import _core
from tracer.context import Context
from tracer.views.nodes import node_at

from helpers import assert_same_trace

POLICIES = ["summary", "weak"]
HEAPTYPE = 1 << 9   # Py_TPFLAGS_HEAPTYPE


class Mine:
    def method(self):
        return 1


def program(collect=False):
    out = []
    for i in range(3):
        try:
            int("x%d" % i)                    # builtin exceptions: a static type
        except ValueError as e:
            out.append(e)
        out.append("long text " * 20 + str(i))  # a str past SHORT_TEXT: summarised
        out.append({i, i + 1})                # a set: weakly referenced under "weak"
        out.append([i] * 3)                   # a list: a shared summary
        out.append(Mine())                    # the program's class: a heap type
        out.append(Mine().method)             # a bound method: holds the function
        out.append(len)                       # a builtin: kept as code
        out.append("abc".upper)               # a C method bound to a str
        # (a full collection while rows hold them, or a call that collects nothing)
        (gc.collect if collect else gc.get_freeze_count)()
    return len(out)


def raw_values(root):
    """The objects the trace holds for its rows, WeakValues not resolved: what its
    traversal reports (only objects of collected types)."""
    return [v for v in gc.get_referents(root.trace)
            if isinstance(v, (_core.ValueSummary, _core.WeakValue))]


def leaves_only(s):
    if s.function is not None or not isinstance(s.type, type) or s.type.__flags__ & HEAPTYPE:
        return False
    if s.shape is not None and not (type(s.shape) is tuple
                                    and all(type(k) is int for k in s.shape)):
        return False
    return s.dtype is None or not gc.is_tracked(s.dtype)


@pytest.mark.parametrize("policy", POLICIES)
def test_summaries_of_leaves_are_untracked_the_others_tracked(policy):
    root = tracer.track(program, ctx=Context(values=policy))
    kinds = {"untracked": 0, "tracked": 0}
    for v in raw_values(root):
        s = v.summary if isinstance(v, _core.WeakValue) else v
        leaf = leaves_only(s)
        assert gc.is_tracked(s) is not leaf, s
        kinds["untracked" if leaf else "tracked"] += 1
        if isinstance(v, _core.WeakValue):
            assert gc.is_tracked(v) is not leaf, v
            # The object's basic reference is the program's too: left tracked,
            # as CPython made it.
            assert gc.is_tracked(v.ref)
    assert kinds["untracked"] >= 6 and kinds["tracked"] >= 3, kinds
    tracer.validate(root)


@pytest.mark.parametrize("policy", POLICIES)
def test_untracked_values_are_freed_with_the_trace(policy):
    root = tracer.track(program, ctx=Context(values=policy))
    held = list({id(v): v for v in raw_values(root) if not gc.is_tracked(v)}.values())
    assert held
    refs = [sys.getrefcount(v) for v in held]
    del root
    tracer.api._state.last = None
    tracer.track(abs, 1, ctx=Context(values=policy))   # (the shared caches emptied)
    # Only `held` refers to them now (a fresh object in the same place counts the
    # same): dropping the list frees them, no collection needed (an untracked
    # object is never in a cycle).
    baseline = [sys.getrefcount(v) for v in [object()]]
    after = [sys.getrefcount(v) for v in held]
    assert all(a == baseline[0] for a in after), (refs, after, baseline)
    was = gc.isenabled()
    gc.disable()
    try:
        del held                                    # freed here, the collector off
        assert sys.getrefcount  # (nothing left to check them by: no __weakref__ slot)
    finally:
        if was:
            gc.enable()


@pytest.mark.parametrize("policy", POLICIES)
def test_traces_are_the_same_when_collections_run_while_recording(policy):
    ctx = Context(values=policy)
    calm = tracer.track(program, False, ctx=ctx)
    busy = tracer.track(program, True, ctx=ctx)
    # The same rows but for the argument, and the same summaries of the same values.
    # The summaries in row order (a weak value's own: whether its object is still
    # alive depends on when the program's own cyclic garbage is collected).
    a = [v.summary if isinstance(v, _core.WeakValue) else v for v in raw_values(calm)]
    b = [v.summary if isinstance(v, _core.WeakValue) else v for v in raw_values(busy)]
    assert len(a) == len(b)
    n = 0
    for x, y in zip(a, b):
        if isinstance(x, _core.ValueSummary):
            assert x == y, (x, y)
            n += 1
    assert n >= 20
    tracer.validate(calm)
    tracer.validate(busy)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_same_trace_with_and_without_the_collector(policy):
    ctx = Context(values=policy)
    tracer.track(program, ctx=ctx)   # plans built
    was = gc.isenabled()
    gc.disable()
    try:
        quiet = tracer.track(program, ctx=ctx)
    finally:
        if was:
            gc.enable()
    loud = tracer.track(program, ctx=ctx)
    assert_same_trace(quiet, loud)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_cycle_through_a_summary_of_the_programs_class_is_collected(policy):
    # A summary holds its value's type: for the program's own class that type can
    # reach the trace (here through a method's closure), so the summary stays
    # tracked and the cycle class -> method -> cell -> trace -> summary -> class is
    # found and freed by the collector.
    def make():
        holder = []

        class Local:
            def where(self):
                return holder

        root = tracer.track(lambda o: o, Local(), ctx=Context(values=policy))
        holder.append(root)
        return weakref.ref(Local)

    w = make()
    tracer.api._state.last = None
    gc.collect()
    assert w() is None


def test_a_weak_values_reference_stays_the_objects_basic_reference():
    class Box:
        pass

    keep = {1, 2, 3}
    keep_box = Box()
    root = tracer.track(lambda a, b: None, keep, keep_box, ctx=Context(values="weak"))
    weak = [v for v in raw_values(root) if isinstance(v, _core.WeakValue)]
    assert {type(w.ref()) for w in weak} >= {set, Box}
    for w in weak:
        obj = w.ref()
        assert weakref.ref(obj) is w.ref                # the one basic reference
        assert gc.is_tracked(w.ref)                     # as CPython made it
        # A reference with a callback is another object, tracked as before.
        assert gc.is_tracked(weakref.ref(obj, lambda r: None))
    del keep
    (s,) = [w for w in weak if w.summary.type is set]
    assert s.ref() is None and s.get() == s.summary     # dead: its summary
    assert gc.is_tracked([w for w in weak if w.summary.type is Box][0])


def observe_weakrefs(objs, listed=False):
    """What a program can see of its objects' basic weak references: whether the
    collector tracks them, (`listed`) whether gc.get_objects() holds them (too
    many values to run traced), and that they still name their objects."""
    refs = [weakref.ref(o) for o in objs]
    if listed:
        everything = {id(x) for x in gc.get_objects()}
    return [(gc.is_tracked(r), id(r) in everything if listed else None, r() is o)
            for r, o in zip(refs, objs)]


class Box:
    pass


@pytest.mark.parametrize("policy", ["keep", "summary", "weak"])
def test_the_programs_weakrefs_look_the_same_traced_and_untraced(policy):
    # A WeakValue holds the object's basic reference, the same object the
    # program's weakref.ref(obj) returns: tracing must leave it as the program
    # has it: tracked during the call, tracked and in gc.get_objects() after it.
    def program(objs, seen):
        seen.append(observe_weakrefs(objs))
        for o in objs:                      # each object a recorded value
            id(o)
        seen.append(observe_weakrefs(objs))

    def run(traced):
        objs = [{1, 2}, Box(), Box()]
        early = [weakref.ref(o) for o in objs]         # made before the call
        inside = []
        root = None
        if traced:
            root = tracer.track(program, objs, inside, ctx=Context(values=policy))
        else:
            program(objs, inside)
        after = observe_weakrefs(objs, listed=True)
        return inside, after, [gc.is_tracked(r) for r in early], root, objs

    untraced_inside, untraced_after, untraced_early, _, _ = run(False)
    inside, after, early, root, objs = run(True)
    assert inside == untraced_inside
    assert after == untraced_after == [(True, True, True)] * 3
    assert early == untraced_early == [True, True, True]
    if policy == "weak":                    # the trace did make WeakValues of them
        weak = [v for v in raw_values(root) if isinstance(v, _core.WeakValue)]
        assert {type(w.ref()) for w in weak} >= {set, Box}
        assert all(gc.is_tracked(w.ref) for w in weak)


def test_unpickled_summaries_follow_the_same_rule():
    import pickle

    root = tracer.track(program, ctx=Context(values="summary"))
    n = 0
    for v in raw_values(root):
        try:
            back = pickle.loads(pickle.dumps(v))
        except pickle.PicklingError:
            continue                          # (a type pickle cannot name)
        assert back == v
        assert gc.is_tracked(back) is not leaves_only(back), back
        n += 1
    assert n >= 10


# -- the values of the trace being recorded are hidden from the collector (_core._trace_recording) --
def test_the_traces_values_are_hidden_from_the_collector_only_while_recording():
    seen = {}

    def prog():
        box = [1, 2, 3]
        # The trace holds `box` (a value) while recording, but does not show its
        # values to the collector: nothing the collector knows refers to box but
        # this frame.
        seen["referrers"] = [type(r).__name__ for r in gc.get_referrers(box)]
        seen["traces"] = sum(type(o) is _core.Trace for o in gc.get_objects())
        gc.collect()
        return len(box)

    root = tracer.track(prog)
    assert "Trace" not in seen["referrers"]
    assert gc.is_tracked(root.trace)
    assert sum(type(o) is _core.Trace for o in gc.get_objects()) >= 1
    tracer.validate(root)


@pytest.mark.parametrize("policy", ["keep"] + POLICIES)
def test_values_survive_collections_during_recording(policy):
    # Objects the program drops while the trace holds them stay what they were,
    # whatever collections run while the trace is out of the collector's lists.
    def prog():
        out = 0
        for i in range(50):
            d = {"i": i, "l": [i] * 3}
            d["self"] = d                   # the program's own cycle, dropped below
            out += len(d["l"])
            d = None
            if i % 10 == 0:
                gc.collect()
        return out

    root = tracer.track(prog, ctx=Context(values=policy))
    tracer.validate(root)
    if policy == "keep":
        dicts = [v for v in root.trace.values() if type(v) is dict]
        assert len({id(d) for d in dicts}) == 50
        assert all(d["self"] is d and d["l"] == [d["i"]] * 3 for d in dicts)
    del root
    tracer.api._state.last = None
    n = gc.collect()
    assert n >= 0


def test_a_trace_whose_call_ran_through_a_collection_comes_back_old():
    # The trace stays in the collector's lists while recording (its values hidden),
    # so it ages as any object: after a call that ran through a full collection it
    # is in the oldest generation, and young collections do not walk its values.
    # Its values are shown again once the call is over.
    def prog():
        box = [1, 2, 3]
        gc.collect()
        return box

    root = tracer.track(prog)
    trace = root.trace
    assert gc.is_tracked(trace)
    assert not any(o is trace for o in gc.get_objects(0))
    assert any(o is trace for o in gc.get_objects(2))
    assert any(r is trace for r in gc.get_referrers(root.value))
    tracer.validate(root)


@pytest.mark.parametrize("old", [False, True])
def test_a_trace_in_the_programs_cycle_is_collected_after_recording(old):
    # The trace is back in the collector's lists when track returns: a cycle the
    # program makes through it is found and freed; also through a trace that came
    # back old (its call ran through a full collection).
    holder = {}
    probe = []

    def prog():
        if old:
            gc.collect()
        return probe

    root = tracer.track(prog)
    if old:
        assert any(o is root.trace for o in gc.get_objects(2))
    holder["root"] = root
    probe.append(holder)                    # trace -> probe -> holder -> root -> trace
    t = weakref.ref(root.trace)
    del root, holder, probe
    tracer.api._state.last = None
    gc.collect()
    assert t() is None
