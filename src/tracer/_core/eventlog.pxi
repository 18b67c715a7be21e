# The event log of a debug build: with the core built with TRACER_DEBUG=1 and
# TRACER_LOG_EVENTS set (to a file path, or to 1 for stderr), every callback and
# every replayed segment is written out, one line each, for whoever chases a replay
# bug.  A release build compiles the calls away (TRACER_EVENT_LOG is 0 there).

cdef extern from *:
    """
    #ifdef TRACER_DEBUG_BUILD
    #define TRACER_EVENT_LOG 1
    #else
    #define TRACER_EVENT_LOG 0
    #endif
    """
    bint TRACER_EVENT_LOG

cdef object EVENT_LOG = None   # the open log file, once TRACER_LOG_EVENTS was read
cdef bint EVENT_LOG_READ = False


cdef object _event_log():
    global EVENT_LOG, EVENT_LOG_READ
    if not EVENT_LOG_READ:
        EVENT_LOG_READ = True
        import os
        where = os.environ.get("TRACER_LOG_EVENTS")
        if where:
            EVENT_LOG = sys.stderr if where == "1" else open(where, "a", buffering=1)
    return EVENT_LOG


cdef void _log_event(int shape, int key, object code, int offset, object arg) noexcept:
    # One callback (its signature's shape and its key, tool << 4 | handler): tool,
    # event, code, offset and its third argument.
    cdef object out
    try:
        out = _event_log()
        if out is not None:
            name = {(sh, h): n for n, sh, h in _CALLBACK_SPECS}.get((shape, key & 15), "?")
            out.write(f"tool {key >> 4} {name:<12} {getattr(code, 'co_qualname', code)}"
                      f" @{offset} {'' if arg is None else repr(arg)[:60]}\n")
    except BaseException:
        pass


cdef void _log_segment(FrameRec *fr, int32_t first, int32_t last, str how) noexcept:
    # One replay: the ops [first, last] of the frame's plan.
    cdef object out
    try:
        out = _event_log()
        if out is not None:
            out.write(f"  replay {how} ops {first}..{last} of "
                      f"{getattr(<object>fr.code, 'co_qualname', '?') if fr.code != NULL else '?'}"
                      f" (row {fr.call_row})\n")
    except BaseException:
        pass
