"""GuardError: what a guard failure says (retrace.py re-traces on one)."""

from __future__ import annotations

__all__ = ["GuardError", "failing_test", "not_retraced", "guard_failure", "raise_expected_failure",
           "unexpected_exception", "NOT_KEPT"]


class _NotKept:
    """A guard's condition value that compiled code did not keep (it tested it inline)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "the other way"


NOT_KEPT = _NotKept()


class GuardError(Exception):
    """Running a tape on new inputs took another path than the trace did.

    `op` is the failing Guard (or the Call that was expected to raise); `where`
    its location (code, offset, line) when known; `line` and `source` the source
    line; `value` the condition's new value.
    """

    def __init__(self, message: str, op=None, value=None, effect=None):
        super().__init__(message)
        self.op = op
        self.value = value
        # With retrace=True: the op that may have had an effect before the guard
        # failed, which is why the function was not traced again (None otherwise).
        self.effect = effect
        where = getattr(op, "where", None)
        self.where = where
        self.line = where.line if where is not None else None
        self.source = getattr(op, "source", "")


def failing_test(guard, c: str) -> str:
    """The Python expression, over `c` (the code of the guarded value), that is true
    when `guard` fails: what generated code tests before raising `guard_failure`.
    A "stop" guard's code must have `STOP` (tape.helpers) in its namespace."""
    if guard.test == "truth":
        return f"not {c}" if guard.expected else c
    if guard.test == "none":
        return f"{c} is not None" if guard.expected else f"{c} is None"
    return f"{c} is not STOP" if guard.expected else f"{c} is STOP"


def guard_failure(guard, value) -> GuardError:
    """The GuardError for `guard` whose condition now has `value`."""
    from ..views.show import short_value

    where = f" at {guard.where}" if guard.where is not None else ""
    src = f" `{guard.source}`" if guard.source else ""
    now = (not guard.expected) if value is NOT_KEPT else guard.outcome(value)
    if guard.test == "stop":
        what = "the loop ended" if now else "the loop went on"
        traced = "went on" if not guard.expected else "ended"
        text = f"{what} where the trace's loop {traced}"
    else:
        now_text = "not" if value is NOT_KEPT else short_value(value)
        text = f"the branch went the other way: traced {guard.describe()}, now {now_text}"
    return GuardError(f"guard %{guard.id} failed{where}{src}: {text}", guard, value)


def raise_expected_failure(call) -> GuardError:
    """The GuardError for a call that raised while tracing but not now."""
    where = f" at {call.where}" if call.where is not None else ""
    exc = type(call.value).__name__ if isinstance(call.value, BaseException) else "an exception"
    return GuardError(f"%{call.id}{where} raised {exc} while tracing, and the program "
                      "handled it; now it returned normally", call, None)


def unexpected_exception(call, exc) -> GuardError:
    """The GuardError for a call inside a handler of the traced code that raised now
    but not while tracing: the program would have gone on in the handler."""
    where = f" at {call.where}" if call.where is not None else ""
    return GuardError(f"%{call.id}{where} raised {type(exc).__name__}: {exc}; it did not "
                      "raise while tracing, and the traced code has a handler around it",
                      call, exc)


def not_retraced(err: GuardError, effect) -> GuardError:
    """The GuardError for a guard failure that cannot be re-traced: `effect`, an op
    that ran before the guard failed, may have changed something, and running the
    function again would do it twice."""
    return GuardError(
        f"{err}; not re-traced: `{effect.format()}` ran before it and may have "
        "had an effect, which running the function again would repeat",
        err.op, err.value, effect)
