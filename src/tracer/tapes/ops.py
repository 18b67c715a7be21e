"""The ops of a tape: Input, Constant, Call and Guard.

An op is referred to by the op object itself, so references stay valid whatever
is inserted or deleted around it; `op.id` is its current position `%k` (1-based, as
in Umlaut), kept up to date by the tape.  An argument of a Call that is not an Op
is a constant value.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ..views.show import short_value

__all__ = ["Op", "Input", "Constant", "Call", "Guard", "Where", "mkcall", "format_arg"]


class Where(NamedTuple):
    """Where an op was recorded: the function's code, bytecode offset and source line."""

    code: Any
    offset: int
    line: int | None

    def __str__(self) -> str:
        name = getattr(self.code, "co_qualname", "?")
        return f"{name} ({self.code.co_filename}:{self.line})"


class Op:
    """Base class of tape ops: `id` (%k), `value` (seen while tracing or last run)."""

    __slots__ = ("id", "value", "where", "__weakref__")

    def __init__(self, value=None, where: Where | None = None):
        self.id = 0  # set when the op joins a tape
        self.value = value
        self.where = where

    def refs(self) -> list["Op"]:
        """The ops this op reads, in order (constants left out)."""
        return []

    def map_refs(self, f: Callable[["Op"], Any]) -> None:
        """Replace every op reference `r` by `f(r)` (in place)."""

    def _typed(self) -> str:
        return f"::{type(self.value).__name__}"

    def __repr__(self) -> str:
        return f"%{self.id}" if self.id else f"<{type(self).__name__} not on a tape>"


def format_arg(a) -> str:
    """An argument as the tape prints it: `%k` for an op, the bounded repr of a constant."""
    if isinstance(a, Op):
        return f"%{a.id}"
    return short_value(a)


class Input(Op):
    """An input of the tape: `%1` is the callee, then one per parameter."""

    __slots__ = ("position", "name")

    def __init__(self, value=None, position: int = 0, name: str = ""):
        super().__init__(value)
        self.position = position
        self.name = name

    def format(self) -> str:
        return f"inp %{self.id}{self._typed()}"


class Constant(Op):
    """A constant value.  `frozen` marks a value the tape could not recompute (an
    instruction without inputs to re-run): the value seen while tracing is used."""

    __slots__ = ("frozen",)

    def __init__(self, value=None, frozen: str = "", where: Where | None = None):
        super().__init__(value, where)
        self.frozen = frozen

    def format(self) -> str:
        note = f"  # frozen: {self.frozen}" if self.frozen else ""
        return f"const %{self.id} = {short_value(self.value)}{self._typed()}{note}"


class Call(Op):
    """`fn(*args, **kwargs)`: fn and each argument an Op or a constant.

    `star`: the call was `fn(*args[0], **args[1])`.  `raises`: while tracing it raised
    (its value is the exception) and the program handled that; re-running it must
    raise again.  `handled`: a `try`/`with` of the traced code was around it, so an
    exception the trace did not see would change the path (GuardError).
    """

    __slots__ = ("fn", "args", "kwargs", "star", "raises", "handled")

    def __init__(self, fn, args=(), kwargs=None, value=None, star: bool = False,
                 raises: bool = False, where: Where | None = None):
        super().__init__(value, where)
        if not isinstance(fn, Op) and not callable(fn):
            raise TypeError(f"Call needs a callable or an op as its function, got {fn!r}")
        if star and not 1 <= len(args) <= 2:
            raise ValueError("a star Call has one or two arguments: the positional "
                             "sequence and optionally the keyword mapping")
        self.fn = fn
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        for k in self.kwargs:
            if not isinstance(k, str):
                raise TypeError(f"keyword argument names must be str, got {k!r}")
        self.star = star
        self.raises = raises
        self.handled = False

    @classmethod
    def trusted(cls, fn, args: tuple, kwargs: dict, value, star: bool, raises: bool, where):
        """A Call from parts already checked (the flattener's fast path)."""
        op = cls.__new__(cls)
        op.id = 0
        op.value = value
        op.where = where
        op.fn = fn
        op.args = args
        op.kwargs = kwargs
        op.star = star
        op.raises = raises
        op.handled = False
        return op

    def refs(self) -> list[Op]:
        out = [self.fn] if isinstance(self.fn, Op) else []
        out += [a for a in self.args if isinstance(a, Op)]
        out += [v for v in self.kwargs.values() if isinstance(v, Op)]
        return out

    def map_refs(self, f) -> None:
        if isinstance(self.fn, Op):
            self.fn = f(self.fn)
        self.args = tuple(f(a) if isinstance(a, Op) else a for a in self.args)
        self.kwargs = {k: f(v) if isinstance(v, Op) else v for k, v in self.kwargs.items()}

    def format(self) -> str:
        fn = format_arg(self.fn)
        if self.star:
            parts = [f"*{format_arg(self.args[0])}"]
            if len(self.args) > 1:
                parts.append(f"**{format_arg(self.args[1])}")
        else:
            parts = [format_arg(a) for a in self.args]
            parts += [f"{k}={format_arg(v)}" for k, v in self.kwargs.items()]
        mark = " ↯ " if self.raises else ""
        return f"%{self.id} = {fn}({', '.join(parts)}){mark}{self._typed()}"


class Guard(Op):
    """A branch the trace took: re-running checks that `condition` gives `expected`.

    `test` says what the branch tested: "truth" (`bool(condition)`), "none"
    (`condition is None`) or "stop" (a `for` loop's `next(it, STOP) is STOP`: False
    while the loop runs on, True when it ends).  `source` is the line's text.
    """

    __slots__ = ("condition", "expected", "test", "source")

    TESTS = ("truth", "none", "stop")

    def __init__(self, condition, expected: bool, test: str = "truth",
                 where: Where | None = None, source: str = ""):
        if test not in self.TESTS:
            raise ValueError(f"Guard test must be one of {self.TESTS}, got {test!r}")
        super().__init__(bool(expected), where)
        self.condition = condition
        self.expected = bool(expected)
        self.test = test
        self.source = source

    def refs(self) -> list[Op]:
        return [self.condition] if isinstance(self.condition, Op) else []

    def map_refs(self, f) -> None:
        if isinstance(self.condition, Op):
            self.condition = f(self.condition)

    def outcome(self, value) -> bool:
        """What the branch test gives for `value` of the condition."""
        if self.test == "truth":
            return bool(value)
        if self.test == "none":
            return value is None
        from .helpers import STOP

        return value is STOP

    def describe(self) -> str:
        """The test in words, as it held while tracing."""
        c = format_arg(self.condition)
        if self.test == "truth":
            return f"{c} is {'true' if self.expected else 'false'}"
        if self.test == "none":
            return f"{c} is {'' if self.expected else 'not '}None"
        return (f"{c} is {'' if self.expected else 'not '}STOP "
                f"(the loop {'ends' if self.expected else 'goes on'})")

    def format(self) -> str:
        w = self.where
        where = f"  # {getattr(w.code, 'co_name', '?')} L{w.line}" if w is not None else ""
        src = f": {self.source}" if self.source and w is not None else ""
        return f"guard %{self.id}: {self.describe()}{where}{src}"


def mkcall(fn, *args, **kwargs) -> Call:
    """A Call op of `fn(*args, **kwargs)` (Umlaut's mkcall), for pushing onto a tape."""
    return Call(fn, args, kwargs)
