"""Closures made inside the traced call, remade for each run of the tape.

A closure's cells are built by BUILD_TUPLE from the cells of the variables
(LOAD_CLOSURE).  The trace records each assignment of such a variable
($store_deref, with the value stored) and each read of it that the frame's own
shadow cannot follow ($load_deref: a free variable, a cell a nested function
assigns).  The tape makes one cell op per variable, shared by the closures made from
it and set at each assignment (`helpers.cell_set`); a read is the op last stored
while nothing since may have run Python code, else `helpers.cell_get`.  Each
function is remade with this run's cells (`helpers.make_closure`).
"""

from __future__ import annotations

import dis
import types

from .. import callables as tops
from ..analysis.identitycache import IdentityCache
from ..analysis.instructions import R_SPECIAL
from ..analysis.ir import ir as ir_of
from . import helpers
from .common import ATOMIC, Lit, K_ARG
from .ops import Call, Constant, Op

__all__ = ["Closures", "fn_is_cells"]


class Closures:
    """The flattener's handling of closures (a mixin of flatten._Flattener)."""

    def _closure(self, f):
        op = self.functions.get(id(f))
        if op is not None:
            return op
        cells = self.closures.get(id(f.__closure__))
        if cells is None:
            return Lit(f)
        op = self.functions[id(f)] = self.push(Call(helpers.make_closure, (f, cells), value=f))
        return op

    # -- cell variables: assignments and reads the trace records ($store_deref,
    # $load_deref), kept on this run's cells -------------------------------------------
    def _cell_of(self, row, ins):
        """(this run's cell op or None, the traced cell or None) of the cell
        variable that instruction `ins` (of `row`, in the current frame) names."""
        fr = self.frame
        name = ins.argval
        code = self.code_[row]
        if fr.kids and name in code.co_freevars and name not in code.co_cellvars:
            func = fr.func if fr.func is not None else self.t.value(fr.kids[0])
            func = getattr(func, "__func__", func)
            closure = getattr(func, "__closure__", None) or ()
            k = code.co_freevars.index(name)
            cell = closure[k] if k < len(closure) else None
            return (self.cells.get(id(cell)) if cell is not None else None), cell
        return fr.cell_ops.get(name), None

    def _store_deref(self, row, refs, ins):
        """`name = value` for a variable that closures share: this run's cell gets it."""
        content = self.resolve(refs[0]) if refs else Lit(None)
        self.frame.cell_values[ins.argval] = content
        op, cell = self._cell_of(row, ins)
        target = op if op is not None else cell  # a cell from outside: the program's own
        if target is not None:
            self.push(Call(helpers.cell_set, (target, self._plain_of(content)), value=None))
        return Lit(None)

    def _load_deref(self, row, ins, value):
        """A read of a variable that closures share: what this run's cell holds (the
        op last stored in it, when no call since may have stored something else;
        else a read of the cell); a cell of a function defined outside the call is a
        constant."""
        op, _cell = self._cell_of(row, ins)
        if op is None:
            return self.link(value)
        content = self.cell_content.get(id(op), _UNKNOWN)
        if isinstance(content, Op) and content.value is value:
            return content
        if content is not _UNKNOWN and not isinstance(content, Op) and content is value:
            return Lit(value)
        return self.push(Call(helpers.cell_get, (op,), value=value))

    def track_cells(self, op) -> None:
        """Keep `cell_content` up to date with Call `op` just pushed."""
        fn = op.fn
        if fn is helpers.new_cell:
            self.cell_content[id(op)] = op.args[0] if op.args else _UNKNOWN
        elif fn is helpers.cell_set:
            if isinstance(op.args[0], Op):
                self.cell_content[id(op.args[0])] = op.args[1]
        elif self.cell_content and fn not in _NO_CELL_WRITES and _may_run_python(op):
            # Python code it runs natively may assign a closure variable.
            self.cell_content.clear()

    @staticmethod
    def _plain_of(x):
        return x.value if isinstance(x, Lit) else x

    def _cells(self, row, refs, value) -> Op:
        """A closure's tuple of cells: one cell op per variable, shared by the
        closures made from it.  (LOAD_CLOSURE, 3.13's LOAD_FAST of a cell, loads the
        cell itself, a constant of the trace: the variable is named by the
        instruction, its value is what its last $store_deref stored, or the
        parameter's, and later assignments are set on the cell op.)"""
        items = []
        for j, (r, cell) in enumerate(zip(refs, value)):
            x = self.resolve(r)
            if x.value is cell and isinstance(x, Op):  # a free variable's cell passed on
                items.append(x)
                continue
            if x.value is cell:
                name = self._closure_name(row, j, len(value))
                known = self.cells.get(id(cell))
                if known is not None:
                    items.append(known)  # assignments since it was made were set on it
                    continue
                if name is not None and name in self.code_[row].co_freevars:
                    # The frame's own free variable passed on, its cell made outside
                    # the call: the program's cell itself.
                    items.append(cell)
                    continue
                content = self.frame.cell_values.get(name) if name is not None else None
                if content is None:
                    content = self._parameter_cell(row, name)
                if content is not None:
                    # The variable's value now ($store_deref), or the parameter's.
                    op = self.cells[id(cell)] = self.push(
                        Call(helpers.new_cell, (self._plain_of(content),), value=cell))
                    self.frame.cell_ops[name] = op
                    items.append(op)
                    continue
                if name is not None and name not in _parameter_names(self.code_[row]):
                    # Not assigned yet (a recursive closure): empty until its
                    # $store_deref sets it.
                    op = self.cells[id(cell)] = self.push(Call(helpers.new_cell, (), value=cell))
                    self.frame.cell_ops[name] = op
                    items.append(op)
                    continue
            if x.value is cell:
                # (Not found from the instructions: kept from before $store_deref.)
                # A variable not assigned yet (a recursive closure, a memoized one):
                # its cell starts with what it held at the end, and takes the op
                # that produced that value as soon as the tape has it.
                op = self.cells.get(id(cell))
                if op is None:
                    try:
                        end = cell.cell_contents
                    except ValueError:
                        op = self.push(Call(helpers.new_cell, (), value=cell))
                    else:
                        content = self.link(end)
                        fill = (not isinstance(content, Op) and (
                            not isinstance(end, ATOMIC) or isinstance(end, types.FunctionType)))
                        if isinstance(content, Lit) and not fill:
                            # Nothing on the tape produces it (3.12 reads every
                            # closure variable this way): the traced value is kept.
                            content = self.push(Constant(
                                end, frozen="a closure variable's value, read as a constant "
                                "(its cell was loaded without a reference to its value)"))
                        op = self.push(Call(helpers.new_cell, (
                            content.value if isinstance(content, Lit) else content,), value=cell))
                        if fill:
                            self.pending_fill[id(end)] = op
                    self.cells[id(cell)] = op
                items.append(op)
                continue
            content = x.value if isinstance(x, Lit) else x
            op = self.cells.get(id(cell))
            if op is None:
                op = self.cells[id(cell)] = self.push(
                    Call(helpers.new_cell, (content,), value=cell))
            else:
                self.push(Call(helpers.cell_set, (op, content), value=None))
            items.append(op)
        op = self.push(Call(tops.build_tuple, items, value=value))
        self.closures[id(value)] = op
        return op

    def _closure_name(self, row, j, n):
        """The name of the variable whose cell is item `j` of the `n` cells that a
        BUILD_TUPLE at `row` packs (LOAD_CLOSURE, or LOAD_FAST of a cell on 3.13)."""
        instrs = _instructions(self.code_[row])
        k = instrs.index_of.get(self.offset_[row])
        if k is None or k < n:
            return None
        ins = instrs.list[k - n + j]
        if ins.opname not in ("LOAD_CLOSURE", "LOAD_FAST", "LOAD_FAST_BORROW"):
            return None
        return ins.argval

    def _parameter_cell(self, row, name):
        """The op or constant of parameter `name` of the code at `row`, whose cell a
        BUILD_TUPLE there packs, when the function never reassigns it.

        (3.12 loads a cell with LOAD_CLOSURE, which the trace reads as a constant,
        the cell itself; the value of a parameter's cell is the parameter's.)"""
        names = _parameter_names(self.code_[row])
        if name not in names or name in self.frame.cell_values:
            return None
        p = names.index(name) + 1
        kids = self.frame.kids
        if p >= len(kids) or self.kind_[kids[p]] != K_ARG or self.aux_[kids[p]] != p:
            return None
        return self.ref.get(kids[p])


def _parameter_names(code) -> tuple[str, ...]:
    """The names of a code object's parameters, `*args` and `**kwargs` included."""
    nparams = (code.co_argcount + code.co_kwonlyargcount
               + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08))
    return code.co_varnames[:nparams]


_UNKNOWN = object()
# Tape helpers that never run code that could assign a closure variable.
_NO_CELL_WRITES = frozenset((helpers.make_closure, helpers.cell_get, helpers.is_function,
                             helpers.resolves_to, tops.build_tuple, tops.build_list, type))
_PLAIN_MODULES = ("builtins", "numpy")


def _may_run_python(op) -> bool:
    """Whether Call `op` may run Python code of the traced program natively: its
    callee is Python (or computed), or a value it receives is a Python function or
    an instance of a class with Python methods (a `sorted` key, an operator's
    dunder)."""
    fn = op.fn
    if isinstance(fn, Op) or not isinstance(fn, (types.BuiltinFunctionType,
                                                 types.MethodDescriptorType,
                                                 types.WrapperDescriptorType)):
        if not (type(fn).__name__ == "ufunc" and type(fn).__module__ == "numpy"):
            return True
    for a in list(op.args) + list(op.kwargs.values()):
        v = a.value if isinstance(a, Op) else a
        if isinstance(v, (types.FunctionType, types.MethodType)):
            return True
        module = type(v).__module__
        if module not in _PLAIN_MODULES and not module.startswith("numpy"):
            return True
    return False


class _Instructions:
    __slots__ = ("list", "index_of", "stored_cells")


_instructions_of: "IdentityCache[_Instructions]" = IdentityCache()   # by identity, while the code lives


def _instructions(code) -> _Instructions:
    """The code's instructions in order, their index by offset, and the names of the
    cells it assigns (STORE_DEREF, DELETE_DEREF)."""
    hit = _instructions_of.get(code)
    if hit is None:
        hit = _Instructions()
        if isinstance(code, types.CodeType):
            hit.list = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
        else:  # a loaded trace's code: the instructions it was saved with
            hit.list = list(ir_of(code).layout.instrs)
        hit.index_of = {i.offset: k for k, i in enumerate(hit.list)}
        hit.stored_cells = frozenset(i.argval for i in hit.list
                                     if i.opname in ("STORE_DEREF", "DELETE_DEREF"))
        _instructions_of[code] = hit
    return hit


def fn_is_cells(rec, value) -> bool:
    """Whether a BUILD_TUPLE built a closure's cells (its inputs are the variables)."""
    return (rec.sem != R_SPECIAL and rec.fn is tops.build_tuple and type(value) is tuple
            and len(value) > 0 and all(type(c) is types.CellType for c in value))


