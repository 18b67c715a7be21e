"""`Tape.update`: re-execute only the ops that depend on changed values.

IRTracker's aim, "update subgraphs without full re-evaluation".  The ops to re-run
are the changed ops' dependents (through the ops' references).  Values are live
objects, so one more rule keeps the result exact: a re-run call that is not known
to be pure (purity.py) may mutate its arguments, so a mutable argument produced by
a call that is not being re-run is produced afresh (that call re-runs too, and so
do its other readers).  Inputs and constants cannot be produced afresh: a re-run
call that mutates one (say `list.append` on an input list) repeats its effect.
"""

from __future__ import annotations

from .common import ATOMIC
from .effects import first_effect
from .guards import GuardError, guard_failure, not_retraced
from .ops import Call, Constant, Guard, Input, Op
from .play import evaluate
from .purity import is_pure
from .errors import TapeError

__all__ = ["update", "affected"]


def affected(tape, changed) -> list[Op]:
    """The ops that must be re-executed when the ops in `changed` get new values, in
    tape order (the changed ops themselves not included)."""
    skip = {id(op) for op in changed}
    users = tape.users
    marked: dict[int, Op] = {}
    stack = list(changed)
    while stack:
        op = stack.pop()
        for u in users(op):
            if id(u) in marked or id(u) in skip:
                continue
            marked[id(u)] = u
            stack.append(u)
            if type(u) is Call and not is_pure(u):
                # It may mutate an argument: that object must be made afresh.
                for r in u.refs():
                    if (type(r) is Call and id(r) not in marked and id(r) not in skip
                            and not isinstance(r.value, ATOMIC)):
                        marked[id(r)] = r
                        stack.append(r)
    return sorted(marked.values(), key=_position)


def _position(op: Op) -> int:
    return op.id


def update(tape, changes: dict, retrace: bool = False):
    """Give the ops (or op ids) in `changes` new values, re-execute what depends on
    them, commit the new values and return the new result.

    A guard whose outcome changes raises GuardError and leaves the tape as it was;
    with `retrace=True` and only inputs changed, the function is traced again on the
    new inputs and the tape's contents replaced by the new path's.
    `tape.last_update` holds the ops re-executed.
    """
    if tape.result is None:
        raise TapeError("the tape has no result")
    resolved: dict[Op, object] = {}
    for k, v in changes.items():
        op = tape[k] if isinstance(k, int) else k
        if op not in tape:
            raise TapeError(f"{k!r} is not an op of this tape")
        if isinstance(op, Guard):
            raise TapeError(f"%{op.id} is a guard: it has no value to change")
        resolved[op] = v
    todo = affected(tape, resolved)
    new: dict[int, object] = {id(op): v for op, v in resolved.items()}

    def get(r):
        v = new.get(id(r), _UNSET)
        return r.value if v is _UNSET else v

    ran = 0
    try:
        for ran, op in enumerate(todo, 1):
            if type(op) is Guard:
                c = op.condition
                v = get(c) if isinstance(c, Op) else c
                if op.outcome(v) != op.expected:
                    raise guard_failure(op, v)
            elif type(op) is Call or type(op) is Constant:
                new[id(op)] = evaluate(op, get)
    except GuardError as err:
        if retrace and all(isinstance(op, Input) for op in resolved):
            # Re-tracing runs the function again: only when what was re-run before
            # the failure changed nothing (see effects.py).
            effect = first_effect(tape, 0, resolved, ops=todo[:ran])
            if effect is not None:
                raise not_retraced(err, effect) from err
            return _retrace(tape, resolved)
        raise
    for op in list(resolved) + todo:
        if id(op) in new:
            op.value = new[id(op)]
    tape.last_update = tuple(todo)
    result = tape.result.value
    if tape.raises:
        raise result
    return result


_UNSET = object()


def _retrace(tape, resolved):
    """Trace the function again on the inputs with their new values; adopt its tape."""
    values = {op.position: resolved.get(op, op.value) for op in tape.inputs}
    args, kwargs = _call_arguments(tape.signature_of, values)
    value, fresh = type(tape).trace(tape.func, *args, ctx=tape.ctx, **kwargs)
    tape.ops = fresh.ops
    tape._result = fresh.result
    tape.raises = fresh.raises
    tape._changed()
    tape.last_update = tuple(fresh.ops)
    return value


def _call_arguments(func, values):
    """(args, kwargs) that give `func`'s parameters the values by position."""
    import types

    if isinstance(func, types.MethodType):
        func = func.__func__
        values = {p - 1: v for p, v in values.items() if p > 1}
    if func is None or not isinstance(func, types.FunctionType):
        raise TapeError("retrace needs a tape of a Python function")
    code = func.__code__
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames
    args = [values[p] for p in range(1, npos + 1)]
    kwargs = {names[npos + j]: values[npos + 1 + j] for j in range(nkw)}
    k = npos + nkw + 1
    if code.co_flags & 0x04:
        args += list(values[k])
        k += 1
    if code.co_flags & 0x08:
        kwargs.update(values[k])
    return tuple(args), kwargs
