"""When two recorded values count as the same across two runs: numbers within a
tolerance, arrays elementwise, containers item by item, and objects without an
equality of their own by their repr (their identity differs between runs by nature),
as are values a saved trace kept only as text."""

from __future__ import annotations

import math
import numbers
import re
import types

import numpy as np

from ..persist.encode import SavedText
from ..views.names import callable_name

__all__ = ["same_value"]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_MAX_ITEMS = 10_000   # containers longer than this are compared with ==, not item by item
_MAX_DEPTH = 4
_BOUND = (types.MethodType, types.BuiltinMethodType, types.MethodWrapperType)


def same_value(a, b, rel_tol: float = 1e-9, abs_tol: float = 0.0, _depth: int = 0) -> bool:
    """Whether `a` (from one run) and `b` (from another) are the same value."""
    if a is b:
        return True
    if _is_number(a) and _is_number(b):
        return _same_number(a, b, rel_tol, abs_tol)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return _same_array(a, b, rel_tol, abs_tol)
    if isinstance(a, SavedText) or isinstance(b, SavedText):
        # A value a saved trace kept as text: its repr is all there is to compare.
        return _address_free_repr(a) == _address_free_repr(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, _BOUND):
        # A method bound to a value of each run (`perm.insert`): the same method of
        # the same value, not the same object.
        return callable_name(a) == callable_name(b) and same_value(
            a.__self__, b.__self__, rel_tol, abs_tol, _depth + 1)
    if isinstance(a, BaseException):
        return a.args == b.args
    if _depth < _MAX_DEPTH and isinstance(a, (list, tuple)) and len(a) <= _MAX_ITEMS:
        return len(a) == len(b) and all(
            same_value(x, y, rel_tol, abs_tol, _depth + 1) for x, y in zip(a, b))
    if _depth < _MAX_DEPTH and isinstance(a, dict) and len(a) <= _MAX_ITEMS:
        return a.keys() == b.keys() and all(
            same_value(a[k], b[k], rel_tol, abs_tol, _depth + 1) for k in a)
    if type(a).__eq__ is object.__eq__:
        return _address_free_repr(a) == _address_free_repr(b)
    try:
        equal = a == b
        return bool(equal) if isinstance(equal, (bool, np.bool_)) else bool(np.all(equal))
    except Exception:  # an __eq__ that raises or answers something without a truth
        return _address_free_repr(a) == _address_free_repr(b)


def _is_number(x) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, bool) or isinstance(x, np.number)


def _same_number(a, b, rel_tol: float, abs_tol: float) -> bool:
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        return int(a) == int(b)  # exact: big ints do not fit a float
    try:
        x, y = complex(a), complex(b)
    except (TypeError, ValueError):
        return a == b
    if x == y:
        return True
    if any(math.isnan(v) for v in (x.real, x.imag)) and any(math.isnan(v) for v in (y.real, y.imag)):
        return True
    return abs(x - y) <= max(rel_tol * max(abs(x), abs(y)), abs_tol)


def _same_array(a, b, rel_tol: float, abs_tol: float) -> bool:
    try:
        x, y = np.asarray(a), np.asarray(b)
    except Exception:
        return False
    if x.shape != y.shape:
        return False
    if x.dtype.kind in "fc" or y.dtype.kind in "fc":
        try:
            return bool(np.allclose(x, y, rtol=rel_tol, atol=abs_tol, equal_nan=True))
        except TypeError:
            pass
    return bool(np.array_equal(x, y))


def _address_free_repr(x) -> str:
    try:
        return _ADDRESS.sub("", repr(x))
    except Exception:
        return type(x).__qualname__
