"""Facts about a subtree of a trace computed on its columns with numpy (which
function each recorded call ran; depths are the core's `_core.depths`), and how
calls and code objects are named, and the aligned text tables the summaries print.

Shared by the summary, the pictures, the networkx export and the diff; nothing here
makes a Python object per node.
"""

from __future__ import annotations

import os

import numpy as np

from .._core import NodeKind
from ..views.names import callable_name, code_name
from ..views.nodes import node_at

__all__ = ["callee_codes", "call_name", "callable_name", "code_name", "code_place",
           "code_key", "outermost", "text_table", "ARGUMENT", "NESTED", "JUMP"]

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
    return callable_name(node_at(trace, row).function.value)


def code_place(code) -> str:
    """`file:line` where a code object starts (file by its base name)."""
    filename = getattr(code, "co_filename", "?")
    return f"{os.path.basename(filename)}:{getattr(code, 'co_firstlineno', '?')}"


def code_key(code) -> tuple[str, str]:
    """What identifies "the same function" across two runs or a saved trace: its
    qualified name and file's base name (code objects differ between processes, and
    line numbers between two versions of a program)."""
    return code_name(code), os.path.basename(getattr(code, "co_filename", "?"))


def outermost(codes: np.ndarray, rows: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which calls are not inside another call of the same function.

    Calls' row ranges nest or are disjoint; in row order within one function, a call
    is inside an earlier one exactly when it starts before the furthest end seen so
    far.  Shifting each function's rows past the previous function's lets one running
    maximum serve all functions at once.
    """
    order = np.lexsort((rows, codes))
    span = int(ends.max()) + 1
    shift = codes[order] * span
    start, end = rows[order] + shift, ends[order] + shift
    furthest = np.maximum.accumulate(end)
    before = np.concatenate(([-1], furthest[:-1]))
    out = np.empty(rows.size, dtype=bool)
    out[order] = start >= before
    return out


def text_table(head: list[str], body: list[list[str]]) -> list[str]:
    """Columns padded to their widest cell; the first column left-aligned, numbers right."""
    rows = [head] + body
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]

    def line(cells):
        parts = [cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "  ".join(parts).rstrip()

    return [line(head), line(["-" * w for w in widths])] + [line(r) for r in body]
