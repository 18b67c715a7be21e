"""How values read in a dump: bounded reprs, callables by name, and `Const`, a
constant input of a recorded call.  The lowest layer of the views (no node here)."""

from __future__ import annotations

import builtins
import itertools
import reprlib
import types

__all__ = ["Const", "SavedText", "ValueRepr", "long_int", "refused", "short_value"]


class SavedText:
    """Base of the values a loaded trace holds only as their display text (the
    stand-ins of tracer.persist): they show as that text, unshortened again."""

    __slots__ = ()
    text: str


class ValueRepr(reprlib.Repr):
    """reprlib's bounded repr that never raises and never shows a value the program
    did not have: dicts keep their insertion order (reprlib sorts their keys), an int
    too long for `str()` (`10 ** 5000`: Python refuses beyond 4300 digits) shows its
    size, and a value whose `__repr__` raises a placeholder naming its type.  Text is
    bounded by the limits set on the instance (reprlib's `maxstring`, `maxother`, ...)."""

    def repr(self, x) -> str:
        try:
            return super().repr(x)
        except Exception as exc:  # anything a user's object does while printed
            return refused(x, exc)

    def repr1(self, x, level):
        # A saved value's stand-in inside a container: reprlib would pick its method
        # by the stand-in's type name (`deque`), which the stand-in only borrows.
        if isinstance(x, SavedText) and hasattr(self, "repr_" + type(x).__name__):
            return x.text
        return super().repr1(x, level)

    def repr_dict(self, x, level):
        n = len(x)
        if n == 0:
            return "{}"
        if level <= 0:
            return "{" + self.fillvalue + "}"
        pieces = [f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}"
                  for k, v in itertools.islice(x.items(), self.maxdict)]
        if n > self.maxdict:
            pieces.append(self.fillvalue)
        return "{" + ", ".join(pieces) + "}"

    def repr_int(self, x, level):
        try:
            return super().repr_int(x, level)
        except ValueError:  # more digits than sys.get_int_max_str_digits() allows
            return long_int(x)

    def repr_instance(self, x, level):
        try:
            text = builtins.repr(x)
        except Exception as exc:
            return refused(x, exc)
        if not isinstance(text, str):  # pragma: no cover - repr() checks this itself
            return refused(x, TypeError("__repr__ returned a non-string"))
        if len(text) > self.maxother:
            i = max(0, (self.maxother - 3) // 2)
            j = max(0, self.maxother - 3 - i)
            text = text[:i] + self.fillvalue + text[len(text) - j:]
        return text


def refused(value, exc: BaseException) -> str:
    """The placeholder of a value whose text could not be made: its type, and why."""
    if isinstance(exc, ValueError) and isinstance(value, int):
        return long_int(value)
    return f"<{_type_name(value)} object: repr raised {type(exc).__name__}>"


def long_int(value: int) -> str:
    """`<int with 5001 digits>`: an int too long to convert to text, by its size
    (exact digits up to 2**20 bits; beyond, counting them costs more than a dump may)."""
    name = _type_name(value)
    sign = "negative " if value < 0 else ""
    bits = abs(value).bit_length()
    if bits > 1 << 20:
        return f"<{sign}{name} with {bits} bits>"
    digits = int(bits * 0.30102999566398120)  # log10(2): a lower bound, or exact
    if abs(value) >= 10 ** digits:
        digits += 1
    return f"<{sign}{name} with {digits} digits>"


def _type_name(value) -> str:
    cls = type(value)
    return getattr(cls, "__qualname__", None) or cls.__name__


_repr = ValueRepr()
_repr.maxstring = 40
_repr.maxother = 60
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6

_CALLABLE_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                   types.WrapperDescriptorType, types.ClassMethodDescriptorType, type)


def short_value(value) -> str:
    """A bounded repr; functions and classes by their qualified name, bound methods
    with their receiver.  Never raises (a value whose repr fails shows as a
    placeholder with its type: see `ValueRepr`)."""
    try:
        return _short_value(value)
    except Exception as exc:  # a callable's name or module that is not what it seems
        return refused(value, exc)


def _short_value(value) -> str:
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
