"""Frames entered from C while a call is traced: finalizers, weakref callbacks and
gc.callbacks run by the collector at chosen instructions (on 3.12 a collection runs
inside any allocating instruction, on 3.13 at the next eval-breaker check).  Every
trace is valid, the user's callbacks are recorded, tracer's own never are."""

import gc
import re
import weakref
from pathlib import Path

import pytest

import tracer
from tracer.views.nodes import CallNode, NestedCallNode
from helpers import walk

TRACER_DIR = Path(tracer.__file__).resolve().parent


@pytest.fixture
def collector_everywhere():
    """A collection at (nearly) every allocation, each running a gc.callbacks
    function and finalizers of cyclic garbage that re-arms itself, so frames are
    entered from C at all sorts of instructions.  Yields the counts of each."""
    hits = {"gc": 0, "del": 0, "weakref": 0}
    keep = [None]
    armed = [True]

    def on_gc(phase, info):
        hits["gc"] += 1

    class Bomb:
        def __init__(self):
            self.me = self

        def __del__(self):
            hits["del"] += 1
            if armed[0]:
                Bomb()   # the next collection finds one again

    class Node:
        pass

    def rearm(_=None):
        hits["weakref"] += 1
        if not armed[0]:
            return
        n = Node()
        n.me = n
        keep[0] = weakref.ref(n, rearm)

    old = gc.get_threshold()
    gc.callbacks.append(on_gc)
    Bomb()
    rearm()
    hits.update(gc=0, weakref=0)
    gc.set_threshold(3, 1, 1)
    try:
        yield hits
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(on_gc)
        armed[0] = False
        keep[0] = None
        gc.collect()


# -- programs whose instructions allocate in many ways -----------------------------------

class Box:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return Box(self.v + other.v)


def index_error(n):
    total = 0
    for i in range(n):
        try:
            total += [3, 1, 2][i + 2]
        except IndexError as exc:
            total += len(str(exc))
    return total


def escaping(n):
    parts = [f"{i}:{i * i}" for i in range(n)]
    if len(parts) > 2:
        raise ValueError(",".join(parts))
    return parts


def objects(n):
    acc = Box(0)
    for i in range(n):
        acc = acc + Box(i)
        d = {str(k): [k] * k for k in range(i % 4)}
        acc.v += sum(len(v) for v in d.values())
    return acc.v


def generators(n):
    def gen(k):
        for i in range(k):
            yield (i, [i] * 2)
    return sum(a + len(b) for a, b in gen(n)), list(zip(*[gen(3), gen(3)]))


def with_finally(n):
    class Ctx:
        def __enter__(self):
            return [n]

        def __exit__(self, *exc):
            return True

    out = []
    for i in range(n):
        try:
            with Ctx() as c:
                out.append(c + [i])
                if i % 2:
                    raise KeyError(i)
        finally:
            out.append(tuple(out[-1]))
    return len(out)


PROGRAMS = [(index_error, 6), (escaping, 5), (objects, 8), (generators, 6),
            (with_finally, 5)]


def outcome(f, arg):
    try:
        return "returned", f(arg)
    except Exception as exc:
        return "raised", repr(exc)


def traced_outcome(f, arg):
    try:
        root = tracer.track(f, arg)
        result = ("returned", root.value)
    except Exception as exc:
        root = tracer.last_trace()
        result = ("raised", repr(exc))
    tracer.validate(root)
    return root, result


@pytest.mark.parametrize("f, arg", PROGRAMS, ids=[f.__name__ for f, _ in PROGRAMS])
def test_collections_at_any_instruction_give_valid_traces(collector_everywhere, f, arg):
    want = outcome(f, arg)
    names = set()
    for _ in range(10):
        root, got = traced_outcome(f, arg)
        assert got == want
        # The finalizers and callbacks are the program's: recorded as calls
        # entered from C, each with its arguments and result.
        names |= {getattr(n.function.value, "__name__", None) for n in walk(root)
                  if isinstance(n, NestedCallNode) and n.parent is not None}
    hits = collector_everywhere
    assert hits["gc"] > 0 and hits["del"] > 0 and hits["weakref"] > 0
    assert names & {"on_gc", "__del__", "rearm"}


def test_finalizers_run_around_the_root_call_are_not_the_programs(collector_everywhere):
    # While track calls f, and while it handles what f raised, collections run
    # in track's own frame: what they run is not part of the traced call.
    for _ in range(10):
        root, got = traced_outcome(escaping, 5)
        assert got[0] == "raised"
        for child in root.children:
            assert child.location is not None, child
    # A C callable's own frames entered from C are still the call's.
    root = tracer.track(sorted, [3, 1, 2], key=lambda v: -v)
    tracer.validate(root)
    lambdas = [c for c in root.children if isinstance(c, NestedCallNode)
               and getattr(c.function.value, "__name__", "") == "<lambda>"]
    assert len(lambdas) == 3


def test_explicit_collection_inside_the_traced_call_records_user_finalizers():
    log = []

    class Cyclic:
        def __init__(self, name):
            self.name = name
            self.me = self

        def __del__(self):
            log.append(self.name)

    def user(n):
        return gc.collect()

    # Garbage made before tracking (a trace keeps every value it recorded alive,
    # so garbage made inside the traced call would wait for the trace to go).
    gc.collect()
    gc.disable()
    try:
        for i in range(3):
            Cyclic(i)
        root = tracer.track(user, 3)
    finally:
        gc.enable()
    tracer.validate(root)
    assert sorted(log) == [0, 1, 2]
    (collect,) = [c for c in walk(root) if isinstance(c, CallNode)
                  and getattr(c.function, "value", None) is gc.collect]
    dels = [c for c in collect.children if isinstance(c, NestedCallNode)
            and getattr(c.function.value, "__qualname__", "").endswith("Cyclic.__del__")]
    assert len(dels) == 3


def test_user_weak_key_dictionary_callback_is_recorded_validly():
    class Key:
        pass

    table = weakref.WeakKeyDictionary()

    def user():
        gc.collect()
        return len(table)

    gc.collect()
    gc.disable()
    try:
        k = Key()
        k.me = k
        table[k] = 1
        del k
        root = tracer.track(user)
    finally:
        gc.enable()
    tracer.validate(root)
    assert root.value == 0
    removes = [n for n in walk(root) if isinstance(n, NestedCallNode)
               and getattr(n.function.value, "__name__", "") == "remove"]
    assert len(removes) == 1


def _exec_function_in_a_cycle():
    ns = {}
    exec("def g(x):\n    y = x\n    def h():\n        return y * y\n    return h() + 1\n", ns)
    g = ns["g"]
    g.cycle = g   # only the collector frees it
    return g


def test_tracer_caches_freed_mid_trace_run_nothing_in_it():
    # tracer analyses g's code (plans, IR, tape and gradient caches), then g
    # becomes garbage and is collected inside the next traced call.
    g = _exec_function_in_a_cycle()
    tracer.validate(tracer.track(g, 1.0))
    value, tape = tracer.tape(g, 1.0)
    assert tracer.grad(g)(2.0) == 4.0
    code = weakref.ref(g.__code__)
    del g, value, tape
    tracer.track(abs, -1)   # last_trace() no longer holds g's trace

    def user(x):
        gc.collect()
        return x * 2

    root = tracer.track(user, 3)
    tracer.validate(root)
    assert code() is None, "the test needs g's code freed during the traced call"
    (collect,) = [c for c in root.children if isinstance(c, CallNode)
                  and getattr(c.function, "value", None) is gc.collect]
    # Other garbage of the test process may have finalizers; none of tracer's.
    for node in walk(collect):
        if isinstance(node, NestedCallNode) and node is not collect:
            fn = node.function.value
            code = getattr(fn, "__code__", None)
            assert getattr(fn, "__name__", "") != "remove", fn
            assert code is None or not code.co_filename.startswith(str(TRACER_DIR)), fn
    assert len(root.children) == 5   # f, x, collect, *, return


def test_tracer_defines_no_callbacks_the_collector_runs():
    # A weak container's removal callback, a finalizer or a weakref callback of
    # tracer's own would run inside its users' traced programs.
    pattern = re.compile(r"Weak(Key|Value)Dictionary|WeakSet|weakref\.finalize|"
                         r"def __del__|weakref\.ref\([^()]*,")
    hits = [f"{path.relative_to(TRACER_DIR)}:{i}: {line.strip()}"
            for path in sorted(TRACER_DIR.rglob("*.py"))
            for i, line in enumerate(path.read_text().splitlines(), 1)
            if pattern.search(line) and not line.lstrip().startswith(("#", '"', "`"))
            and "identitycache.py" not in str(path)]
    assert hits == []


def test_generated_programs_under_collector_pressure():
    # The project's generated programs (tests/fuzz) with a collection at nearly
    # every allocation and callbacks of all three kinds (`python -m fuzz.pressure`
    # runs more): every trace valid, the outcome the untraced run's.
    from collections import Counter

    from fuzz.pressure import run_one

    counts, examples = Counter(), {}
    for seed in range(7000, 7025):
        run_one(seed, 5, counts, examples)
    assert examples == {}
    assert counts["ok"] == 25
    assert counts["gc.callbacks"] > 25 and counts["__del__"] > 0
