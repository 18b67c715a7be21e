"""Which calls are known to have no effect besides their result (for dead code
elimination and for `update`, which must know what a re-run call may mutate)."""

from __future__ import annotations

import builtins
import math
import operator as op_

from .. import callables as tops
from . import helpers
from .ops import Call, Constant, Input, Op

__all__ = ["is_pure", "PURE"]

PURE = {
    op_.add, op_.sub, op_.mul, op_.truediv, op_.floordiv, op_.mod, op_.pow, op_.matmul,
    op_.lshift, op_.rshift, op_.and_, op_.or_, op_.xor, op_.lt, op_.le, op_.eq, op_.ne,
    op_.gt, op_.ge, op_.is_, op_.is_not, op_.neg, op_.pos, op_.invert, op_.not_,
    op_.getitem, op_.contains, op_.truth, op_.abs, op_.index,
    tops.build_tuple, tops.build_list, tops.build_set, tops.build_dict,
    tops.build_const_key_map, tops.build_string, tops.build_slice, tops.not_contains,
    tops.getslice, tops.format_value, tops.exception_match,
    helpers.match_class, helpers.match_sequence, helpers.match_mapping, helpers.match_keys,
    helpers.bind_call, helpers.is_function, helpers.resolves_to,
    getattr, len, abs, min, max, round, divmod, pow, hash, isinstance, issubclass,
    repr, str, int, float, bool, complex, tuple, list, dict, set, frozenset, format,
    sorted, sum, any, all, ord, chr, bin, hex, oct, type, id, slice, range, callable,
} - {builtins.print}
# Operators on these types never run user code or change their operands.
_PLAIN = (int, float, complex, bool, str, bytes, tuple, type(None))


def is_pure(op: Op) -> bool:
    """True if re-running or removing Call `op` changes nothing but its own result."""
    if isinstance(op, (Constant, Input)):
        return True
    if not isinstance(op, Call) or isinstance(op.fn, Op) or op.star:
        return False
    fn = op.fn
    try:
        if fn in PURE:
            return True
    except TypeError:  # an unhashable callable: not one of ours
        return False
    if getattr(fn, "__module__", None) == "math" and callable(fn):
        return True
    return _is_numpy_ufunc(fn) and "out" not in op.kwargs


def _is_numpy_ufunc(fn) -> bool:
    t = type(fn)
    return t.__name__ == "ufunc" and t.__module__ == "numpy"


del math
