"""tracer.validate: the invariants every trace must hold (a violation is a bug in
tracer), as torch.fx's Graph.lint does for its graphs."""

from __future__ import annotations

import inspect

from .. import callables as ops
from .._core import FLAGS, KINDS, NOT_KEPT, ValueSummary
from .checks import node_arg
from .nodes import Node, node_at
from .values import short_value

__all__ = ["validate", "GraphError"]


class GraphError(AssertionError):
    """A trace violates an invariant of the graph (a bug in tracer)."""


_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def validate(root: Node) -> None:
    """Check the invariants of the graph under `root`; raise GraphError on a violation.

    Structure: references point backwards to nodes of the same call; every child lies
    inside its parent's row range and names it as parent; parameters are numbered
    0, 1, ... at the start of a call.  Locations: every node but the root has a
    location its IR answers (`node.ir[node.location]`), at an instruction (offset
    >= 0) unless it is a parameter, and a jump goes to an instruction.  Values: a
    return's value is its operand's, and a computed one (`return %k`) is a node, not
    a constant; an `is None` branch agrees with its operand; a tuple's items are its
    inputs' values (these three compare objects, so they are skipped for a trace whose
    values a snapshot policy made).  Calls: no node is left open (unless tracking stopped); a call
    whose body is recorded ends with its ReturnNode, whose value is the value the
    caller saw (or `metadata["original"]` after an override), or else it raised;
    only a generator or coroutine frame ends with a yield, and a frame without its
    parameters is one resumed; a return is the last node of its call.
    """
    node_arg(root, "validate")
    t = root.trace
    n = len(t)
    # Location facts already checked, one IR lookup each: key -> whether it builds a tuple.
    located: dict[tuple, bool] = {}
    stack = [root.row]
    while stack:
        p = stack.pop()
        end = t.end(p)
        if not (p < end <= n):
            raise GraphError(f"row {p}: subtree end {end} outside ({p}, {n}]")
        pend = t.end(t.parent(p)) if t.parent(p) >= 0 else n
        if end > pend:
            raise GraphError(f"row {p}: subtree end {end} beyond its parent's end {pend}")
        children = t.children(p)
        expected_pos = 0
        for c in children:
            if t.parent(c) != p:
                raise GraphError(f"row {c}: listed under {p} but its parent is {t.parent(c)}")
            kind = t.kind(c)
            if not 0 <= kind < len(KINDS):
                raise GraphError(f"row {c}: unknown kind {kind}")
            for r in t.refs(c):
                if not isinstance(r, int):
                    continue
                if r >= c:
                    raise GraphError(f"row {c}: references row {r}, which is not earlier")
                if t.parent(r) != p:
                    raise GraphError(
                        f"row {c}: references row {r} of another call (parent {t.parent(r)}, not {p})"
                    )
            flags = t.flags(c)
            if kind == 0 and not flags & FLAGS["carried"]:
                if t.aux(c) != expected_pos:
                    raise GraphError(f"row {c}: parameter position {t.aux(c)}, expected {expected_pos}")
                expected_pos += 1
            if flags & FLAGS["open"] and not t.stopped:
                raise GraphError(f"row {c}: {KINDS[kind]} node still open in a finished trace")
            if kind == 6 and c != children[-1]:
                raise GraphError(f"row {c}: a return that is not the last node of its call")
            if kind in (5, 6):
                _check_control(t, c)
            key = (id(t.code(c)), t.offset(c), kind, flags & (FLAGS["frame"] | FLAGS["carried"]),
                   t.aux(c) if kind in (0, 5) else 0, p == 0)
            builds = located.get(key)
            if builds is None:
                node = node_at(t, c)
                _check_location(node)
                rec = node._rec() if kind == 2 else None
                builds = located[key] = rec is not None and rec.fn is ops.build_tuple
            if builds and not flags & FLAGS["raised"] and not t.snapshots:
                _check_items(t, c)
            if kind == 3:
                stack.append(c)
        if t.kind(p) == 3 and not t.stopped:
            _check_call(t, p, children)


def _check_location(node: Node) -> None:
    """`node.ir[node.location]` answers, with an instruction unless it is a parameter."""
    t, c = node.trace, node.row
    kind, off = t.kind(c), t.offset(c)
    from_c = ", entered from C" if t.flags(c) & FLAGS["frame"] else ""
    what = f"row {c} ({KINDS[kind]} node{from_c})"
    if t.code(c) is None:
        if t.parent(c) == 0 and t.code(0) is None and t.flags(c) & FLAGS["frame"]:
            return  # a frame the traced C callable entered (track(sorted, xs, key=f))
        raise GraphError(f"{what}: no code object")
    parameter = kind == 0 and not t.flags(c) & FLAGS["carried"]
    if off < 0 and not parameter:
        raise GraphError(f"{what}: offset {off}, no instruction (the recorder did not see "
                         "which instruction it came from)")
    loc = node.location
    if loc is None:
        raise GraphError(f"{what}: offset {off} is not an instruction of {t.code(c).co_qualname}")
    try:
        stmt = node.ir[loc]
    except KeyError as exc:
        raise GraphError(f"{what}: its IR has no statement for its location ({exc})") from None
    if kind in (5, 6) and not stmt.id.startswith("&"):
        raise GraphError(f"{what}: recorded at {stmt.id}, not at a control statement")
    if kind == 5 and t.aux(c) not in node.ir.layout.by_offset:
        raise GraphError(f"{what}: jumps to offset {t.aux(c)}, not an instruction")


def _check_items(t, c: int) -> None:
    """A tuple's items are the values of the nodes it references (an edge to the wrong
    node shows here: 3.13's `not not x` once referred to x for bool(x))."""
    items = t.value(c)
    for i, r in enumerate(t.refs(c)):
        if isinstance(r, int) and items[i] is not t.value(r):
            raise GraphError(f"row {c}: builds a tuple whose item {i} is {_short(items[i])}, "
                             f"but its input (row {r}) is {_short(t.value(r))}")


def _check_control(t, c: int) -> None:
    """A return's value is its operand's; a None test's truth agrees with its operand."""
    refs = [r for r in t.refs(c) if isinstance(r, int)]
    if not refs:
        return
    value, operand = t.value(c), t.value(refs[0])
    if t.kind(c) == 6 and value is not operand and not t.snapshots:
        raise GraphError(f"row {c}: returns {_short(value)} but its operand (row {refs[0]}) "
                         f"is {_short(operand)}")
    if t.kind(c) == 6 and t.kind(refs[0]) == 1 and t.aux(refs[0]) == -2:
        node = node_at(t, c)
        computed = node.ir[node.location].operand
        if computed is not None and computed.startswith("%"):
            raise GraphError(f"row {c}: returns or yields {computed}, a value computed in its "
                             f"call, but refers to a constant (row {refs[0]}): the computation "
                             "was not recorded")
    if t.kind(c) == 5 and node_at(t, c).ir.layout.by_offset[t.offset(c)].opname in (
            "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE") and value is not (operand is None):
        raise GraphError(f"row {c}: took the branch for `is None` == {value}, but its operand "
                         f"(row {refs[0]}) is {_short(operand)}")


def _check_call(t, p: int, children: list[int]) -> None:
    """A call whose body is recorded is closed by its return, with the caller's value."""
    flags = t.flags(p)
    raised = bool(flags & FLAGS["raised"])
    if raised and not _exception_kept(t, t.value(p)):
        raise GraphError(f"row {p}: raised, but its value is {type(t.value(p)).__name__}, "
                         "not an exception")
    first = children[0] if children else -1
    starts = first >= 0 and t.kind(first) == 0 and not t.flags(first) & FLAGS["carried"]
    frame = bool(flags & FLAGS["frame"])
    if not (starts or frame):
        return  # a call made by C code that entered Python frames (each a node of its own)
    last = children[-1] if children else -1
    code = t.code(last) if last >= 0 else None
    generator = code is not None and bool(code.co_flags & _GENERATOR_FLAGS)
    if frame and not starts and not generator:
        raise GraphError(f"row {p}: a frame entered from C without its parameters, but "
                         f"{getattr(code, 'co_qualname', '?')} is no generator or coroutine")
    if raised:
        return
    if last < 0 or t.kind(last) != 6:
        raise GraphError(f"row {p}: a call with a recorded body that ends without a return "
                         f"(last node: row {last})")
    if t.flags(last) & FLAGS["yield"] and not generator:
        raise GraphError(f"row {last}: a yield in {code.co_qualname}, no generator or coroutine")
    seen, returned = t.value(p), t.value(last)
    if seen is not returned and not t.snapshots:
        original = t.metadata.get(p, {}).get("original", seen) if t.metadata else seen
        if original is not returned:
            raise GraphError(f"row {p}: the caller saw {_short(seen)} but the call returned "
                             f"{_short(returned)} (row {last})")


def _exception_kept(t, value) -> bool:
    """Whether `value` is an exception, or what a value policy kept of one."""
    if isinstance(value, BaseException) or value is NOT_KEPT:
        return True
    if isinstance(value, ValueSummary):
        return issubclass(value.type, BaseException)
    # A value policy's trace saved and loaded holds the stand-ins of its summaries.
    return t.snapshots and t.values_kept == "keep"


def _short(value) -> str:
    return f"{short_value(value)}::{type(value).__name__}"
