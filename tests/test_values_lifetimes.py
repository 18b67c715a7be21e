"""Object lifetimes under tracing: a dropped trace leaves no garbage cycles of its own
(so the collector has nothing more to do than untraced), exceptions a traced call
caught are recorded without their tracebacks under every value policy but "keep",
and `__del__`/weakref callbacks of the program's objects run where they run
untraced -- inside a `pytest.warns` block, as pyparsing's `Forward.__del__` needs."""

import collections
import gc
import warnings
import weakref

import pytest

import tracer
from tracer import _core
from tracer.context import Context
from tracer.views.nodes import node_at

POLICIES = ["none", "summary", "weak"]
LOG: list = []


class Parser:
    """Like pyparsing's Forward: its finalizer warns when it dies undefined."""

    def __init__(self, name):
        self.name = name

    def __del__(self):
        LOG.append(self.name)
        warnings.warn(f"{self.name} dropped undefined", UserWarning, stacklevel=1)

    def parse(self, text):
        if not text:
            raise ValueError("nothing to parse")
        return [self.name, text]


def lookup(d, k):
    try:
        return d[k]
    except KeyError:                 # caught: its traceback holds lookup's frame
        return None


def deep(n, d):
    return lookup(d, n) if n == 0 else deep(n - 1, d)


def catches_many():
    # Exceptions raised and caught at depth (inspect.signature's AttributeErrors in
    # toolz's suite): each traceback's frames hold their callers up to track's frame.
    out = []
    for i in range(20):
        out.append(deep(i % 5, {"a": [i]}))
        try:
            Parser.missing                # an AttributeError from C
        except AttributeError:
            pass
    return len(out)


def makes_cycles():
    # The program's own cyclic garbage: an exception kept in a local of the frame
    # its traceback holds (frame -> err -> traceback -> frame).
    total = 0
    for i in range(10):
        try:
            lookup(None, i)
        except TypeError as e:
            err = e
        total += err is not None
    return total


def raised_nodes(root):
    t = root.trace
    return [n for n in (node_at(t, i) for i in range(1, len(t))) if n.raised]


def cyclic_garbage(fn, policy=None):
    """Types and count of what a full collection finds after fn (traced with
    `policy`, or untraced when policy is False) ran and its trace was dropped."""
    if policy is not False:
        # Plans built, validate's first run: their garbage before the count.
        tracer.validate(tracer.track(fn, ctx=Context(values=policy)))
    gc.collect()
    tracer.api._state.last = None
    was = gc.isenabled()
    gc.disable()
    try:
        if policy is False:
            fn()
        else:
            root = tracer.track(fn, ctx=Context(values=policy))
            tracer.validate(root)
            del root
        gc.set_debug(gc.DEBUG_SAVEALL)
        n = gc.collect()
        found = collections.Counter(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    return n, found


@pytest.mark.parametrize("policy", ["keep"] + POLICIES)
def test_a_dropped_trace_is_freed_without_the_collector(policy):
    # Caught exceptions' tracebacks reach track's own frame (a frame holds its
    # caller); had that frame kept the trace, every trace of a call that caught an
    # exception would be cyclic garbage, found and freed by the collector only:
    # 140,000 objects a pass of toolz's suite under "keep", 273,000 summaries
    # under "weak".
    assert cyclic_garbage(catches_many, False) == (0, collections.Counter())
    assert cyclic_garbage(catches_many, policy) == (0, collections.Counter())


@pytest.mark.parametrize("policy", ["keep"] + POLICIES)
def test_the_programs_own_cycles_hold_no_trace(policy):
    n0, untraced = cyclic_garbage(makes_cycles, False)
    assert n0 > 0
    n, traced = cyclic_garbage(makes_cycles, policy)
    # The same garbage, and the one frame of track's the program's frames hold as
    # their caller (untraced their caller is this test's frame, still running):
    # none of the trace's own objects.
    assert traced - untraced == collections.Counter({"frame": 1}), traced - untraced
    assert untraced - traced == collections.Counter()
    assert n == n0 + 1


@pytest.mark.parametrize("policy", POLICIES)
def test_finalizer_warns_inside_pytest_warns(traced, policy):
    # pyparsing's own test_unit.py, traced test by test, failed where a test drops a
    # Forward inside `pytest.warns`: the trace kept it past the block.
    def test_body():
        with pytest.warns(UserWarning, match="p1 dropped"):
            p = Parser("p1")
            p.parse("x")
            p = None
        with pytest.warns(UserWarning, match="p2 dropped"):
            try:
                Parser("p2").parse("")   # the exception's traceback holds it
            except ValueError:
                pass
        return LOG[-2:]

    LOG.clear()
    assert test_body() == ["p1", "p2"]
    LOG.clear()
    root = traced(test_body, ctx=Context(values=policy))
    assert root.value == ["p1", "p2"]


def test_keep_holds_values_past_the_block(traced):
    def body():
        p = Parser("kept")
        p.parse("x")
        p = None
        return list(LOG)

    LOG.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = traced(body)
        assert root.value == []           # "keep": the trace holds the Parser
        del root
    assert LOG == ["kept"]                # freed with the trace, without gc.collect


def raise_and_keep(seen):
    try:
        Parser("q").parse("")
    except ValueError as e:
        frames = []
        tb = e.__traceback__
        while tb is not None:
            frames.append((tb.tb_frame.f_code.co_name, tb.tb_lineno))
            tb = tb.tb_next
        seen.append(e)
        return frames, e.args, e.__context__, e.__cause__


@pytest.mark.parametrize("policy", ["keep"] + POLICIES)
def test_traced_code_sees_the_same_exceptions(traced, policy):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seen: list = []
        want = raise_and_keep(seen)
        seen = []
        root = traced(raise_and_keep, seen, ctx=Context(values=policy))
        assert root.value == want
        (exc,) = seen
        # The program's exception object is untouched: its traceback is its own.
        assert exc.__traceback__ is not None
        assert exc.__traceback__.tb_frame.f_code is raise_and_keep.__code__
        raised = raised_nodes(root)
        if policy == "keep":
            assert any(n.value is exc for n in raised)
        else:
            assert raised and all(isinstance(n.value, _core.ValueSummary) for n in raised)
            assert {n.value.message for n in raised} == {"nothing to parse"}
        del root, exc, seen, raised
        gc.collect()


def fails(holder):
    p = Parser("escaping")
    holder.append(weakref.ref(p))
    p.parse("")


@pytest.mark.parametrize("policy", POLICIES)
def test_an_escaping_exception_is_summarised(policy):
    # track raises the program's own exception; the trace (which last_trace()
    # keeps for a call that raised) holds only what the policy keeps of it, so the
    # exception's traceback and frames die when the caller drops the exception.
    holder: list = []
    LOG.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="nothing to parse") as info:
            tracer.track(fails, holder, ctx=Context(values=policy))
        assert holder[0]() is not None       # the traceback holds fails' frame
        del info
        assert holder[0]() is None and LOG == ["escaping"]
    root = tracer.last_trace()
    assert root is not None and root.raised
    assert isinstance(root.value, _core.ValueSummary) and root.value.type is ValueError
    assert root.trace.exception is root.value
    tracer.validate(root)
    tracer.api._state.last = None


@pytest.mark.parametrize("policy", POLICIES)
def test_a_bound_method_root_does_not_keep_its_instance(policy):
    # track(obj.method): the bound method is the root's callee while recording;
    # afterwards the trace keeps what the policy keeps of it, not the instance.
    LOG.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = tracer.track(Parser("bound").parse, "x", ctx=Context(values=policy))
        assert LOG == ["bound"]              # dead before track returned, as untraced
    assert root.value == ["bound", "x"]
    # (under every policy, "none" included: a bound method's summary holds its
    # function, which every policy keeps, and not its instance)
    callee = root.callee
    assert isinstance(callee, _core.ValueSummary) and callee.function is Parser.parse
    tracer.validate(root)


def test_last_trace_lets_a_dropped_trace_go_without_the_collector():
    # A returned call's trace is held weakly by last_trace(), and (its track
    # frame holding nothing) freed by reference counting alone.
    class Box:
        pass

    def run():
        catches_many()
        return [Box()]

    was = gc.isenabled()
    gc.disable()
    try:
        root = tracer.track(run)
        box = weakref.ref(root.value[0])
        trace = weakref.ref(root.trace)
        assert tracer.last_trace().trace is root.trace
        del root
        assert box() is None and trace() is None
        assert tracer.last_trace() is None
    finally:
        if was:
            gc.enable()


def test_summary_messages():
    def raiser(e):
        try:
            raise e
        except BaseException:
            return None

    cases = [(ValueError("m"), "m"), (KeyError(3), "3"), (KeyError(2 ** 100), None),
             (OSError(2, "no such file"), None), (ValueError("x" * 200), "x" * 80 + "…"),
             (ValueError(1.5), "1.5"), (ValueError(), None)]
    for exc, message in cases:
        root = tracer.track(raiser, exc, ctx=Context(values="none"))
        (n,) = raised_nodes(root)
        assert n.value.message == message, (exc, n.value.message)
        assert n.value.type is type(exc)



def test_shared_weak_values_stay_each_objects_own(traced):
    # Weak values are shared while the object and its summary are the same; an
    # object made where a dead one was (the same address) gets its own.
    class Box:
        pass

    kept = []

    def prog():
        ids = []
        for i in range(6):
            b = Box()
            ids.append(id(b))
            if i % 2:
                kept.append(b)
            b = None
        return len(set(ids))

    root = traced(prog, ctx=Context(values="weak"))
    boxes = [v for v in (node_at(root.trace, i).value for i in range(len(root.trace)))
             if type(v) is Box]
    assert boxes and all(any(b is k for k in kept) for b in boxes)
    assert {id(b) for b in boxes} == {id(k) for k in kept}
    dead = [v for v in (node_at(root.trace, i).value for i in range(len(root.trace)))
            if isinstance(v, _core.ValueSummary) and v.type is Box]
    assert len(dead) >= 3                 # the three dropped boxes: summaries now
