"""The array-buffer pool (tracer/_arraypool.pyx): under values="keep" numpy allocates
through it while a traced call runs, in that call's context only; results are the
same as untraced, buffers are reused by the next traced call, and an array made
under it can be freed anywhere, any time (another thread, after tracing, a pickle's
copy), while numpy's handler outside traced calls stays its default."""

import contextvars
import gc
import pickle
import threading

import numpy as np
import pytest

import tracer
from tracer import _arraypool
from tracer.context import Context
from helpers import run_forking_program
from tracer.views import (
    array_buffer_cache_bytes, array_buffer_cache_lazy_limit, array_buffer_cache_limit,
)

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:              # numpy 1.x
    from numpy.core.multiarray import get_handler_name

pytestmark = pytest.mark.skipif(not _arraypool.AVAILABLE,
                                reason="the array-buffer pool needs Linux (mremap, MADV_FREE)")

BIG = (256, 256)                 # 512 KiB of float64: the pool's
SMALL = (8, 8)                   # 512 B: numpy's default handler's


def _forget():
    """Nothing of tracer holds a dropped trace (last_trace) or its garbage."""
    tracer.api._state.last = None
    gc.collect()


def handler_inside(*arrays):
    """What numpy reports inside the traced call: the context's handler and each
    array's."""
    return get_handler_name(), [get_handler_name(a) for a in arrays]


def many_arrays(x):
    a = np.zeros(BIG)
    b = np.ones(BIG) * x
    c = np.empty(BIG)
    c[...] = 3.0
    d = np.full(SMALL, 2.0)
    e = np.tanh(b @ b + c) - a
    f = e[::2, 1::3].copy()
    g = np.exp(np.linspace(0, 1, 70000))
    return [a, b, c, d, e, f, g, float(e.sum()), float(g.sum())]


def _same(got, want):
    assert len(got) == len(want)
    for x, y in zip(got, want):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape
            assert x.tobytes() == y.tobytes()
        else:
            assert x == y


def test_the_handler_is_the_pools_inside_and_numpys_outside(traced):
    outside = get_handler_name()
    root = traced(handler_inside)
    assert root.value == ("tracer_array_pool", [])
    assert get_handler_name() == outside == "default_allocator"
    arr = traced(np.zeros, BIG).value
    assert get_handler_name(arr) == "tracer_array_pool"     # for its whole life
    assert get_handler_name(np.zeros(BIG)) == "default_allocator"


@pytest.mark.parametrize("policy", ["none", "summary", "weak"])
def test_only_keep_uses_the_pool(traced, policy):
    root = traced(handler_inside, ctx=Context(values=policy))
    assert root.value == ("default_allocator", [])


def test_results_are_the_untraced_ones_run_after_run(traced):
    want = many_arrays(1.5)
    roots = []
    for _ in range(3):
        root = traced(many_arrays, 1.5)
        _same(root.value, want)
        roots.append(root)
    before = _arraypool.counts()["reused"]
    roots.clear()
    tracer.api._state.last = None
    gc.collect()
    assert array_buffer_cache_bytes() > 0
    root = traced(many_arrays, 1.5)
    _same(root.value, want)
    assert _arraypool.counts()["reused"] > before          # the freed buffers came back


def test_zeros_from_a_reused_buffer_are_zero(traced):
    def dirty():
        a = np.empty(BIG)
        a.fill(7.0)
        return a
    traced(dirty)
    _forget()
    for _ in range(3):
        assert not traced(np.zeros, BIG).value.any()
        assert not traced(lambda: np.zeros((300, 300)) + np.zeros((300, 300))).value.any()
        _forget()


def test_views_outlive_their_base_and_the_trace(traced):
    def views():
        base = np.arange(200_000, dtype=np.float64)
        return base[::3], base.reshape(400, 500)[10:20].T
    want = views()
    root = traced(views)
    a, b = root.value
    del root
    _forget()
    np.testing.assert_array_equal(a, want[0])
    np.testing.assert_array_equal(b, want[1])
    assert get_handler_name(a.base) == "tracer_array_pool"


def test_arrays_freed_after_tracing_and_in_another_thread(traced):
    root = traced(lambda: [np.full(BIG, float(i)) for i in range(16)])
    arrays = list(root.value)
    del root
    _forget()
    live = _arraypool.counts()["live"]
    assert live >= 16
    errors = []

    def free_half(part):
        try:
            for a in part:
                assert a[0, 0] == a[-1, -1]
            part.clear()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    halves = [arrays[:8], arrays[8:]]
    del arrays
    threads = [threading.Thread(target=free_half, args=(h,)) for h in halves]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    halves.clear()
    assert _arraypool.counts()["live"] == live - 16


def test_a_thread_started_inside_a_traced_call_allocates_as_untraced(traced):
    seen = {}
    go = threading.Event()

    def untraced_worker():
        go.wait(5)
        seen["untraced"] = get_handler_name(np.zeros(BIG))

    def body():
        t = threading.Thread(target=untraced_worker)
        t.start()
        go.set()
        t.join()
        return get_handler_name(np.zeros(BIG))
    root = traced(body)
    assert root.value == "tracer_array_pool"
    assert seen["untraced"] == "default_allocator"


def test_resize_and_pickle_of_pool_arrays(traced):
    def grown():
        a = np.arange(100_000, dtype=np.float64)
        a.resize(150_000, refcheck=False)          # realloc: the pool's mremap
        b = np.arange(100_000, dtype=np.float64)
        b.resize(1_000, refcheck=False)            # shrunk below the pool's size
        c = np.arange(100, dtype=np.float64)
        c.resize(20_000, refcheck=False)           # a default buffer grown past it
        return a, b, c
    want = grown()
    root = traced(grown)
    for got, w in zip(root.value, want):
        np.testing.assert_array_equal(got, w)
        back = pickle.loads(pickle.dumps(got))
        np.testing.assert_array_equal(back, w)
        assert get_handler_name(back) != "tracer_array_pool"   # numpy's own copy


def test_nested_tracks_and_contexts_of_the_traced_call(traced):
    def inner():
        return get_handler_name(), get_handler_name(np.zeros(BIG))

    def outer():
        nested = tracer.track(inner).value
        copied = contextvars.copy_context().run(inner)
        return nested, copied, get_handler_name()
    root = traced(outer)
    assert root.value == (("tracer_array_pool", "tracer_array_pool"),
                          ("tracer_array_pool", "tracer_array_pool"), "tracer_array_pool")
    assert get_handler_name() == "default_allocator"


def test_an_exception_restores_the_handler():
    def boom():
        np.zeros(BIG)
        raise ValueError("boom")
    with pytest.raises(ValueError):
        tracer.track(boom)
    assert get_handler_name() == "default_allocator"
    tracer.validate(tracer.last_trace())
    tracer.api._state.last = None


def test_the_limits_bound_the_cache_and_zero_turns_the_pool_off(traced):
    old, old_lazy = array_buffer_cache_limit(), array_buffer_cache_lazy_limit()
    try:
        array_buffer_cache_limit(0)                 # empty to start with
        assert array_buffer_cache_bytes() == 0
        array_buffer_cache_limit(2 << 20)
        array_buffer_cache_lazy_limit(1 << 20)
        traced(lambda: [np.zeros(BIG) for _ in range(8)])    # 4 MiB
        _forget()
        counts = _arraypool.counts()
        assert counts["resident_bytes"] == 2 << 20            # 4 buffers
        assert counts["lazy_bytes"] == 1 << 20                # 2 more, MADV_FREE
        assert array_buffer_cache_bytes() == 3 << 20
        root = traced(lambda: [np.ones(BIG) for _ in range(8)])
        assert all(a.min() == a.max() == 1.0 for a in root.value)
        del root
        _forget()
        assert array_buffer_cache_lazy_limit(0) == 1 << 20
        assert _arraypool.counts()["lazy_bytes"] == 0
        assert array_buffer_cache_limit(0) == 2 << 20
        assert array_buffer_cache_bytes() == 0
        root = traced(handler_inside)
        assert root.value == ("default_allocator", [])
        # Arrays made before the pool was turned off are still freed by it (unmapped).
        kept = traced(np.ones, BIG).value
        assert get_handler_name(kept) == "default_allocator"
    finally:
        array_buffer_cache_limit(old)
        array_buffer_cache_lazy_limit(old_lazy)
    with pytest.raises(TypeError, match="number of bytes"):
        array_buffer_cache_limit(-1)
    with pytest.raises(TypeError, match="number of bytes"):
        array_buffer_cache_lazy_limit(True)


def test_mlp_workload_identical_and_reuses_every_buffer(traced):
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    try:
        from workloads import BY_NAME
    finally:
        sys.path.pop(0)
    w = BY_NAME["mlp"]
    args, kwargs = w.make_args()
    want = w.func(*args, **kwargs)
    traced(w.func, *args, **kwargs)
    _forget()
    before = _arraypool.counts()
    root = traced(w.func, *args, **kwargs)
    after = _arraypool.counts()
    assert root.value.tobytes() == want.tobytes()
    assert after["mapped"] == before["mapped"]               # no fresh memory
    assert after["reused"] - before["reused"] >= 300


def test_stubs_match_the_compiled_module():
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "mypy.stubtest", "tracer._arraypool"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


FORKED = """
import gc, os, sys, threading
import numpy as np
import tracer

def make():
    return [np.full((256, 256), float(i)) for i in range(8)]

tracer.track(make)                  # the pool holds these buffers once dropped
tracer.api._state.last = None
gc.collect()
stop = threading.Event()

def churn():                        # another thread using the pool while the process forks
    while not stop.is_set():
        tracer.track(make)

t = threading.Thread(target=churn)
t.start()
pid = os.fork()
if pid == 0:
    arrays = tracer.track(make).value
    ok = all(a.min() == a.max() == float(i) for i, a in enumerate(arrays))
    os._exit(0 if ok else 1)
stop.set()
t.join()
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_uses_the_pool():
    # (the pool's lock is what this checks: pthread_atfork keeps it consistent)
    run_forking_program(FORKED, timeout=120)


FORKED_WHILE_LOCKED = """
import os, sys, threading
import tracer
import tracer.api

def work(n):
    return sum(i * i for i in range(n))

held, release = threading.Event(), threading.Event()

def hold():                         # another thread inside track's bookkeeping
    with tracer.api._lock:
        held.set()
        release.wait()

t = threading.Thread(target=hold)
t.start()
held.wait()
pid = os.fork()
if pid == 0:
    root = tracer.track(work, 10)   # waited forever for the lock before the fix
    tracer.validate(root)
    os._exit(0 if root.value == 285 else 1)
release.set()
t.join()
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_child_forked_while_another_thread_holds_tracks_lock_can_track():
    # The lock guarding track's shared bookkeeping is made anew in a forked child
    # (os.register_at_fork): the thread that held it in the parent does not exist
    # there.  Seen as forked children hanging in test_a_forked_child_uses_the_pool
    # on a loaded machine, whose other thread instruments code under that lock.
    run_forking_program(FORKED_WHILE_LOCKED, timeout=60)
