"""The per-event thread check (_frame.h's tracer_on_thread): with a GIL it reads
the GIL's last holder instead of libpython's thread-local thread state.  The two
reads agree on every thread, whichever way the thread was started or the frame
entered (from C, from a finalizer, under fast thread switching), and a traced
call whose code other threads run at the same time, entered from C on both
sides, records exactly its own call."""

import _thread
import gc
import sys
import threading

import tracer
from tracer import _core


def reads():
    tls, cell = _core._thread_state_reads()
    assert tls != 0
    return tls, cell


def test_reads_agree_on_the_main_thread():
    tls, cell = reads()
    assert tls == cell


def test_reads_agree_on_many_threads_under_fast_switching():
    seen = {}
    errors = []
    all_alive = threading.Barrier(8, timeout=60)

    def work(k):
        try:
            all_alive.wait()
            mine = set()
            for _ in range(2000):
                tls, cell = reads()
                assert tls == cell
                mine.add(tls)
            assert len(mine) == 1
            seen[k] = mine.pop()
            all_alive.wait()   # none ends (its state freed, reusable) before all have read
        except BaseException as e:   # reported by the main thread
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old)
    assert not errors
    assert len(seen) == 8
    # Each thread its own state (all alive at once, so none was reused), none the main one's.
    assert len(set(seen.values())) == 8
    assert reads()[0] not in seen.values()


def test_reads_agree_in_a_thread_started_from_c_and_in_callbacks_from_c():
    out = []
    done = threading.Event()

    def key(x):
        out.append(reads())
        return -x

    class Finalized:
        def __del__(self):
            out.append(reads())

    def body():
        try:
            out.append(reads())
            sorted(range(5), key=key)          # frames entered from C
            list(map(key, range(3)))
            Finalized()                        # a finalizer run from C
            gc.collect()
        finally:
            done.set()

    _thread.start_new_thread(body, ())       # no threading.Thread bookkeeping
    assert done.wait(60)
    assert len(out) == 1 + 5 + 3 + 1
    assert all(tls == cell for tls, cell in out)
    assert len({tls for tls, _ in out}) == 1
    assert out[0][0] != reads()[0]


def collatz_len(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def longest(limit):
    # Python frames entered from C (sorted's key) and from Python.
    return sorted(range(1, limit), key=collatz_len)[-1] + collatz_len(limit)


def shape(node):
    value = node.value if isinstance(node.value, (int, bool, type(None))) else type(node.value).__name__
    loc = node.location
    return (type(node).__name__, value, None if loc is None else (loc.code.co_qualname, loc.offset),
            tuple(shape(c) for c in node.children))


def test_same_code_entered_from_c_in_other_threads_is_not_recorded():
    want = tracer.track(longest, 60)
    tracer.validate(want)
    want = shape(want)
    stop = threading.Event()
    results = []

    def busy():
        while not stop.is_set():
            results.append(longest(40))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    others = [threading.Thread(target=busy) for _ in range(3)]
    for t in others:
        t.start()
    try:
        roots = [tracer.track(longest, 60) for _ in range(10)]
    finally:
        stop.set()
        for t in others:
            t.join(60)
        sys.setswitchinterval(old)
    assert results and set(results) == {longest(40)}
    for root in roots:
        tracer.validate(root)
        assert shape(root) == want
