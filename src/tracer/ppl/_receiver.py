"""Which bound method a running call was made through, read from its frame.

A call filter (tracer.context's `substitute=`) matches a bound method by its
function, and the replacement runs with the call's arguments: for `rng.gauss(0, 1)`
the generator comes first (the interpreter pushes the function and `rng`), but for a
call through a bound object (`m = rng.normal; m(0, 1)`, and every `rng.gauss(*args)`:
star calls load the bound method) the generator is not among them.  Then the
dispatcher finds the bound method here: from the calling instruction back to the one
that loaded the callee (a variable, or an attribute of a variable), following the
stack depth over the arguments' instructions, and reads it without running the
program's code (an attribute is read from a generator or an instance's `__dict__`
only).  None when the callee came from elsewhere (a container, a call, an argument
computed with control flow): guessing could draw from the wrong generator.
"""

from __future__ import annotations

import bisect
import builtins
import dis
import sys
import types

from .samplers import GENERATOR_TYPES

__all__ = ["bound_method"]

_PY312 = sys.version_info < (3, 13)
_LOCAL_LOADS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_DEREF",
                "LOAD_CLOSURE", "LOAD_FAST_LOAD_FAST"}
_JUMPS = set(dis.hasjrel) | set(dis.hasjabs)
_CODES: dict = {}   # code -> (instructions, their offsets); codes are few


class _Unknown(Exception):
    """The callee's origin is not one this module follows."""


def _instructions(code):
    got = _CODES.get(code)
    if got is None:
        ins = list(dis.get_instructions(code))
        got = _CODES[code] = (ins, [x.offset for x in ins])
    return got


def _pushes(ins) -> int:
    op = ins.opname
    if op.startswith(("STORE_", "DELETE_", "POP_")) or op in ("NOP", "RESUME", "CACHE",
                                                               "EXTENDED_ARG", "KW_NAMES"):
        return 0
    if op == "LOAD_FAST_LOAD_FAST":
        return 2
    if op in ("LOAD_GLOBAL", "LOAD_ATTR", "LOAD_SUPER_ATTR"):
        return 2 if ins.arg & 1 else 1
    if op in ("SWAP", "COPY", "UNPACK_SEQUENCE", "UNPACK_EX", "FOR_ITER", "SEND",
              "BEFORE_WITH", "PUSH_EXC_INFO", "LOAD_SPECIAL", "GET_ITER"):
        raise _Unknown(op)
    return 1


def _producer(ins: list, i: int, need: int) -> tuple[int, int]:
    """(index, position among its pushes from the bottom) of the instruction before
    `ins[i]` that pushed the stack item `need` from the top (1: the top) there."""
    j = i - 1
    while j >= 0:
        x = ins[j]
        if x.opcode in _JUMPS:
            raise _Unknown("control flow among the arguments")
        q = _pushes(x)
        if need <= q:
            return j, q - need
        if x.is_jump_target:     # reached from elsewhere: which instructions ran is open
            raise _Unknown("control flow among the arguments")
        # below what x pushed: before x, as deep as x's pops left it
        need -= dis.stack_effect(x.opcode, x.arg if x.opcode >= dis.HAVE_ARGUMENT else None,
                                 jump=False)
        j -= 1
    raise _Unknown("start of code")


def _value(frame, ins: list, j: int, pos: int):
    x = ins[j]
    op = x.opname
    if op in _LOCAL_LOADS:
        name = x.argval[pos] if op == "LOAD_FAST_LOAD_FAST" else x.argval
        return frame.f_locals[name]
    if op in ("LOAD_GLOBAL", "LOAD_NAME"):
        for space in ((frame.f_locals,) if op == "LOAD_NAME" else ()) + \
                (frame.f_globals, frame.f_builtins, vars(builtins)):
            if x.argval in space:
                return space[x.argval]
        raise _Unknown("name")
    if op == "LOAD_ATTR" and not x.arg & 1:
        owner = _value(frame, ins, *_producer(ins, j, 1))
        if isinstance(owner, GENERATOR_TYPES):
            return getattr(owner, x.argval)
        d = getattr(owner, "__dict__", None)
        if isinstance(d, dict) and x.argval in d:
            return d[x.argval]
    raise _Unknown(op)


def _callee_depth(x) -> int:
    """How deep below the top the callee of call instruction `x` is."""
    if x.opname == "CALL_FUNCTION_EX":
        return (2 if _PY312 else 3) + (x.arg & 1)
    if x.opname == "CALL":
        return x.arg + (1 if _PY312 else 2)
    if x.opname == "CALL_KW":
        return x.arg + 3
    raise _Unknown(x.opname)


def _matches(v, func, owner, site: str) -> bool:
    gen = getattr(v, "__self__", None)
    if not isinstance(gen, GENERATOR_TYPES) or getattr(v, "__name__", None) != site:
        return False
    return getattr(v, "__func__", None) is func or (
        isinstance(v, types.BuiltinMethodType) and (owner is None or isinstance(gen, owner)))


def bound_method(frame, key, site: str):
    """The bound method of sampler `key` (its function or method descriptor, site
    name `site`) that `frame`'s current call instruction called, or None."""
    func = getattr(key, "__func__", key)
    owner = getattr(key, "__objclass__", None)
    try:
        ins, offsets = _instructions(frame.f_code)
        # the call instruction: f_lasti may point into its inline cache (3.12)
        i = bisect.bisect_right(offsets, frame.f_lasti) - 1
        v = _value(frame, ins, *_producer(ins, i, _callee_depth(ins[i])))
    except (_Unknown, KeyError, AttributeError, IndexError):
        return None
    return v if _matches(v, func, owner, site) else None
