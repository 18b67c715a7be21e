"""track in many threads at once: each thread records its own call into its own trace,
with no cross-talk, sharing one sys.monitoring tool id; nested track calls per thread;
instrumentation kept while any thread's trace needs it; recording() per thread."""

import concurrent.futures
import inspect
import sys
import threading

import pytest

import tracer
from tracer.api import recording
from tracer.context import Context
from tracer.views.nodes import CallNode, NestedCallNode
from recorder_helpers import assert_released, codes_of, free_ids, tools

N_THREADS = 8


# -- traced functions -----------------------------------------------------------------------

def rsum(n):
    return 0 if n == 0 else n + rsum(n - 1)


def work(k):
    total = 0
    for i in range(k):
        total += rsum(i % 12) * 2
        if i % 3 == 0:
            total -= 1
    try:
        [3, 1, 2][7]
    except IndexError:
        total += 1
    return total


def gen_work(k):
    def squares(n):
        for i in range(n):
            yield i * i
    return sum(x + 1 for x in squares(k)), [rsum(j) for j in range(k % 7)]


def fails(k):
    work(k)
    raise ValueError(f"failed at {k}")


def plain(v):
    """A value as the comparison sees it: plain data by value, objects by type."""
    if isinstance(v, (int, float, str, bool, type(None))):
        return v
    if isinstance(v, (tuple, list)):
        return type(v).__name__, tuple(plain(x) for x in v)
    return type(v).__name__


def shape(node):
    """The subtree as kinds, values, callees and code locations (no row numbers, no
    object identities): equal for the same call traced in any thread."""
    fn = None
    if isinstance(node, CallNode):
        f = node.function
        fn = getattr(f.value, "__qualname__", plain(f.value)) if isinstance(f, tracer.views.Const) \
            else "ref"
    loc = node.location
    return (type(node).__name__, node.raised, plain(node.value), fn,
            None if loc is None else (loc.code.co_qualname, loc.offset),
            tuple(shape(c) for c in node.children))


def reference(f, *args):
    """The shape of f(*args) traced alone in this thread (the raise kept)."""
    try:
        root = tracer.track(f, *args)
    except Exception:
        root = tracer.last_trace()
    tracer.validate(root)
    return shape(root)


@pytest.fixture
def fast_switching():
    # Thread switches every 10 µs: events of all threads interleave finely.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def run_threads(targets):
    """Run each callable in its own thread, started together; their results, or the
    exceptions they raised."""
    barrier = threading.Barrier(len(targets))
    out = [None] * len(targets)

    def runner(i, target):
        barrier.wait()
        try:
            out[i] = ("ok", target())
        except BaseException as exc:  # reported by the test
            out[i] = ("raised", exc)

    threads = [threading.Thread(target=runner, args=(i, t)) for i, t in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    return out


def checked(f, *args):
    root = tracer.track(f, *args)
    tracer.validate(root)
    return root


# -- tests ------------------------------------------------------------------------------------

def test_eight_threads_trace_at_once_each_its_own_call(fast_switching):
    free_before = free_ids()
    cases = [(work, 60 + i) if i % 2 else (gen_work, 9 + i) for i in range(N_THREADS)]
    expected = [reference(f, a) for f, a in cases]
    out = run_threads([lambda f=f, a=a: [checked(f, a) for _ in range(3)] for f, a in cases])
    codes = set()
    for (status, roots), want, (f, a) in zip(out, expected, cases):
        assert status == "ok", roots
        for root in roots:
            assert root.value == f(a)
            assert shape(root) == want
            codes |= codes_of(root)
    assert_released(free_before, codes)


def test_threads_share_one_tool_id(fast_switching):
    before = tools()
    seen = []
    gate = threading.Barrier(N_THREADS, timeout=10)

    def task(k):
        gate.wait()   # every thread is tracking now
        seen.append(tuple(sys.monitoring.get_tool(i) for i in range(6)))
        gate.wait()
        return work(k)

    out = run_threads([lambda k=k: checked(task, k) for k in range(N_THREADS)])
    assert all(status == "ok" for status, _ in out)
    assert all(s.count("tracer") == 1 for s in seen), seen
    assert tools() == before


def test_same_function_in_all_threads_keeps_constants_apart(fast_switching):
    # One code object, one plan, eight recorders pooling its constants into
    # eight traces at once.
    want = reference(work, 150)
    out = run_threads([lambda: checked(work, 150)] * N_THREADS)
    for status, root in out:
        assert status == "ok", root
        assert shape(root) == want


def test_threads_that_start_and_end_while_a_trace_is_recorded(fast_switching):
    want_long = reference(work, 40)
    want_short = reference(gen_work, 5)
    started = threading.Event()
    finished = threading.Event()

    def long_task():
        started.set()
        finished.wait(30)   # other threads come and go meanwhile
        return work(40)

    def churn():
        started.wait(30)
        roots = []
        for round in range(4):
            out = run_threads([lambda: checked(gen_work, 5)] * 4
                              + [lambda: work(30)] * 2)  # untraced threads run it too
            roots += [r for status, r in out if status == "ok" and hasattr(r, "trace")]
            assert all(status == "ok" for status, _ in out)
        finished.set()
        return roots

    helper = []
    t = threading.Thread(target=lambda: helper.append(churn()))
    t.start()
    root = checked(long_task)
    t.join(60)
    (roots,) = helper
    assert len(roots) == 16
    assert all(shape(r) == want_short for r in roots)
    (call,) = [c for c in root.children if isinstance(c, NestedCallNode)
               and c.function.value is work]
    assert shape(call)[5][1:] == want_long[5][1:]   # its arguments' rows aside, the same


def test_thread_pool_runs_traced_tasks(fast_switching):
    free_before = free_ids()
    wants = {k: reference(gen_work, k) for k in range(3, 11)}
    with concurrent.futures.ThreadPoolExecutor(max_workers=N_THREADS) as pool:
        roots = list(pool.map(lambda k: (k, checked(gen_work, k)), list(range(3, 11)) * 4))
    assert len(roots) == 32
    for k, root in roots:
        assert shape(root) == wants[k]
    assert_released(free_before, set().union(*(codes_of(r) for _, r in roots)))


def test_a_thread_that_raises_leaves_the_others_alone(fast_switching):
    want_fail = reference(fails, 20)
    want_ok = reference(work, 20)

    def failing():
        with pytest.raises(ValueError, match="failed at 20"):
            tracer.track(fails, 20)
        root = tracer.last_trace()   # this thread's, not another's
        tracer.validate(root)
        return root

    targets = [failing if i % 2 else (lambda: checked(work, 20)) for i in range(N_THREADS)]
    out = run_threads(targets)
    for i, (status, root) in enumerate(out):
        assert status == "ok", root
        if i % 2:
            assert root.raised and isinstance(root.value, ValueError)
            assert shape(root) == want_fail
        else:
            assert shape(root) == want_ok


def nested(k):
    inner = tracer.track(rsum, k)
    return inner.value + 1, inner


def test_nested_track_in_every_thread(fast_switching):
    want_inner = reference(rsum, 15)
    out = run_threads([lambda: checked(nested, 15)] * N_THREADS)
    for status, root in out:
        assert status == "ok", root
        value, inner = root.value
        assert value == 121
        tracer.validate(inner)
        assert shape(inner) == want_inner
        (call,) = [c for c in root.children if isinstance(c, CallNode)
                   and c.function.value is tracer.track]
        assert not isinstance(call, NestedCallNode)   # one primitive call for the outer


def test_ending_trace_keeps_instrumentation_another_thread_needs():
    # Thread A traces work and ends while thread B is inside the same code; B's
    # trace must still see every event of the code after A's track returned.
    want = reference(work, 30)
    b_inside = threading.Event()
    a_done = threading.Event()

    def b_task():
        b_inside.set()
        a_done.wait(30)
        return work(30)

    def a():
        b_inside.wait(30)
        try:
            return checked(work, 30)
        finally:
            a_done.set()

    out = run_threads([a, lambda: checked(b_task)])
    (sa, ra), (sb, rb) = out
    assert sa == sb == "ok"
    assert shape(ra) == want
    (call,) = [c for c in rb.children if isinstance(c, NestedCallNode)
               and c.function.value is work]
    assert shape(call)[5][1:] == want[5][1:]


def test_recording_is_per_thread():
    seen = {}
    gate = threading.Barrier(3, timeout=10)

    def task(name):
        gate.wait()
        seen[name] = recording()
        gate.wait()
        return rsum(3)

    def watcher():
        gate.wait()   # both tasks are tracking now
        return {name: recording(t) for name, t in threads.items()}

    threads = {}
    results = {}

    def run(name):
        results[name] = checked(task, name)

    for name in ("a", "b"):
        threads[name] = threading.Thread(target=run, args=(name,))
    for t in threads.values():
        t.start()
    try:
        from_outside = watcher()
    finally:
        gate.wait()
        for t in threads.values():
            t.join(30)
    assert seen["a"] is results["a"].trace and seen["b"] is results["b"].trace
    assert from_outside == {"a": results["a"].trace, "b": results["b"].trace}
    assert recording() is None
    with pytest.raises(TypeError, match="Thread"):
        recording("main")


class _Substituting(Context):
    """Intervenes (its plans differ from the default context's)."""

    def substitute(self, f, /, *args, **kwargs):
        return None


class _Snapshotting(Context):
    def snapshot(self, value):
        return value


@pytest.mark.parametrize("other", [_Substituting, _Snapshotting])
def test_threads_with_contexts_of_other_plan_modes(fast_switching, other):
    # Recorders whose plans differ share the tool id: none may switch off a
    # location another needs.  Fresh code objects each round, so every round
    # instruments them anew while the other kind of recorder runs.
    source = inspect.getsource(work)
    for round in range(4):
        ns = {"rsum": rsum}
        exec(source, ns)
        fresh = ns["work"]
        wants = {None: reference(fresh, 60)}
        root = tracer.track(fresh, 60, ctx=other())
        tracer.validate(root)
        wants[other] = shape(root)
        contexts = [other if i % 2 else None for i in range(N_THREADS)]

        def run(c):
            root = tracer.track(fresh, 60, ctx=c() if c else None)
            tracer.validate(root)
            return c, root

        for status, (c, root) in run_threads([lambda c=c: run(c) for c in contexts]):
            assert status == "ok"
            assert shape(root) == wants[c]


def nested_with(k, ctx):
    inner = tracer.track(work, k, ctx=ctx)
    return inner.value + 1, inner


def test_nested_track_of_another_plan_mode_in_every_thread(fast_switching):
    want_inner = reference(work, 25)
    out = run_threads([lambda: checked(nested_with, 25, _Substituting())] * N_THREADS)
    for status, root in out:
        assert status == "ok", root
        value, inner = root.value
        tracer.validate(inner)
        assert value == work(25) + 1
        assert shape(inner) == want_inner
