"""`track`: run a call natively under sys.monitoring and return its recorded graph."""

from __future__ import annotations

import sys
import threading

from . import _core
from .context import DEFAULT, KEEP, Context, ask_enter, ask_substitute, call_from_parameters
from .views.nodes import _CLASSES, NestedCallNode, node_at
from .views.table import table
from .analysis.plan import build_plan

__all__ = ["track", "last_trace", "recording", "TrackingError", "ToolIdError"]

MON = sys.monitoring
EV = MON.events
# Events set per code object being tracked (JUMP only where its plan uses it: most
# unconditional jumps are replayed without an event); the others can only be global.
LOCAL_EVENTS = EV.INSTRUCTION | EV.BRANCH | EV.JUMP | EV.PY_RETURN | EV.PY_YIELD | EV.PY_RESUME
GLOBAL_EVENTS = EV.PY_START | EV.RAISE | EV.RERAISE | EV.PY_UNWIND | EV.PY_THROW
# Free tool ids are tried in this order.  3 and 4 have no conventional owner;
# PEP 669 names 0 (debugger), 1 (coverage), 2 (profiler) and 5 (optimizer), so
# those are taken last, the profiler's and optimizer's before the ones a debugger
# or coverage run is likeliest to claim while the program runs.
TOOL_ID_PREFERENCE = (4, 3, 5, 2, 1, 0)
TOOL_NAME = "tracer"
# The core's callback for each event it handles (RERAISE shares RAISE's), by name;
# _core.callbacks(tool) makes them for one tool id.
CALLBACK_NAMES = {
    EV.PY_START: "py_start", EV.PY_RESUME: "py_resume", EV.PY_RETURN: "py_return",
    EV.PY_YIELD: "py_yield", EV.INSTRUCTION: "instruction", EV.BRANCH: "branch",
    EV.JUMP: "jump", EV.RAISE: "raise", EV.RERAISE: "raise", EV.PY_UNWIND: "py_unwind",
    EV.PY_THROW: "py_throw",
}

_state = threading.local()
_owner_lock = threading.Lock()
_owner: int | None = None   # the thread tracking now (it may nest track calls)
_depth = 0
_recorders: list = []   # the recorders of the track calls running now, outermost first


class TrackingError(RuntimeError):
    """Tracking could not run or a context hook failed; the cause is chained.

    When raised after the traced call ran, `result` and `exception` hold what the
    call returned or raised.
    """

    result = None
    exception = None


class ToolIdError(TrackingError):
    """No sys.monitoring tool id is free."""


def last_trace() -> NestedCallNode | None:
    """The root of the most recent `track` call in this thread, also when the traced
    call raised (then `root.value` is the exception and `root.raised` is True)."""
    return getattr(_state, "last", None)


def recording():
    """The Trace the outermost `track` running now is filling, or None.

    For progress displays in another thread: `len()` of it is safe to read while it
    grows (nothing else of a trace being recorded is); it costs the recorder nothing,
    unlike a per-node hook.
    """
    recorders = _recorders
    return recorders[0].trace if recorders else None


def _claim_tool_id() -> int:
    for tool in TOOL_ID_PREFERENCE:
        if MON.get_tool(tool) is None:
            MON.use_tool_id(tool, TOOL_NAME)
            return tool
    holders = ", ".join(f"{i}: {MON.get_tool(i)!r}" for i in range(6))
    raise ToolIdError(
        f"every sys.monitoring tool id is in use ({holders}); "
        "free one (sys.monitoring.free_tool_id) or stop another tool before tracking"
    )


def track(f, /, *args, ctx: Context | None = None, **kwargs) -> NestedCallNode:
    """Run `f(*args, **kwargs)` natively, recording what it did; return the root node.

    `root.value` is the call's result.  An exception raised by `f` propagates
    unchanged; the partial trace is then available from `tracer.last_trace()`.
    Only the calling thread is recorded.  Every instrumentation is removed when
    `track` returns or raises.

    `track` may be called inside a traced call (a library that traces internally):
    it records its own trace with a sys.monitoring tool id of its own, and the
    outer trace shows it as one primitive call of `track`.
    """
    if not callable(f):
        raise TypeError(f"track needs a callable as its first argument, got {type(f).__name__}")
    if ctx is None:
        ctx = DEFAULT
    elif not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a tracer.Context, got {type(ctx).__name__}")
    _enter_thread()
    try:
        tool = _claim_tool_id()
        rec = None
        try:
            rec = _core.new_recorder()
            _recorders.append(rec)
            rec.on_code = lambda code, jumps: MON.set_local_events(
                tool, code, LOCAL_EVENTS if jumps else LOCAL_EVENTS & ~EV.JUMP)
            rec.on_stop = lambda: _uninstrument(tool, rec)
            callbacks = _core.callbacks(tool)
            for event, name in CALLBACK_NAMES.items():
                MON.register_callback(tool, event, callbacks[name])
            _core.activate(tool, rec)
            result = exception = None
            # begin_root and the call of f must stay in this same frame: the root's
            # pseudo-frame is the frame that calls f.
            rec.begin_root(f, args, kwargs, ctx)
            MON.set_events(tool, GLOBAL_EVENTS)
            try:
                result = f(*args, **kwargs)
            except BaseException as exc:
                exception = exc
            finally:
                MON.set_events(tool, 0)
        finally:
            _release(tool, rec)
            if rec is not None:
                _recorders.pop()
            if rec is not None and _recorders:
                # A nested track.  It ran its own session over the plans the enclosing
                # one uses, which takes them back.  And CPython 3.12/3.13 stop
                # delivering the enclosing track's INSTRUCTION events once another
                # tool's events change, until restart_events() (which any tool may
                # call; the enclosing recorder answers the locations it had switched
                # off with DISABLE again).
                _recorders[-1].reclaim_plans()
                MON.restart_events()
        rec.end_root(result, exception)
        root = node_at(rec.trace, 0)
        _state.last = root
        if rec.internal_error is not None:
            err = TrackingError(
                f"tracer failed while recording ({type(rec.internal_error).__name__}: "
                f"{rec.internal_error}); the traced call ran to completion unaffected, and "
                "tracer.last_trace() holds what was recorded before the failure. "
                "Please report this as a bug with the traced function."
            )
            raise _with_outcome(err, result, exception) from rec.internal_error
        if rec.hook_error is not None and not isinstance(rec.hook_error, Exception):
            raise rec.hook_error  # KeyboardInterrupt, SystemExit from a hook
        if rec.hook_error is not None:
            err = TrackingError(
                f"a hook of {type(ctx).__name__} raised {type(rec.hook_error).__name__}: "
                f"{rec.hook_error}; tracking stopped there and the traced call ran on "
                "untracked to its end (its result or exception is on this error as "
                ".result / .exception; tracer.last_trace() holds what was recorded)"
            )
            raise _with_outcome(err, result, exception) from rec.hook_error
        if exception is not None:
            raise exception
        return root
    finally:
        _leave_thread()


def _enter_thread() -> None:
    # One thread tracks at a time; it may nest track calls (each with its own tool id).
    global _owner, _depth
    me = threading.get_ident()
    with _owner_lock:
        if _owner is not None and _owner != me:
            raise TrackingError(
                "track is running in another thread; tracer records one thread at a "
                "time (wait for it, or trace in one thread)")
        _owner = me
        _depth += 1


def _leave_thread() -> None:
    global _owner, _depth
    with _owner_lock:
        _depth -= 1
        if _depth == 0:
            _owner = None


class _Host:
    """The Python layer as the core calls it (the Host protocol in tracer/_core.pyi):
    every callback of the core is one of these attributes."""

    track_code = track.__code__          # a `track` inside a traced call is primitive
    keep = KEEP                          # what Context.override returns to keep a value
    node_classes = _CLASSES              # the node view class of each NodeKind
    build_plan = staticmethod(build_plan)
    node_at = staticmethod(node_at)
    ask_enter = staticmethod(ask_enter)
    ask_substitute = staticmethod(ask_substitute)
    call_from_parameters = staticmethod(call_from_parameters)
    table = staticmethod(table)
    save = None     # tracer.persist sets save and reduce (Trace.save, Trace.__reduce__)
    reduce = None


HOST = _Host()
_core.set_host(HOST)


def _with_outcome(err: TrackingError, result, exception) -> TrackingError:
    # What the traced call itself did, which a TrackingError would otherwise hide.
    err.result = result
    err.exception = exception
    return err


def _uninstrument(tool: int, rec) -> None:
    """Switch off every event `rec` asked for (a hook error stops tracking at once)."""
    MON.set_events(tool, 0)
    _core.deactivate(tool)
    if rec is not None:
        for code in rec.instrumented.values():
            MON.set_local_events(tool, code, 0)


def _release(tool: int, rec) -> None:
    _uninstrument(tool, rec)  # also when set-up failed before the call's own reset
    for event in CALLBACK_NAMES:
        MON.register_callback(tool, event, None)
    MON.free_tool_id(tool)
    if rec is not None:
        # The callbacks refer to rec: dropping them lets the trace be freed as soon
        # as its last node view goes, without waiting for the cycle collector.
        rec.on_code = rec.on_stop = None

