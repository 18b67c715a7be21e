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

Those iterators may be chained (tracer.tapes.streams): `zip` and `enumerate` over
generators, `map` over a generator or another map, a generator expression over a
`map`, `functools.reduce` over a `map`, and `yield from g` in a generator (each SEND
a `next(g)`).  The consumer is then called on the list of items (`sum([y1, y2,
...])`), and a `next(it, STOP)` guard checks that the iteration ends where it
ended.  Anything else (an exception inside, a key function, a generator resumed
elsewhere, a value sent in) keeps the call as one op, as without this option.
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
from .errors import TapeError
from .ops import Call, Input, Op
from .streams import (STOPPED, Abort, EnumStream, FilterStream, GenStream, MapStream, Run,
                      SeqStream, ZipStream, _Called)

__all__ = ["Callbacks", "CONSUMERS", "close_generator"]

# Builtins that consume one iterable whole and whose result depends only on its items.
CONSUMERS = (sum, math.fsum, list, tuple, min, max, sorted)
_SEQUENCES = (list, tuple, range, np.ndarray)
_ITERATORS = (map, filter, zip, enumerate)
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
        kids = self.t.children(row)
        if self.flags_[row] & F_RAISED:
            return None
        if not kids:
            return self._c_map_call(row)
        plan = self._consumer(row)
        if plan is None:
            return None
        return self._drive(row, kids, *plan)

    def _consumer(self, row):
        """`(mode, fn, stream, refs)` if C call `row` consumes a stream this module
        follows: `next(it)` (a for loop's step, or a call), the SEND of `yield from
        it`, `functools.reduce(f, it[, init])`, a consumer of `it` whole; else None."""
        rec = self._rec(row)
        if rec is None or rec.kwnames:
            return None
        refs = self.t.refs(row)
        if rec.sem == R_OP and rec.fn is next and len(refs) == 1:
            refs = [("const", next), refs[0]]  # a for loop's step: next(iterator)
        elif rec.sem == R_OP and rec.fn is tops.send and len(refs) == 2:
            if self._callee_value(refs[1]) is not None:
                return None  # a value sent in: not a plain next()
            refs = [("const", tops.send), refs[0]]
        elif rec.sem != R_CALL:
            return None
        fn = self._callee_value(refs[0])
        if (fn is next or fn is tops.send) and len(refs) == 2:
            mode, src = "next", refs[1]
        elif fn is functools.reduce and len(refs) in (3, 4):
            mode, src = "reduce", refs[2]
        elif _is_consumer(fn) and len(refs) >= 2 and not (fn in (min, max) and len(refs) > 2):
            mode, src = "items", refs[1]
        else:
            return None
        try:
            stream = self._stream(src, top=mode != "reduce")
        except Abort:
            return None
        if stream is None:
            return None
        return mode, fn, stream, refs

    def _drive(self, row, kids, mode, fn, stream, refs):
        """Inline the consumer of `stream` that C call `row` was (its frames `kids`):
        simulated first (None if the frames are not what the steps run), then real."""
        try:
            self._consume(Run(self, row, kids, True), mode, fn, stream, refs)
        except Abort:
            return None
        run = Run(self, row, kids, False)
        try:
            out = self._consume(run, mode, fn, stream, refs)
        except Abort:
            raise TapeError(f"row {row}: the Python code that {describe(fn)} ran from C "
                            "does not bind as the trace recorded it") from None
        for op in stream.ops():
            if op not in self._listed:
                self._listed.add(op)
                self.tape.inlined_iterables.append(op)
        return out

    def _consume(self, run, mode, fn, stream, refs):
        t = self.t
        row = run.row
        if mode == "next":
            item = stream.next(run)
            if run.pos != len(run.kids):
                raise Abort
            if run.sim:
                return None
            stream.ended = item is STOPPED
            if item is STOPPED:
                if fn is tops.send and run.result is not None:
                    return run.result  # `yield from`'s value: what the generator returned
                return Lit(t.value(row))  # exhausted: a for loop ends (no op reads it)
            return item if isinstance(item, Op) else Lit(item)
        if mode == "reduce":
            func = self._callee_value(refs[1])
            if not isinstance(func, types.FunctionType):
                raise Abort
            if len(refs) == 4:
                acc = self.resolve(refs[3]) if not run.sim else self._callee_value(refs[3])
                acc = acc.value if isinstance(acc, Lit) else acc
            else:
                acc = stream.next(run)
                if acc is STOPPED:
                    raise Abort  # reduce() of an empty iterable raised
            fn_ref = self.arg(refs[1]) if not run.sim else func
            reducer = _Called(None, fn_ref, func)
            while True:
                item = stream.next(run)
                if item is STOPPED:
                    break
                out = reducer.call(run, [acc, item])
                if not run.sim:
                    out = out[0]
                    out = out.value if isinstance(out, Lit) else out
                acc = out
            if run.pos != len(run.kids):
                raise Abort
            if run.sim:
                return None
            stream.ended = True
            return acc if isinstance(acc, Op) else Lit(acc)
        items = []
        while True:
            item = stream.next(run)
            if item is STOPPED:
                break
            items.append(item)
        if run.pos != len(run.kids):
            raise Abort
        if run.sim:
            return None
        stream.ended = True
        return self._apply(row, refs, items)

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

    def activation_ok(self, kid, code, first) -> bool:
        """Whether frame `kid` is an activation of a generator of `code` that ran to
        a yield or return: its first one (`first`) or a resumed one."""
        sub = self.t.children(kid)
        if not self._frame_ok(kid) or not sub or self.code_[sub[0]] is not code:
            return False
        started = self.kind_[sub[0]] == K_ARG and self.aux_[sub[0]] == 0 \
            and not self.flags_[sub[0]] & F_CARRIED
        return started == first and self.kind_[sub[-1]] == K_RETURN

    @property
    def _listed(self) -> set:
        listed = self.__dict__.get("_listed_set")
        if listed is None:
            listed = self._listed_set = set()
        return listed

    def _streams(self) -> dict:
        streams = self.__dict__.get("_stream_map")
        if streams is None:
            streams = self._stream_map = {}
        return streams

    def _stream(self, r, top=True):
        """The stream of the iterator trace reference `r` refers to (kept per object:
        a for loop's steps go on where the last stopped), or Abort.  A sequence is a
        stream only inside another (`top`: a builtin's own argument is not)."""
        x = self.resolve(r)
        v = x.value
        if type(v) is types.GeneratorType:
            op = self._generator_op(r)
            if op is None:
                raise Abort
            return GenStream(op)
        if type(v) in _SEQUENCES:
            if top:
                raise Abort
            return SeqStream(x if isinstance(x, Op) else v)
        kind = type(v)
        if kind not in (map, filter, zip, enumerate):
            raise Abort
        streams = self._streams()
        got = streams.get(id(v))
        if got is not None and got.op.value is v:
            return got
        op = self.produced.get(id(v))
        if type(op) is not Call or op.value is not v or op.fn is not kind or op.star \
                or op.kwargs:
            raise Abort
        args = op.args
        if kind is zip:
            stream = ZipStream(op, [self._sub_stream(a) for a in args])
        elif kind is enumerate:
            if len(args) not in (1, 2) or (len(args) == 2 and type(args[1]) is not int):
                raise Abort
            stream = EnumStream(op, self._sub_stream(args[0]), args[1] if len(args) == 2 else 0)
        else:
            if len(args) < 2 or (kind is filter and len(args) != 2):
                raise Abort
            func = _plain(args[0])
            if not (isinstance(func, types.FunctionType) or (kind is map and _pure_c(func))):
                raise Abort
            subs = [self._sub_stream(a) for a in args[1:]]
            if kind is map:
                stream = MapStream(op, args[0], func, subs)
            else:
                stream = FilterStream(op, args[0], func, subs[0])
        stream.ended = False
        streams[id(v)] = stream
        return stream

    def _sub_stream(self, a):
        """The stream of an argument of map/filter/zip/enumerate (an op or a constant)."""
        if isinstance(a, Op):
            v = a.value
            if type(v) is types.GeneratorType or type(v) in (map, filter, zip, enumerate):
                op = self.produced.get(id(v))
                if op is None:
                    raise Abort
                return self._stream(self._ref_of(op), top=False)
            if type(v) in _SEQUENCES:
                return SeqStream(a)
            raise Abort
        if type(a) in _SEQUENCES:
            return SeqStream(a)
        raise Abort

    @staticmethod
    def _ref_of(op):
        return ("const", op.value)  # resolved through self.produced (link)

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
            if not (fn is next or fn is tops.send or fn is functools.reduce
                    or _is_consumer(fn)):
                continue
            for r in prefs[1:3]:
                arg = self._callee_value(r)
                if (type(arg) is types.GeneratorType and arg.gi_code is code) \
                        or type(arg) in _ITERATORS:
                    # (an activation map/filter/zip/enumerate ran: each is inlined
                    # as a step of its stream, or the call stays one op and
                    # _refuse_left_out refuses a generator already started)
                    driven[code] = driven.get(code, 0) + 1
                    break
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
        return id(value) in self._gen_states() or id(value) in self._streams()

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
                    raise Abort
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
                raise Abort
            out = self._inline(kid, sub, n, bound, state.scope, state.cells)
        else:
            out = self._run_frame(kid, sub, 0, state.scope, state.cells, _plain(gen_op.fn))
        yielded = bool(self.flags_[sub[-1]] & _YIELD)
        if not yielded:
            state.done = True
            self.push(Call(close_generator, (gen_op,), value=None))
        return out, yielded

    def _apply(self, row, refs, items):
        t = self.t
        args = tuple(x.value if isinstance(x, Lit) else x for x in items)
        lst = self.push(Call(tops.build_list, args, value=[_plain(a) for a in args]))
        args = (lst,) + tuple(self.arg(r) for r in refs[2:])
        fn = self._callee_value(refs[0])
        return self.push(Call(fn, args, value=t.value(row)))

    def _c_map_call(self, row):
        """A C call that ran no Python frame: a consumer of `map(f, *seqs)` made on
        the tape with a pure C function `f` (math, operator, a numpy ufunc), whose
        items are the calls `f(next(it1), next(it2), ...)` themselves (each an op of
        the tape, differentiated by f's rule); or a step of a stream whose earlier
        steps were inlined (its end: a sequence exhausted, a generator done)."""
        if self.flags_[row] & F_RAISED:
            return None
        rec = self._rec(row)
        if rec is None or rec.kwnames:
            return None
        if rec.sem == R_OP:
            if rec.fn is not next or not self.__dict__.get("_stream_map"):
                return None
            refs = self.t.refs(row)
            if len(refs) != 1 or id(self._callee_value(refs[0])) not in self._stream_map:
                return None
        elif rec.sem != R_CALL:
            return None
        plan = self._consumer(row)
        if plan is None:
            return None
        mode, fn, stream, refs = plan
        if not stream.has_c_map() and not (mode == "next" and stream.op is not None
                                            and id(stream.op.value) in self._streams()):
            return None
        return self._drive(row, [], mode, fn, stream, refs)

    def stream_end(self, value, row) -> bool:
        """A for loop over inlined stream `value` ended with no step recorded (a C
        iterator's exhausting next() fires no node): its end as the tape's guard.
        False if `value` is not such a stream."""
        stream = self.__dict__.get("_stream_map", {}).get(id(value))
        if stream is None or stream.op.value is not value:
            return False
        if stream.ended:
            return True
        try:
            self._consume(Run(self, row, [], True), "next", next, stream, None)
        except Abort:
            raise TapeError(f"row {row}: a for loop over an inlined iterator ended "
                            "where the trace shows no end") from None
        self._consume(Run(self, row, [], False), "next", next, stream, None)
        return True


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
