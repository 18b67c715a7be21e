"""Callable equivalents of bytecode instructions that have none in `operator`.

A recorded node names the function it is a call of.  For instructions such as
BUILD_LIST or `x not in y` there is no standard callable with the same meaning, so
these small functions give them one: calling them reproduces the instruction's
result, which is what re-executing a trace (a tape) needs.
"""

from __future__ import annotations

__all__ = [
    "build_tuple", "build_list", "build_set", "build_dict", "build_const_key_map",
    "build_string", "build_slice", "not_contains", "getslice", "setslice",
    "list_append", "set_add", "map_add", "list_extend", "set_update", "dict_update",
    "dict_merge", "format_value", "with_enter", "exception_match", "send",
]


def build_tuple(*items):
    """`(a, b, ...)`"""
    return items


def build_list(*items):
    """`[a, b, ...]`"""
    return list(items)


def build_set(*items):
    """`{a, b, ...}`"""
    return set(items)


def build_dict(*keys_and_values):
    """`{k0: v0, k1: v1, ...}` from k0, v0, k1, v1, ..."""
    it = iter(keys_and_values)
    return dict(zip(it, it))


def build_const_key_map(*values_then_keys):
    """`{k0: v0, ...}` from v0, ..., vn, (k0, ..., kn)."""
    *values, keys = values_then_keys
    return dict(zip(keys, values))


def build_string(*parts):
    """The concatenation of an f-string's parts."""
    return "".join(parts)


def build_slice(*bounds):
    """`a:b` or `a:b:c` inside a subscript."""
    return slice(*bounds)


def not_contains(container, item):
    """`item not in container`"""
    return item not in container


def getslice(container, start, stop):
    """`container[start:stop]`"""
    return container[start:stop]


def setslice(container, start, stop, value):
    """`container[start:stop] = value`"""
    container[start:stop] = value


def list_append(lst, item):
    """A list comprehension's append."""
    lst.append(item)


def set_add(s, item):
    """A set comprehension's add."""
    s.add(item)


def map_add(d, key, value):
    """A dict comprehension's store."""
    d[key] = value


def list_extend(lst, items):
    """`[*items]` in a list display."""
    lst.extend(items)


def set_update(s, items):
    """`{*items}` in a set display."""
    s.update(items)


def dict_update(d, mapping):
    """`{**mapping}` in a dict display."""
    d.update(mapping)


def dict_merge(d, mapping):
    """`f(**mapping)`: merge keyword arguments, rejecting duplicates."""
    for k in mapping:
        if k in d:
            raise TypeError(f"got multiple values for keyword argument '{k}'")
    d.update(mapping)


def format_value(value, conversion=None, spec=""):
    """One replacement field of an f-string: `{value!conversion:spec}`."""
    if conversion is not None:
        value = conversion(value)
    return format(value, spec)


def with_enter(manager):
    """The `__enter__` call that starts a `with` block."""
    return type(manager).__enter__(manager)


def exception_match(exc, kind):
    """The test of an `except kind:` clause."""
    return isinstance(exc, kind)


def send(receiver, value):
    """One step of `yield from receiver` / `await receiver` (the SEND instruction):
    `next(receiver)` when `value` is None and `receiver` is an iterator, else
    `receiver.send(value)`.  A finished receiver raises StopIteration with its
    return value, which the delegating code takes as the expression's value."""
    if value is None and hasattr(type(receiver), "__next__"):
        return next(receiver)
    return receiver.send(value)
