"""Rules for the `operator` functions, `math`, builtins, and the small callables a
tape uses for instructions (building tuples and lists, unpacking, `for` loops).

Operator pullbacks work for floats and numpy arrays alike (`unbroadcast` undoes
broadcasting); the templates are what the generated code inlines when every value
is a float.
"""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from .. import callables as tops
from ..tapes import helpers as tape_helpers
from .adjoints import Seq, abs_slope, from_seq, seq_get, seq_item, unbroadcast, zeros_like
from .rules import defrule
from .scatter import scatter_add

__all__: list[str] = []

ub = unbroadcast


def _log(x):
    return np.log(x) if isinstance(x, np.ndarray) else math.log(x) if x > 0 else (
        float("nan") if x < 0 else float("-inf"))


def _pow_base(g, ans, a, b):
    # x ** 0 is constant: its derivative is 0 also at x = 0 (where x ** -1 is not
    # defined), as autograd and jax have it.
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return ub(g * b * a ** np.where(b, b - 1, 1), a)
    return g * b * a ** (b - 1) if b else 0.0 * g


def _pow_exp(g, ans, a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return ub(g * ans * np.log(np.where(a > 0, a, 1.0)), b)
    return g * ans * math.log(a) if a > 0 else 0.0 * g


_FLOAT_OPS = {
    # fn: (per-arg pullbacks, templates)
    operator.add: ((lambda g, ans, a, b: ub(g, a), lambda g, ans, a, b: ub(g, b)),
                   {0: "{g}", 1: "{g}"}),
    operator.sub: ((lambda g, ans, a, b: ub(g, a), lambda g, ans, a, b: ub(-g, b)),
                   {0: "{g}", 1: "-{g}"}),
    operator.mul: ((lambda g, ans, a, b: ub(g * b, a), lambda g, ans, a, b: ub(g * a, b)),
                   {0: "{g} * {1}", 1: "{g} * {0}"}),
    operator.truediv: ((lambda g, ans, a, b: ub(g / b, a),
                        lambda g, ans, a, b: ub(-g * a / (b * b), b)),
                       {0: "{g} / {1}", 1: "-{g} * {ans} / {1}"}),
    operator.pow: ((_pow_base, _pow_exp),
                   {0: "({g} * {1} * {0} ** ({1} - 1) if {1} else 0.0)", 1: "{g} * {ans} * log_({0})"}),
}
_INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub,
            operator.imul: operator.mul, operator.itruediv: operator.truediv,
            operator.ipow: operator.pow}


def _sequence_add(which):
    """`a + b` for lists and tuples is concatenation: the adjoint splits."""
    plain = _FLOAT_OPS[operator.add][0][which]

    def pb(g, ans, a, b):
        if type(g) is Seq or isinstance(a, (list, tuple)):
            n = len(a)
            if which == 0:
                return Seq({k: v for k, v in g.items.items() if k < n})
            return Seq({k - n: v for k, v in g.items.items() if k >= n})
        return plain(g, ans, a, b)
    return pb


for _fn, (_pbs, _tpl) in _FLOAT_OPS.items():
    defrule(_fn, *_pbs, templates=_tpl)
for _fn, _base in _INPLACE.items():
    _pbs, _tpl = _FLOAT_OPS[_base]
    defrule(_fn, *_pbs, templates=_tpl)
defrule(operator.add, _sequence_add(0), _sequence_add(1), templates=_FLOAT_OPS[operator.add][1])
defrule(operator.iadd, _sequence_add(0), _sequence_add(1),
        templates=_FLOAT_OPS[operator.add][1])
defrule(operator.neg, lambda g, ans, a: -g, templates={0: "-{g}"})
defrule(operator.pos, lambda g, ans, a: g, templates={0: "{g}"})
defrule(operator.abs, lambda g, ans, a: g * abs_slope(a), templates={0: "({g} if {0} >= 0 else -{g})"})


# -- math --------------------------------------------------------------------------------
def _unary(fn, pullback, template):
    defrule(fn, pullback, templates={0: template})


_unary(math.sin, lambda g, ans, x: g * math.cos(x), "{g} * cos_({0})")
_unary(math.cos, lambda g, ans, x: -g * math.sin(x), "-{g} * sin_({0})")
_unary(math.tan, lambda g, ans, x: g * (1.0 + ans * ans), "{g} * (1.0 + {ans} * {ans})")
_unary(math.exp, lambda g, ans, x: g * ans, "{g} * {ans}")
_unary(math.expm1, lambda g, ans, x: g * (ans + 1.0), "{g} * ({ans} + 1.0)")
_unary(math.log1p, lambda g, ans, x: g / (1.0 + x), "{g} / (1.0 + {0})")
_unary(math.sqrt, lambda g, ans, x: g * 0.5 / ans, "{g} * 0.5 / {ans}")
_unary(math.tanh, lambda g, ans, x: g * (1.0 - ans * ans), "{g} * (1.0 - {ans} * {ans})")
_unary(math.sinh, lambda g, ans, x: g * math.cosh(x), "{g} * cosh_({0})")
_unary(math.cosh, lambda g, ans, x: g * math.sinh(x), "{g} * sinh_({0})")
_unary(math.atan, lambda g, ans, x: g / (1.0 + x * x), "{g} / (1.0 + {0} * {0})")
_unary(math.asin, lambda g, ans, x: g / math.sqrt(1.0 - x * x), "{g} / sqrt_(1.0 - {0} * {0})")
_unary(math.acos, lambda g, ans, x: -g / math.sqrt(1.0 - x * x), "-{g} / sqrt_(1.0 - {0} * {0})")
_unary(math.fabs, lambda g, ans, x: g if x >= 0 else -g, "({g} if {0} >= 0 else -{g})")
_unary(math.erf, lambda g, ans, x: g * 2.0 / math.sqrt(math.pi) * math.exp(-x * x),
       "{g} * 1.1283791670955126 * exp_(-{0} * {0})")


def _log_x(g, ans, x, base=None):
    return g / x if base is None else g / (x * math.log(base))


def _log_base(g, ans, x, base):
    return -g * math.log(x) / (base * math.log(base) ** 2)


defrule(math.log, _log_x, _log_base, templates={0: "{g} / {0}"}, template_arity=1)
defrule(math.pow, *_FLOAT_OPS[operator.pow][0], templates=_FLOAT_OPS[operator.pow][1])
defrule(math.atan2, lambda g, ans, y, x: g * x / (x * x + y * y),
        lambda g, ans, y, x: -g * y / (x * x + y * y))
defrule(math.hypot, varargs=lambda i: lambda g, ans, *xs: g * xs[i] / ans)


# -- builtins ----------------------------------------------------------------------------
def _minmax_arg(i):
    def pb(g, ans, *args):
        if len(args) == 1:  # min(iterable): the chosen item gets it all
            items = list(args[0])
            k = items.index(ans)
            return Seq({k: g}, owned=True)
        return g if args[i] is ans or (args[i] == ans and
                                       all(a != ans for a in args[:i])) else 0.0 * g
    return pb


defrule(builtins.abs, lambda g, ans, a: g * abs_slope(a), templates={0: "({g} if {0} >= 0 else -{g})"})
defrule(builtins.min, varargs=_minmax_arg)
defrule(builtins.max, varargs=_minmax_arg)
defrule(builtins.pow, *_FLOAT_OPS[operator.pow][0], templates=_FLOAT_OPS[operator.pow][1])
defrule(builtins.float, lambda g, ans, x: g, templates={0: "{g}"})


def _sum_items(g, ans, items, start=0):
    if isinstance(items, np.ndarray):  # sum() over an array's rows
        return np.broadcast_to(g, items.shape).copy()
    return Seq({k: g for k in range(len(items))}, owned=True)


defrule(builtins.sum, _sum_items, lambda g, ans, items, start=0: g)
defrule(math.fsum, _sum_items)


# -- containers and loops (tape callables) ---------------------------------------------------
def _item_of_built(i):
    return lambda g, ans, *items: seq_get(g, i, items[i])


def _container_of(g, ans, x, *rest):
    return from_seq(g, x)


def _value_of_const_key_map(i):
    # build_const_key_map(v0, v1, ..., keys): value i is the item of key keys[i]
    return lambda g, ans, *args: None if i == len(args) - 1 else seq_get(g, args[-1][i], args[i])


def _value_of_built_dict(i):
    # build_dict(k0, v0, k1, v1, ...): the odd arguments are the values
    if i % 2 == 0:
        return None
    return lambda g, ans, *args: seq_get(g, args[i - 1], args[i])


defrule(tops.build_const_key_map, varargs=_value_of_const_key_map)
defrule(tops.build_dict, varargs=_value_of_built_dict)
defrule(tops.build_tuple, varargs=_item_of_built)
defrule(tops.build_list, varargs=_item_of_built)
defrule(builtins.tuple, _container_of)
defrule(builtins.list, _container_of)
defrule(builtins.iter, _container_of)
defrule(tape_helpers.unpack_sequence, _container_of)
defrule(tape_helpers.yield_from_iter, _container_of)


def _getitem_container(g, ans, c, key):
    if isinstance(c, (np.ndarray, np.generic)):  # a numpy scalar indexes as a 0-d array
        return _array_getitem(g, c, key)
    if isinstance(c, (list, tuple)) and isinstance(key, slice):
        index = range(*key.indices(len(c)))
        if type(g) is not Seq:
            g = Seq(dict(list(enumerate(g))))
        return Seq({index[j]: v for j, v in g.items.items()}, owned=True)
    if type(key) is int and key < 0 and isinstance(c, (list, tuple)):
        key += len(c)  # one item, one index: xs[-1] is xs[len(xs) - 1]
    return seq_item(g, key)


def _array_getitem(g, c, key):
    dtype = c.dtype if c.dtype.kind in "fc" else np.float64
    # A call with a rule, not a store: a gradient of this pullback follows it.
    return scatter_add(c.shape, dtype, key, g)


_AXIS_CONCATENATOR = type(np.r_).__mro__[1]  # numpy's private AxisConcatenator


def _getitem_key(g, ans, c, key):
    """The key's adjoint: only `np.r_[a, b, ...]` and `np.c_[...]` (the indexed object
    concatenates the items of the key) differentiate their key."""
    if not isinstance(c, _AXIS_CONCATENATOR):
        from .errors import NoRuleError
        raise NoRuleError(operator.getitem, message=f"indexing a {type(c).__name__} "
                          "with a differentiated key is not differentiable")
    items = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(x, (np.ndarray, float, int, np.number, slice))
               and not isinstance(x, bool) for x in items):
        from .errors import NoRuleError
        raise NoRuleError(operator.getitem, message="np.r_/np.c_ are differentiated "
                          "for keys of arrays, numbers and slices only (no strings)")
    axis = c.axis  # 0 for np.r_, -1 for np.c_ (it stacks columns)
    sizes = [c[x].shape[axis] for x in items]
    parts = np.split(np.asarray(g), np.cumsum(sizes)[:-1], axis=axis)
    # A slice (`np.r_[x, 1:10]`: a range of numbers) holds no float: no adjoint.
    out = {k: (np.reshape(p, np.shape(x)) if np.ndim(x) else np.sum(p))
           for k, (p, x) in enumerate(zip(parts, items)) if type(x) is not slice}
    return Seq(out, owned=True) if isinstance(key, tuple) else out[0]


defrule(operator.getitem, _getitem_container, _getitem_key)
defrule(tops.getslice, lambda g, ans, c, start, stop: _getitem_container(g, ans, c,
                                                                          slice(start, stop)))


def _next_iterator(g, ans, it, *default):
    # The index of this next() is not known here: the sweep passes it (see program.py).
    raise AssertionError("next() is differentiated by the sweep itself")


defrule(builtins.next, _next_iterator)


def _zeros(g, ans, x):
    return zeros_like(x)


def _enumerate_pb(g, ans, seq, *start):
    """`enumerate(seq)` yields (i, item): item k's adjoint is part 1 of pair k's."""
    if type(g) is not Seq:
        return g
    # Comprehensions, not stores into a dict: an outer gradient follows this code.
    parts = {k: _part(pair, 1) for k, pair in g.items.items()}
    return from_seq(Seq({k: v for k, v in parts.items() if v is not None}, owned=True), seq)


def _part(pair, i):
    """Part `i` of an adjoint of a pair or tuple (a Seq, or the pair itself)."""
    return pair.items.get(i) if type(pair) is Seq else pair[i]


def _zip_arg(i):
    def pb(g, ans, *seqs, **kw):
        if type(g) is not Seq:
            return g
        parts = {k: _part(items, i) for k, items in g.items.items()}
        return from_seq(Seq({k: v for k, v in parts.items() if v is not None}, owned=True),
                        seqs[i])
    return pb


defrule(builtins.enumerate, _enumerate_pb)
defrule(builtins.zip, varargs=_zip_arg)
defrule(builtins.reversed, lambda g, ans, seq: Seq({len(seq) - 1 - k: v for k, v in g.items.items()}, owned=True)
        if type(g) is Seq else g)


# -- dict and list methods --------------------------------------------------------------------
def _dict_items_pb(g, ans, d):
    """`d.items()` yields (key, value) pairs in key order: pair k's part 1 is the
    adjoint of `d[key k]`."""
    if type(g) is not Seq:
        return g
    keys = list(d)
    parts = {keys[k]: _part(pair, 1) for k, pair in g.items.items()}
    return Seq({k: v for k, v in parts.items() if v is not None}, owned=True)


def _dict_values_pb(g, ans, d):
    if type(g) is not Seq:
        return g
    keys = list(d)
    return Seq({keys[k]: v for k, v in g.items.items()}, owned=True)


def _sorted_pb(g, ans, items, *args, key=None, reverse=False):
    """`sorted(items)` is a permutation: sorting the positions by the same key (a
    stable sort, as `sorted` is) tells which item of `items` each result item is
    (items are not matched by identity: `d.items()` makes new pairs each time)."""
    seq = list(items)
    if len(seq) != len(ans):
        from .errors import NoRuleError
        raise NoRuleError(sorted, message="sorted() of an iterator is differentiated for "
                          "lists, tuples and dict views only (the iterator was consumed)")
    order = _sort_order(seq, key, reverse)
    if type(g) is not Seq:
        g = Seq(dict(list(enumerate(g))))
    return Seq({order[j]: v for j, v in g.items.items()}, owned=True)


def _sort_order(seq, key, reverse):
    """The positions of `seq`'s items in sorted order (stable, as `sorted` is): a
    tuple of ints.  A primitive with a rule (a permutation has no adjoint): a gradient
    of `_sorted_pb` does not follow the key closure `sorted` calls from C."""
    kf = key if key is not None else (lambda v: v)
    return tuple(sorted(range(len(seq)), key=lambda i: kf(seq[i]), reverse=reverse))


def _no_adjoint(g, ans, *args, **kwargs):
    return None


defrule(_sort_order, _no_adjoint, _no_adjoint, _no_adjoint)
defrule(dict.items, _dict_items_pb)
defrule(dict.values, _dict_values_pb)
defrule(dict.get, lambda g, ans, d, key, default=None: seq_item(g, key) if key in d else Seq({}),
        None, lambda g, ans, d, key, default=None: zeros_like(default) if key in d else g)
defrule(dict.__getitem__, lambda g, ans, d, key: seq_item(g, key))
defrule(builtins.sorted, _sorted_pb, keywords=("key", "reverse"))


# -- f(*args, **kwargs) into Python code: the tape binds them with bind_call ----------------------
def _bound_slots(binder, nargs, kwargs, nself):
    """For `bind_call(binder, args, kwargs, *self)`: where each positional argument
    and keyword went, as (parameter index, item of a *args/**kwargs parameter or None)."""
    code = binder.__code__
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames
    star = npos + nkw  # the *args parameter's index, if any
    kwstar = star + bool(code.co_flags & 0x04)
    pos = []
    for i in range(nargs):
        slot = nself + i
        pos.append((slot, None) if slot < npos else (star, slot - npos))
    kws = {}
    for name in kwargs:
        k = names.index(name) if name in names[:npos + nkw] else None
        kws[name] = (k, None) if k is not None else (kwstar, name)
    return pos, kws


def _bind_args_pb(g, ans, binder, args, kwargs, *self):
    pos, _ = _bound_slots(binder, len(args), kwargs, len(self))
    # Comprehensions, not stores into a dict: an outer gradient follows this code.
    return Seq({i: _bound_part(g, ans, slot, item, args[i])
                for i, (slot, item) in enumerate(pos)}, owned=True)


def _bound_part(g, ans, slot, item, arg):
    gp = seq_get(g, slot, ans[slot])
    return gp if item is None else seq_get(gp, item, arg)


def _bind_kwargs_pb(g, ans, binder, args, kwargs, *self):
    _, kws = _bound_slots(binder, len(args), kwargs, len(self))
    return Seq({name: _bound_part(g, ans, slot, item, kwargs[name])
                for name, (slot, item) in kws.items()}, owned=True)


defrule(tape_helpers.bind_call, None, _bind_args_pb, _bind_kwargs_pb)


# -- closure cells the tape makes for this run (new_cell(x), cell_get(cell)) --------------------
defrule(tape_helpers.new_cell, lambda g, ans, *content: seq_get(g, 0, content[0]))
defrule(tape_helpers.cell_get, lambda g, ans, cell: seq_item(g, 0))
