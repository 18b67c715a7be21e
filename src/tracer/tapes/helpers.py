"""Runtime helpers that tapes call for instructions with no standard callable.

Each reproduces one instruction exactly (results and errors), so that a tape op
calling it means what the traced instruction did.
"""

from __future__ import annotations

import keyword
import types

__all__ = ["STOP", "unpack_sequence", "unpack_ex", "yield_from_iter", "match_class",
           "match_sequence", "match_mapping", "match_keys",
           "make_binder", "bind_call"]


class _Stop:
    """The sentinel `next(iterator, STOP)` returns when a `for` loop's iterator ends."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "STOP"

    def __reduce__(self):
        return "STOP"


STOP = _Stop()


def unpack_sequence(sequence, count):
    """`a, b, ... = sequence` (UNPACK_SEQUENCE): the `count` items as a tuple."""
    if type(sequence) in (tuple, list) and len(sequence) == count:
        return tuple(sequence)
    it = _iterate(sequence)
    items = []
    for item in it:
        items.append(item)
        if len(items) > count:
            raise ValueError(f"too many values to unpack (expected {count})")
    if len(items) < count:
        raise ValueError(f"not enough values to unpack (expected {count}, got {len(items)})")
    return tuple(items)


def unpack_ex(sequence, before, after):
    """`a, *b, c = sequence` (UNPACK_EX): `before` items, the rest as a list, `after` items."""
    items = list(_iterate(sequence))
    if len(items) < before + after:
        raise ValueError(f"not enough values to unpack (expected at least {before + after}, "
                         f"got {len(items)})")
    middle = items[before:len(items) - after]
    return (*items[:before], middle, *items[len(items) - after:])


def _iterate(value):
    if not hasattr(type(value), "__iter__") and not hasattr(type(value), "__getitem__"):
        raise TypeError(f"cannot unpack non-iterable {type(value).__name__} object")
    return iter(value)


def yield_from_iter(value):
    """GET_YIELD_FROM_ITER: generators and coroutines as they are, anything else iter()."""
    if isinstance(value, (types.GeneratorType, types.CoroutineType)):
        return value
    return iter(value)


# CPython's type flags behind MATCH_SEQUENCE and MATCH_MAPPING (Include/object.h):
# a class is a sequence or a mapping for `match` by these bits, which
# collections.abc's register() and subclassing set, not by isinstance.
_TPFLAGS_SEQUENCE = 1 << 5
_TPFLAGS_MAPPING = 1 << 6


def match_sequence(subject):
    """MATCH_SEQUENCE: whether a sequence pattern may match `subject` (its type has
    Py_TPFLAGS_SEQUENCE: list, tuple, range, deque... but not str, bytes)."""
    return bool(type(subject).__flags__ & _TPFLAGS_SEQUENCE)


def match_mapping(subject):
    """MATCH_MAPPING: whether a mapping pattern may match `subject` (Py_TPFLAGS_MAPPING)."""
    return bool(type(subject).__flags__ & _TPFLAGS_MAPPING)


def match_keys(subject, keys):
    """MATCH_KEYS: the values of `keys` in the mapping `subject` as a tuple, or None
    when one is missing; read as CPython does, with `subject.get(key, dummy)`."""
    if not keys:
        return ()
    get = subject.get
    seen = set()
    dummy = object()
    values = []
    for key in keys:
        if key in seen:
            raise ValueError(f"mapping pattern checks duplicate key ({key!r})")
        seen.add(key)
        value = get(key, dummy)
        if value is dummy:
            return None
        values.append(value)
    return tuple(values)


_SELF_MATCHING = (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)


def match_class(subject, cls, names, nargs):
    """MATCH_CLASS: the attributes a class pattern `cls(p0, ..., k=...)` extracts, or None."""
    if not isinstance(cls, type):
        raise TypeError("called match pattern must be a class")
    if not isinstance(subject, cls):
        return None
    attrs = []
    seen = set()
    if nargs:
        match_args = getattr(cls, "__match_args__", None)
        if match_args is None:
            # Builtins such as int and str (and their subclasses) match themselves
            # with one positional sub-pattern.
            if nargs == 1 and issubclass(cls, _SELF_MATCHING):
                attrs.append(subject)
            else:
                raise TypeError(f"{cls.__name__}() accepts 0 positional sub-patterns ({nargs} given)")
        else:
            if not isinstance(match_args, tuple):
                raise TypeError(f"{cls.__name__}.__match_args__ must be a tuple "
                                f"(got {type(match_args).__name__})")
            if nargs > len(match_args):
                raise TypeError(f"{cls.__name__}() accepts {len(match_args)} positional "
                                f"sub-pattern{'s' if len(match_args) != 1 else ''} ({nargs} given)")
            for name in match_args[:nargs]:
                seen.add(name)
                try:
                    attrs.append(getattr(subject, name))
                except AttributeError:
                    return None
    for name in names:
        if name in seen:
            raise TypeError(f"{cls.__name__}() got multiple sub-patterns for attribute {name!r}")
        seen.add(name)
        try:
            attrs.append(getattr(subject, name))
        except AttributeError:
            return None
    return tuple(attrs)


# -- binding a call's arguments to a function's parameters ---------------------------------

_binders: dict = {}


def make_binder(func: types.FunctionType):
    """A function with `func`'s signature (and defaults) that returns the tuple of its
    parameters' values in `co_varnames` order: Python's own binding, with its errors."""
    code = func.__code__
    # Defaults by identity (they may be unhashable); the binder keeps them alive.
    key = (code, id(func.__defaults__), _kwdefaults_key(func))
    binder = _binders.get(key)
    if binder is not None:
        return binder
    npos, nkw, nposonly = code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount
    names = code.co_varnames
    nparams = npos + nkw + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    # Parameter names are identifiers already; `_d` defaults are replaced by the real
    # objects through __defaults__ / __kwdefaults__, never written as source.
    parts = []
    ndef = len(func.__defaults__ or ())
    for i, name in enumerate(names[:npos]):
        parts.append(f"{name}=None" if i >= npos - ndef else name)
        if nposonly and i == nposonly - 1:
            parts.append("/")
    k = npos + nkw
    if code.co_flags & 0x04:
        parts.append("*" + names[k])
        k += 1
    elif nkw:
        parts.append("*")
    kwdefaults = func.__kwdefaults__ or {}
    for name in names[npos:npos + nkw]:
        parts.append(f"{name}=None" if name in kwdefaults else name)
    if code.co_flags & 0x08:
        parts.append("**" + names[k])
    for name in names[:nparams]:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(f"cannot bind the parameters of {func.__qualname__}: "
                             f"parameter name {name!r}")
    src = (f"def {func.__name__ if func.__name__.isidentifier() else 'bind'}({', '.join(parts)}):\n"
           f"    return ({''.join(n + ', ' for n in names[:nparams])})\n")
    namespace: dict = {}
    exec(src, {"__builtins__": {}}, namespace)
    binder = next(iter(namespace.values()))
    binder.__defaults__ = func.__defaults__
    binder.__kwdefaults__ = dict(kwdefaults) if kwdefaults else None
    binder.__qualname__ = func.__qualname__
    if len(_binders) > 4096:
        _binders.clear()
    _binders[key] = binder
    return binder


def _kwdefaults_key(func):
    # By identity; the binder's __kwdefaults__ holds the same values, keeping them alive.
    kw = func.__kwdefaults__
    return None if not kw else tuple((k, id(v)) for k, v in kw.items())


def bind_call(binder, args, kwargs, *self):
    """Bind `f(*self, *args, **kwargs)` to parameters with `binder` (see make_binder)."""
    return binder(*self, *args, **kwargs)


def throw(exc, context, *cause):
    """What `raise exc [from cause]` does to the exception besides raising it: the
    exception being handled becomes its `__context__`, `cause` its `__cause__`."""
    if context is not None and context is not exc:
        exc.__context__ = context
    if cause:
        exc.__cause__ = cause[0]
    return exc


def new_cell(*content):
    """A closure cell holding `content` (empty without it)."""
    return types.CellType(*content)


def cell_set(cell, content):
    """Store `content` in `cell` (a variable that closures share was assigned)."""
    cell.cell_contents = content


def cell_get(cell):
    """The value in `cell` (a read of a variable that closures share)."""
    try:
        return cell.cell_contents
    except ValueError:
        raise NameError("cannot access free variable: it is not associated with a value "
                        "in enclosing scope") from None


def make_closure(func, cells):
    """`func` again, with the closure `cells`: the function the traced code made, for
    this run's variables."""
    new = types.FunctionType(func.__code__, func.__globals__, func.__name__,
                             func.__defaults__, cells)
    new.__kwdefaults__ = func.__kwdefaults__
    new.__qualname__ = func.__qualname__
    new.__dict__.update(func.__dict__)
    if func.__annotations__:
        new.__annotations__ = func.__annotations__
    return new


def with_exit(manager, exc):
    """WITH_EXCEPT_START: the `__exit__` call of a `with` block that `exc` leaves."""
    return type(manager).__exit__(manager, type(exc), exc, exc.__traceback__)


def is_function(callee, func) -> bool:
    """Whether calling `callee` runs the body of `func` (the same code: a closure made
    again, or a method bound to it, runs the same body)."""
    target = getattr(callee, "__func__", callee)
    return target is func or getattr(target, "__code__", None) is func.__code__


def resolves_to(obj, name, func) -> bool:
    """Whether `obj.name(...)` finds the body of `func` in the class of `obj` (a method
    call's dispatch: another class may define another method of that name)."""
    for klass in type(obj).__mro__:
        found = klass.__dict__.get(name, _ABSENT)
        if found is not _ABSENT:
            return found is func or getattr(found, "__code__", None) is func.__code__
    return False


_ABSENT = object()
