"""Flatten a nested trace into a tape at the context's primitive boundary.

Every nested call whose body was recorded is inlined: its parameters are bound to
the caller's inputs and its return value is the op its ReturnNode refers to.
Primitive and special calls become Call ops, taken branches Guard ops; returns,
jumps and argument binding disappear.  Exceptions are data: a `raise` statement's
exception is the op that built it, and the handler that caught it reads that op.
"""

from __future__ import annotations

import gc
import linecache
import operator
import types

from .. import _core, ops as tops
from ..effects import R_CALL_EX, R_OP, R_SPECIAL
from ..ir import ir as ir_of
from . import helpers
from .helpers import STOP
from .ops import Call, Constant, Guard, Input, Op, Where
from .bind import MISSING, Pack, map_parameters
from .handlers import handled_offsets
from .record import Recorded
from .tape import Tape, TapeError

__all__ = ["flatten"]

_F = _core.FLAGS
F_RAISED, F_CARRIED, F_EXCEPTION, F_FRAME = (_F["raised"], _F["carried"], _F["exception"],
                                             _F["frame"])
K_ARG, K_CONST, K_PRIM, K_NESTED, K_SPECIAL, K_JUMP, K_RETURN = range(7)
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x200  # generator, coroutine, async generator

# Values whose identity carries no meaning (equal values may be one shared object):
# a constant of these types is never taken for an op's result.
_ATOMIC = (type(None), bool, int, float, complex, str, bytes, tuple, frozenset, range,
           type(Ellipsis), type(NotImplemented), type, types.ModuleType, types.FunctionType,
           types.CodeType, types.BuiltinFunctionType, types.MethodDescriptorType,
           types.WrapperDescriptorType, types.MethodWrapperType, types.ClassMethodDescriptorType)
_ATOMIC_SET = frozenset((type(None), bool, int, float, str, tuple))  # the frequent ones, fast
_BRANCH_TESTS = {
    "POP_JUMP_IF_TRUE": "truth", "POP_JUMP_IF_FALSE": "truth",
    "POP_JUMP_IF_NONE": "none", "POP_JUMP_IF_NOT_NONE": "none",
}
# Special instructions that read their subject without popping it, so the trace has
# no reference to re-run them from: their traced value is kept (a frozen constant).
FROZEN_SPECIALS = ("match_sequence", "match_mapping", "match_keys")


_NO_KWARGS: dict = {}  # shared by Call ops without keywords (never mutated)


class _K:
    """A constant in the node -> tape map (so None and ops stay distinguishable)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _Frame:
    """An inlined call being flattened."""

    __slots__ = ("node_row", "kids", "i", "result", "last_raised", "withs", "handled")

    def __init__(self, node_row, kids, i, handled=False):
        self.node_row = node_row
        self.kids = kids
        self.i = i
        self.result = None
        self.last_raised = None
        self.withs: list = []  # the managers of the `with` blocks open in this frame
        self.handled = handled  # a caller's handler is around the whole call


def flatten(root, ctx=None) -> Tape:
    """The tape of the trace under `root` (a NestedCallNode from `tracer.track`)."""
    # Building many small objects that all stay alive: the cycle collector's passes
    # over them would find nothing to free.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _Flattener(root, ctx).run()
    finally:
        if enabled:
            gc.enable()


class _Flattener:
    def __init__(self, root, ctx):
        t = root.trace
        if t.stopped:
            raise TapeError("the trace stopped early (a hook or recorder error): "
                            "only a complete trace can be flattened")
        if root.row != 0 or t.parent(0) >= 0:
            raise TapeError("Tape.from_trace needs the root node of a trace")
        self.t = t
        self.root = root
        # The columns as lists: per-row reads of the trace's accessors cost more.
        cols = t.columns()
        self.kind_ = cols["kind"].tolist()
        self.flags_ = cols["flags"].tolist()
        self.offset_ = cols["offset"].tolist()
        self.aux_ = cols["aux"].tolist()
        codes = t.codes
        self.codeix_ = cols["code"].tolist()
        self.code_ = [codes[c] if c >= 0 else None for c in self.codeix_]
        # Per code (by its index in the trace: hashing a code object is slow).
        self._recs: list = [None] * len(codes)
        self._handled: list = [None] * len(codes)
        self.tape = Tape(func=None, ctx=ctx)
        self.ref: dict[int, object] = {}  # row -> Op or _K
        self.produced: dict[int, Op] = {}  # id(value) -> first op that produced it
        self.pending_next: dict[int, Call] = {}  # id(iterator op) -> its latest next() op
        self.unpack_of: dict[int, Call] = {}  # row of an unpacked item -> its unpack op
        self.cells: dict[int, Op] = {}  # id(traced cell) -> the op making this run's cell
        self.closures: dict[int, Op] = {}  # id(traced tuple of cells) -> its op
        self.functions: dict[int, Op] = {}  # id(traced closure) -> the op remaking it
        self.pending_fill: dict[int, Op] = {}  # id(value) -> a cell op to set to its op
        self.ops_ = self.tape.ops
        self.frame: _Frame | None = None
        self.row = 0  # the row being flattened (ops pushed for it may be handled)

    # -- output -------------------------------------------------------------------------
    def push(self, op: Op) -> Op:
        # Straight append: the ops' references are built from this tape's ops.
        if type(op) is Call and self.frame is not None and not op.raises:
            row = self.row
            op.handled = self.frame.handled or self.is_handled(row)
            if op.handled and op.where is None:
                op.where = self.where(row)
        self.ops_.append(op)
        op.id = len(self.ops_)
        v = op.value
        if type(v) not in _ATOMIC_SET and not isinstance(v, _ATOMIC):
            self.produced.setdefault(id(v), op)
        if self.pending_fill and type(op) is Call:
            cell = self.pending_fill.pop(id(v), None)
            if cell is not None:
                self.push(Call(helpers.cell_set, (cell, op), value=None))
        return op

    def where(self, row: int) -> Where:
        t = self.t
        code = self.code_[row]
        off = self.offset_[row]
        return Where(code, off, ir_of(code).layout.by_offset[off].line if off >= 0 else None)

    # -- references -----------------------------------------------------------------------
    def resolve(self, r):
        """The tape value of a trace reference: an Op or a _K constant."""
        if isinstance(r, int):
            try:
                return self.ref[r]
            except KeyError:
                raise TapeError(f"row {r} is referenced but was not flattened") from None
        v = r[1]
        if v is _core.UNKNOWN:
            raise TapeError("the trace has an input whose source the recorder could not "
                            "tell (tracer.UNKNOWN): this call cannot be linearized")
        return self.link(v)

    def arg(self, r):
        """A trace reference as a Call argument: an Op or the constant value itself."""
        x = self.resolve(r)
        return x.value if isinstance(x, _K) else x

    def link(self, v):
        """A constant input: the op that produced this very object if there is one.

        Values read through channels the trace does not follow (closure cells,
        attributes of constants, a `with` block's bound `__exit__`) are recorded as
        constants; when the object is the result of an op of this tape, it is that
        op's result, and on a new run it must be the new result.
        """
        if isinstance(v, _ATOMIC):
            if isinstance(v, types.FunctionType) and v.__closure__ is not None:
                return self._closure(v)
            if isinstance(v, types.BuiltinFunctionType):
                return self._bound(v)
            return _K(v)
        op = self.produced.get(id(v))
        if op is not None:
            return op
        if isinstance(v, types.MethodType):
            return self._bound(v)
        return _K(v)

    def _closure(self, f):
        op = self.functions.get(id(f))
        if op is not None:
            return op
        cells = self.closures.get(id(f.__closure__))
        if cells is None:
            return _K(f)
        op = self.functions[id(f)] = self.push(Call(helpers.make_closure, (f, cells), value=f))
        return op

    def _bound(self, m):
        owner = self.produced.get(id(getattr(m, "__self__", None)))
        if owner is None or isinstance(owner.value, types.ModuleType):
            return _K(m)
        return self.push(Call(getattr, (owner, m.__name__), value=m))

    # -- driving ----------------------------------------------------------------------------
    def run(self) -> Tape:
        t, root = self.t, self.root
        kids = t.children(0)
        tape = self.tape
        tape.func = t.value(kids[0]) if kids and self.kind_[kids[0]] == K_ARG else None
        if not self._inlinable(0, kids):
            return self._opaque_root()
        nparams = self._leading_args(kids)
        code = self.code_[kids[0]]
        callee = t.value(kids[0])
        passed = self._callee_value(t.refs(0)[0])
        # A bound method is called without its self: the tape's signature is the
        # method's, and play/compile supply self as Python does.
        tape.func = tape.signature_of = passed if isinstance(passed, types.MethodType) else callee
        names = code.co_varnames
        for k in range(nparams):
            row = kids[k]
            pos = self.aux_[row]
            name = getattr(callee, "__name__", "f") if pos == 0 else names[pos - 1]
            self.ref[row] = self.push(Input(t.value(row), pos, name))
        outcome = self._body(_Frame(0, kids, nparams))
        if root.raised:
            tape.raises = True
        result = outcome
        if isinstance(result, _K):
            result = self.push(Constant(result.value))
        tape._result = result
        self._finish_unpacks()
        return tape

    def _opaque_root(self) -> Tape:
        """A traced call whose body was not recorded (a C function): one Call op."""
        t, tape = self.t, self.tape
        refs = t.refs(0)
        kwnames = t.root_keywords or ()
        vals = [r[1] if not isinstance(r, int) else t.value(r) for r in refs]
        callee = vals[0]
        tape.func = callee
        fn_in = self.push(Input(callee, 0, getattr(callee, "__name__", "f")))
        npos = len(vals) - 1 - len(kwnames)
        args = [self.push(Input(v, i + 1, f"arg{i + 1}")) for i, v in enumerate(vals[1:1 + npos])]
        kwargs = {k: self.push(Input(v, 1 + npos + j, k))
                  for j, (k, v) in enumerate(zip(kwnames, vals[1 + npos:]))}
        op = self.push(Call(fn_in, args, kwargs, value=self.root.value,
                            raises=self.root.raised))
        tape.raises = self.root.raised
        tape._result = op
        return tape

    def _inlinable(self, row, kids) -> bool:
        # The body was recorded as this call's own frame: it starts with the callee's
        # ArgumentNode.  A C function that called back into Python has only frame
        # children, and creating a generator runs no body: both stay one op.
        t = self.t
        if not kids or self.kind_[kids[0]] != K_ARG or self.aux_[kids[0]] != 0:
            return False
        if self.flags_[kids[0]] & F_CARRIED:
            return False
        code = self.code_[kids[0]]
        return not code.co_flags & _GENERATOR_FLAGS

    def _leading_args(self, kids) -> int:
        t = self.t
        n = 0
        while n < len(kids) and self.kind_[kids[n]] == K_ARG and not self.flags_[kids[n]] & F_CARRIED:
            n += 1
        return n

    def _body(self, frame: _Frame):
        """Flatten the frame's remaining children (and inlined calls, iteratively);
        return the outcome of the outermost frame: its result or its exception."""
        t = self.t
        stack = [frame]
        while True:
            fr = stack[-1]
            if fr.i >= len(fr.kids):
                stack.pop()
                outcome = self._outcome(fr)
                if not stack:
                    return outcome
                self.ref[fr.node_row] = outcome
                continue
            row = fr.kids[fr.i]
            fr.i += 1
            self.frame = fr
            self.row = row
            kind = self.kind_[row]
            flags = self.flags_[row]
            if flags & F_RAISED:
                fr.last_raised = row
            if kind == K_CONST:
                # A literal, or a value read as a constant and stored in a variable
                # (a function the code made: a closure is remade for this run).
                self.ref[row] = self.link(t.value(row))
            elif kind == K_PRIM:
                self.ref[row] = self._call(row)
            elif kind == K_NESTED:
                kids = t.children(row)
                if self._inlinable(row, kids):
                    n = self._leading_args(kids)
                    self._bind(row, kids, n)
                    handled = fr.handled or self.is_handled(row)
                    stack.append(_Frame(row, kids, n, handled))
                else:
                    self.ref[row] = self._call(row)
            elif kind == K_SPECIAL:
                self.ref[row] = self._special(row, flags)
            elif kind == K_JUMP:
                self._jump(row)
            elif kind == K_RETURN:
                if flags & _F["yield"]:
                    raise TapeError("a yield outside a generator frame")
                refs = t.refs(row)
                fr.result = self.resolve(refs[0]) if refs else _K(t.value(row))
            elif kind == K_ARG:
                # A value that entered midway: a free variable's cell passed on to a
                # closure, or another object the frame received.
                v = t.value(row)
                cell = self.cells.get(id(v)) if isinstance(v, types.CellType) else None
                self.ref[row] = cell if cell is not None else self.link(v)

    def _outcome(self, fr: _Frame):
        t = self.t
        if self.flags_[fr.node_row] & F_RAISED:
            if fr.last_raised is None:
                return _K(t.value(fr.node_row))
            return self.ref.get(fr.last_raised) or self._find(t.value(fr.node_row))
        if fr.result is None:
            raise TapeError(f"row {fr.node_row}: a call that returned without a return node")
        return fr.result

    def _find(self, v):
        op = self.produced.get(id(v))
        return op if op is not None else _K(v)

    # -- calls --------------------------------------------------------------------------------
    def _rec(self, row):
        ix = self.codeix_[row]
        recs = self._recs[ix]
        if recs is None:
            recs = self._recs[ix] = ir_of(self.code_[row]).recs
        return recs.get(self.offset_[row])

    def is_handled(self, row) -> bool:
        """Whether a handler of its own frame is around the instruction of `row`."""
        ix = self.codeix_[row]
        handled = self._handled[ix]
        if handled is None:
            handled = self._handled[ix] = handled_offsets(self.code_[row])
        return self.offset_[row] in handled

    def _call(self, row) -> Op:
        t = self.t
        refs = t.refs(row)
        rec = self._rec(row)
        if rec is None:
            raise TapeError(f"row {row}: no instruction record for a call")
        sem = rec.sem
        if sem == R_SPECIAL:  # a special whose work ran Python code (a frame child)
            return self._special(row, self.flags_[row])
        raised = bool(self.flags_[row] & F_RAISED)
        value = t.value(row)
        ref, arg = self.ref, self.arg
        kwargs = _NO_KWARGS
        if sem == R_OP:
            fn = t.functions.get(row, rec.fn) if t.functions else rec.fn
            if fn is tops.build_tuple and fn_is_cells(rec, value):
                return self._cells(row, refs, value)
            # The common case inline: references to flattened rows, plain constants.
            args = []
            for r in refs:
                if type(r) is int:
                    x = ref.get(r)
                    if x is None:
                        x = self.resolve(r)  # raises the error that says why
                    args.append(x.value if type(x) is _K else x)
                else:
                    args.append(arg(r))
        else:
            fn = arg(refs[0])
            args = [arg(r) for r in refs[1:]]
            if rec.kwnames:
                k = len(rec.kwnames)
                kwargs = dict(zip(rec.kwnames, args[-k:]))
                args = args[:-k]
        if fn is tops.with_enter or self.frame.withs:
            self._track_with(fn, args, value)
        if type(fn) is Recorded:
            return self._splice(fn, args, kwargs, value)
        op = Call.trusted(fn, tuple(args), kwargs, value, sem == R_CALL_EX, raised,
                          self.where(row) if raised else None)
        self.push(op)
        if raised and isinstance(value, BaseException) and value.__context__ is not None:
            # Raised while a handler ran: that exception is its __context__.
            return self.push(Call(helpers.throw, (op, self._plain(value.__context__)),
                                  value=value))
        if fn is next and len(args) == 1 and isinstance(args[0], Op) and not kwargs:
            self.pending_next[id(args[0])] = op
        return op

    def _track_with(self, fn, args, value) -> None:
        """Keep the frame's stack of open `with` managers (for WITH_EXCEPT_START)."""
        withs = self.frame.withs
        if fn is tops.with_enter:
            withs.append(args[0])
        elif withs:
            fv = fn.value if isinstance(fn, Op) else fn
            top = withs[-1]
            if (getattr(fv, "__name__", "") == "__exit__"
                    and getattr(fv, "__self__", None) is (top.value if isinstance(top, Op) else top)):
                withs.pop()

    def _plain(self, v):
        x = self.link(v)
        return x.value if isinstance(x, _K) else x

    def _cells(self, row, refs, value) -> Op:
        """A closure's tuple of cells (LOAD_CLOSURE reads the variables' values):
        one cell op per variable, shared by the closures made from it, and set to
        the variable's value each time a closure is made."""
        items = []
        for j, (r, cell) in enumerate(zip(refs, value)):
            x = self.resolve(r)
            if x.value is cell and isinstance(x, Op):  # a free variable's cell passed on
                items.append(x)
                continue
            if x.value is cell:
                param = self._parameter_cell(row, j, len(value))
                if param is not None:
                    x = param  # the cell of a parameter never reassigned: its value
            if x.value is cell:
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
                            not isinstance(end, _ATOMIC) or isinstance(end, types.FunctionType)))
                        if isinstance(content, _K) and not fill:
                            # Nothing on the tape produces it (3.12 reads every
                            # closure variable this way): the traced value is kept.
                            content = self.push(Constant(
                                end, frozen="a closure variable's value, read as a constant "
                                "(its cell was loaded without a reference to its value)"))
                        op = self.push(Call(helpers.new_cell, (
                            content.value if isinstance(content, _K) else content,), value=cell))
                        if fill:
                            self.pending_fill[id(end)] = op
                    self.cells[id(cell)] = op
                items.append(op)
                continue
            content = x.value if isinstance(x, _K) else x
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

    def _parameter_cell(self, row, j, n):
        """The op or constant of the parameter whose cell is item `j` of the `n` cells
        that a BUILD_TUPLE at `row` packs, when the function never reassigns it.

        (3.12 loads a cell with LOAD_CLOSURE, which the trace reads as a constant,
        the cell itself; the value of a parameter's cell is the parameter's.)"""
        code = self.code_[row]
        instrs = _instructions(code)
        k = instrs.index_of.get(self.offset_[row])
        if k is None or k < n:
            return None
        ins = instrs.list[k - n + j]
        if ins.opname != "LOAD_CLOSURE":
            return None
        name = ins.argval
        nparams = (code.co_argcount + code.co_kwonlyargcount
                   + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08))
        names = code.co_varnames[:nparams]
        if name not in names or name in instrs.stored_cells:
            return None
        p = names.index(name) + 1
        kids = self.frame.kids
        if p >= len(kids) or self.kind_[kids[p]] != K_ARG or self.aux_[kids[p]] != p:
            return None
        return self.ref.get(kids[p])

    def _splice(self, recorded, args, kwargs, value) -> Op:
        """Put the ops a `record_primitive` hook pushed in place of the call."""
        mapping = {}
        for ph, a in zip(recorded.placeholders, list(args) + list(kwargs.values())):
            mapping[ph] = a
        last = None
        for op in recorded.tape.ops:
            if isinstance(op, Input):
                continue  # a placeholder: the call's own argument
            new = _copy_op(op, mapping)
            mapping[op] = new
            last = self.push(new)
        out = mapping.get(recorded.result, recorded.result)
        if isinstance(out, Op):
            out.value = value
            return out
        return _K(out)

    def _bind(self, row, kids, nparams) -> None:
        """Bind the inlined call's parameters (ArgumentNodes 1..) to the caller's inputs."""
        t = self.t
        rec = self._rec(row)
        refs = t.refs(row)
        code = self.code_[kids[0]]
        self.ref[kids[0]] = self.resolve(refs[0])  # the callee
        fn_val = t.value(kids[0])
        params = kids[1:nparams]
        callee = self._callee_value(refs[0])
        prefix = []
        if isinstance(callee, types.MethodType):
            fn_in = self.resolve(refs[0])
            if isinstance(fn_in, Op):
                prefix = [self.push(Call(getattr, (fn_in, "__self__"), value=callee.__self__))]
            else:
                prefix = [self.arg(("const", callee.__self__))]
        if rec is not None and rec.sem == R_CALL_EX:
            self._bind_star(row, refs, params, fn_val, prefix)
            return
        args = [self.arg(r) for r in refs[1:]]
        kwargs = {}
        kwnames = rec.kwnames if rec is not None else (t.root_keywords or ())
        if kwnames:
            k = len(kwnames)
            kwargs = dict(zip(kwnames, args[-k:]))
            args = args[:-k]
        bound = map_parameters(code, prefix + args, kwargs)
        if bound is None:
            raise TapeError(f"row {row}: cannot bind the arguments of {code.co_qualname}")
        for k, prow in enumerate(params):
            b = bound[k] if k < len(bound) else MISSING
            pv = t.value(prow)
            if b is MISSING:
                self.ref[prow] = _K(pv)  # a default: the very object the function holds
            elif isinstance(b, Pack):
                self.ref[prow] = self.push(Call(b.fn, b.items, value=pv))
            else:
                got = b.value if isinstance(b, Op) else b
                if got is not pv:
                    raise TapeError(f"row {row}: parameter {code.co_varnames[k]} of "
                                    f"{code.co_qualname} is not the argument passed")
                self.ref[prow] = b if isinstance(b, Op) else _K(b)

    def _callee_value(self, r):
        return self.t.value(r) if isinstance(r, int) else r[1]

    def _bind_star(self, row, refs, params, fn_val, prefix) -> None:
        t = self.t
        func = fn_val.__func__ if isinstance(fn_val, types.MethodType) else fn_val
        if not isinstance(func, types.FunctionType):
            raise TapeError(f"row {row}: cannot bind f(*args, **kwargs) for {func!r}")
        binder = helpers.make_binder(func)
        a = self.arg(refs[1])
        k = self.arg(refs[2]) if len(refs) > 2 else {}
        values = tuple(t.value(p) for p in params)
        bound = self.push(Call(helpers.bind_call, (binder, a, k, *prefix), value=values))
        for j, prow in enumerate(params):
            self.ref[prow] = self.push(Call(operator.getitem, (bound, j), value=values[j]))

    # -- special instructions ---------------------------------------------------------------
    def _special(self, row, flags):
        t = self.t
        refs = t.refs(row)
        value = t.value(row)
        if flags & F_EXCEPTION or (flags & F_RAISED and self._rec(row) is None):
            # A handler's caught exception, or a `raise`: the exception's own op.
            found = None
            for r in refs[:1]:
                x = self.resolve(r)
                xv = x.value
                if xv is value:
                    found = x
                elif isinstance(xv, type) and isinstance(value, xv) and flags & F_RAISED:
                    # `raise SomeError`: the class is called to make the exception.
                    found = self.push(Call(xv if isinstance(x, _K) else x, (), value=value))
            if found is None:
                found = self._find(value)
            if flags & F_EXCEPTION or not isinstance(value, BaseException):
                return found
            # `raise`: the exception being handled becomes the new one's __context__,
            # and `from cause` its __cause__.
            exc = found.value if isinstance(found, _K) else found
            # (The trace references the exception only: the cause is found by identity.)
            cause = ()
            if value.__cause__ is not None or value.__suppress_context__:
                cause = (self._plain(value.__cause__),)
            if value.__context__ is None and not cause:
                return found
            return self.push(Call(helpers.throw, (exc, self._plain(value.__context__), *cause),
                                  value=value))
        rec = self._rec(row)
        if rec is None or rec.sem != R_SPECIAL:
            raise TapeError(f"row {row}: a special node without a special instruction")
        name = rec.fn
        ins = ir_of(self.code_[row]).layout.by_offset[self.offset_[row]]
        if name in ("unpack", "unpack_ex"):
            return self._unpack(row, name, refs, ins, value)
        if name == "set_function_attribute":
            # The function MAKE_FUNCTION made (a constant) with its attribute set.
            return self.resolve(refs[-1])
        if name == "yield_from_iter":
            return self.push(Call(helpers.yield_from_iter, (self.arg(refs[0]),), value=value))
        if name == "with_except_start" and self.frame.withs and self.frame.last_raised is not None:
            manager = self.frame.withs.pop()
            exc = self._plain(self.t.value(self.frame.last_raised))
            return self.push(Call(helpers.with_exit, (manager, exc), value=value))
        if name == "match_class":
            subject, cls, names = (self.arg(r) for r in refs)
            return self.push(Call(helpers.match_class, (subject, cls, names, ins.arg),
                                  value=value))
        reason = (f"${name} reads a value the trace does not reference"
                  if name in FROZEN_SPECIALS else f"${name} has no re-executable equivalent")
        return self.push(Constant(value, frozen=reason, where=self.where(row)))

    def _unpack(self, row, name, refs, ins, value):
        t = self.t
        j = 0 if self.kind_[row] == K_NESTED else self.aux_[row]  # a nested node's aux is its end
        if j == 0:
            seq = self.arg(refs[0])
            if name == "unpack":
                op = Call(helpers.unpack_sequence, (seq, ins.arg), value=[])
            else:
                op = Call(helpers.unpack_ex, (seq, ins.arg & 0xFF, ins.arg >> 8), value=[])
            self.push(op)
            if name == "unpack" and ins.arg == 0:
                return op  # `() = x`: no item, the one node stands for the check
        else:
            op = self.unpack_of.get(refs[0] if refs and isinstance(refs[0], int) else -1)
            if op is None:
                raise TapeError(f"row {row}: unpacked item {j} without its unpack")
        self.unpack_of[row] = op
        items = op.value
        while len(items) < j:
            items.append(None)
        items.append(value)
        return self.push(Call(operator.getitem, (op, j), value=value))

    def _finish_unpacks(self) -> None:
        for op in set(self.unpack_of.values()):
            op.value = tuple(op.value)

    # -- branches ------------------------------------------------------------------------------
    def _jump(self, row) -> None:
        t = self.t
        refs = t.refs(row)
        if not refs or not isinstance(refs[0], int):
            return  # an unconditional jump, or a branch on a constant: nothing to check
        ins = ir_of(self.code_[row]).layout.by_offset[self.offset_[row]]
        where = self.where(row)
        source = linecache.getline(where.code.co_filename, where.line or 0).strip()
        value = t.value(row)
        cond = self.resolve(refs[0])
        if ins.opname == "FOR_ITER":
            if not isinstance(cond, Op):
                raise TapeError(f"row {row}: a for loop over a constant iterator")
            op = self.pending_next.pop(id(cond), None)
            if value and op is None:
                raise TapeError(f"row {row}: a for loop went on without a next() call")
            if not value and (op is None or op is not self.ops_[-1]):
                # The exhausting next() fired no node (C iterators): make it.
                op = self.push(Call(next, (cond,), value=STOP))
            # next(it, STOP): the loop's test, without an exception to catch.
            op.args = (cond, STOP)
            op.raises = False
            if not value:
                op.value = STOP
            self.push(Guard(op, not value, "stop", where=where, source=source))
            return
        test = _BRANCH_TESTS.get(ins.opname)
        if test is None:
            raise TapeError(f"row {row}: a conditional {ins.opname} is not supported")
        if isinstance(cond, _K):
            return
        self.push(Guard(cond, bool(value), test, where=where, source=source))


class _Instructions:
    __slots__ = ("list", "index_of", "stored_cells")


_instructions_of: dict = {}


def _instructions(code) -> _Instructions:
    """The code's instructions in order, their index by offset, and the names of the
    cells it assigns (STORE_DEREF, DELETE_DEREF)."""
    hit = _instructions_of.get(code)
    if hit is None:
        import dis

        hit = _Instructions()
        hit.list = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
        hit.index_of = {i.offset: k for k, i in enumerate(hit.list)}
        hit.stored_cells = frozenset(i.argval for i in hit.list
                                     if i.opname in ("STORE_DEREF", "DELETE_DEREF"))
        if len(_instructions_of) > 4096:
            _instructions_of.clear()
        _instructions_of[code] = hit
    return hit


def fn_is_cells(rec, value) -> bool:
    """Whether a BUILD_TUPLE built a closure's cells (its inputs are the variables)."""
    return (rec.sem != R_SPECIAL and rec.fn is tops.build_tuple and type(value) is tuple
            and len(value) > 0 and all(type(c) is types.CellType for c in value))


def helpers_recorded(fn):
    """The record of a `record_primitive` hook if `fn` is one (see record.py)."""
    return fn if type(fn) is Recorded else None


def _copy_op(op, mapping):
    import copy

    new = copy.copy(op)
    new.id = 0
    new.map_refs(lambda r: mapping.get(r, r))
    return new
