"""`Tape.to_source` / `Tape.compile`: generate a Python function from a tape.

Operators become Python syntax (`a + b`, `x[i]`, `o.name`), other calls call
their function; constants that are not literals are passed in the generated
function's globals (`k_<n>`), never written as text.  Guards become `if` tests that
raise GuardError; the function has the traced function's signature and defaults.
"""

from __future__ import annotations

import builtins
import math
import operator as op_
import types
from dataclasses import dataclass

from .. import callables as tops
from .guards import NOT_KEPT, failing_test, guard_failure, raise_expected_failure, unexpected_exception
from .helpers import STOP
from .ops import Call, Constant, Guard, Input, Op
from .errors import TapeError

__all__ = ["generate", "compile_tape", "Generated"]

_BINARY = {
    op_.add: "+", op_.sub: "-", op_.mul: "*", op_.truediv: "/", op_.floordiv: "//",
    op_.mod: "%", op_.pow: "**", op_.matmul: "@", op_.lshift: "<<", op_.rshift: ">>",
    op_.and_: "&", op_.or_: "|", op_.xor: "^", op_.lt: "<", op_.le: "<=", op_.eq: "==",
    op_.ne: "!=", op_.gt: ">", op_.ge: ">=", op_.is_: "is", op_.is_not: "is not",
}
_INPLACE = {
    op_.iadd: "+=", op_.isub: "-=", op_.imul: "*=", op_.itruediv: "/=", op_.ifloordiv: "//=",
    op_.imod: "%=", op_.ipow: "**=", op_.imatmul: "@=", op_.ilshift: "<<=", op_.irshift: ">>=",
    op_.iand: "&=", op_.ior: "|=", op_.ixor: "^=",
}
_UNARY = {op_.neg: "-", op_.pos: "+", op_.invert: "~", op_.not_: "not "}
_LITERAL_TYPES = (int, str, bytes, bool, type(None))
_MAX_NESTING = 20  # inlined expressions nested deeper get a variable


@dataclass
class Generated:
    """A generated function's source and the globals it runs with."""

    source: str
    globals: dict


class _Gen:
    """One tape's generated function: its lines, its globals, its variable names."""

    def __init__(self, tape):
        self.tape = tape
        self.globals: dict = {"GuardError": None, "STOP": STOP, "not_kept_": NOT_KEPT}
        self.by_id: dict[int, str] = {}  # id(constant object) -> its global name
        self.lines: list[str] = []
        self.names: dict[int, str] = {}  # op id -> variable name (or inlined expression)
        self.depth: dict[int, int] = {}  # op id -> nesting of its inlined expression
        self.params: set[str] = set()

    # -- names ----------------------------------------------------------------------------
    def const(self, value) -> str:
        if value is STOP:
            return "STOP"
        name = getattr(value, "__name__", None)
        if (type(value) is types.BuiltinFunctionType or type(value) is type) and name \
                and getattr(builtins, name, None) is value and name not in self.params:
            return name  # len, next, range...: as written in code
        if type(value) in _LITERAL_TYPES:
            text = repr(value)
            if type(value) is not int or len(text) < 4000:
                return f"({text})" if text.startswith("-") else text
        if type(value) is float and math.isfinite(value):
            text = repr(value)
            return f"({text})" if text.startswith("-") else text
        name = self.by_id.get(id(value))
        if name is None:
            name = f"k_{len(self.by_id)}"
            self.by_id[id(value)] = name
            self.globals[name] = value
        return name

    def named(self, value, name: str) -> str:
        """`value` in the globals under `name` (for the generated code's own helpers)."""
        self.globals[name] = value
        self.by_id.setdefault(id(value), name)
        return name

    def ref(self, a) -> str:
        if isinstance(a, Op):
            return self.names[a.id]
        return self.const(a)

    # -- ops --------------------------------------------------------------------------------
    def emit(self, text: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + text)

    def expr(self, op: Call) -> tuple[str, str]:
        """How to write Call `op`: ("expr", expression), ("stmt", a statement whose
        value is None) or ("inplace", "a op= b" with the target written as `{v}`,
        the variable that holds `a` first)."""
        fn, args, r = op.fn, op.args, self.ref
        if op.star:
            parts = [f"*{r(args[0])}"] + ([f"**{r(args[1])}"] if len(args) > 1 else [])
            return "expr", f"{r(fn)}({', '.join(parts)})"
        if not op.kwargs and not isinstance(fn, Op) and _hashable(fn):
            n = len(args)
            if n == 2 and fn in _BINARY:
                return "expr", f"({r(args[0])} {_BINARY[fn]} {r(args[1])})"
            if n == 1 and fn in _UNARY:
                return "expr", f"({_UNARY[fn]}{r(args[0])})"
            if n == 2 and fn is op_.getitem:
                return "expr", f"{self.obj(args[0])}[{r(args[1])}]"
            if n == 2 and fn is op_.contains:
                return "expr", f"({r(args[1])} in {r(args[0])})"
            if n == 2 and fn is tops.not_contains:
                return "expr", f"({r(args[1])} not in {r(args[0])})"
            if n == 3 and fn is tops.getslice:
                return "expr", f"{self.obj(args[0])}[{r(args[1])}:{r(args[2])}]"
            if fn is tops.build_tuple:
                return "expr", "(" + "".join(f"{r(a)}, " for a in args) + ")"
            if fn is tops.build_list:
                return "expr", "[" + ", ".join(r(a) for a in args) + "]"
            if fn is tops.build_set and args:
                return "expr", "{" + ", ".join(r(a) for a in args) + "}"
            if fn is getattr and n == 2 and _is_attr(args[1]):
                return "expr", f"{self.obj(args[0])}.{args[1]}"
            if fn is setattr and n == 3 and _is_attr(args[1]):
                return "stmt", f"{self.obj(args[0])}.{args[1]} = {r(args[2])}"
            if fn is op_.setitem and n == 3:
                return "stmt", f"{self.obj(args[0])}[{r(args[1])}] = {r(args[2])}"
            if fn is op_.delitem and n == 2:
                return "stmt", f"del {self.obj(args[0])}[{r(args[1])}]"
            if fn in _INPLACE and n == 2:
                return "inplace", f"{{v}} = {r(args[0])}\n{{v}} {_INPLACE[fn]} {r(args[1])}"
        parts = [r(a) for a in args] + [f"{k}={r(v)}" for k, v in op.kwargs.items()]
        return "expr", f"{r(fn)}({', '.join(parts)})"

    def obj(self, a) -> str:
        """`a` written where an attribute or subscript follows (`(1).real`, not `1.real`)."""
        text = self.ref(a)
        return f"({text})" if text[:1].isdigit() else text

    def call(self, op: Call, v: str | None) -> None:
        """Emit Call `op`, its result in variable `v` (None: the result is not used)."""
        lines = self._assign(v, *self.expr(op))
        if op.raises or op.handled:
            self.emit("try:")
            for line in lines:
                self.emit(line, 2)
            me = self.named(op, f"op_{op.id}")
            if op.raises:  # it raised while tracing: it must raise again
                fail = self.named(raise_expected_failure, "no_raise_")
                self.emit("except BaseException as exc_:")
                self.emit(f"{v} = exc_" if v else "pass", 2)
                self.emit("else:")
                self.emit(f"raise {fail}({me})", 2)
            else:  # inside a handler of the traced code: an exception is a path change
                fail = self.named(unexpected_exception, "unexpected_")
                self.emit("except Exception as exc_:")
                self.emit(f"raise {fail}({me}, exc_) from exc_", 2)
            return
        for line in lines:
            self.emit(line)

    @staticmethod
    def _assign(v: str | None, kind: str, text: str) -> list[str]:
        if kind == "expr":
            return [f"{v} = {text}" if v else text]
        if kind == "inplace":
            return text.format(v=v or "_").split("\n")
        return [text, f"{v} = None"] if v else [text]

    def guard(self, g: Guard) -> None:
        c = self.ref(g.condition)
        test = failing_test(g, c)
        fail = self.named(guard_failure, "fail_")
        me = self.named(g, f"guard_{g.id}")
        if not c.isidentifier():  # an inlined test: its value is the test's outcome
            c = "not_kept_"
        if g.where is not None:
            self.emit(f"# L{g.where.line}: {g.source}" if g.source else f"# L{g.where.line}")
        self.emit(f"if {test}:")
        self.emit(f"raise {fail}({me}, {c})", 2)

    # -- the function --------------------------------------------------------------------------
    def run(self) -> Generated:
        tape = self.tape
        if tape.result is None:
            raise TapeError("the tape has no result to return")
        params, header = self.signature()
        self.params = set(params)
        # Variables are reused once their value is read for the last time, so the
        # function has few locals and drops intermediate values early.
        last: dict[int, int] = {}
        for pos, op in enumerate(tape.ops):
            for r in op.refs():
                last[id(r)] = pos
        last[id(tape.result)] = len(tape.ops)
        uses: dict[int, int] = {id(tape.result): 1}
        for op in tape.ops:
            for r in op.refs():
                uses[id(r)] = uses.get(id(r), 0) + 1
        expiring: dict[int, list[str]] = {}
        free: list[str] = []
        ops = tape.ops
        for pos, op in enumerate(ops):
            if isinstance(op, Input):
                if op.position > 0:
                    self.names[op.id] = params[op.position - 1]
                else:
                    self.names[op.id] = self.const(op.value)
                continue
            if self._inline(op, ops[pos + 1] if pos + 1 < len(ops) else None, uses):
                # Read once, by the very next op: written into that op's expression
                # (evaluated at the same point), with no variable of its own.
                expiring.setdefault(pos + 1, []).extend(expiring.pop(pos, ()))
                continue
            if self._augment(op, pos, last, expiring):
                continue
            v = None
            if id(op) in last and not isinstance(op, Guard):
                v = free.pop() if free else f"v_{op.id}"
                self.names[op.id] = v
                expiring.setdefault(last[id(op)], []).append(v)
            if isinstance(op, Guard):
                self.guard(op)
            elif isinstance(op, Constant):
                if v:
                    self.emit(f"{v} = {self.const(op.value)}")
            else:
                self.call(op, v)
            free.extend(expiring.pop(pos, ()))
        word = "raise" if tape.raises else "return"
        self.emit(f"{word} {self.ref(tape.result)}")
        source = header + "\n" + "\n".join(self.lines) + "\n"
        return Generated(source, self.globals)

    def _inline(self, op, nxt, uses) -> bool:
        if type(nxt) is Guard and nxt.condition is op and nxt.test == "truth":
            pass  # `if not (a < b): raise ...`: the test reads it once
        elif (type(nxt) is not Call or nxt.raises or nxt.handled
              or not any(r is op for r in nxt.refs())):
            return False
        if type(op) is not Call or op.raises or op.handled or uses.get(id(op)) != 1:
            return False
        # Chains of inlined values nest; the parser allows 200 levels of parentheses.
        depth = 1 + max((self.depth.get(r.id, 0) for r in op.refs()), default=0)
        if depth > _MAX_NESTING:
            return False
        kind, text = self.expr(op)
        if kind != "expr":
            return False
        self.names[op.id] = text
        self.depth[op.id] = depth
        return True

    def _augment(self, op, pos, last, expiring) -> bool:
        """`a += b` in place of `v = a; v += b` when `a` is not read again."""
        if (type(op) is not Call or isinstance(op.fn, Op) or not _hashable(op.fn)
                or op.fn not in _INPLACE or op.raises or op.handled or op.kwargs or op.star
                or len(op.args) != 2):
            return False
        a = op.args[0]
        if not isinstance(a, Op) or last.get(id(a)) != pos:
            return False
        name = self.names[a.id]
        if not name.isidentifier() or not (name in self.params or name.startswith("v_")):
            return False
        self.emit(f"{name} {_INPLACE[op.fn]} {self.ref(op.args[1])}")
        self.names[op.id] = name
        dying = expiring.get(pos, [])
        if name in dying:
            dying.remove(name)
        if id(op) in last:
            expiring.setdefault(last[id(op)], []).append(name)
        return True

    def signature(self) -> tuple[list[str], str]:
        tape = self.tape
        func = tape.signature_of
        if isinstance(func, types.MethodType):
            func = func.__func__
        name = getattr(tape.func, "__name__", "tape")
        if not name.isidentifier():
            name = "tape"
        if func is None:
            n = sum(1 for i in tape.inputs if i.position > 0)
            params = [f"a_{k}" for k in range(1, n + 1)]
            return params, f"def {name}({', '.join(params)}):"
        code = func.__code__
        npos, nkw, nposonly = code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount
        names = list(code.co_varnames)
        has_var, has_kw = code.co_flags & 0x04, code.co_flags & 0x08
        # Inputs are numbered in co_varnames order: positional, keyword-only, *, **.
        ordered = names[:npos + nkw + bool(has_var) + bool(has_kw)]
        for n in ordered:
            if n.startswith(("v_", "k_", "a_", "op_", "guard_")) or n in (
                    "STOP", "exc_", "fail_", "no_raise_", "not_kept_", "unexpected_"):
                raise TapeError(f"parameter name {n!r} clashes with the generated code's names")
        # Defaults as the function holds them: literals written out, other objects
        # by their global name (k_<n>); compile() also sets the very objects.
        defaults = func.__defaults__ or ()
        ndef = len(defaults)
        kwdefaults = func.__kwdefaults__ or {}
        parts = []
        for i, n in enumerate(names[:npos]):
            parts.append(f"{n}={self.const(defaults[i - (npos - ndef)])}"
                         if i >= npos - ndef else n)
            if nposonly and i == nposonly - 1:
                parts.append("/")
        if has_var:
            parts.append("*" + names[npos + nkw])
        elif nkw:
            parts.append("*")
        parts += [f"{n}={self.const(kwdefaults[n])}" if n in kwdefaults else n
                  for n in names[npos:npos + nkw]]
        if has_kw:
            parts.append("**" + names[npos + nkw + bool(has_var)])
        return ordered, f"def {name}({', '.join(parts)}):"


def _hashable(fn) -> bool:
    try:
        hash(fn)
    except TypeError:
        return False
    return True


def _is_attr(name) -> bool:
    import keyword

    return (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)
            and not name.startswith("__"))


def generate(tape) -> Generated:
    """The generated function's source and globals."""
    from .guards import GuardError

    gen = _Gen(tape).run()
    gen.globals["GuardError"] = GuardError
    return gen


def compile_tape(tape):
    """Compile the tape to a Python function with the traced function's signature."""
    gen = generate(tape)
    namespace = gen.globals
    namespace["__builtins__"] = __builtins__
    filename = f"<tape of {getattr(tape.func, '__qualname__', 'a call')}>"
    code = compile(gen.source, filename, "exec")
    local: dict = {}
    exec(code, namespace, local)
    fn = next(iter(local.values()))
    func = tape.signature_of
    if isinstance(func, types.MethodType):
        fn = types.MethodType(fn, func.__self__)
        func = func.__func__
    if isinstance(func, types.FunctionType):
        target = fn.__func__ if isinstance(fn, types.MethodType) else fn
        target.__defaults__ = func.__defaults__
        target.__kwdefaults__ = dict(func.__kwdefaults__) if func.__kwdefaults__ else None
        target.__qualname__ = func.__qualname__
        target.__doc__ = f"Compiled tape of {func.__qualname__}."
    return fn
