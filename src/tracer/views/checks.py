"""Argument checks of the public functions: what they take, said in a TypeError
(or a ValueError for a value of the right type out of range) before anything else
fails deeper down with a message about attributes or numpy."""

from __future__ import annotations

import operator
from typing import Any

from .. import _core
from .values import short_value

__all__ = ["node_arg", "trace_arg", "levels_arg", "given"]


def given(obj: Any) -> str:
    """How an argument reads in a message: its type, and its value if short."""
    text = short_value(obj)
    name = type(obj).__name__
    return f"{name} {text}" if len(text) <= 30 else name


def node_arg(obj: Any, fn: str) -> Any:
    """`obj` if it is a node view; else a TypeError naming `fn` and what it takes."""
    if isinstance(obj, _core.NodeView):
        return obj
    raise TypeError(f"{fn} takes a node (the root tracer.track returns, or any node of "
                    f"a trace), got {given(obj)}")


def trace_arg(obj: Any, fn: str) -> Any:
    """The Trace of a node view, or a Trace itself; else a TypeError naming `fn`."""
    if isinstance(obj, _core.NodeView):
        return obj.trace
    if isinstance(obj, _core.Trace):
        return obj
    raise TypeError(f"{fn} takes a node (the root tracer.track returns) or its trace "
                    f"(node.trace), got {given(obj)}")


def levels_arg(levels: Any, fn: str, *, optional: bool = False) -> Any:
    """`levels` (how many levels of a tree to show: 1 is the node alone) if it is an
    int >= 1 (or None when `optional`); else TypeError or ValueError saying so."""
    if levels is None and optional:
        return None
    try:
        if isinstance(levels, bool):
            raise TypeError
        levels = operator.index(levels)
    except TypeError:
        raise TypeError(f"{fn}: levels must be an int (1: the node alone, 2: with its "
                        f"children, ...), got {given(levels)}") from None
    if levels < 1:
        raise ValueError(f"{fn}: levels must be at least 1 (1: the node alone, 2: with "
                         f"its children, ...), got {levels}")
    return levels
