"""Node views: (trace, row) pairs that read the arena's columns on access.

Nothing is stored per node besides the row; creating a view is cheap and two views of
the same row compare equal.  The classes are the node kinds of the architecture.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple, overload

from .. import _core
from ..analysis.ir import ir
from . import queries
from .show import format_node
from .values import Const
from ..analysis.instructions import R_CALL, R_CALL_EX, R_SPECIAL

__all__ = [
    "Node", "CallNode", "ArgumentNode", "ConstantNode", "PrimitiveCallNode",
    "NestedCallNode", "SpecialCallNode", "JumpNode", "ReturnNode", "Const", "Location",
    "node_at", "referenced", "backward", "dependents", "forward",
]

F = _core.FLAGS


class Location(NamedTuple):
    """Where a node was recorded: code object, bytecode offset, line, block §, statement."""

    code: Any
    offset: int
    line: int | None
    block: int
    stmt: str


class Node(_core.NodeView):
    """A recorded node: a view of one row of a trace.

    The view itself (its trace and row, equality, `value`, `children`, `len`,
    iteration) is made and read in the core (`_core.NodeView`); what follows reads
    the columns through the trace.
    """

    __slots__ = ()
    kind = ""

    def __reduce__(self):
        # A view pickles as (trace, row); the Trace pickles itself (tracer.persist).
        return node_at, (self._trace, self._row)

    @property
    def raised(self) -> bool:
        """Whether the operation raised; `value` is then the exception."""
        return bool(self._trace.flags(self._row) & F["raised"])

    @property
    def parent(self) -> "Node | None":
        p = self._trace.parent(self._row)
        return None if p < 0 else node_at(self._trace, p)

    @property
    def index(self) -> int:
        """The node's position @k among its parent's children (the root is 0)."""
        p = self._trace.parent(self._row)
        if p < 0:
            return 0
        return int(_child_rows(self._trace, p).searchsorted(self._row))

    @overload
    def __getitem__(self, k: int) -> "Node": ...
    @overload
    def __getitem__(self, k: slice) -> "list[Node]": ...

    def __getitem__(self, k):
        """The children as a sequence: `node[k]` is the k-th child (negative from the
        end; IndexError past either end), `node[i:j]` a list of them, as
        `node.children[...]` and a list give."""
        t = self._trace
        rows = _child_rows(t, self._row)  # cached on the trace for a node of many children
        if isinstance(k, slice):
            return [node_at(t, r) for r in rows[k].tolist()]
        try:
            i = operator.index(k)
        except TypeError:
            raise TypeError(f"node indices must be integers or slices, not "
                            f"{type(k).__name__}") from None
        n = len(rows)
        if not -n <= i < n:
            raise IndexError(f"child index {i} out of range (the node has {n} children)")
        return node_at(t, int(rows[i]))

    @property
    def metadata(self) -> dict:
        """A dict for contexts and users to annotate the node (stored sparsely)."""
        return self._trace.node_metadata(self._row)

    # -- location --------------------------------------------------------------------
    @property
    def code(self):
        return self._trace.code(self._row)

    @property
    def ir(self):
        """The IR of the code this node was recorded in."""
        code = self.code
        return None if code is None else ir(code)

    @property
    def location(self) -> Location | None:
        """Where the node was recorded; None for the root, and for a node whose
        instruction the recorder did not see (`tracer.validate` reports those)."""
        code = self.code
        if code is None:
            return None
        off = self._trace.offset(self._row)
        ir = self.ir
        ins = ir.layout.by_offset.get(off)
        if ins is None:
            return None
        return Location(code, off, ins.line, ir.block_of(off), self._stmt(ir, off))

    def _stmt(self, ir, off: int) -> str:
        if self._trace.kind(self._row) in (5, 6):  # jumps and returns: control statements
            return ir.branch_id.get(off) or ir.value_id.get(off, "?")
        stmt = ir.value_id.get(off) or ir.branch_id.get(off)
        if stmt is None:
            fed = ir.feeds.get(off) if self._flags() & F["frame"] else None
            return fed.id if fed is not None else "?"
        aux = self._trace.aux(self._row)
        if self._trace.kind(self._row) == 4 and aux > 0 and not self._flags() & F["frame"]:
            return f"{stmt}#{aux}"
        return stmt

    def _flags(self) -> int:
        return self._trace.flags(self._row)

    # -- references ----------------------------------------------------------------------
    def _first_position(self) -> int:
        return 1

    def inputs(self) -> list:
        """All inputs in order: Nodes for references, Const for constants."""
        t = self._trace
        return [node_at(t, r) if isinstance(r, int) else Const(r[1]) for r in t.refs(self._row)]

    def referenced(self, numbered: bool = False) -> list:
        """The nodes this node reads directly, in input order (constants left out).

        With `numbered=True`, `(position, node)` pairs: for calls position 0 is the
        callee and 1, 2, ... the arguments in call order.
        """
        return referenced(self, numbered)

    def backward(self) -> list["Node"]:
        """Every node this one depends on in the same call, latest first."""
        return backward(self)

    def dependents(self) -> list["Node"]:
        """The nodes that read this node directly, in order."""
        return dependents(self)

    def forward(self) -> list["Node"]:
        """Every node that depends on this one in the same call, earliest first."""
        return forward(self)

    def __repr__(self) -> str:
        return format_node(self)


class ArgumentNode(Node):
    """The callee (position 0) or a bound parameter of a call; or a value that
    entered an activation midway (a resumed generator's local)."""

    __slots__ = ()
    kind = "argument"

    @property
    def position(self) -> int:
        return self._trace.aux(self._row)

    @property
    def location(self) -> Location | None:
        t = self._trace
        code = self.code
        off = t.offset(self._row)
        aux = t.aux(self._row)
        if off < 0:
            return Location(code, -1, code.co_firstlineno, 1, f"%{aux}")
        ir = self.ir
        return Location(code, off, ir.layout.by_offset[off].line, ir.block_of(off),
                        ir.local_name(-aux - 1))


class ConstantNode(Node):
    """A constant the code stored in a local or returned, so references have a target."""

    __slots__ = ()
    kind = "constant"


class CallNode(Node):
    """Common interface of primitive, nested and special calls."""

    __slots__ = ()

    def _rec(self):
        t = self._trace
        off = t.offset(self._row)
        if off < 0 or t.flags(self._row) & F["frame"]:
            return None
        return self.ir.recs.get(off)

    def _is_call_shaped(self) -> bool:
        t = self._trace
        if t.parent(self._row) < 0 or t.flags(self._row) & F["frame"]:
            return True
        rec = self._rec()
        return rec is not None and rec.sem in (R_CALL, R_CALL_EX)

    def _first_position(self) -> int:
        return 0 if self._is_call_shaped() else 1

    @property
    def function(self):
        """What was called: a Node or a Const (for operators, the operator function)."""
        if self._is_call_shaped():
            return self.inputs()[0]
        replacement = self._trace.substituted_operators.get(self._row)
        if replacement is not None:  # an operator a context substituted
            return Const(replacement)
        rec = self._rec()
        if rec is None:
            flags = self._flags()
            if flags & F["exception"]:
                return Const("$exception")
            return Const("$raise" if self.is_raise else None)
        return Const(rec.fn if rec.sem != R_SPECIAL else f"${rec.fn}")

    @property
    def callee(self):
        """The object this node called: for a call, the callable itself (whether
        the IR holds it as a constant or as the node that computed it); for an
        operator, its function (`operator.mul` for `a * b`), or the replacement a
        context substituted.  Compare it with `is`: `node.callee is random.gauss`."""
        return self.function.value

    @property
    def from_c(self) -> bool:
        """Whether this is a Python frame that C code or the interpreter entered (a
        key function called by `sorted`, `__init__` under a class call, a dunder
        method, a generator resumed by `next`), not a call its caller's code made:
        its arguments are its own ArgumentNodes, not nodes of the caller."""
        return bool(self._flags() & F["frame"])

    @property
    def is_raise(self) -> bool:
        """Whether this node is a `raise` statement (its value is the exception)."""
        t = self._trace
        off = t.offset(self._row)
        if t.kind(self._row) != 4 or not self._flags() & F["raised"] or off < 0:
            return False
        ins = self.ir.layout.by_offset.get(off)
        return ins is not None and ins.opname == "RAISE_VARARGS"

    @property
    def output(self) -> int:
        """Which result of its instruction the node holds: 0, or k for the k-th of
        several (`a, b, c = x` records three nodes, outputs 0, 1, 2)."""
        t = self._trace
        if t.kind(self._row) == 4 and not self._flags() & (F["frame"] | F["exception"]):
            return max(t.aux(self._row), 0)
        return 0

    @property
    def outputs(self) -> int:
        """How many results its instruction has (and so nodes, one per result)."""
        rec = self._rec()
        return max(len(rec.outputs), 1) if rec is not None else 1

    def _split(self):
        inputs = self.inputs()
        if not self._is_call_shaped():
            return inputs, {}
        t = self._trace
        if t.parent(self._row) < 0:
            kwnames = t.root_keywords or ()
        elif t.flags(self._row) & F["frame"]:
            return [a for a in self.children if isinstance(a, ArgumentNode) and a.position > 0], {}
        else:
            kwnames = self._rec().kwnames
        args = inputs[1:]
        if kwnames:
            k = len(kwnames)
            return args[:-k], dict(zip(kwnames, args[-k:]))
        return args, {}

    @property
    def arguments(self) -> list:
        """The positional inputs (Nodes or Consts); for f(*a, **k): [a, k]."""
        return self._split()[0]

    @property
    def keywords(self) -> dict:
        """Keyword arguments by name (Nodes or Consts)."""
        return self._split()[1]

    @property
    def is_star_call(self) -> bool:
        rec = self._rec()
        return rec is not None and rec.sem == R_CALL_EX

    def call_values(self):
        """(f, args, kwargs) as values, as the call was made."""
        args, kwargs = self._split()
        f = self.function.value
        if self.is_star_call:
            pos = tuple(args[0].value) if args else ()
            kw = dict(args[1].value) if len(args) > 1 else {}
            return f, pos, kw
        return f, tuple(a.value for a in args), {k: v.value for k, v in kwargs.items()}


class PrimitiveCallNode(CallNode):
    """A call not recorded inside: C functions, operators, what a context makes primitive."""

    __slots__ = ()
    kind = "primitive"


class NestedCallNode(CallNode):
    """A call whose body is recorded as its children."""

    __slots__ = ()
    kind = "nested"

    @property
    def resumed(self) -> bool:
        """Whether this is a generator or coroutine frame resumed (not started): it
        has no ArgumentNodes, and ends with a yield, a return or an exception."""
        t = self._trace
        if not self._flags() & F["frame"]:
            return False
        kids = t.children(self._row)
        return not kids or t.kind(kids[0]) != 0 or bool(t.flags(kids[0]) & F["carried"])


class SpecialCallNode(CallNode):
    """A value-producing instruction with no faithful callable equivalent."""

    __slots__ = ()
    kind = "special"


class JumpNode(Node):
    """A branch or jump that executed; its value is the truth the branch tested."""

    __slots__ = ()
    kind = "jump"

    @property
    def target(self) -> int:
        """The block § control went to."""
        return self.ir.block_of(self._trace.aux(self._row))

    @property
    def target_offset(self) -> int:
        return self._trace.aux(self._row)

    @property
    def condition(self) -> "Node | None":
        refs = self.referenced()
        return refs[0] if refs else None


class ReturnNode(Node):
    """The return (or a generator's yield) of the enclosing call."""

    __slots__ = ()
    kind = "return"

    @property
    def is_yield(self) -> bool:
        return bool(self._trace.flags(self._row) & F["yield"])


_CLASSES = (ArgumentNode, ConstantNode, PrimitiveCallNode, NestedCallNode, SpecialCallNode,
            JumpNode, ReturnNode)


# -- the graph queries on nodes (the row-level algorithms are in views/queries.py) --------

def referenced(node: Node, numbered: bool = False) -> list:
    """The nodes `node` reads directly, in input order; with `numbered`, (position, node)
    pairs (a call's callee is position 0)."""
    t = node.trace
    first = node._first_position()
    out = []
    for i, r in enumerate(t.refs(node.row)):
        if isinstance(r, int):
            n = node_at(t, r)
            out.append((first + i, n) if numbered else n)
    return out


def backward(node: Node) -> list[Node]:
    """Every node `node` depends on in the same call, latest first."""
    return [node_at(node.trace, r) for r in queries.backward_rows(node.trace, node.row)]


def dependents(node: Node) -> list[Node]:
    """The nodes that read `node` directly, in order."""
    return [node_at(node.trace, r) for r in queries.dependent_rows(node.trace, node.row)]


def forward(node: Node) -> list[Node]:
    """Every node that depends on `node` in the same call, earliest first."""
    return [node_at(node.trace, r) for r in queries.forward_rows(node.trace, node.row)]


node_at = _core.node_view   # node_at(trace, row): the view of `row`, of its kind's class


#: A node with at least this many children keeps their rows cached on its trace, so
#: `node[k]` and `child.index` on it cost a lookup, not a walk of its children.
_CACHE_CHILDREN_FROM = 1024


def _child_rows(trace, parent: int):
    """The rows of `parent`'s children, ascending (an int32 array from the core)."""
    cache = trace._cache
    if cache is None:
        cache = trace._cache = {}
    found = cache.get(("children", parent))
    n = len(trace)
    if found is not None and found[0] == n:    # a trace still recording grows
        return found[1]
    rows = _core.child_rows(trace, parent)
    if len(rows) >= _CACHE_CHILDREN_FROM:
        cache[("children", parent)] = (n, rows)
    return rows
