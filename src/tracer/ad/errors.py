"""The errors of differentiation."""

from __future__ import annotations

import os

__all__ = ["NoRuleError", "describe_callable"]


def describe_callable(fn) -> str:
    """A readable name for a callable: `math.sin`, `numpy.sum`, `ndarray.reshape`."""
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if qual is None:
        return repr(fn)
    mod = getattr(fn, "__module__", None)
    if isinstance(fn, type(str.upper)) or isinstance(fn, type(dict.__dict__["fromkeys"])):
        return qual  # a method descriptor: `ndarray.sum`, `list.append`
    if mod and mod not in ("builtins", "__main__"):
        return f"{mod}.{qual}"
    return qual


def _place(where) -> str:
    """`function (file:line)` of a Where, the file relative to the working directory
    when it lies below it."""
    code = getattr(where, "code", None)
    if code is None:
        return str(where)
    path = code.co_filename
    try:
        rel = os.path.relpath(path)
        if not rel.startswith(".."):
            path = rel
    except ValueError:  # another drive
        pass
    return f"{getattr(code, 'co_qualname', code.co_name)} ({path}:{where.line})"


class NoRuleError(TypeError):
    """A call on the differentiated path has no differentiation rule and no Python body
    to differentiate through.  `function` is the callable, `where` where it was called.
    """

    def __init__(self, fn, where=None, note: str = "", message: str = ""):
        self.function = fn
        self.where = where
        name = describe_callable(fn)
        at = f" (called at {_place(where)})" if where is not None else ""
        extra = f" {note}" if note else ""
        if message:  # a path the sweep cannot follow, or a rule that does not cover it
            super().__init__(f"cannot differentiate through {name}{at}: {message}")
            return
        super().__init__(
            f"no differentiation rule for {name}{at}, which lies on the differentiated "
            f"path.{extra} Add one:\n"
            f"    @tracer.rule({name})\n"
            f"    def pullback(g, ans, *args, **kwargs):\n"
            f"        return (adjoint of args[0], adjoint of args[1], ...)  # None: no adjoint")
