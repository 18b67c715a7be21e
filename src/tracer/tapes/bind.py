"""Binding a call's arguments to the parameters of the function it inlines.

The flattener maps each parameter of an inlined call to the op or constant the
caller passed, as CPython binds them: positional, then keywords by name, defaults,
extra positional arguments packed into *args (a tuple op), extra keywords into
**kwargs (a dict op).
"""

from __future__ import annotations

from .. import callables as tops

__all__ = ["map_parameters", "MISSING", "Pack"]

CO_VARARGS, CO_VARKEYWORDS = 0x04, 0x08


class _Missing:
    """A parameter the call did not pass: its default applies."""

    __slots__ = ()


MISSING = _Missing()


class Pack:
    """A parameter that collects arguments: *args (a tuple) or **kwargs (a dict)."""

    __slots__ = ("fn", "items")

    def __init__(self, fn, items):
        self.fn = fn
        self.items = tuple(items)


def map_parameters(code, args, kwargs):
    """Parameter values for `code` called with positional `args` and `kwargs` (each an
    Op or a constant), in co_varnames order; MISSING for defaults; None if the call
    does not bind (Python raised, so the call could not have been inlined)."""
    npos, nkw, nposonly = code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount
    names = code.co_varnames
    has_var, has_kw = code.co_flags & CO_VARARGS, code.co_flags & CO_VARKEYWORDS
    n = npos + nkw + bool(has_var) + bool(has_kw)
    out = [MISSING] * n
    extra = list(args[npos:])
    for i, a in enumerate(args[:npos]):
        out[i] = a
    if extra and not has_var:
        return None
    kwextra = []
    for name, a in kwargs.items():
        try:
            i = names.index(name, nposonly, npos + nkw)
        except ValueError:
            i = -1
        if i >= 0 and out[i] is MISSING:
            out[i] = a
        elif has_kw:
            kwextra += [name, a]
        else:
            return None
    k = npos + nkw
    if has_var:
        out[k] = Pack(tops.build_tuple, extra) if extra else ()
        k += 1
    if has_kw:
        out[k] = Pack(tops.build_dict, kwextra)
    return out
