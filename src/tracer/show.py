"""Readable dumps: one line per node, IRTracker style, and `printlevels`."""

from __future__ import annotations

import reprlib
import sys
import types

from .nodes import (
    ArgumentNode, CallNode, ConstantNode, Const, JumpNode, Node, ReturnNode, SpecialCallNode,
)

__all__ = ["format_node", "printlevels", "short_value"]

_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxother = 60
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6

_CALLABLE_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                   types.WrapperDescriptorType, types.ClassMethodDescriptorType, type)


def short_value(value) -> str:
    """A bounded repr; functions and classes by their qualified name."""
    if isinstance(value, _CALLABLE_TYPES):
        mod = getattr(value, "__module__", None)
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
        if mod == "_operator":
            mod = "operator"
        if mod in (None, "builtins", "__main__") or mod.startswith("tracer.ops"):
            return name
        if isinstance(value, types.FunctionType) and not mod.startswith(("operator",)):
            return name
        return f"{mod}.{name}"
    if isinstance(value, types.MethodType):
        return f"{short_value(value.__func__)} of {type(value.__self__).__name__}"
    if isinstance(value, str) and value.startswith("$"):
        return value
    return _repr.repr(value)


def _typed(value) -> str:
    return f"{short_value(value)}::{type(value).__name__}"


def _ref(node: Node, inp) -> str:
    if isinstance(inp, Const):
        return f"⟨{short_value(inp.value)}⟩"
    return f"@{inp.index}"


def _location(node: Node) -> str:
    loc = node.location
    if loc is None:
        return ""
    prefix = "Arg:" if isinstance(node, ArgumentNode) else ""
    line = "" if isinstance(node, ArgumentNode) or loc.line is None else f" L{loc.line}"
    return f"[{prefix}§{loc.block}:{loc.stmt}{line}] "


def _call_text(node: CallNode) -> str:
    fn = node.function
    if isinstance(fn, Const) and isinstance(fn.value, str) and fn.value.startswith("$"):
        head = fn.value
    else:
        head = _ref(node, fn)
    if node.is_star_call:
        args = node.arguments
        parts = [f"*{_ref(node, args[0])}"] + ([f"**{_ref(node, args[1])}"] if len(args) > 1 else [])
    else:
        parts = [_ref(node, a) for a in node.arguments]
        parts += [f"{k}={_ref(node, v)}" for k, v in node.keywords.items()]
    return f"{head}({', '.join(parts)})"


def _body(node: Node) -> str:
    if isinstance(node, ArgumentNode):
        return _typed(node.value)
    arrow = " ↯ " if node.raised else " → "
    if isinstance(node, ConstantNode):
        return f"⟨{short_value(node.value)}⟩ → {_typed(node.value)}"
    if isinstance(node, JumpNode):
        cond = node.condition
        text = f"goto §{node.target}"
        if node.referenced() or node.value is not None:
            if cond is not None:
                text += f" since @{cond.index} == {node.value}"
            elif node.value is not None:
                text += f" since {node.value}"
        return text
    if isinstance(node, ReturnNode):
        refs = node.referenced()
        word = "yield" if node.is_yield else "return"
        what = f"@{refs[0].index}" if refs else "?"
        return f"{word} {what} → {_typed(node.value)}"
    if isinstance(node, SpecialCallNode) and node.trace.flags(node.row) & 32:
        return f"$exception → {_typed(node.value)}"
    if isinstance(node, CallNode):
        return f"{_call_text(node)}{arrow}{_typed(node.value)}"
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
