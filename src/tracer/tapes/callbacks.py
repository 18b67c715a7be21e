"""Python code that a C function ran, inlined where its data flow is known.

`sum(v * v for v in xs)`, `sum(map(f, xs))`, `list(filter(p, xs))`,
`functools.reduce(f, xs)`: the builtin runs the generator's activations or calls
the callback from C, and the trace records those frames under its call, each with
the values C passed as constants.  For the builtins whose result depends only on
the items they consume (`CONSUMERS`) and for `functools.reduce`, the flattener
(with `callbacks=True`) rewrites such a call as the iteration it did:

- a generator made on the tape and consumed whole: each activation is inlined in
  turn (its locals carried across yields by the ops that made them), the yielded
  values are the items, and the generator is closed afterwards (it was exhausted);
- `map(f, *seqs)` / `filter(p, seq)` made on the tape over lists, tuples, ranges or
  arrays: `next()` of an iterator of each sequence, then the callback's body inlined
  on those items (a filter's test becomes a guard);
- `reduce(f, seq[, init])`: the accumulator threaded through the inlined bodies;
- `map(f, *seqs)` with a pure C function `f` (math, operator, a numpy ufunc): no
  frame ran, the items are the calls `f(next(it1), ...)` (`_c_map_call`).

The consumer is then called on the list of items (`sum([y1, y2, ...])`), and a
`next(it, STOP)` guard checks that the iteration ends where it ended.  Anything
else (an exception inside, a key function, a generator resumed elsewhere) keeps the
call as one op, as without this option.
"""

from __future__ import annotations

import functools
import math
import types

import numpy as np

from .. import callables as tops
from ..analysis.instructions import R_CALL, R_OP
from .bind import MISSING, Pack, map_parameters
from .common import F_CARRIED, F_RAISED, FLAGS, GENERATOR_FLAGS, K_ARG, K_NESTED, K_RETURN, Lit
from .helpers import STOP
from .errors import TapeError
from .ops import Call, Guard, Input, Op

__all__ = ["Callbacks", "CONSUMERS", "close_generator"]

# Builtins that consume one iterable whole and whose result depends only on its items.
CONSUMERS = (sum, math.fsum, list, tuple, min, max, sorted)
_SEQUENCES = (list, tuple, range, np.ndarray)
_YIELD = FLAGS["yield"]


def close_generator(gen) -> None:
    """Close `gen`, whose activations the tape ran inlined (it was exhausted)."""
    gen.close()


class _GenState:
    """A generator whose activations the flattener inlines, across the calls that
    resume it: what its frames made (for carried locals), its cells, how far."""

    __slots__ = ("op", "scope", "cells", "started", "done")

    def __init__(self, op):
        self.op = op
        self.scope = Scope()
        self.cells = ({}, {})
        self.started = False
        self.done = False


class _Abort(Exception):
    """The call does not have the shape this module inlines."""


class Callbacks:
    """The flattener's inlining of Python code run from C (a mixin of _Flattener)."""

    def _callbacks(self, row):
        """The op standing for C call `row` with its frames inlined, or None."""
        out = self._inline_call(row)
        if out is None and self._gen_states():
            self._refuse_left_out(row)
        return out

    def _refuse_left_out(self, row) -> None:
        """A call left as one op must not resume a generator whose earlier
        activations the tape inlined: on a new run it would start that generator
        afresh (a wrong value, not an error)."""
        t = self.t
        for kid in t.children(row):
            sub = t.children(kid) if self.kind_[kid] == K_NESTED else ()
            code = self.code_[sub[0]] if sub else None
            for state in self._gen_states().values():
                if state.started and not state.done and state.op.value.gi_code is code:
                    raise TapeError(f"row {row}: a generator whose earlier activations were "
                                    "inlined is resumed by a call that cannot be (an "
                                    "exception, or a C function other than next() and the "
                                    "consumers): this call cannot be linearized")

    def _inline_call(self, row):
        t = self.t
        kids = t.children(row)
        if self.flags_[row] & F_RAISED:
            return None
        if not kids:
            return self._c_map_call(row)
        rec = self._rec(row)
        if rec is None or rec.kwnames:
            return None
        refs = t.refs(row)
        if rec.sem == R_OP and rec.fn is next and len(refs) == 1:
            refs = [("const", next), refs[0]]  # a for loop's step: next(iterator)
        elif rec.sem != R_CALL:
            return None
        fn = self._callee_value(refs[0])
        try:
            if fn is next and len(refs) == 2 and len(kids) == 1:
                plan = self._plan_next(refs[1], kids[0])
            elif fn is functools.reduce:
                plan = self._plan_reduce(refs, kids)
            elif _is_consumer(fn) and len(refs) >= 2 and not (fn in (min, max) and len(refs) > 2):
                plan = self._plan_items(refs[1], kids)
            else:
                return None
        except _Abort:
            return None
        if plan is None:
            return None
        try:
            return plan(row, refs)
        except _Abort:
            raise TapeError(f"row {row}: the Python code that {describe(fn)} ran from C "
                            "does not bind as the trace recorded it") from None

    # -- planning: checks before anything is pushed ------------------------------------------
    def _frame_ok(self, kid) -> bool:
        return self.kind_[kid] == K_NESTED and not self.flags_[kid] & F_RAISED

    def _started(self, kid, func) -> list | None:
        """The children of `kid` if it is a call of Python function `func` from C."""
        sub = self.t.children(kid)
        if (not self._frame_ok(kid) or not sub or self.kind_[sub[0]] != K_ARG
                or self.aux_[sub[0]] != 0 or self.flags_[sub[0]] & F_CARRIED
                or self.t.value(sub[0]) is not func):
            return None
        return sub

    def _source(self, r):
        """(kind, op) of an iterable argument: 'gen' (a generator made on the tape),
        'map'/'filter' (made on the tape), 'seq' (a sequence), else _Abort."""
        x = self.resolve(r)
        v = x.value
        if isinstance(x, Op) and type(x) is Call:
            if type(v) is types.GeneratorType:
                return "gen", x
            if type(v) is map and x.fn is map and not x.kwargs and len(x.args) >= 2:
                return "map", x
            if type(v) is filter and x.fn is filter and not x.kwargs and len(x.args) == 2:
                return "filter", x
        if type(v) in _SEQUENCES:
            return "seq", x
        raise _Abort

    def _plan_next(self, r, kid):
        """`next(g)` (a for loop's step, or a call) of a generator made on the tape
        whose every activation runs under such steps or a whole consumer."""
        gen_op = self._generator_op(r)
        if gen_op is None or not self._check_generator(gen_op, [kid], whole=False):
            return None
        return lambda row, refs: self._next_step(row, gen_op, kid)

    def _plan_items(self, r, kids):
        gen_op = self._generator_op(r)
        if gen_op is not None:
            ok = self._check_generator(gen_op, kids)
            return (lambda row, refs: self._consume_generator(row, refs, gen_op, kids)) if ok else None
        kind, src = self._source(r)
        if kind in ("map", "filter"):
            func = _plain(src.args[0])
            seqs = src.args[1:]
            if not all(type(_plain(s)) in _SEQUENCES for s in seqs):
                return None
            if not isinstance(func, types.FunctionType):
                return None
            if not all(self._started(k, func) is not None for k in kids):
                return None
            if kind == "filter" and len(kids) != len(_plain(seqs[0])):
                return None
            return lambda row, refs: self._consume_calls(row, refs, kind, src, func, kids)
        return None

    def _plan_reduce(self, refs, kids):
        if len(refs) not in (3, 4):
            return None
        func = self._callee_value(refs[1])
        kind, seq = self._source(refs[2])
        if kind != "seq" or not isinstance(func, types.FunctionType):
            return None
        if not all(self._started(k, func) is not None for k in kids):
            return None
        return lambda row, refs: self._reduce(row, refs, func, kids)

    def _generator_op(self, r):
        """The op that made the generator `r` refers to (a call of a generator
        function on the tape, or a generator expression), or None."""
        x = self.resolve(r)
        v = x.value
        if type(v) is not types.GeneratorType or v.gi_code.co_flags & GENERATOR_FLAGS != 0x20:
            return None
        op = self.produced.get(id(v))
        if type(op) is not Call or op.value is not v or op.star \
                or not isinstance(_plain(op.fn), types.FunctionType):
            return None
        if not self._covered(v.gi_code):
            return None
        return op

    def _check_generator(self, gen_op, kids, whole=True) -> bool:
        """Whether `kids` are the next activations of the generator `gen_op` made
        (with `whole`, every one left, up to its return: a call consuming it)."""
        gen = gen_op.value
        code = gen.gi_code
        state = self._gen_states().get(id(gen))
        started_before = state is not None and state.started
        if state is not None and state.done:
            return False
        t = self.t
        for j, kid in enumerate(kids):
            sub = t.children(kid)
            if not self._frame_ok(kid) or not sub or self.code_[sub[0]] is not code:
                return False
            started = self.kind_[sub[0]] == K_ARG and self.aux_[sub[0]] == 0 \
                and not self.flags_[sub[0]] & F_CARRIED
            if started != (j == 0 and not started_before):
                return False
            last = sub[-1]
            if self.kind_[last] != K_RETURN:
                return False
            if whole and bool(self.flags_[last] & _YIELD) != (j < len(kids) - 1):
                return False
        return True

    def _covered(self, code) -> bool:
        """Whether every activation of a generator of `code` in the trace runs under
        `next(g)` or a whole consumer of `g` (so all of them are inlined, in order:
        none is left to a C function the tape would run on a generator it never
        started)."""
        cov = self.__dict__.get("_gen_covered")
        if cov is None:
            cov = self._gen_covered = self._scan_activations()
        return cov.get(code, False)

    def _scan_activations(self) -> dict:
        t, kind = self.t, self.kind_
        total: dict = {}
        driven: dict = {}
        for row in range(len(kind)):
            if kind[row] != K_NESTED:
                continue
            sub = t.children(row)
            code = self.code_[sub[0]] if sub else None
            if code is None or code.co_flags & GENERATOR_FLAGS != 0x20:
                continue
            if code is self.code_[row] and kind[sub[0]] != K_ARG:
                continue  # a C call made in a generator's frame, not an activation
            total[code] = total.get(code, 0) + 1
            parent = t.parent(row)
            if parent < 0 or kind[parent] != K_NESTED:
                continue
            prefs = t.refs(parent)
            rec = self._rec(parent)
            if rec is not None and rec.sem == R_OP:
                fn, prefs = rec.fn, [None] + list(prefs)
            elif len(prefs) >= 2:
                fn = self._callee_value(prefs[0])
            else:
                continue
            if len(prefs) < 2:
                continue
            arg = self._callee_value(prefs[1])
            if (fn is next or _is_consumer(fn)) and type(arg) is types.GeneratorType \
                    and arg.gi_code is code:
                driven[code] = driven.get(code, 0) + 1
        return {code: driven.get(code, 0) == n for code, n in total.items()}

    def _gen_states(self) -> dict:
        states = self.__dict__.get("_gen_state_map")
        if states is None:
            states = self._gen_state_map = {}
        return states

    def _gen_state(self, gen_op) -> "_GenState":
        states = self._gen_states()
        st = states.get(id(gen_op.value))
        if st is None:
            st = states[id(gen_op.value)] = _GenState(gen_op)
        return st

    def inlined_generator(self, value) -> bool:
        """Whether the flattener inlines the activations of generator `value` (a for
        loop over it then needs no guard of its own: its body's guards decide)."""
        return id(value) in self._gen_states()

    # -- inlining ------------------------------------------------------------------------------
    def _inline(self, kid, sub, nparams, bound, scope=None, cells=None):
        """Flatten the frame `kid` (children `sub`) with its parameters bound to
        `bound` (ops or constants, in co_varnames order); its outcome."""
        t = self.t
        for k, prow in enumerate(sub[1:nparams]):
            b = bound[k] if k < len(bound) else MISSING
            pv = t.value(prow)
            if b is MISSING:
                self.ref[prow] = Lit(pv)
            elif isinstance(b, Pack):
                self.ref[prow] = self.push(Call(b.fn, b.items, value=pv))
            else:
                got = b.value if isinstance(b, Op) else b
                if got is not pv and not (type(pv) is np.ndarray and type(got) is np.ndarray
                                          and got.shape == pv.shape):
                    raise _Abort
                self.ref[prow] = b if isinstance(b, Op) else Lit(b)
            if scope is not None and isinstance(self.ref[prow], Op):
                scope.add(self.ref[prow])
        return self._run_frame(kid, sub, nparams, scope, cells)

    def _run_frame(self, kid, sub, start, scope, cells, func=None):
        saved = self.frame, self.row, self.gen_scope
        fr = self.frame_class(kid, sub, start, saved[0].handled if saved[0] is not None else False)
        fr.func = func
        if cells is not None:
            fr.cell_values, fr.cell_ops = cells
        self.gen_scope = scope
        try:
            out = self._body(fr)
        finally:
            self.frame, self.row, self.gen_scope = saved
        return out

    def _iterators(self, seqs):
        """`iter()` ops over `seqs` (ops or constants: lists, tuples, ranges, arrays)."""
        return [self.push(Call(iter, (s,), value=iter(_plain(s)))) for s in seqs]

    def _end(self, its, count, row) -> None:
        """Guards that the iteration over `its` ended after `count` items, where map
        and zip end: at the first iterator exhausted."""
        where = self.where(row)
        for it in its:
            seq = it.args[0]
            n = len(_plain(seq))
            done = n <= count
            op = self.push(Call(next, (it, STOP), value=STOP if done else None))
            self.push(Guard(op, done, "stop", where=where, source="(the iteration a builtin ran)"))
            if done:
                return
        raise _Abort

    def _activate(self, gen_op, kid):
        """Inline one activation of the generator `gen_op` made: (its outcome,
        whether it yielded).  After the activation that returns, the generator is
        closed (on a new run the tape never starts it)."""
        t = self.t
        state = self._gen_state(gen_op)
        code = gen_op.value.gi_code
        sub = t.children(kid)
        if not state.started:
            state.started = True
            self.tape.inlined_iterables.append(gen_op)
            n = self._leading_args(sub)
            self.ref[sub[0]] = gen_op.fn
            bound = map_parameters(code, list(gen_op.args), dict(gen_op.kwargs))
            if bound is None:
                raise _Abort
            out = self._inline(kid, sub, n, bound, state.scope, state.cells)
        else:
            out = self._run_frame(kid, sub, 0, state.scope, state.cells, _plain(gen_op.fn))
        yielded = bool(self.flags_[sub[-1]] & _YIELD)
        if not yielded:
            state.done = True
            self.push(Call(close_generator, (gen_op,), value=None))
        return out, yielded

    def _next_step(self, row, gen_op, kid):
        out, yielded = self._activate(gen_op, kid)
        if yielded:
            return out
        return Lit(self.t.value(row))  # exhausted: a for loop ends (no op reads it)

    def _consume_generator(self, row, refs, gen_op, kids):
        items = []
        for kid in kids:
            out, yielded = self._activate(gen_op, kid)
            if yielded:
                items.append(out)
        return self._apply(row, refs, items)

    def _apply(self, row, refs, items):
        t = self.t
        args = tuple(x.value if isinstance(x, Lit) else x for x in items)
        lst = self.push(Call(tops.build_list, args, value=[_plain(a) for a in args]))
        args = (lst,) + tuple(self.arg(r) for r in refs[2:])
        fn = self._callee_value(refs[0])
        return self.push(Call(fn, args, value=t.value(row)))

    def _c_map_call(self, row):
        """A consumer of `map(f, *seqs)` made on the tape over sequences, where `f` is
        a pure C function (math, operator, a numpy ufunc): no Python frame ran, so
        the items are the calls `f(next(it1), next(it2), ...)` themselves, each an
        op of the tape (and differentiated by f's rule)."""
        rec = self._rec(row)
        if rec is None or rec.kwnames or rec.sem != R_CALL:
            return None
        refs = self.t.refs(row)
        if len(refs) < 2:
            return None
        fn = self._callee_value(refs[0])
        if not _is_consumer(fn) or (fn in (min, max) and len(refs) > 2):
            return None
        try:
            kind, src = self._source(refs[1])
        except _Abort:
            return None
        if kind != "map" or not _pure_c(_plain(src.args[0])):
            return None
        seqs = src.args[1:]
        values = [_plain(q) for q in seqs]
        if not all(type(v) in _SEQUENCES for v in values):
            return None
        n = min(len(v) for v in values)
        func = src.args[0]
        f = _plain(func)
        its = self._iterators(seqs)
        items = []
        for i in range(n):
            args = tuple(self.push(Call(next, (it,), value=v[i])) for it, v in zip(its, values))
            items.append(self.push(Call(func, args, value=f(*(a.value for a in args)))))
        try:
            self._end(its, n, row)
        except _Abort:
            raise TapeError(f"row {row}: map over sequences that did not end") from None
        self.tape.inlined_iterables.append(src)
        return self._apply(row, refs, items)

    def _consume_calls(self, row, refs, kind, src, func, kids):
        t = self.t
        seqs = src.args[1:]
        its = self._iterators(seqs)
        fn_ref = src.args[0]
        items = []
        where = self.where(row)
        for kid in kids:
            sub = t.children(kid)
            n = self._leading_args(sub)
            args = []
            for it, prow in zip(its, sub[1:n]):
                args.append(self.push(Call(next, (it,), value=t.value(prow))))
            self.ref[sub[0]] = fn_ref
            bound = map_parameters(func.__code__, args, {})
            if bound is None:
                raise _Abort
            out = self._inline(kid, sub, n, bound)
            if kind == "map":
                items.append(out)
            else:
                passed = bool(t.value(kid))
                if isinstance(out, Op):
                    self.push(Guard(out, passed, "truth", where=where,
                                    source="(a filter's test)"))
                if passed:
                    items.append(args[0])
        self._end(its, len(kids), row)
        self.tape.inlined_iterables.append(src)
        return self._apply(row, refs, items)

    def _reduce(self, row, refs, func, kids):
        t = self.t
        seq = self.arg(refs[2])
        (it,) = self._iterators((seq,))
        if len(refs) == 4:
            acc = self.resolve(refs[3])
            acc = acc.value if isinstance(acc, Lit) else acc
            taken = 0
        else:
            first = t.children(kids[0])[1]
            acc = self.push(Call(next, (it,), value=t.value(first)))
            taken = 1
        fn_ref = self.arg(refs[1])
        for kid in kids:
            sub = t.children(kid)
            n = self._leading_args(sub)
            if n != 3:
                raise _Abort
            item = self.push(Call(next, (it,), value=t.value(sub[2])))
            self.ref[sub[0]] = fn_ref
            out = self._inline(kid, sub, n, [acc, item])
            acc = out.value if isinstance(out, Lit) else out
        self._end([it], len(kids) + taken, row)
        if isinstance(acc, Op):
            return acc
        return Lit(acc)


def _plain(x):
    return x.value if isinstance(x, (Op, Lit)) else x


_PURE_C_MODULES = frozenset({"math", "operator", "_operator", "cmath"})


def _pure_c(fn) -> bool:
    """Whether `fn` is a C function with no side effects the flattener may call
    again for an item's value: a math/operator function or a numpy ufunc."""
    if isinstance(fn, np.ufunc):
        return True
    return isinstance(fn, types.BuiltinFunctionType) and \
        getattr(fn, "__module__", None) in _PURE_C_MODULES


def _is_consumer(fn) -> bool:
    try:
        return fn in CONSUMERS
    except TypeError:
        return False


def describe(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


class Scope:
    """The ops made by a generator's activations so far, by the id of their value:
    what a local carried across a yield holds.  A float or array object is made by
    one op while the trace keeps it alive; an int, bool or string may be shared
    (small ints are cached), so one found with two makers is not guessed -- unless
    no maker depends on the tape's inputs (a loop counter `k += 1`): then it is the
    same constant on the path whichever made it."""

    __slots__ = ("by_id", "shared", "makers", "free")

    def __init__(self):
        self.by_id: dict = {}
        self.shared: set = set()
        self.makers: dict = {}   # id -> every Op or Lit of a shared type with that id
        self.free: dict = {}     # id(op) -> whether the op reads no Input (memo)

    def add(self, x) -> None:
        """Note what a row of the generator's frames resolved to (an Op or a Lit)."""
        v = x.value
        k = id(v)
        if type(v) in _SHARED_TYPES:
            old = self.by_id.get(k)
            if old is not None and old is not x and (isinstance(old, Op) or isinstance(x, Op)):
                self.shared.add(k)
            self.makers.setdefault(k, []).append(x)
        self.by_id[k] = x

    def find(self, v):
        """The op (or constant) that made `v`; TapeError if it cannot be told."""
        if v is None:
            # (the value a `yield from` sends in, a method's None result: whichever
            # op made it, None is the same constant on every path)
            return None
        k = id(v)
        x = self.by_id.get(k)
        if x is None or x.value is not v:
            if type(v) in _SHARED_TYPES:
                return None  # an int, a string: a constant of the path
            raise TapeError(f"a generator carries {type(v).__name__} {v!r:.40} across a "
                            "yield, made where the trace does not show: this call cannot "
                            "be linearized")
        if k in self.shared:
            if all(self._input_free(m) for m in self.makers.get(k, ())):
                return None
            raise TapeError(f"a generator carries {v!r:.40} across a yield, a value several "
                            "ops made: which one it is cannot be told")
        return x

    def _input_free(self, x) -> bool:
        """Whether `x` (an Op or Lit) reads none of the tape's inputs, however far back."""
        if not isinstance(x, Op):
            return True
        memo = self.free
        todo = [x]
        while todo:
            op = todo[-1]
            if id(op) in memo:
                todo.pop()
                continue
            if isinstance(op, Input):
                memo[id(op)] = False
                todo.pop()
                continue
            refs = op.refs()
            pending = [r for r in refs if id(r) not in memo]
            if pending:
                todo.extend(pending)
                continue
            memo[id(op)] = all(memo[id(r)] for r in refs)
            todo.pop()
        return memo[id(x)]


_SHARED_TYPES = (int, bool, str, bytes, type(None))
