"""How values read in a dump: bounded reprs, callables by name, and `Const`, a
constant input of a recorded call.  The lowest layer of the views (no node here)."""

from __future__ import annotations

import reprlib
import types

__all__ = ["Const", "SavedText", "short_value"]

class SavedText:
    """Base of the values a loaded trace holds only as their display text (the
    stand-ins of tracer.persist): they show as that text, unshortened again."""

    __slots__ = ()
    text: str


class _Repr(reprlib.Repr):
    def repr1(self, x, level):
        # A saved value's stand-in inside a container: reprlib would pick its method
        # by the stand-in's type name (`deque`), which the stand-in only borrows.
        if isinstance(x, SavedText) and hasattr(self, "repr_" + type(x).__name__):
            return x.text
        return super().repr1(x, level)


_repr = _Repr()
_repr.maxstring = 40
_repr.maxother = 60
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6

_CALLABLE_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                   types.WrapperDescriptorType, types.ClassMethodDescriptorType, type)


def short_value(value) -> str:
    """A bounded repr; functions and classes by their qualified name, bound methods
    with their receiver."""
    if isinstance(value, SavedText):
        return value.text
    receiver = _receiver(value)
    if receiver is not None:
        return f"{_name(value)} of {short_value(receiver)}"
    if isinstance(value, _CALLABLE_TYPES):
        return _name(value)
    if isinstance(value, types.MethodType):
        return f"{_name(value.__func__)} of {short_value(value.__self__)}"
    if isinstance(value, str) and value.startswith("$"):
        return value
    return _one_line(_repr.repr(value))


def _one_line(text: str) -> str:
    # A repr over several lines (a numpy array's) on one: a dump has a line per node.
    return " ".join(text.split()) if "\n" in text else text


def _name(fn) -> str:
    mod = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "?")
    if mod == "_operator":
        mod = "operator"
    if mod in (None, "builtins", "__main__") or mod.startswith("tracer.callables"):
        return name
    if isinstance(fn, types.FunctionType) and not mod.startswith(("operator",)):
        return name
    return f"{mod}.{name}"


def _receiver(value):
    """The object a builtin method or slot wrapper is bound to ("a,b".split: "a,b"),
    or None.

    Builtins of a module (math.sin) and methods bound to a class (dict.fromkeys)
    name what they belong to already.
    """
    if not isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)):
        return None
    owner = getattr(value, "__self__", None)
    if owner is None or isinstance(owner, (types.ModuleType, type)):
        return None
    return owner


class Const:
    """A constant input of a recorded call (IRTracker's ⟨constant⟩)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        # Equal to a Const of the same object.  Compared with a plain callable
        # (`node.function == operator.mul`) it would silently be False: that
        # raises and says what to compare instead.  Anything else is not equal.
        if isinstance(other, Const):
            return other.value is self.value
        if not callable(other) or type(other).__module__.startswith("tracer."):
            return NotImplemented
        raise TypeError(f"a Const (an IR argument holding {short_value(self.value)}) is "
                        f"compared with a {type(other).__name__}; compare its .value "
                        "(or a call node's .callee) instead: node.callee is f")

    def __hash__(self):
        return id(self.value)

    def __repr__(self):
        return f"⟨{short_value(self.value)}⟩"
