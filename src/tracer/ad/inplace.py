"""In-place updates of numpy arrays as functional updates on a gradient's tape.

`y += d`, `out[i] = v` and `out[:, k] += v` change an array in place (and
`xs[i] = v` a list): the ops that
read it before the change recorded the same object as the ops after, so a
pullback reading the value would see the array as it ended, and a store into it
would pass no adjoint.  `rewrite` turns them into functional ops before the
gradient analysis: `y += d` becomes `y + d`, `out[i] = v` becomes
`stored(out, i, v)` (a new array; later reads of `out` read it), `xs[i] = v` on a
list the function built `stored_item(xs, i, v)`, each with its own rule.  The program then recomputes its forward values instead of using the
recorded ones (`rewrite` returns True).

It refuses (NoRuleError) what the rewrite would change: an array that another
value still views (a slice taken before the change and read after it), and an
array the caller or the program's constants own (changing it is an effect the
caller sees: only arrays the function made itself are rewritten).
"""

from __future__ import annotations

import operator

import numpy as np

from ..tapes.ops import Call, Constant, Input, Op
from .. import callables as tops
from .adjoints import Seq, seq_get, unbroadcast
from .errors import NoRuleError
from .rules import defrule

__all__ = ["rewrite", "stored", "stored_item", "IN_PLACE"]

_FUNCTIONAL = {operator.iadd: operator.add, operator.isub: operator.sub,
               operator.imul: operator.mul, operator.itruediv: operator.truediv,
               operator.ipow: operator.pow, operator.imatmul: operator.matmul}
IN_PLACE = frozenset(_FUNCTIONAL)  # the operators that change an array in place


def stored(array, key, value):
    """`array` with `array[key] = value`, as a new array (the original is unchanged)."""
    out = array.copy()
    out[key] = value
    return out


def _stored_array(g, ans, array, key, value):
    g = np.array(g, dtype=float, copy=True)
    g[key] = 0.0
    return g


def _stored_value(g, ans, array, key, value):
    return unbroadcast(np.asarray(g)[key], value)


defrule(stored, _stored_array, None, _stored_value)


def stored_item(items: list, key, value) -> list:
    """`items` with `items[key] = value`, as a new list."""
    out = list(items)
    out[key] = value
    return out


def _stored_item_list(g, ans, items, key, value):
    if type(g) is not Seq:
        g = Seq(dict(list(enumerate(g))))
    k = key % len(items)
    return Seq({i: v for i, v in g.items.items() if i != k}, owned=True)


def _stored_item_value(g, ans, items, key, value):
    return seq_get(g, key % len(items), value)


defrule(stored_item, _stored_item_list, None, _stored_item_value)


def rewrite(ops) -> bool:
    """Rewrite the in-place array updates of `ops` (a tape's, in order) as
    functional ones; True if any was (the forward values must be recomputed)."""
    owned = [op.value for op in ops if type(op) in (Input, Constant)
             and isinstance(op.value, np.ndarray)]
    latest: dict[int, Op] = {}   # op id of an array stored into -> its latest version
    base: dict[int, int] = {}    # op id of a version -> the array op it versions
    changed: list = []  # (array object, op ids standing for it now, the change's op id)
    any_change = False
    for op in ops:
        if type(op) is not Call:
            continue
        if latest:
            _redirect(op, latest, base)
        fn = op.fn
        if fn is operator.setitem and len(op.args) == 3:
            _settle(op, changed)  # `out[k] += v`: the view changed is stored back
        if changed:
            _check_reads(op, changed)
        if fn in _FUNCTIONAL and op.args and isinstance(op.args[0], Op) \
                and isinstance(op.value, np.ndarray) and op.args[0].value is op.value:
            _check_owner(op, op.value, owned)
            op.fn = _FUNCTIONAL[fn]
            _forget(changed, op.value)
            changed.append((op.value, {op.id}, op.id))
            any_change = True
        elif fn is operator.setitem and len(op.args) == 3 and isinstance(op.args[0], Op) \
                and type(op.args[1]) is int and _is_own_list(op, base, ops):
            target = op.args[0]
            op.fn = stored_item
            op.value = target.value  # a list (its items are recomputed forward)
            root = base.get(target.id, target.id)
            latest[root] = op
            base[op.id] = root
            any_change = True
        elif fn is operator.setitem and len(op.args) == 3 and isinstance(op.args[0], Op) \
                and isinstance(op.args[0].value, np.ndarray):
            target = op.args[0]
            _check_owner(op, target.value, owned)
            op.fn = stored
            op.value = target.value  # an array (its values are recomputed forward)
            root = base.get(target.id, target.id)
            latest[root] = op
            base[op.id] = root
            _forget(changed, target.value)
            changed.append((target.value, {op.id, root}, op.id))
            any_change = True
    return any_change


def _is_own_list(store, base, ops) -> bool:
    """Whether `store` (`xs[i] = v`) stores into a list the function built (`[...]`,
    a comprehension, `list(...)`) and put in no other container before (the store
    would not reach it there: refused): its item stores become new lists."""
    target = store.args[0]
    root = ops[base.get(target.id, target.id) - 1]
    if type(root) is not Call or root.fn not in (tops.build_list, list) \
            or type(root.value) is not list:
        return False
    for other in ops[root.id:store.id - 1]:
        v = other.value
        if isinstance(v, (list, tuple, dict)) and other is not root and any(
                x is root.value for x in (v.values() if isinstance(v, dict) else v)):
            raise NoRuleError(operator.setitem, other.where, message="it stores into a "
                              "list that was put into another container before, which "
                              "would not see the store in the gradient's program; build "
                              "the list before putting it there.")
    return True


def _forget(changed, array) -> None:
    changed[:] = [c for c in changed if c[0] is not array]


def _settle(op, changed) -> None:
    """`a[k] += v` is `t = a[k]; t += v; a[k] = t`: storing the changed view `t`
    back into `a` makes `a` hold the change (in the rewritten program too)."""
    value = op.args[2]
    if not isinstance(value, Op):
        return
    changed[:] = [c for c in changed if value.id not in c[1]]


def _redirect(op, latest, base) -> None:
    """Reads of an array stored into read the op holding its latest version."""
    def new(a):
        if isinstance(a, Op):
            v = latest.get(base.get(a.id, a.id))
            if v is not None and v is not op:
                return v
        return a

    args = op.args
    if any(isinstance(a, Op) for a in args):
        op.args = tuple(new(a) for a in args)
    if op.kwargs:
        op.kwargs = {k: new(v) for k, v in op.kwargs.items()}


def _check_reads(op, changed) -> None:
    """An op reading another view of an array changed in place would see the
    change in Python but not in the rewritten program: refuse."""
    for a in list(op.args) + list(op.kwargs.values()):
        if not isinstance(a, Op) or not isinstance(a.value, np.ndarray):
            continue
        for arr, allowed, since in changed:
            # A value made after the change was made from the new version.
            if a.id < since and a.id not in allowed and np.may_share_memory(a.value, arr):
                raise NoRuleError(op.fn, op.where, message="it reads an array that "
                                  "shares memory with one changed in place before (a view "
                                  "taken before the change); copy the view, or change the "
                                  "array by a new value (`y = y + d`).")


def _check_owner(op, array, owned) -> None:
    for other in owned:
        if np.may_share_memory(array, other):
            raise NoRuleError(op.fn, op.where, message="it changes in place an array "
                              "the caller passed or the code holds (a global, a default); "
                              "a gradient's program would not repeat that effect: change a "
                              "copy, or build a new value (`y = y + d`).")
