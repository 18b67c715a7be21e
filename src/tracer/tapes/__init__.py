"""Tapes: a trace flattened into a linear list of ops (Umlaut's linearized trace).

`val, tape = tracer.tape(f, *args)` (the function `trace` here) or
`Tape.from_trace(root)`.  A tape can be printed, edited, replayed on new inputs
(`play`), compiled back into a Python function (`compile`), and updated
incrementally (`update`); Guard ops check that new inputs take the traced path.
"""

from __future__ import annotations

from .guards import GuardError
from .retrace import Retracing
from .helpers import STOP
from .ops import Call, Constant, Guard, Input, Op, Where, mkcall
from .errors import TapeError
from .tape import Tape
from .trace import trace

__all__ = ["trace", "Tape", "TapeError", "GuardError", "Retracing", "Op", "Input", "Constant",
           "Call", "Guard", "Where", "mkcall", "STOP"]

