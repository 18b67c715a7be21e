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

from .. import _core
from .. import callables as tops
from ..analysis.instructions import R_CALL, R_CALL_EX, R_OP, R_SPECIAL
from ..analysis.ir import ir as ir_of
from ..views import queries
from ..views.values import SavedText
from . import helpers
from .bind import MISSING, Pack, map_parameters
from .callbacks import Callbacks
from .closures import Closures, fn_is_cells
from .common import (
    ATOMIC, ATOMIC_FAST, BRANCH_TESTS, F_CARRIED, F_FRAME, F_RAISED, FLAGS, GENERATOR_FLAGS, K_ARG,
    K_CONST, K_JUMP, K_NESTED, K_PRIM, K_RETURN, K_SPECIAL, NO_KWARGS, Lit,
)
from .handlers import handled_offsets
from .helpers import STOP
from .ops import Call, Constant, Guard, Input, Op, Where
from .record import Recorded
from .specials import SpecialInstructions
from .errors import TapeError

__all__ = ["flatten", "FIXED_TYPE"]

# Methods of builtin types, called through an object (`obj.m(...)` is recorded as
# `type(obj).m(obj, ...)`): which body runs depends on the object's type.
_DESCRIPTORS = (types.MethodDescriptorType, types.WrapperDescriptorType)
# Calls whose result has the same type whatever their inputs (no type guard needed).
FIXED_TYPE = frozenset((tops.build_tuple, tops.build_list, tops.build_set, tops.build_dict,
                        tops.build_const_key_map, tops.build_string, tops.build_slice))


class _Frame:
    """An inlined call being flattened."""

    __slots__ = ("node_row", "kids", "i", "result", "last_raised", "withs", "handled",
                 "cell_values", "cell_ops", "func")

    def __init__(self, node_row, kids, i, handled=False):
        self.cell_values: dict = {}  # name of a cell variable -> what it was last assigned
        self.cell_ops: dict = {}  # name of a cell variable -> the op of this run's cell
        self.node_row = node_row
        self.kids = kids
        self.i = i
        self.result = None
        self.last_raised = None
        self.withs: list = []  # the managers of the `with` blocks open in this frame
        self.handled = handled  # a caller's handler is around the whole call
        self.func = None  # a resumed generator's function (its closure's cells)


def flatten(root, ctx, tape_class, callbacks=False):
    """The tape of the trace under `root` (a NestedCallNode from `tracer.track`), an
    instance of `tape_class` (Tape.from_trace passes its class: no import of it here).
    With `callbacks`, Python code that builtins ran from C is inlined where its data
    flow is known (tracer.tapes.callbacks)."""
    # Building many small objects that all stay alive: the cycle collector's passes
    # over them would find nothing to free.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _Flattener(root, ctx, tape_class, callbacks).run()
    finally:
        if enabled:
            gc.enable()


class _Flattener(Closures, SpecialInstructions, Callbacks):
    """The state of one flattening: the node -> tape map and what it needs to link."""

    frame_class = _Frame  # (for the mixins, which do not import this module)

    def __init__(self, root, ctx, tape_class, callbacks=False):
        self.callbacks = callbacks
        self.gen_scope = None  # the Scope of the generator activation being inlined
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
        self.tape = tape_class(func=None, ctx=ctx)
        self.ref: dict[int, object] = {}  # row -> Op or Lit
        self.produced: dict[int, Op] = {}  # id(value) -> first op that produced it
        self.input_objects: dict[int, Op] = {}  # id(value) -> the Input op holding it
        self.pending_next: dict[int, Call] = {}  # id(iterator op) -> its latest next() op
        self.unpack_of: dict[int, Call] = {}  # row of an unpacked item -> its unpack op
        self.cells: dict[int, Op] = {}  # id(traced cell) -> the op making this run's cell
        self.closures: dict[int, Op] = {}  # id(traced tuple of cells) -> its op
        self.functions: dict[int, Op] = {}  # id(traced closure) -> the op remaking it
        self.pending_fill: dict[int, Op] = {}  # id(value) -> a cell op to set to its op
        self.typed: set[int] = set()  # id(op) of objects whose type a guard checked
        self.cell_content: dict[int, object] = {}  # id(cell op) -> what it holds now, if known
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
        # An input's object existed before the call: a constant read that is the same
        # object (a global, a default, an attribute of a constant) is not evidence it
        # came from the input, so inputs are never linked by identity.
        # Nor is a call that returned one of its arguments (np.asarray(x) is x) the
        # producer of that object.
        if type(v) not in ATOMIC_FAST and not isinstance(v, ATOMIC):
            if type(op) is Input:
                self.input_objects.setdefault(id(v), op)
            elif not (type(op) is Call and _passes_through(op, v)) \
                    and id(v) not in self.input_objects:
                # (an input's object taken out of a container, `args[0]`, is not made
                # there either: a constant that is that object stays a constant)
                self.produced.setdefault(id(v), op)
        if type(op) is Call:
            self.track_cells(op)
        if self.pending_fill and type(op) is Call:
            cell = self.pending_fill.pop(id(v), None)
            if cell is not None:
                self.push(Call(helpers.cell_set, (cell, op), value=None))
        return op

    def where(self, row: int) -> Where:
        code = self.code_[row]
        off = self.offset_[row]
        return Where(code, off, ir_of(code).layout.by_offset[off].line if off >= 0 else None)

    # -- references -----------------------------------------------------------------------
    def resolve(self, r):
        """The tape value of a trace reference: an Op or a Lit constant."""
        if isinstance(r, int):
            try:
                return self.ref[r]
            except KeyError:
                raise TapeError(f"row {r} is referenced but was not flattened") from None
        v = r[1]
        if v is _core.UNKNOWN:
            raise TapeError("the trace has an input whose source the recorder could not "
                            "tell (tracer.views.UNKNOWN): this call cannot be linearized")
        return self.link(v)

    def arg(self, r):
        """A trace reference as a Call argument: an Op or the constant value itself."""
        x = self.resolve(r)
        return x.value if isinstance(x, Lit) else x

    def link(self, v):
        """A constant input: the op that produced this very object if there is one.

        Values read through channels the trace does not follow (closure cells,
        attributes of constants, a `with` block's bound `__exit__`) are recorded as
        constants; when the object is the result of an op of this tape, it is that
        op's result, and on a new run it must be the new result.
        """
        if isinstance(v, SavedText) and getattr(v, "name", None):
            return Lit(v)  # a loaded trace's function: a constant, as functions are live
        if isinstance(v, ATOMIC):
            if isinstance(v, types.FunctionType) and v.__closure__ is not None:
                return self._closure(v)
            if isinstance(v, types.BuiltinFunctionType):
                return self._bound(v)
            return Lit(v)
        op = self.produced.get(id(v))
        if op is not None:
            return op
        if isinstance(v, types.MethodType):
            return self._bound(v)
        return Lit(v)

    def _bound(self, m):
        # A bound method is made from its object at run time: an input's as well.
        me = id(getattr(m, "__self__", None))
        owner = self.produced.get(me) or self.input_objects.get(me)
        if owner is None or isinstance(owner.value, types.ModuleType):
            return Lit(m)
        func = getattr(m, "__func__", None)
        if func is not None:
            # The very function bound to this run's object (`super().m` is not `obj.m`).
            return self.push(Call(types.MethodType, (func, owner), value=m))
        return self.push(Call(getattr, (owner, m.__name__), value=m))

    # -- driving ----------------------------------------------------------------------------
    def run(self):
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
        if isinstance(callee, SavedText):
            # A loaded trace's function is a stand-in: its defaults are unknown, so a
            # compiled tape takes the recorded parameters positionally (a_1, a_2, ...).
            tape.signature_of = None
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
        if isinstance(result, Lit):
            result = self.push(Constant(result.value))
        tape._result = result
        self._finish_unpacks()
        return tape

    def _opaque_root(self):
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
        if not kids or self.kind_[kids[0]] != K_ARG or self.aux_[kids[0]] != 0:
            return False
        if self.flags_[kids[0]] & F_CARRIED:
            return False
        code = self.code_[kids[0]]
        return not code.co_flags & GENERATOR_FLAGS

    def _leading_args(self, kids) -> int:
        n = 0
        kind, flags = self.kind_, self.flags_
        while n < len(kids) and kind[kids[n]] == K_ARG and not flags[kids[n]] & F_CARRIED:
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
                if self.gen_scope is not None:
                    self.gen_scope.add(outcome)
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
                out = self._c_map_call(row) if self.callbacks else None
                self.ref[row] = out if out is not None else self._call(row)
            elif kind == K_NESTED:
                kids = t.children(row)
                if flags & F_FRAME and self._collector_frame(row):
                    # Python the interpreter ran between two of the frame's ops (a
                    # gc callback, a finalizer, a weakref callback): not a call the
                    # program makes; a replay runs it again itself, if at all.
                    self.ref[row] = Lit(t.value(row))
                elif self._inlinable(row, kids):
                    n = self._leading_args(kids)
                    self._dispatch_guard(row, kids)
                    self._bind(row, kids, n)
                    handled = fr.handled or self.is_handled(row)
                    stack.append(_Frame(row, kids, n, handled))
                else:
                    out = self._callbacks(row) if self.callbacks else None
                    self.ref[row] = out if out is not None else self._call(row)
            elif kind == K_SPECIAL:
                self.ref[row] = self._special(row, flags)
            elif kind == K_JUMP:
                self._jump(row)
            elif kind == K_RETURN:
                if flags & FLAGS["yield"] and self.gen_scope is None:
                    raise TapeError("a yield outside a generator frame")
                refs = t.refs(row)
                fr.result = self.resolve(refs[0]) if refs else Lit(t.value(row))
            elif kind == K_ARG:
                # A value that entered midway: a free variable's cell passed on to a
                # closure, or another object the frame received.
                v = t.value(row)
                cell = self.cells.get(id(v)) if isinstance(v, types.CellType) else None
                if cell is None and self.gen_scope is not None and flags & F_CARRIED:
                    # A local a generator kept across a yield: the op that made it.
                    cell = self.gen_scope.find(v)
                self.ref[row] = cell if cell is not None else self.link(v)
            if self.gen_scope is not None:
                made = self.ref.get(row)
                if made is not None:
                    self.gen_scope.add(made)

    def _outcome(self, fr: _Frame):
        t = self.t
        if self.flags_[fr.node_row] & F_RAISED:
            if fr.last_raised is None:
                return Lit(t.value(fr.node_row))
            return self.ref.get(fr.last_raised) or self._find(t.value(fr.node_row))
        if fr.result is None:
            raise TapeError(f"row {fr.node_row}: a call that returned without a return node")
        return fr.result

    def _find(self, v):
        op = self.produced.get(id(v))
        return op if op is not None else Lit(v)

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
        kwargs = NO_KWARGS
        if sem == R_OP:
            fn = t.substituted_operators.get(row, rec.fn) if t.substituted_operators else rec.fn
            if fn is tops.build_tuple and fn_is_cells(rec, value):
                return self._cells(row, refs, value)
            # The common case inline: references to flattened rows, plain constants.
            args = []
            for r in refs:
                if type(r) is int:
                    x = ref.get(r)
                    if x is None:
                        x = self.resolve(r)  # raises the error that says why
                    args.append(x.value if type(x) is Lit else x)
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
        if type(fn) in _DESCRIPTORS and args and type(args[0]) is not Lit and isinstance(args[0], Op):
            self._type_guard(row, args[0])
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
        return x.value if isinstance(x, Lit) else x

    def _splice(self, recorded, args, kwargs, value) -> Op:
        """Put the ops a `record_primitive` hook pushed in place of the call."""
        mapping = {}
        for ph, a in zip(recorded.placeholders, list(args) + list(kwargs.values())):
            mapping[ph] = a
        for op in recorded.tape.ops:
            if isinstance(op, Input):
                continue  # a placeholder: the call's own argument
            new = _copy_op(op, mapping)
            mapping[op] = new
            self.push(new)
        out = mapping.get(recorded.result, recorded.result)
        if isinstance(out, Op):
            out.value = value
            return out
        return Lit(out)

    def _collector_frame(self, row) -> bool:
        """Whether nested call `row`, a frame entered from C directly under the
        frame being flattened (no op of it was running: the collector's callbacks,
        `__del__`, weakref callbacks), is read by nothing the program does."""
        return not queries.dependents_of(self.t, row).size

    def _dispatch_guard(self, row, kids) -> None:
        """A guard that the inlined body is the one a new run would call: the callee
        is computed (a dispatch table, a bound method), or it is the method the
        first argument's class resolves (`obj.m(...)`; another class may define
        another `m`).  A callee read as a constant (a global function) is assumed."""
        t = self.t
        refs = t.refs(row)
        func = t.value(kids[0])
        callee = self.resolve(refs[0])
        where = self.where(row)
        source = linecache.getline(where.code.co_filename, where.line or 0).strip()
        if isinstance(callee, Op):
            if not helpers.is_function(callee.value, func):
                return  # the callee op is not the function itself (`super()`'s pair)
            test = self.push(Call(helpers.is_function, (callee, func), value=True))
        else:
            rec = self._rec(row)
            if rec is None or rec.sem != R_CALL or len(refs) < 2 or not isinstance(refs[1], int):
                return
            obj = self.ref.get(refs[1])
            name = getattr(func, "__name__", None)
            if (not isinstance(obj, Op) or not isinstance(name, str)
                    or not helpers.resolves_to(obj.value, name, func)):
                return  # not a method call on the object (or `super()`'s)
            test = self.push(Call(helpers.resolves_to, (obj, name, func), value=True))
        self.push(Guard(test, True, "truth", where=where, source=source))

    def _type_guard(self, row, obj: Op) -> None:
        """A guard that `obj` has the type it had while tracing, before a call of a
        builtin method found on that type (`d.get(k)` is recorded as `dict.get(d, k)`:
        on a subclass that overrides `get`, the program would run the override).
        One per op: an object keeps its type; objects the tape itself builds
        (`[...]`, `{...}`) have theirs by construction."""
        if id(obj) in self.typed or (type(obj) is Call and obj.fn in FIXED_TYPE):
            return
        self.typed.add(id(obj))
        traced = type(obj.value)
        where = self.where(row)
        source = linecache.getline(where.code.co_filename, where.line or 0).strip()
        kind = self.push(Call(type, (obj,), value=traced))
        test = self.push(Call(operator.is_, (kind, traced), value=True))
        self.push(Guard(test, True, "truth", where=where, source=source))

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
                self.ref[prow] = Lit(pv)  # a default: the very object the function holds
            elif isinstance(b, Pack):
                self.ref[prow] = self.push(Call(b.fn, b.items, value=pv))
            else:
                got = b.value if isinstance(b, Op) else b
                if got is not pv:
                    raise TapeError(f"row {row}: parameter {code.co_varnames[k]} of "
                                    f"{code.co_qualname} is not the argument passed")
                self.ref[prow] = b if isinstance(b, Op) else Lit(b)

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
            if op is None and self.callbacks and self.inlined_generator(cond.value):
                # Its activations are inlined: their own guards decide the loop (an
                # inlined map/zip over a sequence: that sequence's end).
                if not value:
                    self.stream_end(cond.value, row)
                return
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
        test = BRANCH_TESTS.get(ins.opname)
        if test is None:
            raise TapeError(f"row {row}: a conditional {ins.opname} is not supported")
        if isinstance(cond, Lit):
            return
        self.push(Guard(cond, bool(value), test, where=where, source=source))


def helpers_recorded(fn):
    """The record of a `record_primitive` hook if `fn` is one (see record.py)."""
    return fn if type(fn) is Recorded else None


def _copy_op(op, mapping):
    import copy

    new = copy.copy(op)
    new.id = 0
    new.map_refs(lambda r: mapping.get(r, r))
    return new


def _passes_through(op, v) -> bool:
    """Whether Call `op` returned one of its own arguments' objects (`v`)."""
    for a in op.args:
        if (a.value if isinstance(a, Op) else a) is v:
            return True
    return False
