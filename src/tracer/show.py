"""Readable dumps: one line per node, IRTracker style, and `printlevels`."""

from __future__ import annotations

import reprlib
import sys
import types

from .nodes import (
    F, ArgumentNode, CallNode, ConstantNode, Const, JumpNode, NestedCallNode, Node, ReturnNode,
    SpecialCallNode,
)

__all__ = ["format_node", "printlevels", "short_value"]

_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxother = 60
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6

_CALLABLE_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                   types.WrapperDescriptorType, types.ClassMethodDescriptorType, type)

# What a conditional branch tested, by instruction, and how its outcome reads.
_TRUTH_BRANCHES = ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE")
_NONE_BRANCHES = ("POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE")


def short_value(value) -> str:
    """A bounded repr; functions and classes by their qualified name, bound methods
    with their receiver."""
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
    if mod in (None, "builtins", "__main__") or mod.startswith("tracer.ops"):
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


def _typed(value) -> str:
    return f"{short_value(value)}::{type(value).__name__}"


def _ref(inp) -> str:
    if isinstance(inp, Const):
        return f"⟨{short_value(inp.value)}⟩"
    return f"@{inp.index}"


def _location(node: Node) -> str:
    if node.code is None:
        return ""  # a frame the traced C callable entered: no code of the trace's holds it
    loc = node.location
    if loc is None:
        return "[?] "  # the recorder did not see its instruction (tracer.validate says so)
    prefix = "Arg:" if isinstance(node, ArgumentNode) else ""
    line = "" if isinstance(node, ArgumentNode) or loc.line is None else f" L{loc.line}"
    return f"[{prefix}§{loc.block}:{loc.stmt}{line}] "


def _call_text(node: CallNode) -> str:
    fn = node.function
    args, keywords = node.arguments, node.keywords
    if node.from_c:
        # Its arguments came from C code, not from nodes of the call holding it: they
        # show as values, as the root's do.
        args = [Const(a.value) for a in args]
    if node.parent is None:
        fn, args = _unbound(fn, args)
    if isinstance(fn, Const) and isinstance(fn.value, str) and fn.value.startswith("$"):
        head = fn.value
    else:
        head = _ref(fn)
    if node.is_star_call:
        parts = [f"*{_ref(args[0])}"] + ([f"**{_ref(args[1])}"] if len(args) > 1 else [])
    else:
        parts = [_ref(a) for a in args]
        parts += [f"{k}={_ref(v)}" for k, v in keywords.items()]
    return f"{head}({', '.join(parts)})"


def _unbound(fn, args: list) -> tuple:
    """A bound method called as the root: its function with the receiver as argument
    1, as a method call inside a trace shows (and as the root's ArgumentNodes are)."""
    if not isinstance(fn, Const):
        return fn, args
    value = fn.value
    if isinstance(value, types.MethodType):
        return Const(value.__func__), [Const(value.__self__), *args]
    owner = _receiver(value)
    if owner is not None:
        method = getattr(type(owner), value.__name__, None)
        if method is not None:
            return Const(method), [Const(owner), *args]
    return fn, args


def _jump_text(node: JumpNode) -> str:
    text = f"goto §{node.target}"
    value = node.value
    if value is None:  # unconditional, or a jump the recorder could not follow
        return text
    inputs = node.inputs()  # the node tested, or a constant (`if DEBUG:`), or none: unknown
    what = _ref(inputs[0]) if inputs else "⟨?⟩"
    ins = node.ir.layout.by_offset.get(node.trace.offset(node.row))
    opname = ins.opname if ins is not None else ""
    if opname == "FOR_ITER":
        return f"{text} since {what} {'not exhausted' if value else 'exhausted'}"
    if opname in _NONE_BRANCHES:
        return f"{text} since {what} is {'None' if value else 'not None'}"
    if inputs and not isinstance(inputs[0].value, bool) and opname in _TRUTH_BRANCHES:
        return f"{text} since bool({what}) == {value}"  # `if items:` tests a list's truth
    return f"{text} since {what} == {value}"


def _special_text(node: SpecialCallNode) -> str | None:
    """The forms of special nodes that are not calls, or None."""
    flags = node.trace.flags(node.row)
    refs = node.referenced()
    if flags & F["exception"]:
        return f"$exception({_ref(refs[0])})" if refs else "$exception"
    if node.is_raise:
        return f"raise {_ref(refs[0])}" if refs else "raise"
    k = node.output
    if k > 0:
        # Output k of a statement with several (`a, b = x`: %5, %5#1 in the IR): it
        # hangs off the node of output 0, as IRTracker's @i#j.
        return f"@{refs[0].index}#{k}" if refs else f"?#{k}"
    return None


def _body(node: Node) -> str:
    if isinstance(node, ArgumentNode):
        return _typed(node.value)
    arrow = " ↯ " if node.raised else " → "
    if isinstance(node, ConstantNode):
        return f"⟨{short_value(node.value)}⟩ → {_typed(node.value)}"
    if isinstance(node, JumpNode):
        return _jump_text(node)
    if isinstance(node, ReturnNode):
        refs = node.referenced()
        word = "yield" if node.is_yield else "return"
        what = f"@{refs[0].index}" if refs else "?"
        return f"{word} {what} → {_typed(node.value)}"
    if isinstance(node, SpecialCallNode):
        text = _special_text(node)
        if text is not None:
            return f"{text}{arrow}{_typed(node.value)}"
    if isinstance(node, NestedCallNode) and node.resumed:
        return f"resume {_ref(node.function)}{arrow}{_typed(node.value)}"
    if isinstance(node, CallNode):
        text = _call_text(node)
        if node.outputs > 1:
            text += "#0"
        if node.trace.flags(node.row) & F["stopped"]:
            return f"{text} → exhausted"  # a for-loop's next() found no item
        return f"{text}{arrow}{_typed(node.value)}"
    return _typed(node.value)


def format_node(node: Node) -> str:
    """One line: `@k: [§b:%i Ln] expression → value::type`."""
    if node.parent is None:
        return _body(node)
    return f"@{node.index}: {_location(node)}{_body(node)}"


def printlevels(node: Node, levels: int = 2, file=None) -> None:
    """Print `node` and its descendants down to `levels` levels, indented."""
    out = file if file is not None else sys.stdout
    for depth, n in _walk(node, levels):
        out.write("  " * depth + format_node(n) + "\n")


def _walk(node: Node, levels: int, depth: int = 0):
    yield depth, node
    if levels > 1:
        for child in node.children:
            yield from _walk(child, levels - 1, depth + 1)
