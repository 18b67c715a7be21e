"""`record_primitive`: a context hook that decides what a primitive call records.

Umlaut's `record_primitive!(tape, fn, args...)` pushes onto the tape whatever
should stand for the call, and the program goes on with that op's value.  Here a
context defines `record_primitive(self, tape, fn, *args, **kwargs)`: `args` are
placeholder ops carrying the call's values; the hook pushes ops onto the
(scratch) `tape` and returns the op standing for the call.  While tracing, the call
is substituted (Context.substitute) by a `Recorded` callable that runs those ops,
so the program continues with their value, and the flattened tape gets the ops in
place of the call.  The hook runs once per primitive call, before it executes
(calls do not run the original; an operator, an instruction, still runs first).
"""

from __future__ import annotations

import types

from ..context import Context
from .ops import Call, Input, Op
from .errors import TapeError

__all__ = ["Recorded", "recording_context", "wants_record"]


class Recorded:
    """The replacement callable for one primitive call: the ops its hook pushed."""

    __slots__ = ("tape", "placeholders", "result", "original", "__weakref__")

    def __init__(self, tape, placeholders, result, original):
        self.tape = tape
        self.placeholders = placeholders
        self.result = result
        self.original = original

    def __call__(self, *args, **kwargs):
        from .play import evaluate

        values = {id(p): v for p, v in zip(self.placeholders, list(args) + list(kwargs.values()))}

        def get(r):
            return values[id(r)]

        for op in self.tape.ops:
            if isinstance(op, Input):
                continue
            values[id(op)] = evaluate(op, get)
        r = self.result
        return values[id(r)] if isinstance(r, Op) else r

    def __repr__(self) -> str:
        from ..views.show import short_value

        return f"<recorded {short_value(self.original)}>"


def wants_record(ctx) -> bool:
    return ctx is not None and callable(getattr(type(ctx), "record_primitive", None))


def _is_primitive(ctx, f, args, kwargs) -> bool:
    target = f.__func__ if isinstance(f, types.MethodType) else f
    if not isinstance(target, types.FunctionType):
        return True  # C callables, operators, and objects whose call runs in C first
    if target in ctx.primitives or f in ctx.primitives:
        return True
    if ctx.is_primitive_module(getattr(target, "__module__", None)):
        return True
    if target.__code__.co_flags & (0x20 | 0x80 | 0x200):
        return True  # creating a generator runs no body: one op
    if ctx._overrides("canrecur"):
        return not ctx.canrecur(f, *args, **kwargs)
    return False


def _substitute(self, f, *args, **kwargs):
    base = type(self).__mro__[1]
    if base.substitute is not Context.substitute:
        replacement = base.substitute(self, f, *args, **kwargs)
        if replacement is not None:
            return replacement
    if isinstance(f, Recorded) or not _is_primitive(self, f, args, kwargs):
        return None
    scratch = self._recording.tape_class(ctx=self._recording.root)
    placeholders = [scratch.push(Input(a, k + 1, f"arg{k + 1}")) for k, a in enumerate(args)]
    placeholders += [scratch.push(Input(v, len(args) + 1 + j, k))
                     for j, (k, v) in enumerate(kwargs.items())]
    nargs = len(args)
    kw_ph = dict(zip(kwargs, placeholders[nargs:]))
    # The hook of the context passed to tracer.tape: a context that `enter` returns
    # may be of another class (DepthLimitContext's children are).
    hook = self._recording.root.record_primitive
    result = hook(scratch, f, *placeholders[:nargs], **kw_ph)
    if isinstance(result, Op) and result not in scratch:
        raise TapeError(f"{type(self).__name__}.record_primitive returned an op that is "
                        "not on the tape it was given")
    ops = [op for op in scratch.ops if not isinstance(op, Input)]
    if (len(ops) == 1 and result is ops[0] and isinstance(result, Call) and result.fn is f
            and list(result.args) == placeholders[:nargs] and result.kwargs == kw_ph):
        return None  # the call recorded as it is: no substitution needed
    return Recorded(scratch, placeholders, result, f)


def _enter(self, f, *args, **kwargs):
    base = type(self).__mro__[1]
    child = base.enter(self, f, *args, **kwargs)
    return child if child is self else self._recording.wrap(child)


class _Recording:
    """One tracer.tape call's recording: the user's context and the classes that
    make its contexts substitute primitive calls."""

    def __init__(self, root: Context, tape_class):
        self.root = root
        self.tape_class = tape_class  # what record_primitive's scratch tapes are
        self.classes: dict[type, type] = {}

    def wrap(self, ctx: Context) -> Context:
        cls = type(ctx)
        if getattr(cls, "_recording", None) is self:
            return ctx
        sub = self.classes.get(cls)
        if sub is None:
            body = {"substitute": _substitute, "__module__": cls.__module__,
                    "_recording": self}
            if cls.enter is not Context.enter:
                body["enter"] = _enter
            sub = self.classes[cls] = type(cls.__name__, (cls,), body)
        if not hasattr(ctx, "__dict__"):
            raise TapeError(f"record_primitive needs contexts with a __dict__ "
                            f"({cls.__name__} uses __slots__)")
        new = object.__new__(sub)
        new.__dict__ = ctx.__dict__  # the same state: counters the hook keeps are ctx's
        return new


def recording_context(ctx: Context, tape_class) -> Context:
    """A context that behaves as `ctx` and shares its state (its attributes), and
    also substitutes primitive calls by what `ctx.record_primitive` records."""
    return _Recording(ctx, tape_class).wrap(ctx)
