"""The reverse sweep over a tape, interpreted: the same steps the generated code of
tracer.ad.program takes, for paths not (yet) worth compiling.

A gradient program's analysis (which ops are on the path, where each argument's
adjoint goes, the item index of each `next()` and `append`) decides both; here
each step calls the rule's per-argument pullback (never the inline templates,
which are the generated code's shortcut for the same arithmetic on floats).
"""

from __future__ import annotations

from .. import callables
from ..tapes.guards import GuardError, guard_failure
from ..tapes.ops import Call, Constant, Guard, Op
from ..tapes.play import bind_inputs, evaluate
from . import adjoints
from .errors import NoRuleError

__all__ = ["Values", "play", "recorded", "backward", "star_adjoint"]


class Values:
    """A forward pass's state: each op's value by op id, nested calls' pullbacks."""

    __slots__ = ("values", "pullbacks")

    def __init__(self, values: list, pullbacks: dict):
        self.values = values
        self.pullbacks = pullbacks


def recorded(a) -> Values:
    """The state the trace recorded: each op's value as seen while tracing."""
    values = [None] + [op.value for op in a.ops]
    pullbacks = {}
    for op, (get_fn, positions) in a.nested.items():
        args = tuple(x.value if isinstance(x, Op) else x for x in op.args)
        kwargs = {n: x.value if isinstance(x, Op) else x for n, x in op.kwargs.items()}
        pullbacks[op.id] = a.nested_vjp(get_fn(op), args, positions, kwargs)[1]
    return Values(values, pullbacks)


def play(a, args, kwargs):
    """`(result, Values)`: the tape's ops run on new arguments, guards checked."""
    tape = a.tape
    values: list = [None] * (len(a.ops) + 1)
    for op, v in bind_inputs(tape, args, kwargs).items():
        values[op.id] = v

    def get(r):
        return values[r.id]

    pullbacks = {}
    alias, nested = a.alias, a.nested
    for op in a.ops:
        cls = type(op)
        k = op.id
        if cls is Call:
            if op in nested:
                fn = values[op.fn.id] if isinstance(op.fn, Op) else op.fn
                argv = tuple(values[x.id] if isinstance(x, Op) else x for x in op.args)
                kw = {n: values[x.id] if isinstance(x, Op) else x for n, x in op.kwargs.items()}
                values[k], pullbacks[k] = a.nested_vjp(fn, argv, nested[op][1], kw)
            else:
                if k in a.fixed and values[op.fn.id] is not a.fixed[k]:
                    raise GuardError("another function was passed than the one traced")
                values[k] = evaluate(op, get)
        elif cls is Guard:
            c = op.condition
            v = values[c.id] if isinstance(c, Op) else c
            if op.outcome(v) != op.expected:
                raise guard_failure(op, v)
        elif cls is Constant:
            values[k] = values[alias[k]] if k in alias else op.value
    result = values[tape.result.id]
    if tape.raises:
        raise result
    return result, Values(values, pullbacks)


def backward(a, state: Values, seed):
    """The adjoints of the program's inputs (None for one that got none)."""
    res = a.tape.result
    if res is None or not a.on_path(res.id):
        return tuple(None for _ in a.inputs)
    adj = {res.id: seed}
    values = state.values
    on_path = a.on_path
    add = adjoints.add
    for op in reversed(a.ops):
        k = op.id
        g = adj.get(k)
        if g is None or not on_path(k):
            continue
        for t, c in _contributions(a, op, g, values, state.pullbacks):
            if on_path(t):
                old = adj.get(t)
                adj[t] = c if old is None else add(old, c)
    return tuple(adj.get(op.id) for op in a.inputs)


def _contributions(a, op, g, values, pullbacks):
    k = op.id
    if type(op) is Constant:
        src = a.alias.get(k)
        return [(src, g)] if src else []
    if type(op) is not Call:
        return []
    targets = a.target.get(k, {})
    fn = op.fn
    argv = [values[x.id] if isinstance(x, Op) else x for x in op.args]
    if fn is list.append or fn is callables.list_append:
        out = [(targets[0], g)]
        if targets.get(1):
            out.append((targets[1], adjoints.seq_get(g, a.index[k], argv[1])))
        return out
    if fn is list.extend or fn is callables.list_extend:
        out = [(targets[0], g)]
        if targets.get(1):
            out.append((targets[1], adjoints.seq_part(g, a.index[k], a.extent[k])))
        return out
    if fn is next:
        return [(targets[0], adjoints.seq_item(g, a.index[k]))]
    if fn is callables.dict_merge or fn is callables.dict_update:
        out = [(targets[0], adjoints.seq_keys(g, argv[1], False))]
        if targets.get(1):
            out.append((targets[1], adjoints.seq_keys(g, argv[1], True)))
        return out
    if fn is callables.map_add:
        out = [(targets[0], adjoints.seq_drop(g, argv[1]))]
        if targets.get(2):
            out.append((targets[2], adjoints.seq_get(g, argv[1], argv[2])))
        return out
    if op in a.nested:
        positions = a.nested[op][1]
        adj = pullbacks[k](g)
        return [(targets[i], adj[j]) for j, i in enumerate(positions)]
    rule = a.rule_of(op)
    assert rule is not None  # the analysis made sure of it
    kw = {name: values[x.id] if isinstance(x, Op) else x for name, x in op.kwargs.items()}
    ans = values[k]
    if op.star:  # fn(*seq, **kw)
        return [(targets[0], star_adjoint(rule, g, ans, argv[0],
                                          argv[1] if len(argv) > 1 else {}))]
    out = []
    if rule.full is not None:
        adj = rule.full(g, ans, *argv, **kw)
        for i, t in targets.items():
            if t and a.active[t] and not isinstance(i, str):
                c = adj[i]
                out.append((t, adjoints.zeros_like(argv[i]) if c is None else c))
        return out
    for i, t in targets.items():
        if not t or not a.active[t]:
            continue
        pb = rule.pullback(i)
        if pb is not None:
            out.append((t, pb(g, ans, *argv, **kw)))
    return out


def star_adjoint(rule, g, ans, seq, kw):
    """The adjoint of `seq` in `fn(*seq, **kw)` from `fn`'s rule: a Seq by position."""
    if rule.full is not None:
        adj = rule.full(g, ans, *seq, **kw)
        return adjoints.Seq({i: a for i, a in enumerate(adj) if a is not None}, owned=True)
    pbs = [rule.pullback(i) for i in range(len(seq))]
    for i, pb in enumerate(pbs):
        if pb is None and adjoints.is_differentiable(seq[i]):
            raise NoRuleError(rule.fn, message=f"its argument {i} (passed in *args) "
                              "gets no adjoint from its rule")
    # A comprehension, not stores into a dict: an outer gradient follows this code.
    return adjoints.Seq({i: pb(g, ans, *seq, **kw) for i, pb in enumerate(pbs)
                         if pb is not None}, owned=True)
