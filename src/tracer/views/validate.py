"""tracer.validate: the invariants every trace must hold (a violation is a bug in
tracer), as torch.fx's Graph.lint does for its graphs."""

from __future__ import annotations

import inspect

import numpy as np

from .. import callables as ops
from .._core import FLAGS, KINDS, NOT_KEPT, ValueSummary, lint_structure, value_addresses
from .checks import node_arg
from .nodes import Node, node_at
from .values import SavedText, short_value

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

    The structure is checked in one pass of the core over the columns; the rest
    compares value addresses with numpy and looks at objects (IRs, values) only where
    a check could fail, and once per distinct location.
    """
    node_arg(root, "validate")
    t = root.trace
    error, firsts, group, last, first_ref = lint_structure(t, root.row, t.stopped)
    if error is not None:
        what, *numbers = error
        if what == "open":
            numbers[1] = KINDS[numbers[1]]
        raise GraphError(_STRUCTURE[what].format(*numbers))
    # The pass listed every row of (lo, hi): each row's parent is right, its refs are
    # earlier rows of its call and `last`/`first_ref`/`group` are complete.
    lo = root.row
    hi = t.end(lo)
    cols = t.columns()
    kind_col, flags_col, aux_col = cols["kind"], cols["flags"], cols["aux"]
    rows = np.arange(lo + 1, hi, dtype=np.int32)
    kind, flags = kind_col[lo + 1:hi], flags_col[lo + 1:hi]
    builds = _check_locations(t, firsts.tolist())
    _check_controls(t, rows[(kind == 5) | (kind == 6)], group, first_ref, kind_col, aux_col)
    if not t.snapshots and builds.any():
        tuples = rows[builds[group[lo + 1:hi]] & (flags & FLAGS["raised"] == 0)]
        for c in tuples.tolist():
            _check_items(t, c)
    if not t.stopped:
        calls = rows[kind == 3]
        if kind_col[lo] == 3:
            calls = np.concatenate(([lo], calls)).astype(np.int32)
        _check_calls(t, calls, last, kind_col, flags_col, aux_col)


_STRUCTURE = {
    "end outside": "row {0}: subtree end {1} outside ({0}, {2}]",
    "end beyond": "row {0}: subtree end {1} beyond its parent's end {2}",
    "listed": "row {0}: listed under {1} but its parent is {2}",
    "kind": "row {0}: unknown kind {1}",
    "later": "row {0}: references row {1}, which is not earlier",
    "other call": "row {0}: references row {1} of another call (parent {2}, not {3})",
    "parameter": "row {0}: parameter position {1}, expected {2}",
    "open": "row {0}: {1} node still open in a finished trace",
    "return not last": "row {0}: a return that is not the last node of its call",
}


def _check_locations(t, firsts: list[int]) -> np.ndarray:
    """Check the first row of each distinct location key (one IR lookup each);
    return, per key, whether its rows build a tuple."""
    builds = np.zeros(len(firsts), dtype=bool)
    for g, c in enumerate(firsts):
        node = node_at(t, c)
        _check_location(node)
        if t.kind(c) == 2:
            rec = node._rec()
            builds[g] = rec is not None and rec.fn is ops.build_tuple
    return builds


def _check_controls(t, ctl: np.ndarray, group, first_ref, kind_col, aux_col) -> None:
    """`_check_control` on every branch and return that could fail it: found by value
    addresses (equal addresses are the same object) and once per location."""
    operand = first_ref[ctl]
    ctl, operand = ctl[operand >= 0], operand[operand >= 0]
    if not len(ctl):
        return
    ret = kind_col[ctl] == 6
    value, operand_value = value_addresses(t, ctl), value_addresses(t, operand)
    suspects = []
    if not t.snapshots:
        suspects.append(ctl[ret & (value != operand_value)])
    # `return %k` referring to a constant: a fact of the location, checked at its first row.
    constant = ret & (kind_col[operand] == 1) & (aux_col[operand] == -2)
    _, first = np.unique(group[ctl[constant]], return_index=True)
    suspects.append(ctl[constant][first])
    # `is None` branches: the opcode is a fact of the location; the truth, of each row.
    jumps = ~ret
    keys = np.unique(group[ctl[jumps]])
    none_tests = [k for k, c in zip(keys.tolist(), _first_rows(ctl[jumps], group, keys))
                  if node_at(t, c).ir.layout.by_offset[t.offset(c)].opname
                  in ("POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE")]
    if none_tests:
        at = jumps & np.isin(group[ctl], none_tests)
        is_none = np.isin(operand_value[at], (0, id(None)))
        expected = np.where(is_none, id(True), id(False))
        suspects.append(ctl[at][value[at] != expected])
    for c in np.unique(np.concatenate(suspects)).tolist():
        _check_control(t, c)


def _first_rows(rows: np.ndarray, group: np.ndarray, keys: np.ndarray) -> list[int]:
    """The first of `rows` in each group of `keys` (sorted)."""
    g = group[rows]
    order = np.argsort(g, kind="stable")
    starts = np.searchsorted(g[order], keys)
    return rows[order[starts]].tolist()


def _check_calls(t, calls: np.ndarray, last, kind_col, flags_col, aux_col) -> None:
    """`_check_call` on every call that could fail it: one that raised, a frame
    entered from C, or a call with parameters whose last child is not a plain return
    of the value the caller saw (by address)."""
    if not len(calls):
        return
    n = len(t)
    F = FLAGS
    cflags = flags_col[calls]
    ends = np.where((cflags & F["open"] != 0) & (aux_col[calls] == 0), n, aux_col[calls])
    first = np.where(calls + 1 < ends, calls + 1, -1)
    lastc = last[calls]
    has = first >= 0
    starts = has & (kind_col[first] == 0) & (flags_col[first] & F["carried"] == 0)
    raised = cflags & F["raised"] != 0
    frame = cflags & F["frame"] != 0
    odd = frame | ~has | (kind_col[lastc] != 6) | (flags_col[lastc] & F["yield"] != 0)
    if not t.snapshots:
        odd |= value_addresses(t, calls) != value_addresses(t, np.where(has, lastc, calls))
    for i in np.flatnonzero(raised | ((starts | frame) & odd)).tolist():
        p = int(calls[i])
        _check_call(t, p, [int(first[i]), int(lastc[i])] if has[i] else [])


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
        original = t.metadata_get(p, "original", seen)
        if original is not returned:
            raise GraphError(f"row {p}: the caller saw {_short(seen)} but the call returned "
                             f"{_short(returned)} (row {last})")


def _exception_kept(t, value) -> bool:
    """Whether `value` is an exception, or what a value policy kept of one."""
    if isinstance(value, BaseException) or value is NOT_KEPT:
        return True
    if isinstance(value, ValueSummary):
        return issubclass(value.type, BaseException)
    # A value policy's trace saved and loaded holds the stand-ins of its summaries
    # (and one saved before files said the policy reads as "keep").
    return t.snapshots and (t.values_kept == "keep" or isinstance(value, SavedText))


def _short(value) -> str:
    return f"{short_value(value)}::{type(value).__name__}"
