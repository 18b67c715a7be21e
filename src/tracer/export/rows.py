"""Facts about a subtree of a trace computed on its columns with numpy (which
function each recorded call ran; depths are the core's `_core.depths`), and how
calls and code objects are named.

Shared by the summary, the pictures, the networkx export and the diff; nothing here
makes a Python object per node.
"""

from __future__ import annotations

import os
import types

import numpy as np

from .._core import NodeKind
from ..views.nodes import Const, node_at
from ..views.values import short_value

__all__ = ["callee_codes", "call_name", "callable_name", "code_name", "code_place",
           "code_key", "ARGUMENT", "NESTED", "JUMP"]

# Callables short_value already names well (module-qualified, no address).
_NAMED_BY_SHORT_VALUE = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                         types.WrapperDescriptorType, types.ClassMethodDescriptorType, type)

ARGUMENT = int(NodeKind.K_ARGUMENT)
NESTED = int(NodeKind.K_NESTED)
JUMP = int(NodeKind.K_JUMP)


def callee_codes(cols: dict[str, np.ndarray], lo: int, hi: int) -> np.ndarray:
    """For each row of [lo, hi): the code id the row's recorded call ran (the code its
    first child was recorded in), -1 for rows that are not recorded calls or have no
    children."""
    kind = cols["kind"][lo:hi]
    code = cols["code"]
    out = np.full(hi - lo, -1, dtype=np.int64)
    rows = np.flatnonzero(kind == NESTED) + lo
    first_child = rows + 1
    has_child = first_child < cols["aux"][rows]  # aux of a recorded call: its end
    rows, first_child = rows[has_child], first_child[has_child]
    # A call's body starts with its ArgumentNodes; a C callable that ran Python code
    # (a class call running __init__, sorted with a Python key) starts with the frame
    # it entered instead, which is a call of its own.
    ran_code = cols["kind"][first_child] == ARGUMENT
    rows, first_child = rows[ran_code], first_child[ran_code]
    out[rows - lo] = code[first_child]
    return out


def call_name(trace, row: int) -> str:
    """The name of what a call node called: the function whose body it recorded, or
    the callable itself (a C callable that ran Python code, a primitive)."""
    kids = trace.children(row) if trace.kind(row) == NESTED else []
    if kids and trace.kind(kids[0]) == ARGUMENT and trace.code(kids[0]) is not None:
        return code_name(trace.code(kids[0]))
    fn = node_at(trace, row).function
    return callable_name(fn.value) if isinstance(fn, Const) else short_value(fn.value)


def code_name(code) -> str:
    """A code object's (or a loaded stand-in's) qualified name."""
    return getattr(code, "co_qualname", None) or getattr(code, "co_name", "?")


def code_place(code) -> str:
    """`file:line` where a code object starts (file by its base name)."""
    filename = getattr(code, "co_filename", "?")
    return f"{os.path.basename(filename)}:{getattr(code, 'co_firstlineno', '?')}"


def callable_name(value) -> str:
    """A called function's name without its receiver or address: `math.sin`,
    `Random.getrandbits` (for a bound builtin method), `Generator.normal`.  Never
    raises (a callable that fails to name itself shows as `short_value` has it)."""
    try:
        return _callable_name(value)
    except Exception:  # a user's callable whose __qualname__ or __self__ raises
        return short_value(value)


def _callable_name(value) -> str:
    if isinstance(value, types.MethodType):
        value = value.__func__
    owner = getattr(value, "__self__", None)
    if isinstance(value, types.BuiltinMethodType) and owner is not None and not isinstance(
            owner, (types.ModuleType, type)):
        return f"{type(owner).__qualname__}.{value.__name__}"
    if isinstance(value, _NAMED_BY_SHORT_VALUE):
        return short_value(value)
    qualname = getattr(value, "__qualname__", None)
    return qualname if isinstance(qualname, str) else short_value(value)


def code_key(code) -> tuple[str, str]:
    """What identifies "the same function" across two runs or a saved trace: its
    qualified name and file's base name (code objects differ between processes, and
    line numbers between two versions of a program)."""
    return code_name(code), os.path.basename(getattr(code, "co_filename", "?"))
