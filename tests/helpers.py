"""Helpers the test modules share."""

import importlib.util
import re
from pathlib import Path

import pytest

import tracer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class ReturnHook(tracer.Context):
    """A context with a node hook (on returns only): every row takes the per-row
    (general) path, the reference the op loop's fast paths are compared with."""

    def trackedreturn(self, node) -> None:
        pass


def load_example(name):
    """The module examples/NAME.py: the tests exercise the very code it shows."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def walk(node):
    """`node` and all its descendants, in row order."""
    yield node
    for child in node.children:
        yield from walk(child)


def trace_corpus_case(case):
    """The root of `case`'s trace; for a case that raises, the partial trace the
    raising call left (after checking it raised what the case says)."""
    args, kwargs = case.arguments()
    if case.raises is not None:
        with pytest.raises(case.raises):
            tracer.track(case.func, *args, **kwargs)
        return tracer.last_trace()
    return tracer.track(case.func, *args, **kwargs)


# -- two traces of the same run compared (a fast path against the general one) ---------------
_ADDRESS = re.compile(r"0x[0-9a-f]+")
TRACE_COLUMNS = ("kind", "flags", "parent", "offset", "aux", "ref_start", "refs", "code")


def _trace_columns(root):
    # A ref into the pool as the pooled value's repr (addresses left out: a
    # closure's cells are new objects at each run): which entry a captured value
    # gets depends on Recorder._pool_ref's cache, hashed by address.
    trace = root.trace
    cols = trace.columns()
    out = {name: cols[name].tolist() for name in TRACE_COLUMNS}
    out["refs"] = [r if r >= 0 else _ADDRESS.sub("@", repr(trace.pool[-r - 1]))
                   for r in out["refs"]]
    return out, trace


def assert_same_columns(a, b):
    """`a` and `b` (roots) hold the same columns (values as their rows' kinds
    and refs say, pool entries by repr but for addresses); their two traces."""
    ca, ta = _trace_columns(a)
    cb, tb = _trace_columns(b)
    for name in TRACE_COLUMNS:
        assert ca[name] == cb[name], f"column {name} differs"
    return ta, tb


def assert_same_structure(a, b):
    """`a` and `b` (roots of two traces of one run, e.g. with every value kept and
    under a value policy) hold the same rows and edges, values aside: every column
    but the values, a pool entry counted as one whatever it holds (a policy pools
    by what it keeps: an object "keep" pools once may be pooled at each use)."""
    ca, cb = a.trace.columns(), b.trace.columns()
    for name in TRACE_COLUMNS:
        x, y = ca[name].tolist(), cb[name].tolist()
        if name == "refs":
            x, y = [max(r, -1) for r in x], [max(r, -1) for r in y]
        assert x == y, f"column {name} differs"


def assert_same_trace(a, b, *, fewer_events=False):
    """`a` and `b` (roots of two traces of the same run, e.g. a fast path's and
    the general path's) hold the same columns, values and event count (with
    `fewer_events`, `a` may have seen fewer events), and both validate."""
    ta, tb = assert_same_columns(a, b)
    for row in range(len(ta)):
        va, vb = ta.value(row), tb.value(row)
        assert type(va) is type(vb), f"value of row {row}"
        if isinstance(va, (int, float, str, type(None))):
            assert va == vb, f"value of row {row}"
        elif isinstance(va, tuple):   # (a closure's cells are new at each run)
            assert va == vb or _ADDRESS.sub("@", repr(va)) == _ADDRESS.sub("@", repr(vb)), \
                f"value of row {row}"
    if fewer_events:
        assert ta.events <= tb.events
    else:
        assert ta.events == tb.events
    tracer.validate(a)
    tracer.validate(b)


def assert_same_rows(a, b, *, same_events=False):
    """`a` and `b` (roots of two runs of one program compiled twice, so its
    functions and classes are distinct objects of the same names) hold the same
    columns; each row's two values are of the same type name and of the same
    repr but for addresses, and plain scalars are equal (NaN matching NaN); with
    `same_events`, the same event count; both validate."""
    ta, tb = assert_same_columns(a, b)
    for row in range(len(ta)):
        va, vb = ta.value(row), tb.value(row)
        assert type(va).__qualname__ == type(vb).__qualname__, f"row {row}"
        if isinstance(va, (int, float, str, type(None))):
            assert va == vb or (va != va and vb != vb), f"row {row}: {va!r} against {vb!r}"
        assert _ADDRESS.sub("@", repr(va)) == _ADDRESS.sub("@", repr(vb)), \
            f"row {row}: {va!r} against {vb!r}"
    if same_events:
        assert ta.events == tb.events
    tracer.validate(a)
    tracer.validate(b)


def track_both(f, args, reference_ctx, *, fresh=False):
    """`f(*args)` traced twice: on the default (fast) paths and under
    `reference_ctx` (a context whose hooks send every event down the general
    paths); returns (fast, reference).  `fresh`: no spare columns, so the columns
    start small and grow inside the runs."""
    from tracer._core import spare_columns_limit
    old = spare_columns_limit(0) if fresh else None
    try:
        return tracer.track(f, *args), tracer.track(f, *args, ctx=reference_ctx)
    finally:
        if old is not None:
            spare_columns_limit(old)


def run_forking_program(source, timeout):
    """Run `source` (a program that forks while another thread runs, and exits
    with its child's status) in a fresh interpreter; fail with its output unless
    it exits 0.  -W ignore: 3.12+ warns that forking a process with threads may
    deadlock, which is what such programs check tracer avoids."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", source],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr


def lazy_free_bytes():
    """The process's lazily freed memory (LazyFree of /proc/self/smaps_rollup), or
    None where the kernel does not say."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("LazyFree:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def load_planned(source, label, **flags):
    """`source` compiled afresh (its own code objects, so plans of their own) and
    its plans built now, with no plan cache and tracer.analysis.silent's `flags`
    (SILENT_FOR_ITER, SILENT_CHAINS, STRAIGHT_SIDES) set as given: its functions',
    the code objects nested in them and its classes' methods'.  Returns its
    namespace."""
    from tracer.analysis import cache, silent
    ns = {}
    saved_state = dict(cache._state)
    saved = {name: getattr(silent, name) for name in flags}
    try:
        cache.set_plan_cache(None)
        for name, value in flags.items():
            setattr(silent, name, value)
        exec(compile(source, label, "exec"), ns)
        for v in list(ns.values()):
            code = getattr(v, "__code__", None)
            if code is not None:
                for c in (code, *[k for k in code.co_consts if hasattr(k, "co_code")]):
                    tracer._core.plan_of(c)   # (cached on the code object)
            for m in getattr(v, "__dict__", {}).values() if isinstance(v, type) else ():
                if hasattr(m, "__code__"):
                    tracer._core.plan_of(m.__code__)
    finally:
        for name, value in saved.items():
            setattr(silent, name, value)
        cache._state.clear()
        cache._state.update(saved_state)
    return ns


def branch_entries(sides):
    """The index in `sides` (a plan's branch_sides) where each silent branch's
    entry starts: its offset, `next`, `target`, then per side its END (or -1),
    the number of offset ranges and the ranges."""
    k = 0
    while k < len(sides):
        yield k
        p = k + 3
        for _ in range(2):
            p += 2 + 2 * sides[p + 1]
        k = p
