"""The one table of differentiation rules: a primitive callable -> its pullback.

A rule says, for a call `ans = fn(*args, **kwargs)`, what each argument's adjoint
is given the adjoint `g` of `ans`.  Built-in rules give one pullback per argument
(`defrule`), so the sweep computes only the adjoints of arguments on the
differentiated path, and for float arguments an expression template the generated
gradient code inlines (`g * cos_(a0)`).  Users add rules with `@tracer.rule(fn)`:

    @tracer.rule(my_c_function)
    def pullback(g, ans, x, y):
        return (g * y, g * x)       # one adjoint per positional argument, None for none

A call of a callable with a rule is kept primitive while tracing (nothing is
recorded inside it; see tracer.ad.program.ad_context).
"""

from __future__ import annotations

import inspect
import types
from typing import Callable

__all__ = ["Rule", "rule", "defrule", "lookup", "rules_version", "python_primitives",
           "positional"]


class Rule:
    """The pullback of one primitive.

    `per_arg[i](g, ans, *args, **kwargs)` is argument i's adjoint (None in the tuple:
    the argument is not differentiable); `varargs(i)` gives the pullback of argument i
    for calls with any number of arguments; `full(g, ans, *args, **kwargs)` returns a
    tuple of all arguments' adjoints (user rules).  `templates[i]` is an expression
    for argument i when all values are floats: `{g}`, `{ans}`, `{0}`, `{1}`, ...
    `keywords`: the keyword arguments the pullbacks understand (None: any); a call
    passing another keyword is refused rather than differentiated as if it were not
    there.  `signature`: for a Python function, its signature (see `positional`).
    """

    __slots__ = ("fn", "per_arg", "varargs", "full", "templates", "template_arity",
                 "keywords", "signature", "by_keyword")

    def __init__(self, fn, per_arg=(), varargs=None, full=None, templates=None,
                 template_arity=None, keywords=None, by_keyword=None):
        self.fn = fn
        self.by_keyword = by_keyword  # name -> the pullback of that keyword argument
        self.keywords = None if keywords is None else frozenset(keywords)
        self.signature = None  # a Python function's: keywords reach pullbacks by position
        self.template_arity = template_arity  # templates hold only for this many args
        self.per_arg = tuple(per_arg)
        self.varargs = varargs
        self.full = full
        self.templates = templates or {}

    def differentiable(self, i: int | str) -> bool:
        """Whether argument i (a position, or a keyword's name) can get an adjoint."""
        if self.full is not None and not isinstance(i, str):
            return True
        return self.pullback(i) is not None

    def pullback(self, i: int | str):
        """The per-argument pullback of argument i (a position or a keyword), or None."""
        if isinstance(i, str):
            return self.by_keyword(i) if self.by_keyword is not None else None
        if i < len(self.per_arg):
            return self.per_arg[i]
        if self.varargs is not None:
            return self.varargs(i)
        return None

    def unknown_keywords(self, kwargs: dict) -> list[str]:
        """The keyword names of a call this rule does not understand (numpy's
        `out=None`, no output buffer, is the same as leaving it out)."""
        if self.keywords is None:
            return []
        return [n for n, v in kwargs.items()
                if n not in self.keywords and not (n == "out" and v is None)]

    def __repr__(self) -> str:
        return f"<Rule for {getattr(self.fn, '__qualname__', self.fn)!r}>"


_RULES: dict = {}
_VERSION = [0]


def _key(fn):
    # A bound method of a Python function is looked up by its function.
    if isinstance(fn, types.MethodType):
        return fn.__func__
    return fn


def lookup(fn) -> Rule | None:
    """The rule for callable `fn`, or None."""
    try:
        r = _RULES.get(fn)
        if r is None and isinstance(fn, types.MethodType):
            r = _RULES.get(fn.__func__)
        return r
    except TypeError:  # an unhashable callable has no rule
        return None


def rules_version() -> int:
    """A counter bumped by every new rule (cached gradients depend on the table)."""
    return _VERSION[0]


def defrule(fn, *per_arg, varargs=None, templates=None, template_arity=None,
            keywords=(), by_keyword=None) -> Rule:
    """Register per-argument pullbacks for `fn` (the built-in rules use this).
    `keywords`: the keyword arguments the pullbacks read (a call with any other is
    refused: NoRuleError).  For a Python function (numpy's), keyword arguments that
    can be passed by position reach the pullbacks by position."""
    sig = _python_signature(fn)
    if sig is not None:
        names = [p.name for p in sig.parameters.values()
                 if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        keywords = tuple(keywords) + tuple(names[1:])
    r = Rule(fn, per_arg, varargs=varargs, templates=templates,
             template_arity=template_arity, keywords=keywords, by_keyword=by_keyword)
    r.signature = sig
    _RULES[_key(fn)] = r
    _VERSION[0] += 1
    return r


def _python_signature(fn):
    """The signature of a Python function (numpy's wrappers included), else None."""
    if isinstance(fn, (types.BuiltinFunctionType, types.MethodDescriptorType,
                       types.WrapperDescriptorType, type)) or not callable(fn):
        return None  # C functions: their keywords are few and listed by the rule
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None  # a ufunc
    kinds = [p.kind for p in sig.parameters.values()]
    return sig if kinds.count(inspect.Parameter.POSITIONAL_OR_KEYWORD) > 1 else None


def positional(rule, args: tuple, kwargs: dict):
    """`(args, kwargs)` of a call of `rule.fn` with the keyword arguments that can be
    passed by position moved there (all earlier parameters given: Python binds the
    rest as keywords), so pullbacks read them by position."""
    sig = rule.signature
    if sig is None or not kwargs:
        return args, kwargs
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return args, kwargs
    return tuple(bound.args), dict(bound.kwargs)


def rule(fn, pullback: Callable | None = None):
    """Register the pullback of `fn`: `@tracer.rule(fn)` on a function
    `pullback(g, ans, *args, **kwargs)` returning one adjoint per positional argument
    of `fn` (None for an argument without one; a single adjoint for a one-argument
    `fn` may be returned bare).

    `fn` is then primitive while differentiating: its calls are not traced inside,
    and their arguments get the adjoints the pullback returns.
    """
    if not callable(fn):
        raise TypeError(f"tracer.rule needs the callable the rule is for, got {fn!r}")

    def register(pb):
        if not callable(pb):
            raise TypeError(f"a rule's pullback must be callable, got {pb!r}")
        _RULES[_key(fn)] = Rule(fn, full=_as_tuple(pb))
        _VERSION[0] += 1
        return pb

    if pullback is not None:
        return register(pullback)
    return register


def _as_tuple(pb):
    def full(g, ans, *args, **kwargs):
        out = pb(g, ans, *args, **kwargs)
        if not isinstance(out, (tuple, list)):
            if len(args) != 1:
                raise TypeError(f"the pullback {getattr(pb, '__qualname__', pb)} must "
                                f"return a tuple of {len(args)} adjoints (None for none)")
            out = (out,)
        return out

    full.__wrapped__ = pb
    return full


def python_primitives() -> list:
    """The Python functions with rules: calls of them must not be traced inside."""
    return [k for k in _RULES if isinstance(k, types.FunctionType)]
