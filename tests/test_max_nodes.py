"""Context(max_nodes=N): a trace capped at N nodes (and 1,024 of room past them).
Recording stops at the event that would outgrow that room; the program runs on
untraced, exactly as untraced; track raises TraceLimitError with the call's outcome;
the nodes recorded form a valid (stopped) trace."""

import threading

import pytest

import tracer
from corpus import CASES
from tracer import Context, TraceLimitError, _core


def loop(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def collatz_lengths(n):
    def steps(k):
        count = 0
        while k != 1:
            k = k // 2 if k % 2 == 0 else 3 * k + 1
            count += 1
        return count

    def gen(m):
        for k in range(1, m):
            yield steps(k)

    return sum(gen(n)), max(gen(n))


def test_a_trace_within_the_cap_is_recorded_whole():
    whole = tracer.track(collatz_lengths, 40)
    for cap in (len(whole.trace), len(whole.trace) + 1, 10 ** 9):
        capped = tracer.track(collatz_lengths, 40, ctx=Context(max_nodes=cap))
        assert len(capped.trace) == len(whole.trace) and not capped.trace.stopped
        assert capped.value == whole.value
        assert capped.trace.max_rows == cap


def test_outgrowing_the_cap_stops_recording_and_the_call_runs_on():
    expected = collatz_lengths(3000)
    with pytest.raises(TraceLimitError) as caught:
        tracer.track(collatz_lengths, 3000, ctx=Context(max_nodes=20_000))
    err = caught.value
    assert isinstance(err, tracer.TrackingError)
    assert err.result == expected and err.exception is None
    root = tracer.last_trace()
    assert root is not None and root.trace.stopped
    assert 20_000 <= len(root.trace) <= 20_000 + 1024 + 64   # (the last event's own nodes)
    assert "outgrew Context(max_nodes=20,000)" in str(err)
    assert f"recording stopped at {len(root.trace):,} nodes" in str(err)
    tracer.validate(root)
    # The instrumentation went at the stop: the rest of the run fired no events
    # (the whole run fires over a million).
    assert root.trace.events < 20_000
    # The summary says the trace is partial; a whole one's does not.
    assert "partial: recording stopped before the call's end" in str(tracer.summary(root))
    assert "partial" not in str(tracer.summary(tracer.track(collatz_lengths, 30)))


def test_the_programs_own_exception_is_on_the_error():
    def raises(n):
        loop(n)
        raise KeyError("the program's")

    with pytest.raises(TraceLimitError) as caught:
        tracer.track(raises, 5000, ctx=Context(max_nodes=2000))
    assert type(caught.value.exception) is KeyError
    assert caught.value.exception.args == ("the program's",)
    root = tracer.last_trace()
    assert root.raised and root.trace.stopped
    tracer.validate(root)


def test_max_nodes_is_checked():
    for bad in (0, -1, _core.MAX_NODES_CAP + 1):
        with pytest.raises(ValueError, match="max_nodes must be from 1"):
            Context(max_nodes=bad)
    for bad in (True, 1.5, "10"):
        with pytest.raises(TypeError, match="max_nodes must be a positive int or None"):
            Context(max_nodes=bad)
    assert Context().max_nodes is None and Context(max_nodes=7).max_nodes == 7

    ctx = Context()
    ctx.max_nodes = 0   # (set on the object after the fact: checked when track uses it)
    with pytest.raises(ValueError, match="max_nodes must be from 1"):
        tracer.track(loop, 10, ctx=ctx)
    assert tracer.context.with_max_nodes(None, 9).max_nodes == 9


def test_a_capped_trace_then_an_uncapped_one():
    # The stop released the instrumentation; the next trace is whole, the cap was
    # its own trace's.
    with pytest.raises(TraceLimitError):
        tracer.track(loop, 10_000, ctx=Context(max_nodes=1500))
    assert len(tracer.track(loop, 10_000).trace) > 50_000


def test_under_a_value_policy_and_a_call_filter():
    seen = []
    ctx = Context(values="weak", max_nodes=3000,
                  on_call={loop: lambda node: seen.append(node)})
    with pytest.raises(TraceLimitError) as caught:
        tracer.track(lambda: [loop(k) for k in range(400)], ctx=ctx)
    assert caught.value.result == [loop(k) for k in range(400)]
    assert 0 < len(seen) < 400   # hooks ran until the stop, not after
    tracer.validate(tracer.last_trace())


def test_a_nested_track_keeps_its_own_cap():
    def inner():
        with pytest.raises(TraceLimitError):
            tracer.track(loop, 5000, ctx=Context(max_nodes=1000))
        return loop(10)

    root = tracer.track(inner)
    assert root.value == loop(10) and not root.trace.stopped
    tracer.validate(root)


def test_threads_each_with_its_own_cap():
    out = {}

    def run(name, cap):
        try:
            out[name] = len(tracer.track(loop, 3000, ctx=Context(max_nodes=cap)).trace)
        except TraceLimitError as err:
            out[name] = ("stopped", err.result)

    threads = [threading.Thread(target=run, args=("small", 1000)),
               threading.Thread(target=run, args=("large", 10 ** 6))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert out["small"] == ("stopped", loop(3000))
    assert out["large"] == len(tracer.track(loop, 3000).trace)


@pytest.fixture
def no_slack():
    old = _core._row_slack(0)
    try:
        yield
    finally:
        _core._row_slack(old)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_corpus_stopped_anywhere_runs_as_untraced(case, no_slack):
    # Each case capped at a few points of its trace (the slack off, so that the
    # stop comes at whatever event is then being handled): the program's outcome
    # is the untraced one and the nodes recorded validate.
    args, kwargs = case.arguments()
    try:
        expected, raised = case.func(*args, **kwargs), None
    except BaseException as exc:  # noqa: BLE001 - compared below
        expected, raised = None, exc
    args, kwargs = case.arguments()
    try:
        whole = len(tracer.track(case.func, *args, **kwargs).trace)
    except BaseException:  # noqa: BLE001 - the case's own exception
        whole = len(tracer.last_trace().trace)
    for cap in sorted({1, 2, whole // 3 or 1, whole // 2 or 1, max(whole - 2, 1)}):
        args, kwargs = case.arguments()
        try:
            root = tracer.track(case.func, *args, ctx=Context(max_nodes=cap), **kwargs)
        except TraceLimitError as err:
            if raised is None:
                assert err.exception is None and err.result == expected, cap
            else:
                assert type(err.exception) is type(raised), cap
                assert str(err.exception) == str(raised), cap
            root = tracer.last_trace()
            assert root.trace.stopped
        except BaseException as exc:  # noqa: BLE001 - the case's own exception, whole
            assert raised is not None and type(exc) is type(raised), cap
            root = tracer.last_trace()
            assert len(root.trace) <= cap + 1
        else:
            assert raised is None and root.value == expected
            assert len(root.trace) <= cap + 1
        tracer.validate(root)


OUT_OF_MEMORY = r'''
import resource, sys
import tracer
from tracer import Context

def h(n):
    r = 0
    i = 0
    while i < n:
        r += i & 7
        i += 1
    return r

expected = h(3_000_000)
with open("/proc/self/statm") as f:
    size = int(f.read().split()[0]) * resource.getpagesize()
# Room for what the process has and 256 MiB more: the trace's columns (32 bytes a
# node, 18,000,000 nodes) cannot grow that far.
resource.setrlimit(resource.RLIMIT_AS, (size + (256 << 20), resource.RLIM_INFINITY))
try:
    tracer.track(h, 3_000_000, ctx=Context(values="none"))
except tracer.TraceLimitError:
    print("wrong error")
except tracer.TrackingError as err:
    root = tracer.last_trace()
    print(err.result == expected, isinstance(err.__cause__, MemoryError), root.trace.stopped,
          len(root.trace) > 1000)
    print(err)
'''


def test_running_out_of_memory_stops_recording_and_says_to_cap_the_trace(tmp_path):
    # The kernel refuses the columns' growth (an address-space limit, as a
    # container's memory limit would): recording stops, the call runs on, and the
    # error says how to avoid it (not "report a bug").
    import subprocess
    import sys

    script = tmp_path / "oom.py"
    script.write_text(OUT_OF_MEMORY)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    first, message = done.stdout.splitlines()[:2]
    assert first == "True True True True", done.stdout
    assert message.startswith("tracer ran out of memory at ")
    assert "Context(max_nodes=N)" in message and "report" not in message


STOPPED_PROGRAMS = r'''
import random
import sys

sys.path.insert(0, sys.argv[1])
import tracer
from fuzz.child import _observe, load, safe_repr
from fuzz.program import generate
from tracer import Context, _core

_core._row_slack(0)   # (the stop at whatever event is then handled)
first, count = int(sys.argv[2]), int(sys.argv[3])
stops = problems = 0
for seed in range(first, first + count):
    source, name = generate(seed).source(), str(seed)
    module = load(source, name)
    untraced = _observe(lambda: module.main(*module.ARGS))
    log = safe_repr(module.LOG)
    module = load(source, name)
    try:
        whole = len(tracer.track(module.main, *module.ARGS).trace)
    except Exception:
        whole = len(tracer.last_trace().trace)
    rng = random.Random(seed)
    for cap in sorted({1, rng.randrange(1, max(whole, 2)), rng.randrange(1, max(whole, 2))}):
        module = load(source, name)
        try:
            root = tracer.track(module.main, *module.ARGS, ctx=Context(max_nodes=cap))
            traced = {"returned": safe_repr(root.value)}
        except tracer.TraceLimitError as err:
            stops += 1
            traced = ({"raised": type(err.exception).__name__, "message": str(err.exception)}
                      if err.exception is not None else {"returned": safe_repr(err.result)})
            root = tracer.last_trace()
        except tracer.TrackingError as err:
            print(seed, cap, "tracking error:", err)
            problems += 1
            continue
        except Exception as exc:
            traced = {"raised": type(exc).__name__, "message": str(exc)}
            root = tracer.last_trace()
        if traced != untraced or safe_repr(module.LOG) != log:
            print(seed, cap, "mismatch:", untraced, traced)
            problems += 1
        try:
            tracer.validate(root)
        except Exception as exc:
            print(seed, cap, "invalid:", type(exc).__name__, str(exc)[:300])
            problems += 1
print(f"stops {stops} problems {problems}")
'''


def test_generated_programs_stopped_anywhere_run_as_untraced(tmp_path):
    # tests/fuzz's programs (generators, async, exceptions, closures, ...), each
    # capped at three points in a child interpreter: the outcome and LOG are the
    # untraced run's and the nodes recorded validate.
    import os
    import subprocess
    import sys

    script = tmp_path / "stopped.py"
    script.write_text(STOPPED_PROGRAMS)
    done = subprocess.run([sys.executable, str(script), os.path.dirname(__file__),
                           "7300000", "40"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.splitlines()[-1].split()
    assert last[0] == "stops" and int(last[1]) >= 40 and last[2:] == ["problems", "0"], \
        done.stdout
