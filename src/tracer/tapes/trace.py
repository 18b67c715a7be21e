"""`tracer.tape(f, *args)`: trace a call and flatten it into a Tape."""

from __future__ import annotations

from ..context import Context
from .tape import Tape

__all__ = ["trace"]


def trace(f, /, *args, ctx: Context | None = None, **kwargs):
    """Run `f(*args, **kwargs)` traced; return `(result, tape)` (Umlaut's `trace`).

    The tape is the call flattened to the primitive boundary of `ctx` (its
    `primitives`, `modules` and `canrecur`; `substitute` applies as for `track`).
    A context with a `record_primitive(tape, fn, *args, **kwargs)` method decides
    what each primitive call records (see tracer.tapes.record).  If `f` raises, the
    exception propagates; `Tape.from_trace(tracer.last_trace())` has its tape.
    """
    return Tape.trace(f, *args, ctx=ctx, **kwargs)
