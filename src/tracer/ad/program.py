"""A gradient program: which ops of a tape the reverse sweep visits, and its code.

From a tape (tracer.tapes) and the Input ops to differentiate, `build` finds the
ops on the path from those inputs to the result (forward reachability from the
inputs, then backward need from the result, in two passes over the tape's op ids),
checks that each has a rule, and records where each argument's adjoint goes.  The
sweep is then interpreted (tracer.ad.sweep) or, for a path that is reused,
generated as two Python functions:

- `forward(args, kwargs) -> (result, saved)`: the tape's ops on new arguments, with
  its guards (a GuardError when the new arguments take another path), returning the
  values the sweep reads;
- `backward(saved, seed) -> adjoints`: the reverse sweep, one statement per adjoint
  contribution, in reverse tape order.  An adjoint's first contribution is an
  assignment and later ones additions (known while generating, so the code never
  tests for a missing adjoint); float arguments use the rules' inline templates.

`first_state()` gives the values the trace itself recorded, so the first
gradient of a call runs the function once (a stochastic function is not re-run).
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import types

import numpy as np

from .. import api as _api
from .. import callables as tops
from ..tapes.guards import (GuardError, failing_test, guard_failure, raise_expected_failure,
                             unexpected_exception)
from ..tapes import helpers as tape_helpers
from ..tapes.helpers import STOP, make_binder
from ..tapes.ops import Call, Constant, Guard, Input
from . import adjoints, inplace, sweep
from .errors import NoRuleError, describe_callable
from .rules import lookup, positional

__all__ = ["GradientProgram", "build", "GuardError"]

# Calls that change a container in place: on the path they would be silently wrong.
_MUTATORS = frozenset((operator.setitem, operator.delitem, tops.list_extend, list.extend, list.insert, tops.setslice,
                       tops.map_add, tops.dict_update, tops.dict_merge, dict.update,
                       dict.__setitem__, list.__setitem__, setattr, tape_helpers.cell_set))
_SCALAR_TYPES = (float, int)
_DICT_MERGES = (tops.dict_merge, tops.dict_update)  # into a dict the program just made
_INSTRUCTION_MODULES = (tops.__name__, "tracer.tapes.helpers")
_INLINE_GLOBALS = {"cos_": math.cos, "sin_": math.sin, "cosh_": math.cosh,
                   "sinh_": math.sinh, "sqrt_": math.sqrt, "exp_": math.exp}


def _log_(x):
    return math.log(x) if x > 0 else 0.0  # only reached for a float exponent's adjoint


class GradientProgram:
    """The gradient of one tape (one path): its analysis, swept by an interpreter
    (tracer.ad.sweep) until the path has been used `COMPILE_AFTER` times more, then
    by generated Python code (`compile()`: CPython compiles a long function at
    about 25-40 µs per line, which pays off only for a path that is reused)."""

    __no_adjoint__ = True  # a program carries no differentiated value (higher order)

    def __init__(self, analysis):
        self.analysis = analysis
        self.tape = analysis.tape
        self.inputs = analysis.inputs  # the Input ops differentiated, in the caller's order
        self.hits = 0                  # calls that took this path after it was traced
        self.items = [None] * len(self.inputs)  # per input: its item of a *args tuple
        self._forward = None
        self._backward = None
        self._source = None

    @property
    def compiled(self) -> bool:
        return self._forward is not None

    @property
    def source(self) -> str:
        """The generated forward and backward functions (generated on first use)."""
        if self._source is None:
            self._source = self.analysis.source()
        return self._source

    def compile(self) -> None:
        """Generate and compile the forward and backward functions."""
        if self._forward is None:
            self._forward, self._backward = self.analysis.compile(self.source)

    def forward(self, args, kwargs):
        """`(result, state)` for new arguments, checking the guards (GuardError)."""
        if self._forward is not None:
            return self._forward(args, kwargs)
        return sweep.play(self.analysis, args, kwargs)

    def backward(self, state, seed):
        """The raw adjoints of the inputs, from a forward `state` and the seed."""
        if type(state) is sweep.Values:
            raw = sweep.backward(self.analysis, state, seed)
        else:
            raw = self._backward(state, seed)
        if not any(i is not None for i in self.items):
            return raw
        # Arguments passed into a *args parameter: their items of its adjoint.
        return tuple(r if i is None else adjoints.seq_get(r, i, op.value[i])
                     for r, i, op in zip(raw, self.items, self.inputs))

    def first_state(self, value, args, kwargs):
        """`(value, state)` for the call just traced: the values the trace recorded
        (the function is not re-run), unless in-place updates were rewritten (then
        the forward runs on the arguments: see tracer.ad.inplace)."""
        if self.analysis.rerun:
            return self.forward(args, kwargs)
        return value, sweep.recorded(self.analysis)


def _nested_vjp(vjp_positions, fn, args, positions, kwargs=None):
    """`vjp_positions(fn, args, positions)` (tracer.ad.api's, passed in: a nested
    call is differentiated as a call of its own)."""
    if not isinstance(fn, (types.FunctionType, types.MethodType)):
        # An instance with a Python __call__: trace the method (a call of the instance
        # itself enters its frame from C, which the tape keeps as one op).
        fn = types.MethodType(type(fn).__call__, fn)
    return vjp_positions(fn, args, positions, kwargs)


def _is_scalar(v) -> bool:
    return isinstance(v, _SCALAR_TYPES) and not isinstance(v, bool) or (
        isinstance(v, np.floating))


def _is_python_callable(fn) -> bool:
    """Whether calling `fn` runs Python code we can trace (no rule needed)."""
    if isinstance(fn, (types.FunctionType, types.MethodType)):
        # The tape's own instruction callables are primitives: they need rules.
        return getattr(fn, "__module__", "") not in _INSTRUCTION_MODULES
    if isinstance(fn, (types.BuiltinFunctionType, types.BuiltinMethodType, np.ufunc,
                       types.MethodDescriptorType, types.WrapperDescriptorType,
                       types.MethodWrapperType, types.ClassMethodDescriptorType, type)):
        return False
    call = getattr(type(fn), "__call__", None)
    return isinstance(call, types.FunctionType)


def build(tape, inputs, vjp_positions, literals=frozenset(), locate=None) -> GradientProgram:
    """The gradient program of `tape` with respect to Input ops `inputs`.

    `literals`: ids of the code constants of the traced code: a constant argument
    that is one of them is a literal, never a differentiated value read as a
    constant (CPython shares equal float constants between code objects, so a
    literal `1.0` may be the very object passed as an argument).  `vjp_positions`
    differentiates a call of Python code the tape kept as one op (tracer.ad.api's).
    `locate(op)` finds where an op was recorded, for errors (the tape keeps it only
    for ops that raised)."""
    b = _Builder(tape, inputs, vjp_positions, literals)
    b.locate = locate
    return b.run()


class _Builder:
    """One tape's analysis (masks, adjoint targets, item indexes) and its code."""

    def __init__(self, tape, inputs, vjp_positions, literals=frozenset()):
        self.tape = tape
        self.vjp = vjp_positions
        self.literals = literals
        self.inputs = list(inputs)
        self.ops = tape.ops
        n = len(self.ops)
        self.active = [False] * (n + 1)   # forward-reachable from the inputs, by op id
        self.needed = [False] * (n + 1)   # the result depends on it (among active ops)
        self.target: dict[int, dict[int, int]] = {}  # op id -> {arg position: adjoint op id}
        self.index: dict[int, int] = {}   # next()/append op id -> the item index it reads
        self.extent: dict[int, int | None] = {}  # extend op id -> how many items it added
        self.globals: dict = {"STOP": STOP, "fail_": guard_failure,
                              "add_": _add, "seq_item_": adjoints.seq_item,
                              "seq_get_": adjoints.seq_get, "seq_part_": adjoints.seq_part,
                              "seq_drop_": adjoints.seq_drop, "seq_keys_": adjoints.seq_keys,
                              "nz_": _nonzero,
                              "log_": _log_, **_INLINE_GLOBALS}
        self.globals["nested_"] = lambda fn, args, positions, kwargs=None: _nested_vjp(
            vjp_positions, fn, args, positions, kwargs)
        self.nested: dict = {}  # Call op -> (its callable from the op, positions)
        self.alias: dict[int, int] = {}  # frozen Constant op id -> the op it is
        self.locate = None  # op -> Where, for errors (see build)
        self.rerun = False  # in-place updates were rewritten (see run)
        self.fixed: dict[int, object] = {}  # Call op id -> the primitive its fn op was
        self._list_uses: dict | None = None  # id(list) -> the callables it is passed to

    # -- analysis ------------------------------------------------------------------------
    def run(self) -> GradientProgram:
        # In-place array updates become functional ops; the recorded values are then
        # not the forward's (an array read before a change was recorded after it).
        self.rerun = inplace.rewrite(self.ops)
        self._forward_mask()
        self._backward_mask()
        self._check_rules()
        return GradientProgram(self)

    def nested_vjp(self, fn, args, positions, kwargs=None):
        return _nested_vjp(self.vjp, fn, args, positions, kwargs)

    def source(self) -> str:
        fwd_src, saved = self._forward_source()
        return fwd_src + "\n\n" + self._backward_source(saved)

    def compile(self, source):
        """(forward, backward): the generated functions of `source`."""
        glb = dict(self.globals)
        exec(compile(source, f"<gradient of {self._name()}>", "exec"), glb)
        return glb["forward_"], glb["backward_"]

    def _name(self) -> str:
        return getattr(self.tape.func, "__qualname__", "f")

    def where(self, op):
        """Where `op` was recorded (code, offset, line), for an error message."""
        if op.where is None and self.locate is not None:
            op.where = self.locate(op)
        return op.where

    def _forward_mask(self) -> None:
        active = self.active
        # `touched`: reached from the inputs through any value, differentiable or not
        # (a closure, a generator, an object made from them).  A float or array that
        # is touched but not active would silently get no adjoint: that is an error.
        touched = [False] * (len(self.ops) + 1)
        # Values read as constants (closure cells, frozen values) that are the very
        # object an active op produced are that op's result: id(value) -> op id.
        produced: dict[int, int] = {}
        # An input's object existed before the call: a constant that is the same
        # object (a global, a default) did not come from it, so inputs are not in
        # `produced` (values are differentiated by where they came from).
        for op in self.inputs:
            active[op.id] = touched[op.id] = adjoints.is_differentiable(op.value)
        input_ids = {id(op.value) for op in self.inputs}
        version: dict[int, int] = {}   # a list op -> the op of its latest append
        count: dict[int, int] = {}     # a list or iterator op -> items appended / read
        # A generator, map or filter whose iteration the tape inlined: its items are
        # the inlined ops', the object itself carries nothing further.
        inlined = {id(op) for op in getattr(self.tape, "inlined_iterables", ())}
        for op in self.ops:
            cls = type(op)
            k = op.id
            if inlined and id(op) in inlined:
                continue
            if cls is Constant and op.frozen and produced:
                src = produced.get(id(op.value))
                if src is not None and self.ops[src - 1].value is op.value:
                    self.alias[k] = src
                    active[k] = touched[k] = True
                    self.target[k] = {0: src}
                continue
            if cls is not Call:
                continue
            if produced:
                self._link_constants(op, produced)
            fn = op.fn
            if _is_append(fn) and len(op.args) == 2 and _is_op(op.args[0]):
                self._append(op, version, count)
                touched[k] = active[k]
                continue
            if fn is tops.map_add and len(op.args) == 3 and _is_op(op.args[0]):
                self._map_add(op, version)
                touched[k] = active[k]
                continue
            if fn in _DICT_MERGES and len(op.args) == 2 and _is_op(op.args[0]) \
                    and type(op.args[0]) is Call and op.args[0].fn in (tops.build_dict, tops.build_const_key_map):
                self._dict_merge(op, version)
                touched[k] = active[k]
                continue
            if _is_op(fn) and type(fn) is Call and fn.fn is functools.partial \
                    and not fn.star and fn.args and type(fn.value) is functools.partial:
                # Calling a partial made on the tape: the call of its function it makes.
                maker = fn
                op.fn = fn = maker.args[0]
                op.args = tuple(maker.args[1:]) + tuple(op.args)
                op.kwargs = {**maker.kwargs, **op.kwargs}
            if op.kwargs and not _is_op(fn):
                r = lookup(fn)
                if r is not None and r.signature is not None:
                    # numpy's keywords by position: the same call, read by the rule
                    op.args, op.kwargs = positional(r, op.args, op.kwargs)
            if op.kwargs and isinstance(fn.value if _is_op(fn) else fn, types.FunctionType) \
                    and lookup(fn.value if _is_op(fn) else fn) is None:
                # Python code called with keywords (differentiated as a call of its
                # own): those that can be passed by position are.
                op.args, op.kwargs = _bind_positional(fn.value if _is_op(fn) else fn,
                                                      op.args, op.kwargs)
            targets = {}
            hit = False
            for i, a in enumerate(op.args):
                if _is_op(a):
                    t = version.get(a.id, a.id)
                    targets[i] = t
                    hit = hit or active[t]
            for name, a in op.kwargs.items():
                if fn is functools.partial:
                    break  # made, not called: its calls are its function's (above)
                if _is_op(a) and active[version.get(a.id, a.id)]:
                    r = None if _is_op(fn) else lookup(fn)
                    if r is None or r.pullback(name) is None:
                        raise NoRuleError(fn, self.where(op), note=f"Its keyword argument "
                                          f"{name}= is differentiated; pass it positionally.")
                    targets[name] = version.get(a.id, a.id)
                    hit = True
            reached = hit or any(touched[r.id] for r in op.refs())
            if not reached:
                continue
            if _is_op(fn) and touched[fn.id] and _is_generator_function(fn.value):
                raise NoRuleError(fn.value, self.where(op), message=_GENERATOR_REFUSED)
            if _is_op(fn) and touched[fn.id]:
                raise NoRuleError(fn.value, self.where(op), message="the function called is "
                                  "made from a differentiated value (a closure or bound "
                                  "method of it, called from C code); call it directly.")
            if not hit:
                if adjoints.is_differentiable(op.value):
                    raise NoRuleError(fn, self.where(op), message=(
                        "its result depends on a differentiated value through a "
                        "generator, closure or object made from it, which is not "
                        "differentiated (use a list comprehension instead of a generator "
                        "expression, or pass the value as an argument)."))
                touched[k] = _carries(op.value)
                continue
            if _is_mutator(fn):
                raise NoRuleError(fn, self.where(op), note="It changes a container in place with "
                                  "a differentiated value, which is not supported.")
            if not _is_python_callable(fn):
                self._refuse_output_argument(op, active)
            if op.star and (lookup(fn.value if _is_op(fn) else fn) is None
                            or _is_op(fn) and active[fn.id]):
                # (A primitive taken out of a container, `f(*args)` of vjp(f, *args):
                # its rule, while the same function is passed; see _check_rules.)
                raise NoRuleError(fn, self.where(op), note="It is called as f(*args) with a "
                                  "differentiated value, which is not supported.")
            if op.star and len(op.args) > 1 and 1 in targets and active[targets[1]]:
                raise NoRuleError(fn, self.where(op), message="a differentiated value is passed "
                                  "to it in **kwargs; pass it positionally.")
            if fn is next and op.args and _is_op(op.args[0]):
                it = op.args[0].id
                self.index[k] = count.get(it, 0)
                count[it] = self.index[k] + 1
            if adjoints.is_differentiable(op.value):
                active[k] = touched[k] = True
                self.target[k] = targets
                v = op.value
                # A call that returned its argument's object (np.asarray(x) is x) did
                # not produce it: a constant that is that object is not its result.
                # Nor did one that took an input's object out of a container
                # (`p_[0]` of the binder's tuple in a gradient's generated code).
                if isinstance(v, (float, np.ndarray)) and not any(
                        (a.value if _is_op(a) else a) is v for a in op.args) \
                        and id(v) not in input_ids:
                    produced[id(v)] = k
            else:
                touched[k] = _carries(op.value)

    def _refuse_output_argument(self, op, active) -> None:
        """A C call given a differentiated value and an array, list or dict it may
        write into (it returns None, or returns that very argument: numpy's `out`)
        would lose the value: later reads of the container do not see it."""
        v = op.value
        for i, a in enumerate(op.args):
            if not _is_op(a) or active[a.id] and v is None:
                continue
            if isinstance(a.value, (np.ndarray, list, dict)) and (
                    v is None or i > 0 and a.value is v and _is_numpy(op.fn)):
                raise NoRuleError(op.fn, self.where(op), message=f"it is given a "
                                  f"differentiated value and may write it into its "
                                  f"argument {i} (a {type(a.value).__name__}), which the "
                                  "gradient would not see; use the function's result.")

    def _link_constants(self, op, produced) -> None:
        """Replace constant arguments that are an active op's very value by that op."""
        args = op.args
        for i, a in enumerate(args):
            if isinstance(a, (float, np.ndarray)) and id(a) not in self.literals:
                src = produced.get(id(a))
                if src is not None and self.ops[src - 1].value is a:
                    args = args[:i] + (self.ops[src - 1],) + args[i + 1:]
        op.args = args

    def _append(self, op, version, count) -> None:
        """`lst.append(item)` makes a new version of the list: later reads of the list
        send their adjoint to this op, which passes item `index`'s adjoint to `item`.
        `lst.extend(items)` passes items `index ..` on to `items`, whose length is
        known when it is a tuple or a list this tape built and tracks (a list's
        value is its final state, not its state at the call)."""
        k = op.id
        lst, item = op.args
        prev = version.get(lst.id, lst.id)
        item_t = version.get(item.id, item.id) if _is_op(item) else 0
        if lst.id not in count:
            count[lst.id] = _list_length(lst, count)
        index = count[lst.id]
        n = 1
        if _is_extend(op.fn):
            n = self._extent(item, count)
            self.extent[k] = n
        if index is not None:
            count[lst.id] = None if n is None else index + n
        version[lst.id] = k
        if not (self.active[prev] or item_t and self.active[item_t]):
            return
        if index is None or n is None:
            raise NoRuleError(op.fn, self.where(op), note="Appending a differentiated value to a "
                              "list the function did not build itself, or extending a list "
                              "with an iterator, is not supported.")
        self.index[k] = index
        self.active[k] = True
        self.target[k] = {0: prev, 1: item_t}

    def _map_add(self, op, version) -> None:
        """A dict comprehension's store `d[key] = value` makes a new version of `d`
        (nothing reads a comprehension's dict before it is complete): later reads
        send their adjoint here, which passes item `key`'s on to `value`."""
        k = op.id
        d, key, value = op.args
        prev = version.get(d.id, d.id)
        value_t = version.get(value.id, value.id) if _is_op(value) else 0
        version[d.id] = k
        if _is_op(key) and self.active[key.id]:
            raise NoRuleError(op.fn, self.where(op), message="a differentiated dict key")
        if self.active[prev] or value_t and self.active[value_t]:
            self.active[k] = True
            self.target[k] = {0: prev, 2: value_t}

    def _dict_merge(self, op, version) -> None:
        """`f(**m)` / `{**m}`: a dict the program made takes the items of `m` (a new
        version of it, as for map_add): its later adjoint gives m's keys to m."""
        k = op.id
        d, m = op.args
        prev = version.get(d.id, d.id)
        m_t = version.get(m.id, m.id) if _is_op(m) else 0
        version[d.id] = k
        if self.active[prev] or m_t and self.active[m_t]:
            self.active[k] = True
            self.target[k] = {0: prev, 1: m_t}

    def _extent(self, item, count):
        """How many items `lst.extend(item)` added, or None if that is not known."""
        if not _is_op(item):
            return _length(item)
        if item.id in count:
            return count[item.id]
        if type(item.value) is tuple:
            return len(item.value)
        if type(item) is Call and item.fn is tops.build_list and not item.star:
            return len(item.args)  # never appended to (it would be in count)
        if type(item.value) is list:
            for key, n in count.items():
                # The same list object read back out of a container (a tuple a
                # helper returned): the items its appends so far put in it.
                if n is not None and self.ops[key - 1].value is item.value:
                    return n
            if self._only_read(item.value):
                return len(item.value)  # its recorded state is its state at every op
        return None

    def _only_read(self, lst) -> bool:
        """Whether list object `lst` is passed to no op of the tape but readers (so
        its recorded value, its final state, is its state wherever it is read)."""
        uses = self._list_uses
        if uses is None:
            uses = self._list_uses = {}
            for op in self.ops:
                if type(op) is not Call:
                    continue
                fn = op.fn.value if _is_op(op.fn) else op.fn
                for i, a in enumerate(list(op.args) + list(op.kwargs.values())):
                    v = a.value if _is_op(a) else a
                    if type(v) is list:
                        # extend changes its first argument, reads its second
                        uses.setdefault(id(v), set()).add(
                            None if i == 0 and _is_extend(fn) else _hashable_or_none(fn))
        return uses.get(id(lst), set()) <= _LIST_READERS

    def _backward_mask(self) -> None:
        res = self.tape.result
        if res is None or not self.active[res.id]:
            return
        needed, active = self.needed, self.active
        needed[res.id] = True
        for op in reversed(self.ops):
            k = op.id
            if not needed[k] or type(op) not in (Call, Constant):
                continue
            r = self.rule_of(op) if type(op) is Call else None
            for i, t in self.target.get(k, {}).items():
                if t and active[t] and (r is None or r.differentiable(i)):
                    needed[t] = True

    def rule_of(self, op):
        """The rule of Call `op`'s function (a function passed as a value included)."""
        fn = op.fn
        return lookup(fn.value if _is_op(fn) else fn)

    def on_path(self, k: int) -> bool:
        return self.active[k] and self.needed[k]

    def _check_rules(self) -> None:
        for op in self.ops:
            if type(op) is not Call or not self.on_path(op.id):
                continue
            fn = op.fn
            if _is_append(fn) or fn is next or fn is tops.map_add or fn in _DICT_MERGES:
                continue
            if self.rule_of(op) is None:
                self._refuse_generator(op)
            if _is_op(fn):
                rule = lookup(fn.value)
                if rule is not None and not self.active[fn.id]:
                    # A primitive passed as a value (`def f(x, red=np.sum)`): its
                    # rule, while the value is the same function (checked forward).
                    self.fixed[op.id] = fn.value
                    self._check_coverage(op, rule)
                    continue
                if not _is_python_callable(fn.value):
                    raise NoRuleError(fn.value, self.where(op))
                self._nest(op, lambda call: call.fn.value)
                continue
            rule = lookup(fn)
            if rule is not None:
                self._check_coverage(op, rule)
                continue
            if _is_python_callable(fn):
                self._nest(op, lambda call: call.fn)
                continue
            raise NoRuleError(fn, self.where(op))

    def _refuse_generator(self, op) -> None:
        """A generator made on the path (a generator expression a builtin consumes,
        `map` over a Python function): say what to write instead."""
        for a in (op.fn, *op.args, op):
            v = a.value if _is_op(a) else a
            if isinstance(v, (types.GeneratorType, map, filter)) or _is_generator_function(v):
                raise NoRuleError(op.fn, self.where(op), message=_GENERATOR_REFUSED)

    def _check_coverage(self, op, rule) -> None:
        """A rule that does not cover a keyword of the call, or gives no adjoint to a
        differentiated argument, refuses the call (never ignores the part)."""
        if op.star:
            kw = op.args[1] if len(op.args) > 1 else {}
            bad = rule.unknown_keywords(kw.value if _is_op(kw) else kw)
            if bad:
                raise NoRuleError(op.fn, self.where(op), message="its rule does not cover the "
                                  f"keyword arguments {', '.join(b + '=' for b in bad)}")
            return
        bad = rule.unknown_keywords(op.kwargs)
        if bad:
            raise NoRuleError(op.fn, self.where(op), message="its rule does not cover the "
                              f"keyword argument{'s' if len(bad) > 1 else ''} "
                              f"{', '.join(b + '=' for b in bad)} of this call "
                              f"(replace the rule with @tracer.rule({describe_callable(op.fn)})"
                              " taking **kwargs, or pass them positionally if it covers "
                              "them so).")
        for i, t in self.target.get(op.id, {}).items():
            if t and self.active[t] and not rule.differentiable(i) \
                    and _holds_float(self.ops[t - 1].value):
                raise NoRuleError(op.fn, self.where(op), message=f"its argument {i} is "
                                  "differentiated, and its rule gives that argument no "
                                  "adjoint (replace the rule with @tracer.rule("
                                  f"{describe_callable(op.fn)}) returning one).")

    def _nest(self, op, get_fn) -> None:
        positions = tuple(i for i, t in self.target[op.id].items() if t and self.active[t])
        self.nested[op] = (get_fn, positions)

    # -- code ----------------------------------------------------------------------------
    def const(self, value) -> str:
        t = type(value)
        if t in (int, bool, str, type(None)) or t is float and math.isfinite(value):
            text = repr(value)
            return f"({text})" if text.startswith("-") else text
        if value is STOP:
            return "STOP"
        label = getattr(value, "__name__", None)
        label = label if isinstance(label, str) and label.isidentifier() else "k"
        name = f"{label.strip('_')}_{len(self.globals)}"
        self.globals[name] = value
        return name

    def ref(self, a) -> str:
        return f"v_{a.id}" if _is_op(a) else self.const(a)

    def _forward_source(self):
        tape = self.tape
        lines = ["def forward_(args_, kwargs_):"]
        emit = lines.append
        func = tape.signature_of
        inputs = [op for op in tape.ops if type(op) is Input]
        if func is None:
            emit("    p_ = tuple(args_) + tuple(kwargs_.values()) if kwargs_ else tuple(args_)")
        else:
            prefix = ""
            target = func
            if isinstance(func, types.MethodType):
                self.globals["self_"] = func.__self__
                prefix, target = "self_, ", func.__func__
            self.globals["binder_"] = make_binder(target)
            # Without keywords, no **: an outer gradient follows *args_ item by item.
            emit(f"    p_ = binder_({prefix}*args_, **kwargs_) if kwargs_ else "
                 f"binder_({prefix}*args_)")
        for op in inputs:
            if op.position == 0:
                emit(f"    v_{op.id} = {self.const(op.value)}")
            else:
                emit(f"    v_{op.id} = p_[{op.position - 1}]")
        for op in tape.ops:
            cls = type(op)
            if cls is Constant:
                src = self.alias.get(op.id)
                emit(f"    v_{op.id} = " + (f"v_{src}" if src else self.const(op.value)))
            elif cls is Guard:
                c = self.ref(op.condition)
                emit(f"    if {failing_test(op, c)}:")
                emit(f"        raise fail_({self.const(op)}, {c})")
            elif cls is Call:
                emit("    " + self._call_line(op))
        saved = self._saved()
        names = [f"pb_{k}" if pb else f"v_{k}" for k, pb in saved]
        result = self.ref(tape.result) if tape.result is not None else "None"
        if tape.raises:
            emit(f"    raise {result}")
        emit(f"    return {result}, ({''.join(n + ', ' for n in names)})")
        return "\n".join(lines), saved

    def _call_line(self, op: Call) -> str:
        k = op.id
        if op in self.nested:
            get_fn, positions = self.nested[op]
            fn = self.ref(op.fn)
            args = "".join(self.ref(a) + ", " for a in op.args)
            kw = ", ".join(f"{name!r}: {self.ref(v)}" for name, v in op.kwargs.items())
            return f"v_{k}, pb_{k} = nested_({fn}, ({args}), {positions!r}, {{{kw}}})"
        fn = self.ref(op.fn)
        if k in self.fixed:  # the function passed must be the one whose rule is used
            self.globals["GuardError_"] = GuardError
            check = (f"if {fn} is not {self.const(self.fixed[k])}: raise GuardError_("
                     f"{'another function was passed than the one traced'!r})\n    ")
        else:
            check = ""
        if op.star:
            parts = [f"*{self.ref(op.args[0])}"]
            if len(op.args) > 1:
                parts.append(f"**{self.ref(op.args[1])}")
        else:
            parts = [self.ref(a) for a in op.args]
            parts += [f"{name}={self.ref(v)}" for name, v in op.kwargs.items()]
        call = f"v_{k} = {fn}({', '.join(parts)})"
        if op.raises:
            # It raised while tracing: its exception is the value (a handler reads
            # it); not raising now is a guard failure (tracer.tapes.play.evaluate).
            # Plain code, no op objects passed at run time: an outer gradient's
            # tape follows it like any other code.
            self.globals["expected_"] = raise_expected_failure
            return (f"{check}try:\n        {call}\n    except BaseException as e_:\n"
                    f"        v_{k} = e_\n    else:\n        raise expected_({self.const(op)})")
        if op.handled:
            # Inside a handler of the traced code, and it did not raise: raising now
            # is a guard failure (as tracer.tapes.play.evaluate says), written as
            # plain code so that an outer gradient follows the call itself.
            self.globals["unexpected_"] = unexpected_exception
            return (f"{check}try:\n        {call}\n    except Exception as e_:\n"
                    f"        raise unexpected_({self.const(op)}, e_) from e_")
        return check + call

    def _saved(self):
        """(op id, is a nested pullback) for every value the sweep reads, in order."""
        want: dict[tuple[int, bool], None] = {}
        for op in self.ops:
            if type(op) is not Call or not self.on_path(op.id):
                continue
            if op in self.nested:
                want[(op.id, True)] = None
                continue
            want[(op.id, False)] = None
            for a in list(op.args) + list(op.kwargs.values()):
                if _is_op(a):
                    want[(a.id, False)] = None
        for op in self.inputs:
            want[(op.id, False)] = None
        return sorted(want)

    def _backward_source(self, saved) -> str:
        lines = ["def backward_(saved_, seed_):"]
        emit = lines.append
        names = [f"pb_{k}" if pb else f"v_{k}" for k, pb in saved]
        if names:
            emit(f"    ({''.join(n + ', ' for n in names)}) = saved_")
        has: set[int] = set()
        res = self.tape.result
        if res is not None and self.on_path(res.id):
            emit(f"    g_{res.id} = seed_")
            has.add(res.id)
        for op in reversed(self.ops):
            k = op.id
            if k not in has or not self.on_path(k):
                continue
            if type(op) is Constant and k in self.alias:
                pairs = [(self.alias[k], f"g_{k}")]
            elif type(op) is Call:
                pairs = self._contributions(op, emit)
            else:
                continue
            for target, expr in pairs:
                if not self.on_path(target):
                    continue
                if target in has:
                    tv = self.ops[target - 1].value
                    if isinstance(tv, (float, np.ndarray)) or _is_scalar(tv):
                        emit(f"    g_{target} = g_{target} + {expr}")
                    else:
                        emit(f"    g_{target} = add_(g_{target}, {expr})")
                else:
                    emit(f"    g_{target} = {expr}")
                    has.add(target)
        outs = [f"g_{op.id}" if op.id in has else "None" for op in self.inputs]
        emit(f"    return ({''.join(o + ', ' for o in outs)})")
        return "\n".join(lines)

    def _contributions(self, op: Call, emit):
        """(adjoint op id, expression) for each argument of `op` on the path."""
        k = op.id
        g = f"g_{k}"
        targets = self.target.get(k, {})
        fn = op.fn
        if _is_append(fn):
            out = [(targets[0], g)]
            if targets.get(1):
                if _is_extend(fn):
                    out.append((targets[1], f"seq_part_({g}, {self.index[k]}, {self.extent[k]})"))
                else:
                    out.append((targets[1], f"seq_get_({g}, {self.index[k]}, {self.ref(op.args[1])})"))
            return out
        if fn is next:
            return [(targets[0], f"seq_item_({g}, {self.index[k]})")]
        if fn in _DICT_MERGES:
            m = self.ref(op.args[1])
            out = [(targets[0], f"seq_keys_({g}, {m}, False)")]
            if targets.get(1):
                out.append((targets[1], f"seq_keys_({g}, {m}, True)"))
            return out
        if fn is tops.map_add:
            key, value = self.ref(op.args[1]), self.ref(op.args[2])
            out = [(targets[0], f"seq_drop_({g}, {key})")]
            if targets.get(2):
                out.append((targets[2], f"seq_get_({g}, {key}, {value})"))
            return out
        if op in self.nested:
            _, positions = self.nested[op]
            emit(f"    t_{k} = pb_{k}({g})")
            return [(targets[i], f"t_{k}[{j}]") for j, i in enumerate(positions)]
        rule = self.rule_of(op)
        assert rule is not None  # _check_rules made sure of it
        if op.star:  # fn(*seq, **kw): the adjoint of seq, item by item
            self.globals["star_pb_"] = sweep.star_adjoint
            kw = self.ref(op.args[1]) if len(op.args) > 1 else "{}"
            return [(targets[0], f"star_pb_({self.const(rule)}, {g}, v_{k}, "
                                 f"{self.ref(op.args[0])}, {kw})")]
        args = [self.ref(a) for a in op.args]
        kw = "".join(f", {name}={self.ref(v)}" for name, v in op.kwargs.items())
        out = []
        if rule.full is not None:
            name = self.const(rule.full)
            emit(f"    t_{k} = {name}({g}, v_{k}{''.join(', ' + x for x in args)}{kw})")
            for i, t in targets.items():
                if t and self.active[t] and not isinstance(i, str):
                    out.append((t, f"nz_(t_{k}[{i}], {args[i]})"))
            return out
        scalar = (not op.kwargs and _is_scalar(op.value)
                  and rule.template_arity in (None, len(op.args))
                  and all(not _is_op(a) or _is_scalar(a.value) for a in op.args))
        for i, t in targets.items():
            if not t or not self.active[t]:
                continue
            tpl = rule.templates.get(i) if scalar and not isinstance(i, str) else None
            if tpl:
                out.append((t, "(" + tpl.format(*args, g=g, ans=f"v_{k}") + ")"))
                continue
            pb = rule.pullback(i)
            if pb is None:
                continue
            name = self.const(pb)
            out.append((t, f"{name}({g}, v_{k}{''.join(', ' + x for x in args)}{kw})"))
        return out


_DATA_TYPES = (bool, int, str, bytes, type(None), range, type(STOP))


_GENERATOR_REFUSED = (
    "a generator, map or filter over a differentiated value is differentiated when "
    "next(), for loops, `yield from` or sum, math.fsum, list, tuple, min, max, sorted, "
    "functools.reduce take its items, directly or through map, filter, zip and "
    "enumerate (over generators, lists, tuples, ranges and arrays), not when another C "
    "function (a key function, itertools, np.fromiter, a value sent in, ...) resumes "
    "it; write a list comprehension instead: sum([x * x for x in xs]).")


def _carries(v) -> bool:
    """Whether a non-differentiable value can still carry a differentiated one
    (a closure, a generator, an object), rather than being plain data (an int, a
    bool, a str: what comparisons, len() and the like give)."""
    if isinstance(v, _DATA_TYPES) or isinstance(v, (np.integer, np.bool_, np.dtype)) \
            or getattr(type(v), "__no_adjoint__", False):
        return False
    if isinstance(v, np.ndarray):
        return False
    if type(v) is tuple:  # a shape or an index
        return any(_carries(x) or adjoints.is_differentiable(x) for x in v)
    return not _plain_callable(v)


_DISPATCHER = type(np.sum)  # numpy's array-function dispatchers


def _bind_positional(f, args, kwargs):
    """`(args, kwargs)` of a call of Python function `f` with the keywords that can
    be passed by position moved there (as Python binds them)."""
    try:
        bound = inspect.signature(f).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return args, kwargs
    return tuple(bound.args), dict(bound.kwargs)


def _is_generator_function(f) -> bool:
    code = getattr(f, "__code__", None)
    return code is not None and bool(code.co_flags & (inspect.CO_GENERATOR |
                                                      inspect.CO_ASYNC_GENERATOR))


def _is_numpy(fn) -> bool:
    """A numpy function or ufunc (whose `out` argument is its result)."""
    return isinstance(fn, np.ufunc) or (getattr(fn, "__module__", None) or "").startswith(
        "numpy")


def _plain_callable(v) -> bool:
    """A function that holds no value of the run: no closure, defaults or bound
    object (np.sum, math.sin, a module-level function taken out of a tuple)."""
    if isinstance(v, types.FunctionType):
        return v.__closure__ is None and not v.__defaults__ and not v.__kwdefaults__
    if isinstance(v, (np.ufunc, type, _DISPATCHER)):
        return True
    if isinstance(v, types.BuiltinFunctionType):
        owner = v.__self__
        return owner is None or isinstance(owner, types.ModuleType)
    return False


def _is_append(fn) -> bool:
    """`lst.append(x)` or `lst.extend(xs)`: a new version of a list (see _append)."""
    return fn is tops.list_append or fn is list.append or fn is tops.list_extend \
        or fn is list.extend


def _holds_float(v, depth=0) -> bool:
    """Whether `v` holds a float or a float array anywhere (`axes=[(1,), (0,)]`
    taken out of a differentiated container does not: it has no adjoint to give)."""
    if type(v) in (list, tuple):
        return depth > 8 or any(_holds_float(x, depth + 1) for x in v)
    if type(v) is dict:
        return depth > 8 or any(_holds_float(x, depth + 1) for x in v.values())
    if type(v) is slice or v is Ellipsis:
        return False
    return adjoints.is_differentiable(v)


def _hashable_or_none(fn):
    try:
        hash(fn)
    except TypeError:
        return None
    return fn


# Callables that read a list without changing it (the second argument of extend
# included: `a.extend(b)` changes a, not b).
_LIST_READERS = frozenset((tops.list_extend, list.extend, len, iter, tuple, operator.getitem,
                           tops.build_tuple, tops.build_list, tape_helpers.unpack_sequence))


def _list_length(lst, count):
    """How many items list op `lst` holds at this point of the tape: tracked in
    `count` (appends), known from `[...]`, or from the list an item store copied
    (tracer.ad.inplace.stored_item: a store keeps the length); None if unknown."""
    src = lst
    while src.id not in count and type(src) is Call and src.fn is inplace.stored_item \
            and _is_op(src.args[0]):
        src = src.args[0]
    if src.id in count:
        return count[src.id]
    if type(src) is Call and src.fn is tops.build_list and not src.star:
        return len(src.args)
    return None


def _is_extend(fn) -> bool:
    return fn is tops.list_extend or fn is list.extend


def _length(v):
    """How many items extending a list with `v` adds (None: not known without
    consuming it)."""
    return len(v) if isinstance(v, (list, tuple, dict, str, range)) else None


# numpy functions that write into an array argument (their result is None): a
# differentiated value stored so would be lost without an error.
_NUMPY_WRITERS = frozenset((np.copyto, np.put, np.put_along_axis, np.place, np.putmask,
                            np.fill_diagonal, np.ndarray.fill, np.ndarray.put,
                            np.ndarray.sort, np.ndarray.partition, np.ndarray.resize,
                            np.ndarray.setfield, np.ndarray.__setitem__, np.ufunc.at))


def _is_mutator(fn) -> bool:
    try:
        if fn in _MUTATORS or fn in _NUMPY_WRITERS:
            return True
    except TypeError:  # unhashable
        return False
    # A ufunc's `at` method (np.add.at(out, index, values)) writes into `out`.
    return getattr(fn, "__name__", None) == "at" and isinstance(
        getattr(fn, "__self__", None), np.ufunc)


def is_mutator(fn) -> bool:
    """Whether `fn` stores a value into a container in place (`append` included)."""
    return _is_append(fn) or _is_mutator(fn)


def _is_op(a) -> bool:
    return isinstance(a, (Call, Input, Constant))


def _add(a, b):
    """Adjoint addition in generated code: in place where it may, functional while
    an outer gradient records the code (second order: see tracer.ad.api.prepare)."""
    if _api.recording() is not None:
        return adjoints.add_pure(a, b)
    return adjoints.add(a, b)


def _nonzero(g, like):
    return adjoints.zeros_like(like) if g is None else g

