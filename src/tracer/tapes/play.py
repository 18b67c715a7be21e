"""`Tape.play`: an interpreter that re-executes a tape's ops on new inputs."""

from __future__ import annotations

import types

from .guards import guard_failure, raise_expected_failure, unexpected_exception
from .helpers import make_binder
from .ops import Call, Constant, Guard, Input, Op
from .errors import TapeError

__all__ = ["play", "bind_inputs", "run_call"]


def bind_inputs(tape, args, kwargs) -> dict:
    """{Input op: value} for a call of the tape's function with `args`, `kwargs`."""
    inputs = tape.inputs
    out = {}
    func = tape.signature_of
    if func is None:
        # A traced C callable: inputs are the callee, then the arguments as passed.
        pos = [i for i in inputs if i.position > 0]
        values = list(args) + list(kwargs.values())
        if len(values) != len(pos):
            raise TypeError(f"the tape takes {len(pos)} arguments, got {len(values)}")
        out.update(zip(pos, values))
    else:
        self_ = ()
        target = func
        if isinstance(func, types.MethodType):
            self_, target = (func.__self__,), func.__func__
        if not isinstance(target, types.FunctionType):
            raise TapeError(f"cannot bind arguments for {func!r}")
        params = make_binder(target)(*self_, *args, **kwargs)
        for op in inputs:
            if op.position > 0:
                out[op] = params[op.position - 1]
    for op in inputs:
        if op.position == 0:
            out[op] = op.value
    return out


def run_call(op: Call, get):
    """Execute Call `op`, reading op references with `get(op)`."""
    fn = get(op.fn) if isinstance(op.fn, Op) else op.fn
    args = [get(a) if isinstance(a, Op) else a for a in op.args]
    if op.star:
        pos = args[0]
        kw = args[1] if len(args) > 1 else {}
        return fn(*pos, **kw)
    if op.kwargs:
        kw = {k: get(v) if isinstance(v, Op) else v for k, v in op.kwargs.items()}
        return fn(*args, **kw)
    return fn(*args)


def evaluate(op: Op, get):
    """The value of Constant or Call `op` (checking an expected exception)."""
    if type(op) is Constant:
        return op.value
    if op.raises:
        try:
            run_call(op, get)
        except BaseException as exc:  # noqa: BLE001 - the traced call raised too
            return exc
        raise raise_expected_failure(op)
    if op.handled:
        try:
            return run_call(op, get)
        except Exception as exc:
            raise unexpected_exception(op, exc) from exc
    return run_call(op, get)


def play(tape, *args, **kwargs):
    """Run `tape` on new arguments; return its result (or raise it, for a tape of a
    call that raised); a guard that fails raises GuardError."""
    if tape.result is None:
        raise TapeError("the tape has no result to return")
    values: list = [None] * (len(tape.ops) + 1)
    for op, v in bind_inputs(tape, args, kwargs).items():
        values[op.id] = v

    def get(r):
        return values[r.id]

    for op, dying in _plan(tape):
        cls = type(op)
        if cls is Guard:
            c = op.condition
            v = values[c.id] if isinstance(c, Op) else c
            if op.outcome(v) != op.expected:
                raise guard_failure(op, v)
        elif cls is not Input:
            values[op.id] = evaluate(op, get)
        for k in dying:  # read for the last time: let big intermediate values go
            values[k] = None
    result = values[tape.result.id]
    if tape.raises:
        raise result
    return result


def _plan(tape) -> list:
    """(op, ids of values read for the last time by it), cached until the tape changes."""
    plan = getattr(tape, "_play_plan", None)
    if plan is not None and plan[0] is tape._result and plan[1] == len(tape.ops):
        return plan[2]
    last: dict[int, int] = {}
    for op in tape.ops:
        for r in op.refs():
            last[r.id] = op.id
    keep = tape.result.id
    dying: dict[int, list[int]] = {}
    for k, pos in last.items():
        if k != keep and not isinstance(tape.ops[k - 1], Input):
            dying.setdefault(pos, []).append(k)
    steps = [(op, dying.get(op.id, ())) for op in tape.ops]
    tape._play_plan = (tape._result, len(tape.ops), steps)
    return steps
