"""Readable dumps: one line per node, IRTracker style, and `printlevels`."""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

from .._core import FLAGS as F
from .checks import levels_arg, node_arg
from .values import Const, _receiver, short_value

if TYPE_CHECKING:  # the node classes, for annotations only: show reads node.kind
    from .nodes import CallNode, JumpNode, Node, SpecialCallNode

__all__ = ["format_node", "printlevels", "short_value"]  # short_value: from .values

# What a conditional branch tested, by instruction, and how its outcome reads.
_TRUTH_BRANCHES = ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE")
_NONE_BRANCHES = ("POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE")


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
    prefix = "Arg:" if node.kind == "argument" else ""
    line = "" if node.kind == "argument" or loc.line is None else f" L{loc.line}"
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
    kind = node.kind
    if kind == "argument":
        return _typed(node.value)
    arrow = " ↯ " if node.raised else " → "
    if kind == "constant":
        return f"⟨{short_value(node.value)}⟩ → {_typed(node.value)}"
    if kind == "jump":
        return _jump_text(node)
    if kind == "return":
        refs = node.referenced()
        word = "yield" if node.is_yield else "return"
        what = f"@{refs[0].index}" if refs else "?"
        return f"{word} {what} → {_typed(node.value)}"
    if kind == "special":
        text = _special_text(node)
        if text is not None:
            return f"{text}{arrow}{_typed(node.value)}"
    if kind == "nested" and node.resumed:
        return f"resume {_ref(node.function)}{arrow}{_typed(node.value)}"
    if kind in ("primitive", "nested", "special"):
        text = _call_text(node)
        if node.outputs > 1:
            text += "#0"
        if node.trace.flags(node.row) & F["stopped"]:
            return f"{text} → exhausted"  # a for-loop's next() found no item
        return f"{text}{arrow}{_typed(node.value)}"
    return _typed(node.value)


def format_node(node: Node) -> str:
    """One line: `@k: [§b:%i Ln] expression → value::type`.  Never raises on a value:
    one whose text cannot be made shows as a placeholder with its type."""
    node_arg(node, "format_node")
    if node.parent is None:
        return _body(node)
    return f"@{node.index}: {_location(node)}{_body(node)}"


def printlevels(node: Node, levels: int = 2, file=None) -> None:
    """Print `node` and its descendants down to `levels` levels (1: `node` alone),
    indented, to `file` (default sys.stdout)."""
    node_arg(node, "printlevels")
    levels = levels_arg(levels, "printlevels")
    out = file if file is not None else sys.stdout
    for depth, n in _walk(node, levels):
        out.write("  " * depth + format_node(n) + "\n")


def _walk(node: Node, levels: int, depth: int = 0):
    yield depth, node
    if levels > 1:
        for child in node.children:
            yield from _walk(child, levels - 1, depth + 1)
