"""CPython facts docs/no-call-event.md stands on, checked on the running
interpreter: what runs between a CALL and its callee's PY_START, when the
values a CALL consumes die for a callee that produces no PY_START, and which
CALLs the plan gives an INSTRUCTION event at all."""

import dis
import gc
import itertools
import sys

import pytest

from tracer.analysis.plan import build_plan

M = sys.monitoring
E = M.events


@pytest.fixture
def tool():
    tid = next(i for i in (5, 4, 3, 2, 1, 0) if M.get_tool(i) is None)
    M.use_tool_id(tid, "test_call_event_facts")
    try:
        yield tid
    finally:
        M.set_events(tid, 0)
        M.free_tool_id(tid)


def _callee(x):
    return x


def _caller(x):
    y = x
    return _callee(y)


def test_eval_breaker_runs_before_py_start_only_from_3_13(tool):
    # A C callback (itertools.repeat: a GC object allocated at each of the
    # caller's instructions, threshold 1) schedules a collection; PY_START is
    # logged by a C callback too (dict.setdefault), so no Python frame of ours
    # handles the eval breaker.  3.12 handles it after the callee's PY_START,
    # 3.13 before (INSTRUMENTED_RESUME's _CHECK_PERIODIC before _MONITOR_RESUME).
    log = {}
    n = [0]

    def on_gc(phase, info):
        if phase == "start":
            n[0] += 1
            log.setdefault(("gc", n[0]), None)

    keep = [[] for _ in range(100)]   # (young objects: the count is past the threshold)
    M.register_callback(tool, E.INSTRUCTION, itertools.repeat)
    M.register_callback(tool, E.PY_START, log.setdefault)
    M.set_local_events(tool, _caller.__code__, E.INSTRUCTION | E.PY_START)
    M.set_local_events(tool, _callee.__code__, E.PY_START)
    gc.callbacks.append(on_gc)
    old = gc.get_threshold()
    was_enabled = gc.isenabled()
    try:
        gc.enable()
        gc.set_threshold(1)
        _caller(1)
    finally:
        gc.set_threshold(*old)
        if not was_enabled:
            gc.disable()
        gc.callbacks.remove(on_gc)
        M.set_local_events(tool, _caller.__code__, 0)
        M.set_local_events(tool, _callee.__code__, 0)
        M.register_callback(tool, E.INSTRUCTION, None)
        M.register_callback(tool, E.PY_START, None)
    del keep
    order = [k.co_name if not isinstance(k, tuple) else "gc" for k in log]
    assert order[0] == "_caller" and "gc" in order and "_callee" in order
    if sys.version_info >= (3, 13):
        assert order.index("gc") < order.index("_callee")
    else:
        assert order.index("_callee") < order.index("gc")


class _Dies:
    def __init__(self, log):
        self.log = log

    def __del__(self):
        self.log.append("freed")


def _no_params():
    return 0


def _gen(x):
    yield x


def _c_site(log):
    r = id(_Dies(log))
    return r


def _arity_site(log):
    try:
        _no_params(_Dies(log))
    except TypeError:
        log.append("caught")


def _gen_site(log):
    g = _gen(_Dies(log))
    log.append("made")
    return g


def test_consumed_argument_dies_before_the_callers_next_event(tool):
    # A computed argument (an object only the stack holds) of a C callee, or
    # of a Python function that fails to bind it, is freed before the caller's
    # next event (the INSTRUCTION after the CALL; the RAISE at it), and no
    # PY_START fires: nothing after the CALL can read it.  A generator
    # function's frame keeps it.
    log = []
    sites = (_c_site, _arity_site, _gen_site)
    names = {f.__code__: f.__name__ for f in sites}

    def on_instr(code, off):
        if code in names:
            log.append(("I", off))

    def on_raise(code, off, exc):
        if code in names:
            log.append(("RAISE", off))

    def on_start(code, off):
        if code in (_no_params.__code__, _gen.__code__):
            log.append("PY_START")

    M.register_callback(tool, E.INSTRUCTION, on_instr)
    M.register_callback(tool, E.RAISE, on_raise)
    M.register_callback(tool, E.PY_START, on_start)
    for f in sites:
        M.set_local_events(tool, f.__code__, E.INSTRUCTION)
    for f in (_no_params, _gen):
        M.set_local_events(tool, f.__code__, E.PY_START)
    M.set_events(tool, E.RAISE)
    seen = {}
    try:
        for f in sites:
            log.clear()
            g = f(log)
            seen[f.__name__] = list(log)
            del g
    finally:
        M.set_events(tool, 0)
        for f in sites + (_no_params, _gen):
            M.set_local_events(tool, f.__code__, 0)
        for ev in (E.INSTRUCTION, E.RAISE, E.PY_START):
            M.register_callback(tool, ev, None)

    def call_offset(f):
        return next(i.offset for i in dis.get_instructions(f) if i.opname == "CALL")

    for name, f in (("_c_site", _c_site), ("_arity_site", _arity_site)):
        events = seen[name]
        assert "PY_START" not in events
        at = events.index(("I", call_offset(f)))
        freed = events.index("freed")
        assert freed > at
        nxt = events[freed + 1]
        assert nxt[0] == ("RAISE" if name == "_arity_site" else "I"), events
    events = seen["_gen_site"]
    assert "PY_START" not in events and "freed" not in events[:events.index("made") + 1]


def _local_args(h, x):
    return h(x) + 0


def _computed_arg(h, x):
    return h(x + 1) + 0


def _call_offsets(f):
    return [i.offset for i in dis.get_instructions(f) if i.opname == "CALL"]


def test_only_calls_that_consume_a_stack_value_have_an_event():
    # The plan's premise: a CALL gets an INSTRUCTION event only where its
    # segment must read a value the CALL consumes (a computed argument, a
    # captured callable); a call of locals has none (its END reads the result).
    assert not set(_call_offsets(_local_args)) & build_plan(_local_args.__code__).events
    assert set(_call_offsets(_computed_arg)) <= build_plan(_computed_arg.__code__).events
