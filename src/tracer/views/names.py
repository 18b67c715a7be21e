"""The one naming of callables and code objects: what `table()`'s callee column,
`summary()`, queries, saved files and the CLI call a function, identical on live and
loaded traces.

A callable is named by its qualified name, never by an address or its receiver's
repr: `len`, `math.sqrt`, `numpy.sqrt`, `list.append` (the method descriptor and a
list's bound `append` alike), `ndarray.reshape` and `Pattern.findall` (a method of a
C class, by its qualified name, as dumps print it), `Random.gauss` (a Python method, bound or not: the
name its recorded body's code has), `_json.Encoder.__call__` (an object called; `Scale.__call__` when its type's
__call__ is a Python function, as its recorded body is named).
A loaded trace's stand-in for a callable carries the name it had when saved.
"""

from __future__ import annotations

import inspect
import sys
import types

from .values import SavedText, _name, short_value

__all__ = ["callable_name", "code_name", "matches_name", "find_callable"]

_NAMED_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                types.WrapperDescriptorType, types.ClassMethodDescriptorType,
                types.MethodWrapperType, type)


def callable_name(value) -> str:
    """The qualified name of a called object (see this module's docstring).  A value
    that is no callable (a special's "$name", a saved value kept as text) is named
    by its display text.  Never raises (a callable that fails to name itself shows
    as `short_value` has it)."""
    try:
        return _callable_name(value)
    except Exception:  # a user's callable whose __qualname__ or __self__ raises
        return short_value(value)


def _callable_name(value) -> str:
    if isinstance(value, SavedText):
        name = getattr(value, "name", None)
        return name if name else value.text
    if isinstance(value, types.MethodType):
        value = value.__func__
    if isinstance(value, _NAMED_TYPES):
        return _name(value)
    if isinstance(value, str):
        return value
    if isinstance(getattr(value, "__qualname__", None), str) or \
            isinstance(getattr(value, "__name__", None), str):
        return _name(value)          # function-like objects: numpy ufuncs, Cython functions
    if callable(value):
        call = getattr(type(value), "__call__", None)
        if isinstance(call, types.FunctionType):
            return _name(call)       # as its recorded body is named: `Scale.__call__`
        return f"{_name(type(value))}.__call__"
    return short_value(value)


def code_name(code) -> str:
    """A code object's (or a loaded stand-in's) qualified name."""
    return getattr(code, "co_qualname", None) or getattr(code, "co_name", "?")


def matches_name(name: str, wanted: str) -> bool:
    """Whether callable name `name` is `wanted` or ends in "." + `wanted`: "sqrt" and
    "math.sqrt" match "math.sqrt", "Pattern.findall" matches "re.Pattern.findall"."""
    return name == wanted or name.endswith("." + wanted)


def find_callable(name: str, type_name: str | None = None):
    """The callable `callable_name` names `name`, looked up among the modules already
    imported (nothing is imported, no module `__getattr__` runs), or None.  With
    `type_name` ("module.qualname" of its type, as a saved value records it) the
    object found must be of that type too: a saved bound method `list.append` (of
    some list) is not the method descriptor `list.append`.

    A method of a C class is named without its module (`ndarray.reshape`): it is
    looked for in every imported module that has the class, and found only when they
    all have the same one.  A loaded trace uses this to give back the functions it
    called (`math.sin`, `numpy.sqrt`, `operator.add`, `ndarray.reshape`), so its tape
    runs and backprop finds their rules.
    """
    key = (name, type_name)
    hit = _FOUND.get(key, _MISSING)
    if hit is not _MISSING and (hit is not None or _FOUND_AT.get(key) == len(sys.modules)):
        return hit
    parts = name.split(".")
    found = None
    if all(p.isidentifier() for p in parts):
        found = _by_module_path(parts, name, type_name)
        if found is None and len(parts) > 1:
            found = _by_class_name(parts, name, type_name)
    _FOUND[key] = found
    _FOUND_AT[key] = len(sys.modules)     # a miss is tried again once more modules load
    return found


_MISSING = object()
_FOUND: dict = {}
_FOUND_AT: dict = {}


def _attribute_path(obj, parts):
    for part in parts:
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            return None
    return obj


def _fits(obj, name: str, type_name: str | None) -> bool:
    if obj is None or isinstance(obj, (staticmethod, classmethod, property)):
        return False
    if type_name is not None:
        cls = type(obj)
        if f"{cls.__module__}.{cls.__qualname__}" != type_name:
            return False
    return callable(obj) and callable_name(obj) == name


def _by_module_path(parts, name: str, type_name: str | None):
    """`math.sqrt`, `numpy.sqrt`, `len`: a module's attribute path."""
    for k in range(len(parts) - 1, -1, -1):
        module = sys.modules.get(".".join(parts[:k]) if k else "builtins")
        if module is not None:
            obj = _attribute_path(module, parts[k:])
            if _fits(obj, name, type_name):
                return obj
    return None


def _by_class_name(parts, name: str, type_name: str | None):
    """`ndarray.reshape`: the class `ndarray` in whichever imported modules hold it,
    when they agree on the object."""
    found = None
    for module in list(sys.modules.values()):
        owner = getattr(module, "__dict__", {}).get(parts[0])
        if not isinstance(owner, type):
            continue
        obj = _attribute_path(owner, parts[1:])
        if _fits(obj, name, type_name):
            if found is not None and obj is not found:
                return None                 # two different classes of that name
            found = obj
    return found
