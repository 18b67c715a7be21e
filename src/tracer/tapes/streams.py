"""Iterators whose items the flattener inlines, item by item (tracer.tapes.callbacks).

A stream stands for an iterator made on the tape: a generator (its activations
inlined), a list, tuple, range or array (`next()` of an `iter()` op), or `map`,
`filter`, `zip`, `enumerate` built from other streams.  `next(run)` gives the op of
the next item, or STOPPED, consuming from `run` the frames that C ran for it, in the
order C ran them: `zip(g1, g2)` resumes g1 then g2, `map(f, g)` resumes g then
calls f, `filter(p, g)` resumes g and calls p until p passes an item.  An exhausted
sequence is a `next(it, STOP) is STOP` guard; an exhausted generator is the
activation that returned (its own guards decide).

A run is simulated first (`Run.sim`: only checks that the frames are the ones each
step would run, pushes nothing, and keeps its own copy of how far each stream went),
so that a call of another shape is left as one op, as without inlining.
"""

from __future__ import annotations

import types

import numpy as np

from .. import callables as tops
from .bind import map_parameters
from .common import FLAGS, Lit
from .helpers import STOP
from .ops import Call, Guard, Op

__all__ = ["STOPPED", "Abort", "Run", "GenStream", "SeqStream", "MapStream",
           "FilterStream", "ZipStream", "EnumStream", "plain"]

STOPPED = object()  # what next() of an exhausted stream gives
_YIELD = FLAGS["yield"]


class Abort(Exception):
    """The call does not have the shape this module inlines."""


def plain(x):
    return x.value if isinstance(x, (Op, Lit)) else x


def _item(x):
    """An item as a Call argument: an op, or the constant itself."""
    return x.value if isinstance(x, Lit) else x


class Run:
    """One pass of a consumer over the frames `kids` that the C call `row` ran."""

    __slots__ = ("fl", "kids", "pos", "sim", "overlay", "row", "result")

    def __init__(self, fl, row, kids, sim):
        self.fl = fl
        self.row = row
        self.kids = kids
        self.pos = 0
        self.sim = sim
        self.overlay: dict = {}  # (simulated) id(stream or generator) -> its progress
        self.result = None  # what the last exhausted generator returned (`yield from`)

    def take(self):
        if self.pos >= len(self.kids):
            raise Abort
        kid = self.kids[self.pos]
        self.pos += 1
        return kid

    def count(self, stream) -> int:
        return self.overlay.get(id(stream), stream.count) if self.sim else stream.count

    def set_count(self, stream, n) -> None:
        if self.sim:
            self.overlay[id(stream)] = n
        else:
            stream.count = n

    def guard_stop(self, op, ended) -> None:
        fl = self.fl
        fl.push(Guard(op, ended, "stop", where=fl.where(self.row),
                      source="(the iteration a builtin ran)"))


class GenStream:
    """A generator made on the tape: each item is its next activation, inlined."""

    python = True

    def __init__(self, gen_op):
        self.op = gen_op

    def has_c_map(self) -> bool:
        return False

    def ops(self):
        return []  # the flattener lists the generator itself when it starts it

    def next(self, run):
        fl = run.fl
        gen = self.op.value
        key = id(gen)
        real = fl._gen_states().get(key)
        if run.sim:
            st = run.overlay.get(key)
            if st is None:
                st = run.overlay[key] = [real is not None and real.started,
                                         real is not None and real.done]
            if st[1]:
                return STOPPED
            kid = run.take()
            if not fl.activation_ok(kid, gen.gi_code, first=not st[0]):
                raise Abort
            st[0] = True
            if fl.flags_[fl.t.children(kid)[-1]] & _YIELD:
                return fl.t.value(kid)
            st[1] = True
            run.result = fl.t.value(kid)
            return STOPPED
        if real is not None and real.done:
            return STOPPED
        kid = run.take()
        out, yielded = fl._activate(self.op, kid)
        if yielded:
            return _item(out)
        run.result = out
        return STOPPED


class SeqStream:
    """A list, tuple, range or array: `next()` of one `iter()` op made for it."""

    python = False

    def __init__(self, seq):
        self.seq = seq  # an op or the constant
        self.values = plain(seq)
        self.it = None
        self.count = 0

    def has_c_map(self) -> bool:
        return False

    def ops(self):
        return []

    def next(self, run):
        n = run.count(self)
        vals = self.values
        if run.sim:
            if n >= len(vals):
                return STOPPED
            run.set_count(self, n + 1)
            return vals[n]
        fl = run.fl
        if self.it is None:
            self.it = fl.push(Call(iter, (self.seq,), value=iter(vals)))
        if n >= len(vals):
            op = fl.push(Call(next, (self.it, STOP), value=STOP))
            run.guard_stop(op, True)
            return STOPPED
        run.set_count(self, n + 1)
        return fl.push(Call(next, (self.it,), value=vals[n]))


def _same(got, want) -> bool:
    return got is want or (type(got) is np.ndarray and type(want) is np.ndarray
                           and got.shape == want.shape)


class _Called:
    """A stream whose steps call a function: a Python one (its frame inlined) or a
    pure C one (math, operator, a numpy ufunc: the call is the op)."""

    def __init__(self, op, fn_ref, func):
        self.op = op  # the map/filter op
        self.fn_ref = fn_ref  # the function as the op passed it (an op or the constant)
        self.func = func
        self.python = isinstance(func, types.FunctionType)

    def call(self, run, args):
        fl = run.fl
        if not self.python:
            if run.sim:
                return self.func(*args)
            vals = [plain(a) for a in args]
            return fl.push(Call(self.fn_ref, tuple(args), value=self.func(*vals)))
        kid = run.take()
        sub = fl._started(kid, self.func)
        if sub is None:
            raise Abort
        n = fl._leading_args(sub)
        if run.sim:
            params = [fl.t.value(p) for p in sub[1:n]]
            if len(params) != len(args) or not all(_same(a, p) for a, p in zip(args, params)):
                raise Abort
            return fl.t.value(kid)
        fl.ref[sub[0]] = self.fn_ref if isinstance(self.fn_ref, Op) else Lit(self.fn_ref)
        bound = map_parameters(self.func.__code__, list(args), {})
        if bound is None:
            raise Abort
        return fl._inline(kid, sub, n, bound), kid


class MapStream(_Called):
    """`map(f, *streams)`."""

    def __init__(self, op, fn_ref, func, sources):
        super().__init__(op, fn_ref, func)
        self.sources = sources

    def has_c_map(self) -> bool:
        return not self.python or any(s.has_c_map() for s in self.sources)

    def ops(self):
        return [self.op] + [o for s in self.sources for o in s.ops()]

    def next(self, run):
        args = []
        for s in self.sources:
            a = s.next(run)
            if a is STOPPED:
                return STOPPED
            args.append(a)
        out = self.call(run, args)
        if self.python and not run.sim:
            out = _item(out[0])
        return out


class FilterStream(_Called):
    """`filter(p, stream)` with a Python `p`: its test of each item a guard."""

    def __init__(self, op, fn_ref, func, source):
        super().__init__(op, fn_ref, func)
        self.source = source

    def has_c_map(self) -> bool:
        return self.source.has_c_map()

    def ops(self):
        return [self.op] + self.source.ops()

    def next(self, run):
        fl = run.fl
        while True:
            a = self.source.next(run)
            if a is STOPPED:
                return STOPPED
            if run.sim:
                passed = bool(self.call(run, [a]))
            else:
                out, kid = self.call(run, [a])
                passed = bool(fl.t.value(kid))
                if isinstance(out, Op):
                    fl.push(Guard(out, passed, "truth", where=fl.where(run.row),
                                  source="(a filter's test)"))
            if passed:
                return a


class ZipStream:
    """`zip(*streams)`: the items of each in turn, up to the first exhausted."""

    python = False

    def __init__(self, op, sources):
        self.op = op
        self.sources = sources

    def has_c_map(self) -> bool:
        return any(s.has_c_map() for s in self.sources)

    def ops(self):
        return [self.op] + [o for s in self.sources for o in s.ops()]

    def next(self, run):
        items = []
        for s in self.sources:
            a = s.next(run)
            if a is STOPPED:
                return STOPPED
            items.append(a)
        if run.sim:
            return tuple(items)
        return run.fl.push(Call(tops.build_tuple, tuple(items),
                                value=tuple(plain(a) for a in items)))


class EnumStream:
    """`enumerate(stream, start)`: the count is a constant of the path."""

    python = False

    def __init__(self, op, source, start):
        self.op = op
        self.source = source
        self.start = start
        self.count = 0

    def has_c_map(self) -> bool:
        return self.source.has_c_map()

    def ops(self):
        return [self.op] + self.source.ops()

    def next(self, run):
        a = self.source.next(run)
        if a is STOPPED:
            return STOPPED
        n = run.count(self)
        run.set_count(self, n + 1)
        i = self.start + n
        if run.sim:
            return (i, a)
        return run.fl.push(Call(tops.build_tuple, (i, a), value=(i, plain(a))))
