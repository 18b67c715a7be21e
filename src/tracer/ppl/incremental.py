"""Incremental update (Gen's semantics): re-execute only what depends on the
changed choices, on the tape of the run.

The first incremental update of a lineage of traces flattens the run's nested
trace into a tape (tracer.tapes) once; every trace derived from it by update
shares that tape.  An update then:

- marks the ops that read a changed draw, transitively (`_affected`).  A draw is a
  barrier: a dependent draw keeps its value (by address), only its parameters are
  recomputed and it is scored again.  A mutable object read by a marked op that
  some call mutates (a list filled by `append`, a dict by item stores) is read at
  its state at that point of the run, so its producer is re-made and every op that
  reads or changes it runs again, in tape order (the tape's update rule);
- re-runs the marked ops in tape order (values in an overlay: the tape's ops keep
  the first run's values), checking the guards: a guard whose outcome changes is a
  change of control flow;
- scores the changed and dependent draws (densities.score) and returns the new
  trace, whose values, log-densities and model value are exact.  Its nested trace
  (`root`) and its Choice objects come from a replay, made when first asked.

Anything it cannot do exactly, or not cheaper than a re-run (more than a quarter
of the run's ops, and more than 2000, depend on the change) — a guard that flips, a changed value that reaches a
call that may have effects other than on the objects it re-makes (only pure calls
and the known container mutators are re-run), an object it would have to re-make
that it cannot (an input, a draw), a constrained address the run did not visit,
other arguments — returns None and `update` re-runs the model with every other
choice replayed (run.update).
"""

from __future__ import annotations

import math
import operator
import random
import types

from ..tapes.common import ATOMIC
from ..tapes.errors import TapeError
from ..tapes.flatten import _Flattener
from ..tapes.guards import GuardError
from ..tapes.ops import Call, Guard, Op
from ..tapes.play import evaluate
from ..tapes.purity import is_pure
from ..tapes.tape import Tape
from ._hooks import original_of
from .densities import score, score_columns
from .kinds import INTERVENED, OBSERVED, REPLAYED
from .samplers import (GENERATOR_TYPES, Draw, UnknownSamplerError, resolve,
                       takes_generator)

__all__ = ["incremental_update", "Lineage", "State"]

# Calls that change their arguments and nothing else: re-run on re-made objects they
# repeat exactly what the run did.  Any other impure call stops the incremental path.
MUTATORS = frozenset([
    list.append, list.extend, list.insert, list.pop, list.remove, list.reverse, list.sort,
    list.clear, dict.update, dict.setdefault, dict.pop, dict.clear, set.add, set.discard,
    set.update, set.remove, operator.setitem, operator.delitem, operator.iadd,
    operator.isub, operator.imul, operator.itruediv, operator.ifloordiv, operator.imod,
    operator.ior, operator.iand, operator.ixor, next, iter,
])

_UNSET = object()
_PLAIN_FUNCS = (types.FunctionType, types.MethodDescriptorType)
_GENERATORS = frozenset(GENERATOR_TYPES) | {random.SystemRandom}
_MAX_LAYERS = 8          # overlays chained before they are merged into one dict
_PLANNED = 1 << 20       # ops kept in a lineage's plans at most
# Re-running an op on the tape costs ~10x what the traced run pays for it: past this
# share of the ops, the full re-run is the faster path.
_MOST = 0.25
_FEW = 2000              # (a plan this short is cheap either way)


class Fallback(Exception):
    """Why an update cannot be done incrementally (it then re-runs the model)."""


class Lineage:
    """What every trace derived from one run shares: the run's tape, which op makes
    each draw, who reads each op, and which objects some call changes."""

    def __init__(self, ct):
        draws = ct._draws
        try:
            fl = _Flattener(ct.root, None, Tape)
            self.tape = fl.run()
        except TapeError as e:
            raise Fallback(f"the run has no tape ({e})") from None
        rows = draws.rows.tolist()
        ops = [fl.ref.get(r) for r in rows]
        if any(type(op) is not Call for op in ops):
            raise Fallback("a draw is not one call on the tape (a sampler with Python frames)")
        self.draw_ops = ops
        self.draw_of = {op.id: i for i, op in enumerate(ops)}
        get = ct.root.trace.metadata_get
        # a fixing run's draws called a dispatcher: what the program called is here
        self.called = [get(r, "substituted") for r in rows]
        self.addresses = draws.addresses
        self.sites = draws.sites
        self.index = {a: i for i, a in enumerate(self.addresses)}
        tape_ops = self.tape.ops
        users: list[list[Op]] = [[] for _ in range(len(tape_ops) + 1)]
        mutated: set[int] = set()
        for o in tape_ops:
            refs = o.refs()
            for r in refs:
                lst = users[r.id]
                if not lst or lst[-1] is not o:
                    lst.append(o)
            if type(o) is Call and refs and not is_pure(o) and o.id not in self.draw_of:
                for r in refs:
                    if not isinstance(r.value, ATOMIC):
                        mutated.add(r.id)
        self.users = users
        self.mutated = mutated          # ids of ops whose object some call changes
        self.unbound: dict = {}         # generator method -> its Sampler (_draw)
        self.fast: dict = {}            # draw index -> its Sampler, when _draw needs
                                        # no more than the arguments (_draw)
        # draw indices changed -> (ops to re-run, draws scored again) or a Fallback's
        # text: what an update re-runs depends on the tape alone (MH comes back to a
        # site); kept while the plans hold fewer than _PLANNED ops in all
        self.plans: dict = {}
        self.steps: dict = {}          # the same key -> _steps(plan)
        self.planned = 0
        self.result = self.tape.result
        self.raises = self.tape.raises
        # the kinds of every derived trace's choices (as the full re-run gives them)
        kinds = ct._kinds or ["sampled"] * len(rows)
        self.kinds = [k if k in (OBSERVED, INTERVENED) else REPLAYED for k in kinds]
        self.scored = [k != INTERVENED for k in self.kinds]


class State:
    """One trace's values on its lineage's tape: `layers` (dicts op id -> value,
    newest first; an op in none has its first-run value), the draws' values,
    log-densities and kinds, and the model's value."""

    __slots__ = ("lineage", "layers", "values", "logp", "kinds", "value")

    def __init__(self, lineage, layers, values, logp, kinds, value):
        self.lineage = lineage
        self.layers = layers
        self.values = values
        self.logp = logp
        self.kinds = kinds
        self.value = value


def base_state(ct):
    """The State of a trace made by a run (its lineage built now), or None if the
    run has no usable tape (Fallback says why; kept on the trace)."""
    st = ct._state
    if st is None:
        try:
            lin = Lineage(ct)
        except Fallback as e:
            ct._state = str(e)
            return None
        st = State(lin, (), list(ct._draws.values), ct._draws.logp.copy(),
                   list(ct._kinds) if ct._kinds else ["sampled"] * len(ct._draws),
                   ct.value)
        ct._state = st
    return st if isinstance(st, State) else None


def _affected(lin: Lineage, changed: list[Op]):
    """(ops to re-run, in tape order; draws to score again) for new values of the
    draws `changed`.  Raises Fallback where re-running is not exact."""
    users, draw_of, mutated = lin.users, lin.draw_of, lin.mutated
    skip = {op.id for op in changed}
    marked: dict[int, Op] = {}
    rescore: set[int] = set()
    stack = list(changed)

    def remake(r: Op) -> None:
        # r's object is read at its state at that point: make it afresh, and re-run
        # every op that reads or changes it
        if type(r) is not Call or r.id in draw_of:
            raise Fallback(f"%{r.id} ({type(r.value).__name__}) is changed in place by the "
                           f"model and cannot be made afresh")
        if not is_pure(r) and r.fn not in MUTATORS:
            raise Fallback(f"%{r.id} = {r.format()[:80]} may have effects")
        marked[r.id] = r
        stack.append(r)

    def read_at_its_point(u: Op) -> None:
        for r in u.refs():
            if r.id in mutated and r.id not in marked and r.id not in skip and \
                    not isinstance(r.value, ATOMIC):
                remake(r)

    for op in changed:                     # its parameters are read where it was drawn
        read_at_its_point(op)
    while stack:
        op = stack.pop()
        for u in users[op.id]:
            uid = u.id
            if uid in marked or uid in skip:
                continue
            i = draw_of.get(uid)
            if i is not None:              # a draw keeps its value: score it again
                rescore.add(i)
                marked[uid] = u            # (in the order, to read its parameters)
                read_at_its_point(u)
                continue
            if type(u) is Call:
                if not is_pure(u):
                    try:
                        known = u.fn in MUTATORS
                    except TypeError:
                        known = False
                    if not known:
                        raise Fallback(f"%{uid} = {u.format()[:80]} may have effects")
                marked[uid] = u
                stack.append(u)
                read_at_its_point(u)
            else:
                marked[uid] = u
                stack.append(u)
    todo = sorted(list(marked.values()) + list(changed), key=_position)
    return todo, rescore


def _position(op: Op) -> int:
    return op.id


_PLAIN, _DRAW, _GUARD, _OTHER = range(4)


def _steps(todo: list, draw_of: dict) -> list:
    """A plan's ops as (kind, op, a, b), made once per plan: what each re-run of
    it would otherwise work out again per op (is it a draw, a guard, a plain call;
    which arguments are ops)."""
    out = []
    for op in todo:
        t = type(op)
        if t is Guard:
            out.append((_GUARD, op, None, None))
        elif op.id in draw_of:
            out.append((_DRAW, op, draw_of[op.id],
                        tuple((x, isinstance(x, Op)) for x in op.args)))
        elif t is Call and not isinstance(op.fn, Op) and not op.star and not op.kwargs \
                and not op.raises and not op.handled:
            out.append((_PLAIN, op, op.fn, tuple((x, isinstance(x, Op)) for x in op.args)))
        else:
            out.append((_OTHER, op, None, None))
    return out


def incremental_update(ct, wanted: dict, args, kwargs, derive):
    """`(new_trace, weight, discard)` of update without re-running the model, or a
    str saying why it cannot be done so; `derive(state)` makes the new trace."""
    if ct.unknown:
        return "the trace has choices of unknown density"
    if args is not None and not _same(tuple(args), ct.args):
        return "other arguments"
    if kwargs is not None and not (set(kwargs) == set(ct.kwargs) and
                                   all(kwargs[k] is ct.kwargs[k] for k in kwargs)):
        return "other arguments"
    st = ct._state if ct._state is not None else None
    if st is None or isinstance(st, str):
        st = base_state(ct) if ct._root is not None else None
        if st is None:
            return ct._state if isinstance(ct._state, str) else "no lineage"
    lin = st.lineage
    idx = []
    for addr in wanted:
        i = lin.index.get(addr)
        if i is None:
            return f"{addr} is not a choice of this run"
        idx.append(i)
    changed = [lin.draw_ops[i] for i in idx]
    key = tuple(idx)
    plan = lin.plans.get(key)
    if plan is None:
        try:
            plan = _affected(lin, changed)[0]
        except Fallback as e:
            plan = str(e)
        else:
            if len(plan) > _FEW and len(plan) > len(lin.tape.ops) * _MOST:
                plan = (f"{len(plan)} of the run's {len(lin.tape.ops)} ops depend on the "
                        f"change: re-running the model costs less")
        if lin.planned < _PLANNED:
            lin.plans[key] = plan
            lin.planned += 1 if isinstance(plan, str) else len(plan)
    if isinstance(plan, str):
        return plan
    todo = plan
    new: dict[int, object] = {}
    for i, (addr, v) in zip(idx, wanted.items()):
        new[lin.draw_ops[i].id] = v
    layers = (new,) + st.layers
    unset = _UNSET

    def get(r):
        k = r.id
        for d in layers:
            v = d.get(k, unset)
            if v is not unset:
                return v
        return r.value

    if lin.raises:
        return "the model raised"
    steps = lin.steps.get(key)
    if steps is None:
        steps = _steps(todo, lin.draw_of)
        if key in lin.plans:
            lin.steps[key] = steps
    if len(layers) == 1:
        def get(r):                   # (the first update of a run: one layer)
            v = new.get(r.id, unset)
            return r.value if v is unset else v
    values = list(st.values)
    for i, v in zip(idx, wanted.values()):
        values[i] = v
    which: list[int] = []
    draws = []
    fast_of = lin.fast
    packed: dict = {}    # (sampler, number of arguments) -> (draw indices, arguments)
    try:
        for kind, op, a, b in steps:
            if kind == _PLAIN:
                # a call of a fixed callable with positional arguments (`a` says
                # which are ops): most of what depends on a draw is such arithmetic
                new[op.id] = a(*[get(x) if o else x for x, o in b])
            elif kind == _DRAW:
                # a draw keeps its value; its parameters as they are at this point
                i = a
                fast = fast_of.get(i)
                if fast is not None:
                    # its arguments only, scored with the others of its sampler as
                    # columns (_score_packed): no Draw and no dict per draw
                    args = tuple([_now(get(x)) if o else x for x, o in b])
                    if args and type(args[0]) in _GENERATORS:
                        got = packed.get((fast, len(args)))
                        if got is None:
                            got = packed[(fast, len(args))] = ([], [])
                        got[0].append(i)
                        got[1].append(args)
                        continue
                d = _draw(lin, i, get)
                if d is None or d.sampler.shuffles >= 0:
                    return f"{lin.addresses[i]}: a shuffle, or a call no longer a draw"
                which.append(i)
                draws.append(d)
            elif kind == _GUARD:
                c = op.condition
                v = get(c) if isinstance(c, Op) else c
                if op.outcome(v) != op.expected:
                    return f"guard %{op.id} flips: control flow changes"
            else:
                new[op.id] = evaluate(op, get)
        value = get(lin.result) if isinstance(lin.result, Op) else lin.result
        logps = score(draws, [values[i] for i in which])
        for (fast, _), (at, arglists) in packed.items():
            which.extend(at)
            logps.extend(_score_packed(fast, arglists, [values[i] for i in at]))
    except (GuardError, UnknownSamplerError) as e:
        return f"re-running failed: {e}"
    except Exception as e:      # noqa: BLE001 - the full re-run path says it properly
        return f"re-running raised {type(e).__name__}: {e}"
    logp = st.logp.copy()
    logp[which] = logps
    # the weight: new log joint - old, of the choices scored again (no new addresses)
    before = st.logp[which].tolist()
    scored = lin.scored
    weight = math.fsum([a for i, a in zip(which, logps) if scored[i]] +
                       [-b for i, b in zip(which, before) if scored[i]])
    if len(layers) > _MAX_LAYERS:
        merged: dict = {}
        for d in reversed(layers):
            merged.update(d)
        layers = (merged,)
    state = State(lin, layers, values, logp, lin.kinds, value)
    new_ct = derive(state)
    discard = {a: st.values[i] for a, i in zip(wanted, idx)}
    new_ct.update_path = "incremental"
    new_ct.update_stats = {"reran": len(todo), "rescored": len(which),
                           "ops": len(lin.tape.ops), "draws": len(values)}
    return new_ct, weight, discard


def _draw(lin: Lineage, i: int, get):
    """The Draw (sampler, parameters) of draw `i` with its inputs' values now."""
    op = lin.draw_ops[i]
    fast = lin.fast.get(i)
    if fast is not None:
        # a plain method of a generator, a fixed callable, no star and no keywords
        # (found so at an earlier update): only its arguments are read again
        args = [_now(get(a)) if isinstance(a, Op) else a for a in op.args]
        if args and type(args[0]) in _GENERATORS:
            return Draw(fast, fast.name, fast.bind(*args[1:]))
    fn = get(op.fn) if isinstance(op.fn, Op) else op.fn
    if original_of(fn) is not None:
        fn = lin.called[i]
    args = [_now(get(a)) if isinstance(a, Op) else a for a in op.args]
    kwargs = {k: (_now(get(a)) if isinstance(a, Op) else a) for k, a in op.kwargs.items()}
    if op.star:
        if len(args) > 1:
            kwargs = dict(args[1])
        args = list(args[0])
    # a plain method of a generator called unbound (Random.gauss(r, ...), as the tape
    # records `r.gauss(...)`): its sampler binds the rest, as resolve() would
    fast = lin.unbound.get(fn) if type(fn) in _PLAIN_FUNCS else None
    if fast is not None and args and type(args[0]) in _GENERATORS:
        if not isinstance(op.fn, Op) and not op.star and not op.kwargs:
            lin.fast[i] = fast
        return Draw(fast, fast.name, fast.bind(*args[1:], **kwargs))
    d = resolve(fn, tuple(args), kwargs)
    if d is not None and type(fn) in _PLAIN_FUNCS and takes_generator(fn) and \
            d.sampler.user_logpdf is None and d.sampler.shuffles < 0 and \
            d.site == d.sampler.name:
        lin.unbound[fn] = d.sampler
    return d


def _score_packed(fast, arglists: list, vals: list) -> list:
    """The log-densities of draws of sampler `fast` called with `arglists` (the
    generator first, then as many positional arguments each): their parameters
    bound as columns and scored by one vectorised call (densities.score_columns),
    else draw by draw."""
    cols = [list(c) for c in zip(*arglists)][1:]
    got = score_columns(fast, fast.bind(*cols), vals) if len(vals) > 1 else None
    if got is not None:
        return got
    return score([Draw(fast, fast.name, fast.bind(*a[1:])) for a in arglists], vals)


def _now(v):
    # a container read now may change later in the run: its state at this point
    t = type(v)
    return v.copy() if t is list or t is dict or t is set else v


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))

