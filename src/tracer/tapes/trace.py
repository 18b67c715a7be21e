"""`tracer.tape(f, *args)`: trace a call and flatten it into a Tape."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from ..context import Context
from .tape import Tape

T = TypeVar("T")

__all__ = ["trace"]


def trace(f: Callable[..., T], /, *args: Any, ctx: Context | None = None,
          **kwargs: Any) -> tuple[T, Tape]:
    """Run `f(*args, **kwargs)` traced; return `(result, tape)` (Umlaut's `trace`).

    The tape is the call flattened to the primitive boundary of `ctx` (its
    `primitives`, `modules` and `canrecur`; `substitute` applies as for `track`).
    A context with a `record_primitive(tape, fn, *args, **kwargs)` method decides
    what each primitive call records (see tracer.tapes.record).  If `f` raises, the
    exception propagates; `Tape.from_trace(tracer.last_trace())` has its tape.
    """
    if not callable(f):
        raise TypeError(f"tape needs a callable as its first argument, got {type(f).__name__}")
    return Tape.trace(f, *args, ctx=ctx, **kwargs)
