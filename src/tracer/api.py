"""`track`: run a call natively under sys.monitoring and return its recorded graph."""

from __future__ import annotations

import sys
import threading

from . import _core
from .context import DEFAULT, Context
from .nodes import NestedCallNode, node_at

__all__ = ["track", "last_trace", "TrackingError", "ToolIdError"]

MON = sys.monitoring
EV = MON.events
# Events set per code object being tracked (JUMP only where its plan uses it: most
# unconditional jumps are replayed without an event); the others can only be global.
LOCAL_EVENTS = EV.INSTRUCTION | EV.BRANCH | EV.JUMP | EV.PY_RETURN | EV.PY_YIELD | EV.PY_RESUME
GLOBAL_EVENTS = EV.PY_START | EV.RAISE | EV.RERAISE | EV.PY_UNWIND | EV.PY_THROW
# Free tool ids are tried in this order: 3 and 4 have no conventional owner.
TOOL_ID_PREFERENCE = (4, 3, 2, 5, 1, 0)
TOOL_NAME = "tracer"
# The core's callback for each event it handles (RERAISE shares RAISE's); they feed
# the recorder made active by _core.activate.
CALLBACKS = {
    EV.PY_START: _core.on_py_start, EV.PY_RESUME: _core.on_py_resume,
    EV.PY_RETURN: _core.on_py_return, EV.PY_YIELD: _core.on_py_yield,
    EV.INSTRUCTION: _core.on_instruction, EV.BRANCH: _core.on_branch,
    EV.JUMP: _core.on_jump, EV.RAISE: _core.on_raise, EV.RERAISE: _core.on_raise,
    EV.PY_UNWIND: _core.on_py_unwind, EV.PY_THROW: _core.on_py_throw,
}

_state = threading.local()
_active_lock = threading.Lock()
_active = False


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
    """
    global _active
    if not callable(f):
        raise TypeError(f"track needs a callable as its first argument, got {type(f).__name__}")
    if ctx is None:
        ctx = DEFAULT
    elif not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a tracer.Context, got {type(ctx).__name__}")
    with _active_lock:
        if _active:
            raise TrackingError("track is already running (one call at a time, in one thread)")
        _active = True
    try:
        tool = _claim_tool_id()
        try:
            rec = _core.new_recorder()
            rec.on_code = lambda code, jumps: MON.set_local_events(
                tool, code, LOCAL_EVENTS if jumps else LOCAL_EVENTS & ~EV.JUMP)
            rec.on_stop = lambda: _uninstrument(tool, rec)
            for event, cb in CALLBACKS.items():
                MON.register_callback(tool, event, cb)
            _core.activate(rec)
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
            _release(tool, rec if "rec" in locals() else None)
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
        with _active_lock:
            _active = False


def _with_outcome(err: TrackingError, result, exception) -> TrackingError:
    # What the traced call itself did, which a TrackingError would otherwise hide.
    err.result = result
    err.exception = exception
    return err


def _uninstrument(tool: int, rec) -> None:
    """Switch off every event `rec` asked for (a hook error stops tracking at once)."""
    MON.set_events(tool, 0)
    _core.deactivate()
    if rec is not None:
        for code in rec.instrumented.values():
            MON.set_local_events(tool, code, 0)


def _release(tool: int, rec) -> None:
    _uninstrument(tool, rec)  # also when set-up failed before the call's own reset
    for event in CALLBACKS:
        MON.register_callback(tool, event, None)
    MON.free_tool_id(tool)
    if rec is not None:
        # The callbacks refer to rec: dropping them lets the trace be freed as soon
        # as its last node view goes, without waiting for the cycle collector.
        rec.on_code = rec.on_stop = None

