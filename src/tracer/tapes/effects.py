"""Which ops of a tape may have had an effect by the time a guard fails.

`compile(retrace=True)` and `update(..., retrace=True)` re-trace the function when a
guard fails, so the function runs again from the start: that is only the same
program when nothing that ran before the failing guard had an effect (a
`list.append` on an argument would happen twice).  An op is effect-free when its
call is known pure (purity.py), or when it iterates something whose iteration
changes nothing: a container the tape built, or an argument that is, in this run,
a builtin container (a list; not a generator, whose `next` runs its code and
consumes it).  That last condition depends on the run's arguments, so it is kept
as a condition on the Input op and checked against the arguments of the run.
"""

from __future__ import annotations

import operator as op_
import types

from .. import callables as tops
from . import helpers
from .ops import Call, Input, Op
from .purity import is_pure

__all__ = ["Hazards", "hazards_of", "first_effect"]

# Iterating these (exactly these types) runs no user code and changes nothing.
BUILTIN_ITERABLES = frozenset((
    list, tuple, range, str, bytes, bytearray, dict, set, frozenset,
    type({}.keys()), type({}.values()), type({}.items()),
))
# Calls that build a new container of a builtin type from their arguments.
_FRESH = frozenset((tops.build_tuple, tops.build_list, tops.build_set, tops.build_dict,
                    tops.build_const_key_map, list, tuple, dict, set, frozenset, sorted, range))
# Iterators over their arguments' iterations: iterating them iterates those.
_OVER_ARGS = frozenset((enumerate, zip, iter, reversed))
# Calls that make a new object from their arguments (or read a cell).
_MAKING = frozenset((types.MethodType, helpers.new_cell, helpers.make_closure,
                     helpers.cell_get))
# Calls that iterate their first argument (and change nothing else).
_ITERATING = frozenset((next, helpers.unpack_sequence, helpers.unpack_ex))
# Methods whose result is a new container (or a view) of a builtin type.
_FRESH_METHODS = frozenset((dict.keys, dict.values, dict.items, dict.copy, list.copy, set.copy))
# Calls that change their first argument, a builtin container, and nothing else
# (and those that also iterate their second).
_MUTATORS_ITERATING = frozenset((list.extend, set.update, dict.update, tops.list_extend,
                                 tops.set_update, tops.dict_update, tops.dict_merge))
_MUTATORS = _MUTATORS_ITERATING | frozenset((
    list.append, list.insert, list.pop, list.remove, list.clear, list.sort, list.reverse,
    dict.setdefault, dict.pop, dict.popitem, dict.clear, set.add, set.discard, set.remove,
    set.pop, set.clear, tops.list_append, tops.set_add, tops.map_add, op_.setitem,
    op_.delitem, tops.setslice))
# Methods of builtin types that change nothing (called as `type.m(obj, ...)`, after
# the guard on the object's type).
_READ_ONLY = frozenset((
    dict.get, dict.keys, dict.values, dict.items, dict.copy, dict.__contains__,
    dict.__getitem__, list.copy, list.index, list.count, list.__getitem__,
    tuple.index, tuple.count, set.copy, set.union, set.intersection, set.difference,
    set.issubset, set.issuperset, set.isdisjoint, frozenset.union, frozenset.intersection,
    int.bit_length, int.to_bytes, float.is_integer, float.hex,
))
_IMMUTABLE_OWNERS = (str, bytes, tuple, frozenset, int, float, complex)

IMPURE = "impure"

IMMUTABLE = frozenset((int, float, complex, bool, str, bytes, tuple, frozenset, type(None)))
_INPLACE = frozenset((op_.iadd, op_.isub, op_.imul, op_.itruediv, op_.ifloordiv, op_.imod,
                      op_.ipow, op_.imatmul, op_.ilshift, op_.irshift, op_.iand, op_.ior,
                      op_.ixor))
_ARITHMETIC = _INPLACE | frozenset((
    op_.add, op_.sub, op_.mul, op_.truediv, op_.floordiv, op_.mod, op_.pow, op_.lshift,
    op_.rshift, op_.and_, op_.or_, op_.xor, op_.neg, op_.pos, op_.invert, op_.abs, abs,
    round, divmod, pow))
# Calls whose result is an immutable builtin whatever their arguments.
_IMMUTABLE_RESULT = frozenset((len, hash, id, ord, chr, bool, repr, ascii, bin, hex, oct,
                               op_.not_, op_.truth, op_.is_, op_.is_not, op_.contains,
                               tops.not_contains, tops.build_tuple, tops.build_string,
                               tops.format_value, format, isinstance, issubclass, callable))


class Hazards:
    """Per op of a tape (by position): None when running it has no effect, IMPURE
    when it may have one, or a dict {Input op: allowed types} when it has none
    provided those arguments are, in the run, of those exact types."""

    __slots__ = ("per_op",)

    def __init__(self, per_op: list):
        self.per_op = per_op


def hazards_of(tape) -> Hazards:
    """The hazards of `tape`'s ops (cached on the tape until it changes)."""
    cached = tape._hazards
    if cached is not None:
        return cached
    h = Hazards([_hazard(op) for op in tape.ops])
    tape._hazards = h
    return h


def first_effect(tape, upto: int, inputs: dict, ops=None) -> Op | None:
    """The first op among `ops` (default: the tape's ops before position `upto`,
    1-based, and `upto` itself when it is a Call that ran) that may have had an
    effect in a run whose Input ops had the values `inputs`; None if none did."""
    h = hazards_of(tape).per_op
    if ops is None:
        last = upto if isinstance(tape.ops[upto - 1], Call) else upto - 1
        ops = tape.ops[:last]
    for op in ops:
        hz = h[op.id - 1]
        if hz is None:
            continue
        if hz is IMPURE:
            return op
        for inp, allowed in hz.items():
            if type(inputs.get(inp, inp.value)) not in allowed:
                return op
    return None


def _hazard(op: Op):
    if not isinstance(op, Call):
        return None
    if is_pure(op):
        return None
    fn = op.fn
    if isinstance(fn, Op) or op.star or op.kwargs:
        return IMPURE
    if fn in _MAKING:
        return None  # a new bound method, cell or closure; a read of a cell
    if fn is helpers.cell_set and op.args and _made_cell(op.args[0]):
        return None  # a cell this run made (a program's own cell is an effect)
    if fn in _INPLACE:
        # `a += b` mutates `a` unless it is immutable (then it makes a new object);
        # a list the run made itself may change (`+=` iterates `b`).
        if op.args and _fresh(op.args[0]):
            return _iterating(op.args[1:2])
        return _immutable(op.args[0]) if op.args else IMPURE
    if fn in _MUTATORS and op.args and _fresh(op.args[0]):
        # A change to a container this run made: nothing outside the run sees it
        # (to reach outside, it must go through an op that counts as an effect).
        return _iterating(op.args[1:2]) if fn in _MUTATORS_ITERATING else None
    if fn in _OVER_ARGS or fn in _ITERATING:
        return _iterating(op.args if fn is zip else op.args[:1])
    if isinstance(fn, types.MethodDescriptorType) and (
            fn in _READ_ONLY or getattr(fn, "__objclass__", None) in _IMMUTABLE_OWNERS):
        return None
    return IMPURE


def _made_cell(x) -> bool:
    return isinstance(x, Call) and x.fn is helpers.new_cell


def _fresh(x) -> bool:
    """Whether op `x` makes a new container in every run."""
    if not isinstance(x, Call) or isinstance(x.fn, Op) or x.star:
        return False
    try:
        return x.fn in _FRESH or x.fn in _FRESH_METHODS
    except TypeError:  # an unhashable callable
        return False


def _immutable(x, depth: int = 0):
    """The hazard of an in-place operator on `x`: None when `x` is certainly of an
    immutable builtin type, a condition on Inputs when it is so if they are."""
    if not isinstance(x, Op):
        return None if type(x) in IMMUTABLE else IMPURE
    if isinstance(x, Input):
        return {x: IMMUTABLE}
    if not isinstance(x, Call) or isinstance(x.fn, Op) or x.star or depth > 50:
        return IMPURE
    try:
        if x.fn in _IMMUTABLE_RESULT:
            return None
        if x.fn not in _ARITHMETIC:
            return IMPURE
    except TypeError:  # an unhashable callable
        return IMPURE
    # Arithmetic on immutable builtins gives an immutable builtin.
    return _all_of(_immutable(a, depth + 1) for a in x.args)


def _all_of(hazards):
    """The hazard of several things at once: IMPURE as soon as one is (the rest are
    not looked at), else the union of their conditions, None for none."""
    cond: dict = {}
    for hz in hazards:
        if hz is IMPURE:
            return IMPURE
        if hz:
            cond.update(hz)
    return cond or None


def _iterating(args, depth: int = 0):
    """The hazard of iterating each of `args`."""
    return _all_of(_iteration(a, depth) for a in args)


def _iteration(x, depth: int = 0):
    """The hazard of iterating `x` (an op or a constant)."""
    if not isinstance(x, Op):
        return None if type(x) in BUILTIN_ITERABLES else IMPURE
    if isinstance(x, Input):
        return {x: BUILTIN_ITERABLES}
    if not isinstance(x, Call) or isinstance(x.fn, Op) or depth > 20:
        return IMPURE
    fn = x.fn
    try:
        if fn in _FRESH:
            return None
        if fn in _OVER_ARGS:
            return _iterating(x.args if fn is zip else x.args[:1], depth + 1)
    except TypeError:  # an unhashable callable
        return IMPURE
    if fn in _FRESH_METHODS or (isinstance(fn, types.MethodDescriptorType)
                                and getattr(fn, "__objclass__", None) in (str, bytes)):
        # A view of a dict, a copy, or what a str method returns (a str, a list of
        # them): the type guard before the call checked the object's type.
        return None
    return IMPURE
