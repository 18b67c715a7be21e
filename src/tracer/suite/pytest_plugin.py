"""A pytest plugin: trace each test, count its work, compare with a baseline.

Registered through the ``pytest11`` entry point; it does nothing unless pytest runs
with ``--tracer``:

- ``--tracer``: run each test function traced (`tracer.track`): test functions, test
  classes' methods and unittest.TestCase test methods (their setUp and tearDown, like
  fixtures, run untraced); a test passes or fails exactly as it does untraced (its
  exception propagates, what it returns is checked as pytest or unittest checks it).
- ``--tracer-save DIR``: save each test's trace as ``DIR/<test id>.parquet``.
- ``--tracer-counts FILE``: write each test's work counts (JSON, see `--tracer-by`):
  a baseline for the next run.
- ``--tracer-compare BASELINE``: compare each test's counts with BASELINE's and report
  the tests whose work changed by more than ``--tracer-threshold`` (relative, default
  0); with ``--tracer-fail`` such changes fail the run (exit status 1).
- ``--tracer-by callee|function|line``: what counts are by (default callee).
- ``--tracer-max-nodes N``: stop recording a test whose trace outgrows N nodes (default
  20,000,000: 640 MB of columns; 0 for no cap); the test runs on untraced, passes or
  fails as untraced, and is reported as not counted.
- ``--tracer-values weak|summary|none|keep``: the traces' value policy (default
  ``weak``: immutable values and code kept, others weakly, so every object's
  lifetime is the test's own and a suite passes traced exactly as untraced; ``keep``
  keeps every value alive until the trace is dropped, right after counting and saving).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import re
import types

import pytest

COUNTS_FORMAT = 1
# A test's trace is capped by default: a suite traced test by test meets tests that
# run for seconds of pure Python (10^8 nodes and more, gigabytes of trace), and the
# whole run must not be killed for memory.  32 bytes of columns a node.
DEFAULT_MAX_NODES = 20_000_000
_STATE = pytest.StashKey["_State"]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("tracer", "tracer: trace each test and count its work")
    group.addoption("--tracer", action="store_true", default=False,
                    help="trace each test function with tracer.track")
    group.addoption("--tracer-save", metavar="DIR", default=None,
                    help="save each test's trace as DIR/<test id>.parquet")
    group.addoption("--tracer-counts", metavar="FILE", default=None,
                    help="write each test's work counts to FILE (JSON): a baseline")
    group.addoption("--tracer-compare", metavar="BASELINE", default=None,
                    help="compare each test's work counts with BASELINE (a --tracer-counts file)")
    group.addoption("--tracer-threshold", metavar="FRACTION", type=float, default=0.0,
                    help="report changes above this relative size (0.05 = 5%%; default 0)")
    group.addoption("--tracer-fail", action="store_true", default=False,
                    help="with --tracer-compare: fail the run when a test's work changed")
    group.addoption("--tracer-by", choices=("callee", "function", "line"), default="callee",
                    help="count calls by callee, or nodes by function or line (default callee)")
    group.addoption("--tracer-max-nodes", metavar="N", type=int, default=DEFAULT_MAX_NODES,
                    help="stop recording a test whose trace outgrows N nodes (default "
                         f"{DEFAULT_MAX_NODES:,}; 0: no cap); it runs on untraced, uncounted")
    group.addoption("--tracer-values", choices=("weak", "summary", "none", "keep"),
                    default="weak",
                    help="the traces' value policy (default weak: object lifetimes stay "
                         "the test's own)")


class _State:
    """The run's options and what the traced tests counted."""

    def __init__(self, config):
        opt = config.option
        self.save_dir = opt.tracer_save
        self.counts_path = opt.tracer_counts
        self.by = opt.tracer_by
        self.values = opt.tracer_values
        self.max_nodes = opt.tracer_max_nodes or None
        if opt.tracer_max_nodes < 0:
            raise pytest.UsageError("--tracer-max-nodes must be 0 (no cap) or more")
        self.threshold = opt.tracer_threshold
        self.fail = opt.tracer_fail
        self.counts: dict[str, dict[str, int]] = {}
        self.errors: dict[str, str] = {}
        self.baseline = None
        if opt.tracer_compare:
            self.baseline = _read_counts(opt.tracer_compare, self.by)
        if self.threshold < 0:
            raise pytest.UsageError("--tracer-threshold must be 0 or more")
        if self.fail and self.baseline is None:
            raise pytest.UsageError("--tracer-fail needs --tracer-compare BASELINE")
        if self.save_dir:
            os.makedirs(self.save_dir, exist_ok=True)
        self.changes: list = []


def _read_counts(path: str, by: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        tests, found_by = data["tests"], data["by"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise pytest.UsageError(f"--tracer-compare: cannot read {path!r} as work counts "
                                f"written by --tracer-counts ({exc})") from None
    if found_by != by:
        raise pytest.UsageError(f"--tracer-compare: {path!r} holds counts by {found_by}: "
                                f"run with --tracer-by {found_by}")
    return tests


def pytest_configure(config) -> None:
    if config.getoption("tracer", False):
        config.stash[_STATE] = _State(config)


def _state(config) -> _State | None:
    return config.stash.get(_STATE, None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Run the test traced: the item's function (a test function, a test class's
    method, a unittest.TestCase's test method) is replaced for the call by one that
    runs it under `tracer.track`, so that pytest, or unittest, calls and checks it
    as untraced (fixtures, a returned value, skips, expected failures, subtests)."""
    state = _state(item.config)
    original = getattr(item, "obj", None) if isinstance(item, pytest.Function) else None
    if state is None or original is None or inspect.iscoroutinefunction(original) or \
            inspect.isasyncgenfunction(original):
        return (yield)                  # not a test function, or pytest (or a plugin) runs it
    item.obj = _traced_test(state, item.nodeid, original)
    try:
        return (yield)
    finally:
        item.obj = original


def _traced_test(state: _State, nodeid: str, function):
    """`function` as its caller (pytest, unittest) calls it, run under `tracer.track`;
    its attributes (unittest's skip and expected-failure marks) kept. A bound method
    stays a bound method of the same instance, so that what prints it (unittest's
    warning for a returned value names the method) prints what it prints untraced."""
    if inspect.ismethod(function):
        @functools.wraps(function.__func__)
        def traced_method(_self, /, **arguments):   # (a fixture may be named _self)
            return _run_traced(state, nodeid, function, arguments)

        return types.MethodType(traced_method, function.__self__)

    @functools.wraps(function)
    def traced(**arguments):
        return _run_traced(state, nodeid, function, arguments)

    return traced


def _run_traced(state: _State, nodeid: str, function, arguments: dict):
    """function(**arguments) under `tracer.track`: its result, or its exception
    raised, as untraced; the trace counted (a failing test's partial trace too)."""
    from ..api import ToolIdError, TraceLimitError, TrackingError, last_trace, track
    from ..context import Context

    ctx = Context(values=state.values, max_nodes=state.max_nodes)
    try:
        if "ctx" in arguments:     # a fixture named like track's own keyword
            root = track(functools.partial(function, **arguments), ctx=ctx)
        else:
            root = track(function, ctx=ctx, **arguments)
    except ToolIdError as exc:        # another tool holds every sys.monitoring id
        state.errors[nodeid] = f"not traced: {exc}"
        return function(**arguments)
    except TrackingError as exc:       # the call ran on: the cap was outgrown, or a hook failed
        if isinstance(exc, TraceLimitError):   # (its counts would be partial)
            state.errors[nodeid] = (f"not counted: its trace outgrew --tracer-max-nodes "
                                    f"{state.max_nodes:,} (recording stopped at "
                                    f"{len(last_trace().trace):,} nodes; the test ran on untraced)")
        else:
            state.errors[nodeid] = f"not traced: {exc}"
        if exc.exception is not None:
            raise exc.exception from None
        return exc.result
    except BaseException:
        _record(state, nodeid, last_trace())
        raise
    result = root.value   # (the root keeps the value returned under every policy)
    _record(state, nodeid, root)
    return result


def _record(state: _State, nodeid: str, root) -> None:
    """Count (and save) a test's trace, then let it go."""
    if root is None:
        return
    from ..suite.counts import counts

    state.counts[nodeid] = dict(counts(root, state.by))
    if state.save_dir:
        from ..persist.parquet import save

        save(root, os.path.join(state.save_dir, trace_file_name(nodeid)))


def trace_file_name(nodeid: str) -> str:
    """A file name for a test id: its readable part and a short hash (two ids that
    read alike do not share a file)."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:100]
    digest = hashlib.sha1(nodeid.encode()).hexdigest()[:8]
    return f"{readable}-{digest}.parquet"


def pytest_sessionfinish(session, exitstatus) -> None:
    state = _state(session.config)
    if state is None:
        return
    if state.counts_path:
        data = {"format": COUNTS_FORMAT, "by": state.by, "tests": state.counts}
        folder = os.path.dirname(os.path.abspath(state.counts_path))
        os.makedirs(folder, exist_ok=True)
        with open(state.counts_path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
    if state.baseline is not None:
        state.changes = _compare(state)
        if state.fail and state.changes and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _compare(state: _State) -> list:
    """(test id, comparison) of each test whose work changed beyond the threshold."""
    from ..suite.compare import compare_counts
    from ..suite.counts import Counts

    out = []
    for nodeid in sorted(set(state.counts) & set(state.baseline)):
        d = compare_counts(Counts(state.by, state.baseline[nodeid]),
                           Counts(state.by, state.counts[nodeid]), by=state.by,
                           threshold=state.threshold)
        if not d.same:
            out.append((nodeid, d))
    return out


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    state = _state(config)
    if state is None:
        return
    tr = terminalreporter
    tr.section("tracer")
    tr.write_line(f"traced {len(state.counts)} tests; work counts by {state.by}"
                  + (f" written to {state.counts_path}" if state.counts_path else "")
                  + (f"; traces saved in {state.save_dir}" if state.save_dir else ""))
    for nodeid, error in sorted(state.errors.items()):
        tr.write_line(f"{nodeid}: {error}")
    if state.baseline is None:
        return
    new = sorted(set(state.counts) - set(state.baseline))
    gone = sorted(set(state.baseline) - set(state.counts))
    limit = "" if not state.threshold else f" beyond {state.threshold:.1%}"
    if not state.changes:
        tr.write_line(f"work unchanged{limit} in the {len(set(state.counts) & set(state.baseline))}"
                      " tests the baseline has")
    else:
        tr.write_line(f"work changed{limit} in {len(state.changes)} tests:",
                      red=state.fail, yellow=not state.fail)
        for nodeid, d in state.changes:
            tr.write_line(f"{nodeid}:")
            for line in str(d).splitlines():
                tr.write_line(f"  {line}")
    if new:
        tr.write_line(f"not in the baseline: {', '.join(new)}")
    if gone:
        tr.write_line(f"in the baseline, not run: {', '.join(gone)}")
