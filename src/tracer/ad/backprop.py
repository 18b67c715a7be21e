"""`backprop(root)`: the reverse sweep on a nested trace, as IRTracker describes it.

"Following back the references from the last return and adding adjoint values in
the metadata": the root's adjoint is the seed; going back over the rows (latest
first), a call's ReturnNode passes the call's adjoint to the node it returns, a
primitive call's rule passes its adjoint to the nodes it read, and an
ArgumentNode of a nested call passes its adjoint to the caller's node it was bound
to.  Rows are visited in decreasing order, which is a reverse topological order:
a call's consumers come after its whole body, and its body after its arguments.

Which rows get adjoint work is decided first on the trace's columns: rows reachable
from the root's arguments through references (and through nested calls' arguments
and returns), holding values that can carry an adjoint.
"""

from __future__ import annotations

import bisect
import types
from typing import cast

import numpy as np

from .. import _core
from ..tapes.bind import Pack, map_parameters
from ..views.nodes import CallNode, node_at
from . import adjoints, inplace
from .errors import NoRuleError
from .program import is_mutator
from .rules import lookup, positional

__all__ = ["backprop"]

K_ARG, K_CONST, K_PRIM, K_NESTED, K_SPECIAL, K_JUMP, K_RETURN = range(7)


def backprop(root, seed=1.0):
    """Write the adjoint of every node on the path from the root's arguments to its
    result into `node.metadata["adjoint"]`; return the adjoints of the root's
    arguments (a tuple, in parameter order; zero for an argument the result does not
    depend on, None for one that is not differentiable: an int, a bool, a str).

    `root` is the root node from `tracer.track(f, *args)`; `seed` the adjoint of its
    result (1.0 for a scalar function: the result is then the gradient).
    """
    trace = getattr(root, "trace", None)
    if trace is None or getattr(root, "row", None) != 0:
        raise TypeError("backprop needs the root node that tracer.track returned")
    if trace.stopped or root.raised:
        raise ValueError("backprop needs a trace of a call that returned normally")
    sweep = _Sweep(trace)
    if not sweep.body[0]:
        raise NoRuleError(root.function.value if hasattr(root, "function") else root,
                          message="backprop follows the recorded body of the root call, "
                          "and this call's body was entered from C code (a callable "
                          "instance, a functools.partial, a C function); track the "
                          "Python function itself, or use tracer.grad.")
    sweep.mask()
    sweep.run(seed)
    out = []
    for row in sweep.root_args:
        value = trace.value(row)
        if not adjoints.is_differentiable(value):
            out.append(None)
        else:
            out.append(adjoints.to_gradient(sweep.adj.get(row), value))
    return tuple(out)


class _Sweep:
    def __init__(self, trace):
        self.t = trace
        cols = trace.columns()
        self.kind = cols["kind"].tolist()
        self.parent = cols["parent"].tolist()
        self.aux = cols["aux"].tolist()
        self.flags = cols["flags"].tolist()
        starts = cols["ref_start"]
        refs = cols["refs"]
        self.starts = starts.tolist()
        self.refs_ = refs.tolist()
        n = len(trace)
        self.n = n
        # Rows with a recorded body: their first child is the callee's ArgumentNode
        # (the first child of a parent is the smallest row with that parent).
        par = cols["parent"].astype(np.int64)
        rows = np.arange(n, dtype=np.int64)
        has_parent = par >= 0
        parents, first = np.unique(par[has_parent], return_index=True)
        first_rows = rows[has_parent][first]
        body = np.zeros(n, dtype=bool)
        kinds = cols["kind"]
        aux = cols["aux"]
        is_callee = (kinds[first_rows] == K_ARG) & (aux[first_rows] == 0)
        body[parents[is_callee]] = True
        self.body = body.tolist()
        self.root_args = [r for r, p in zip(rows.tolist(), self.parent)
                          if p == 0 and self.kind[r] == K_ARG and self.aux[r] > 0
                          and r in self._root_arg_rows()]
        self.code_ix = cols["code"].tolist()
        # Values read as constants (a closure's cell) that are the very object an
        # active row produced are that row's value: id(value) -> row.  Literals of the
        # traced code are never linked (CPython shares equal float constants).
        self.produced: dict[int, list[int]] = {}  # id(value) -> active rows, in order
        self.literals = frozenset(id(c) for code in trace.codes for c in code.co_consts
                                  if type(c) is float)
        self.in_cells: dict[int, list[int]] = {}  # the same for closure cells' contents
        self._bindings: dict[int, list] = {}
        self.active = [False] * n
        self.adj: dict[int, object] = {}
        self.next_index: dict[int, int] = {}
        self.cell_source: dict[int, int | None] = {}  # $load_deref row -> the row stored

    def _root_arg_rows(self):
        kids = self.t.children(0)
        out = set()
        for r in kids:
            if self.kind[r] != K_ARG:
                break
            out.add(r)
        return out

    def refs(self, row: int) -> list[int]:
        """The rows `row` references (constants are negative in the refs column)."""
        return self.refs_[self.starts[row]:self.starts[row + 1]]

    # -- which rows are on the path -----------------------------------------------------------
    def mask(self) -> None:
        active, kind, t = self.active, self.kind, self.t
        roots = set(self.root_args)
        count: dict[int, int] = {}
        for row in range(1, self.n):
            k = kind[row]
            if k == K_ARG:
                if row in roots:
                    active[row] = adjoints.is_differentiable(t.value(row))
                else:
                    src = self._bound_source(row)
                    active[row] = src is not None and active[src]
            elif k in (K_PRIM, K_SPECIAL) or k == K_NESTED and not self.body[row]:
                refs = self.refs(row)
                if k == K_SPECIAL:
                    src = self._unpacked(row)
                    if src is None and self._is_cell_read(row):
                        # A closure variable read from its cell: the row whose value
                        # was stored there (the same object), as for a constant.
                        src = self._link(t.value(row), row, self.in_cells)
                        self.cell_source[row] = src
                    refs = [src] if src is not None else refs
                elif self.produced and any(r < 0 for r in refs):
                    refs = refs + [self._link(x[1], row) for x in t.refs(row)
                                   if not isinstance(x, int)]
                    refs = [r if r is not None else -1 for r in refs]
                if any(r >= 0 and active[r] for r in refs):
                    self._refuse_mutation(row)
                    if self._is_next(row):
                        it = refs[-1]
                        self.next_index[row] = count.get(it, 0)
                        count[it] = self.next_index[row] + 1
                    active[row] = adjoints.is_differentiable(t.value(row))
            if active[row] and k != K_RETURN:
                v = t.value(row)
                if isinstance(v, (float, np.ndarray)):
                    # Any active value may be what a closure cell of this run holds;
                    # only a call's own new object links a constant: an argument
                    # existed before the call (a global may be the same object), and
                    # a call that returned its argument (np.asarray(x)) did not make it.
                    self.in_cells.setdefault(id(v), []).append(row)
                    if id(v) in self.produced or k == K_PRIM and not any(
                            r >= 0 and t.value(r) is v for r in self.refs(row)):
                        self.produced.setdefault(id(v), []).append(row)
            if k == K_RETURN:
                refs = self.refs(row)
                if refs and refs[0] >= 0 and active[refs[0]]:
                    active[row] = True
                    p = self.parent[row]
                    if p > 0 and adjoints.is_differentiable(t.value(p)):
                        active[p] = True

    def _bound_source(self, row: int):
        """The caller's row an ArgumentNode of a nested call was bound to (by
        position or keyword, as Python binds them); None for a default, a constant,
        or a frame entered from C (whose arguments are its own)."""
        p = self.parent[row]
        if p <= 0 or self.flags[p] & _F_FRAME or self.aux[row] <= 0:
            return None
        binding = self._bindings.get(p)
        if binding is None:
            binding = self._bindings[p] = self._bind(p, row)
        k = self.aux[row] - 1
        b = binding[k] if k < len(binding) else None
        if isinstance(b, Pack):
            if any(isinstance(r, int) and self.active[r] for r in b.items):
                raise NoRuleError(_call_node(self.t, p).function.value, message=(
                    "backprop does not follow differentiated values into *args or "
                    "**kwargs parameters (tracer.grad does)."))
            return None
        return b if isinstance(b, int) else None

    def _bind(self, p: int, arg_row: int) -> list:
        """The caller's rows for each parameter of nested call `p`, in co_varnames order."""
        node = _call_node(self.t, p)
        args = [self._input_row(a, p) for a in node.arguments]
        kwargs = {name: self._input_row(v, p) for name, v in node.keywords.items()}
        if node.is_star_call:
            if any(isinstance(r, int) and self.active[r] for r in args):
                raise NoRuleError(node.function.value, message=(
                    "backprop does not follow differentiated values through f(*args) "
                    "(tracer.grad does)."))
            return []
        if isinstance(getattr(node.function, "value", None), types.MethodType):
            args = [None] + args  # a bound method's self: not a row of the caller
        code = self.t.codes[self.code_ix[arg_row]]
        return map_parameters(code, args, kwargs) or []

    def _is_cell_read(self, row: int) -> bool:
        return getattr(_call_node(self.t, row).function, "value", None) == "$load_deref"

    def _unpacked(self, row: int):
        """The sequence an unpacking node (`a, b = seq`) took its item from: result k
        > 0 of the statement refers to result 0's node, which refers to the sequence."""
        fn = getattr(_call_node(self.t, row).function, "value", None)
        if not (isinstance(fn, str) and fn.startswith("$unpack")):
            return None
        refs = [r for r in self.refs(row) if r >= 0]
        if not refs:
            return None
        if self.aux[row] > 0:
            refs = [r for r in self.refs(refs[0]) if r >= 0]
        return refs[0] if refs else None

    def _input_row(self, inp, reader: int):
        """The row of an input of row `reader`: a Node's own, or the row a constant
        is linked to."""
        r = getattr(inp, "row", None)
        return r if r is not None else self._link(getattr(inp, "value", None), reader)

    def _link(self, value, reader: int, produced=None):
        """The latest active row before `reader` whose value a constant is (see
        `produced`), or None."""
        if not isinstance(value, (float, np.ndarray)) or id(value) in self.literals:
            return None
        rows = (self.produced if produced is None else produced).get(id(value))
        if not rows:
            return None
        k = bisect.bisect_left(rows, reader) - 1
        return rows[k] if k >= 0 and self.t.value(rows[k]) is value else None

    def _refuse_mutation(self, row: int) -> None:
        """A differentiated value stored into a container in place: later reads of
        the container refer to the row that built it, so the value's adjoint would
        be lost.  (tracer.grad follows `append` on a list the function built.)"""
        node = _call_node(self.t, row)
        fn = getattr(node.function, "value", None)
        if is_mutator(fn):
            raise NoRuleError(fn, message="backprop does not follow a differentiated "
                              "value stored into a container in place (tracer.grad "
                              "follows appends to a list the function built).")
        value = self.t.value(row)
        if fn in inplace.IN_PLACE and isinstance(value, np.ndarray) and any(
                r >= 0 and self.t.value(r) is value for r in self.refs(row)):
            raise NoRuleError(fn, message="backprop does not follow an array changed in "
                              "place (`y += d`: the values read before were recorded "
                              "after the change); tracer.grad does.")

    def _is_next(self, row: int) -> bool:
        f = _call_node(self.t, row).function
        return getattr(f, "value", None) is next

    # -- the sweep -----------------------------------------------------------------------------
    def run(self, seed) -> None:
        adj, active, kind, t = self.adj, self.active, self.kind, self.t
        res = self._root_return()
        if res is None or not active[res]:
            return
        adj[0] = seed
        last_return: dict[int, int] = {}
        for row in range(self.n - 1, 0, -1):
            k = kind[row]
            if k == K_RETURN:
                p = self.parent[row]
                if last_return.setdefault(p, row) != row:
                    continue  # a yield or an earlier return: not what the call returned
                g = adj.get(p)
                if g is not None and active[row]:
                    adj[row] = g
            g = adj.get(row)
            if g is None or not active[row]:
                continue
            node_at(t, row).metadata["adjoint"] = adjoints.to_gradient(g, t.value(row)) \
                if not isinstance(g, adjoints.Seq) else g
            if k == K_ARG:
                src = self._bound_source(row)
                if src is not None:
                    self._add(src, g)
            elif k == K_RETURN:
                refs = self.refs(row)
                if refs and refs[0] >= 0:
                    self._add(refs[0], g)
            elif k in (K_PRIM, K_SPECIAL) or k == K_NESTED and not self.body[row]:
                self._pull(row, g)
        node_at(t, 0).metadata["adjoint"] = seed

    def _root_return(self):
        kids = self.t.children(0)
        return kids[-1] if kids and self.kind[kids[-1]] == K_RETURN else None

    def _add(self, row: int, g) -> None:
        if not self.active[row]:
            return
        self.adj[row] = adjoints.add(self.adj.get(row), g)

    def _pull(self, row: int, g) -> None:
        t = self.t
        node = _call_node(t, row)
        fn = getattr(node.function, "value", None)
        if isinstance(fn, str) and fn.startswith("$unpack"):
            src = self._unpacked(row)
            if src is not None:
                self._add(src, adjoints.seq_item(g, node.output))
            return
        if fn == "$load_deref":
            src = self.cell_source.get(row)
            if src is not None:
                self._add(src, g)
            return
        if fn is next:
            it = self.refs(row)[-1]
            self._add(it, adjoints.seq_item(g, self.next_index[row]))
            return
        rule = lookup(fn)
        if rule is None:
            raise NoRuleError(fn, getattr(node, "location", None),
                              note="backprop differentiates the recorded calls; a "
                              "primitive call needs a rule.")
        f, args, kwargs = node.call_values()
        args, kwargs = positional(rule, tuple(args), kwargs)
        bad = rule.unknown_keywords(kwargs)
        if bad:
            raise NoRuleError(fn, getattr(node, "location", None), message="its rule "
                              f"does not cover the keyword arguments {bad} of this call")
        inputs = node.arguments
        value = t.value(row)
        full = rule.full(g, value, *args, **kwargs) if rule.full is not None else None
        for i, inp in enumerate(inputs):
            r = self._input_row(inp, row)
            if r is None or not self.active[r]:
                continue
            if full is not None:
                c = full[i]
            else:
                pb = rule.pullback(i)
                if pb is None:
                    raise NoRuleError(fn, getattr(node, "location", None), message=(
                        f"its argument {i} is differentiated, and its rule gives that "
                        "argument no adjoint"))
                c = pb(g, value, *args, **kwargs)
            if c is not None:
                self._add(r, c)


def _call_node(trace, row: int) -> CallNode:
    """The node view of a call row (primitive, nested or special)."""
    return cast(CallNode, node_at(trace, row))


_F_FRAME = _core.FLAGS["frame"]  # a frame that C code entered: its own arguments
