"""`track`: run a call natively under sys.monitoring and return its recorded graph."""

from __future__ import annotations

import atexit
import functools
import os
import sys
import threading
import weakref

from . import _arraypool, _core
from .context import (DEFAULT, KEEP, Context, ask_enter, ask_substitute, call_from_parameters,
                      checked_max_nodes)
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

_state = threading.local()   # .last: the root of this thread's most recent track call
# Every running track call, in any thread and at any nesting depth, shares one
# sys.monitoring tool id, claimed while any of them runs.  The core's callbacks
# hand each event to the recorder the thread it fires on has active (its innermost
# track call), so threads need no lock while they record; _lock guards only this
# bookkeeping.  One tool id, not one per thread or per nesting level: ids are few
# (6), and two tools instrumenting the same code object lose each other's
# INSTRUCTION events on CPython 3.12/3.13.
_lock = threading.RLock()
_share = None           # the _ToolShare while any track runs
_running: dict = {}     # thread ident -> its recorders running now, outermost first
_NMODES = len(_core.PlanMode)


def _new_lock_in_child() -> None:
    # A child forked while another thread of the parent held the lock (instrumenting
    # a code object, joining or leaving the tool share) would wait for it forever in
    # its first track call: that thread does not exist in the child.
    global _lock
    _lock = threading.RLock()


os.register_at_fork(after_in_child=_new_lock_in_child)


class _ToolShare:
    """The tool id every running recorder uses.  Local events are per code object
    and process-wide, so each code object keeps them while at least one recorder
    needs it (counted), with the union of the events they asked for."""

    def __init__(self, tool: int) -> None:
        self.tool = tool
        self.users = 0
        self.modes = [0] * _NMODES   # running recorders per plan mode
        self.nmodes = 0              # plan modes with running recorders
        self.codes: dict = {}    # id(code) -> [code, recorders that need it, event mask]

    def instrument(self, code, jumps: bool) -> None:
        mask = LOCAL_EVENTS if jumps else LOCAL_EVENTS & ~EV.JUMP
        with _lock:
            entry = self.codes.get(id(code))
            if entry is None:
                MON.set_local_events(self.tool, code, mask)
                self.codes[id(code)] = [code, 1, mask]
                # Every location of it is on again for this tool, also those an
                # earlier recorder's callbacks switched off: the core forgets
                # that they may be off (under the lock: no recorder has its events).
                _core.locations_on(code)
                return
            entry[1] += 1
            if mask & ~entry[2]:
                # A recorder of another plan mode needs JUMP events here; the
                # others answer the extra events (a silent jump) correctly.
                entry[2] |= mask
                MON.set_local_events(self.tool, code, entry[2])

    def release_codes(self, rec) -> None:
        """Drop `rec`'s claims on instrumentation: code no other recorder needs
        loses its local events."""
        with _lock:
            for code in rec.instrumented.values():
                entry = self.codes.get(id(code))
                if entry is None:
                    continue
                entry[1] -= 1
                if entry[1] == 0:
                    del self.codes[id(code)]
                    MON.set_local_events(self.tool, code, 0)
            rec.instrumented.clear()

class TrackingError(RuntimeError):
    """Tracking could not run or a context hook failed; the cause is chained.

    When raised after the traced call ran, `result` and `exception` hold what the
    call returned or raised.
    """

    result = None
    exception = None


class ToolIdError(TrackingError):
    """No sys.monitoring tool id is free."""


class TraceLimitError(TrackingError):
    """The trace reached its context's `max_nodes`: recording stopped there and the
    call ran on untraced to its end (`result` and `exception` hold what it
    returned or raised; `tracer.last_trace()` holds the nodes recorded)."""


def last_trace() -> NestedCallNode | None:
    """The root of the most recent `track` call in this thread, also when the traced
    call raised (then `root.value` is the exception and `root.raised` is True).

    A call that raised (or whose tracking failed) leaves its trace here: `track`
    returned no root.  A call that returned is held weakly: its root is available
    while the caller keeps the trace alive, and None once the caller dropped it, so
    its values (every intermediate array of a model) are freed when the program
    drops the root, not kept until the next `track`.
    """
    root = getattr(_state, "last", None)
    if root is not None:
        return root
    ref = getattr(_state, "last_returned", None)
    trace = ref() if ref is not None else None
    return node_at(trace, 0) if trace is not None else None


def _remember(root: NestedCallNode, returned: bool) -> None:
    # What last_trace() answers (see there): the root of a call that raised, or a
    # weak reference to the trace of one that returned.
    if returned:
        _state.last = None
        _state.last_returned = weakref.ref(root.trace)
    else:
        _state.last = root
        _state.last_returned = None


@atexit.register
def _release_at_exit() -> None:
    # The trace of a call that raised, kept for last_trace(), holds values the
    # program dropped long ago.  Released at exit, while every module still works,
    # they die as they would have in the program: their finalizers and
    # deallocators see a working interpreter.  Kept until the interpreter's last
    # collection, CPython 3.12.1-3.12.3 crashed there finalizing an asyncio
    # future's iterator that a trace kept (gh-115874, fixed in 3.12.4;
    # tests/fuzz/reproducers/exit_after_raised_async.py).  Other threads' slots
    # went with their threads.
    _state.last = None
    _state.last_returned = None


def recording(thread: threading.Thread | int | None = None):
    """The Trace the outermost `track` running now in `thread` (a Thread or its
    ident; default: the calling thread) is filling, or None.

    For progress displays in another thread: `len()` of it is safe to read while it
    grows (nothing else of a trace being recorded is); it costs the recorder nothing,
    unlike a per-node hook.
    """
    if thread is None:
        ident = threading.get_ident()
    elif isinstance(thread, threading.Thread):
        ident = thread.ident
    elif isinstance(thread, int):
        ident = thread
    else:
        raise TypeError(f"recording takes a threading.Thread, a thread ident or None, "
                        f"not {type(thread).__name__}")
    recorders = _running.get(ident)
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
    Only the calling thread is recorded; several threads may track at once, each
    its own call into its own trace (they share one sys.monitoring tool id).  The
    instrumentation a call needed is removed when `track` returns or raises,
    unless another thread's running `track` still needs it.

    `track` may be called inside a traced call (a library that traces internally):
    it records its own trace, and the outer trace shows it as one primitive call
    of `track`.
    """
    if not callable(f):
        raise TypeError(f"track needs a callable as its first argument, got {type(f).__name__}")
    if ctx is None:
        ctx = DEFAULT
    elif not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a tracer.Context, got {type(ctx).__name__}")
    # (checked again here: max_nodes may have been set on the context after it was made)
    rec = _core.new_recorder(checked_max_nodes(getattr(ctx, "max_nodes", None)) or 0)
    # Its values hidden from the collector while recording (held by rec, never
    # garbage): collections during the call do not walk them (_core._trace_recording).
    _core._trace_recording(rec.trace, True)
    share = previous = pooled = None
    ident = threading.get_ident()
    mine = _running.setdefault(ident, [])   # only this thread changes its own list
    result = exception = None
    try:
        # begin_root and the call of f must stay in this same frame: the root's
        # pseudo-frame is the frame that calls f.
        rec.follow_own = bool(ctx.follows_ad_code)
        rec.begin_root(f, args, kwargs, ctx)
        if ctx.timing:
            _core.start_timing(rec.trace)   # after the root's own pseudo-frame
        share = _join(rec.plan_mode)
        rec.on_code = share.instrument
        # A partial, not a closure: cells would stay with this frame (see the end).
        rec.on_stop = functools.partial(share.release_codes, rec)
        mine.append(rec)
        if ctx.values == "keep":
            # The arrays a kept trace holds come from buffers earlier traces freed
            # (numpy's handler for this context only, while f runs: _arraypool.pyx).
            pooled = _arraypool.enter()
        previous = _core.activate(share.tool, rec)
        try:
            result = f(*args, **kwargs)
        except BaseException as exc:
            exception = exc
        finally:
            _core.deactivate(share.tool, previous)
    finally:
        _core._trace_recording(rec.trace, False)
        if pooled is not None:
            _arraypool.leave(pooled)
        if mine and mine[-1] is rec:
            mine.pop()
        if not mine:
            _running.pop(ident, None)
        if share is not None:
            _leave(share, rec)
        # The callbacks refer to rec: dropping them lets the trace be freed as soon
        # as its last node view goes, without waiting for the cycle collector.
        rec.on_code = rec.on_stop = None
        if mine:
            # A nested track.  It ran its own session over the plans the enclosing
            # one uses, which takes them back.
            mine[-1].reclaim_plans()
    try:
        rec.end_root(result, exception)
        root = node_at(rec.trace, 0)
        _remember(root, returned=exception is None and rec.internal_error is None
                  and rec.hook_error is None and not rec.row_limit_reached)
        if rec.row_limit_reached and rec.internal_error is None and rec.hook_error is None:
            err = TraceLimitError(
                f"the trace outgrew {type(ctx).__name__}(max_nodes={rec.trace.max_rows:,}) (room "
                f"for that many nodes and 1,024 more): recording stopped at "
                f"{len(rec.trace):,} nodes and the traced "
                "call ran on untraced to its end (its result or exception is on this error as "
                ".result / .exception; tracer.last_trace() holds the nodes recorded). Raise "
                "max_nodes, or trace a smaller part of the program, to record it whole."
            )
            raise _with_outcome(err, result, exception)
        if isinstance(rec.internal_error, MemoryError):
            err = TrackingError(
                f"tracer ran out of memory at {len(rec.trace):,} nodes ({rec.internal_error}); "
                "recording stopped there and the traced call ran on untraced to its end (its "
                "result or exception is on this error as .result / .exception; "
                "tracer.last_trace() holds the nodes recorded).  Cap the trace below what the "
                "machine holds (Context(max_nodes=N): 32 bytes of columns a node, plus the "
                "values kept), or keep fewer values (Context(values=\"none\"))."
            )
            raise _with_outcome(err, result, exception) from rec.internal_error
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
        # This frame outlives the call when a traceback made under it is still alive
        # (an exception the program caught and kept, or one in its own cyclic
        # garbage): frame objects hold their callers, and a finished frame keeps
        # its locals.  Cleared, it holds neither the trace (which would put the
        # whole trace in that garbage, for the collector to walk and free) nor the
        # program's arguments and result (which would outlive the program's own use).
        f = args = kwargs = ctx = rec = share = previous = mine = pooled = None
        result = exception = root = err = None


def _join(mode: int) -> _ToolShare:
    """The shared tool id, claimed and set up by its first user; `mode` is the
    joining recorder's plan mode."""
    global _share
    with _lock:
        share = _share
        if share is None:
            tool = _claim_tool_id()
            try:
                callbacks = _core.callbacks(tool)
                for event, name in CALLBACK_NAMES.items():
                    MON.register_callback(tool, event, callbacks[name])
                MON.set_events(tool, GLOBAL_EVENTS)
            except BaseException:
                _free_tool(tool)
                raise
            share = _share = _ToolShare(tool)
        share.users += 1
        share.modes[mode] += 1
        if share.modes[mode] == 1:
            share.nmodes += 1
            if share.nmodes == 2:
                # Recorders of different plan modes switch off different locations
                # (DISABLE is per location and tool, for every thread): while modes
                # mix, no callback switches one off, and the ones switched off
                # before fire again.
                _core.allow_disable(False)
                MON.restart_events()
        return share


def _leave(share: _ToolShare, rec) -> None:
    """`rec` has finished: release its instrumentation, and the tool id with its
    last user."""
    global _share
    with _lock:
        share.release_codes(rec)
        share.users -= 1
        share.modes[rec.plan_mode] -= 1
        if share.modes[rec.plan_mode] == 0:
            share.nmodes -= 1
        if share.nmodes <= 1:
            _core.allow_disable(True)
        if share.users == 0:
            _share = None
            _free_tool(share.tool)


def _free_tool(tool: int) -> None:
    MON.set_events(tool, 0)
    for event in CALLBACK_NAMES:
        MON.register_callback(tool, event, None)
    MON.free_tool_id(tool)


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
# tracer's own modules are primitive inside any trace (a library using tracer in
# a traced function does not show up in its users' traces).
# Except for tracer.ad in a gradient's own trace (a context with follows_ad_code set):
# a gradient taken inside a differentiated function runs code the outer gradient
# must see (its generated forward and backward code, and what calls it).
_OWN = os.path.dirname(os.path.abspath(__file__)) + os.sep
_core.set_own_files(_OWN, (_OWN + "ad" + os.sep,))


def _with_outcome(err: TrackingError, result, exception) -> TrackingError:
    # What the traced call itself did, which a TrackingError would otherwise hide.
    err.result = result
    err.exception = exception
    return err
