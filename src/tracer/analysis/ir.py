"""The IR users see: a code object's bytecode as blocks of numbered statements.

In the spirit of IRTools: blocks §1, §2, ...; value statements `%k = f(args)` with
stack temporaries as %k and locals by name; branch statements `br §3 unless %5`,
`return %7`, numbered &1, &2, ... within their block.  A node's `location` indexes
its statement: `node.ir[node.location]`.
"""

from __future__ import annotations

import reprlib
import weakref
from dataclasses import dataclass
from types import CodeType

from .bytecode import NO_FALLTHROUGH, for_iter_exit, nlocalsplus
from .instructions import CAPTURED, NULL, R_CALL, R_CALL_EX, effect_of
from .plan import plan_for

__all__ = ["IR", "Statement", "ir"]

_short = reprlib.Repr()
_short.maxstring = 30
_short.maxother = 30


class _Dyn(str):
    """The text of a constant-like value (a global, an attribute of one)."""


class _Method(_Dyn):
    """The text `obj.m` of a method looked up for a call; the next slot holds `obj`."""


def _static_text(value) -> str:
    # A static input of an operator: a function by its name (format_value(x, repr)).
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return _short.repr(value)


@dataclass(frozen=True, slots=True)
class Statement:
    """One IR statement: `%k = ...` (a value) or `&j: br ...` (control)."""

    offset: int
    block: int
    id: str
    text: str
    line: int | None
    # For a branch, return, yield or raise: the IR name of the value it tests,
    # returns, yields or raises (`%5`, a local's name, a constant's repr).
    operand: str | None = None

    def __str__(self) -> str:
        return self.text


class IR:
    """The analysed code of one code object, printable and indexable by location."""

    def __init__(self, code: CodeType):
        # Weakly: the IR is kept on the code object's plan (see ir()).
        self._code = weakref.ref(code)
        plan = plan_for(code)
        self.layout = plan.layout
        self.nparams = plan.nparams
        self.recs = plan.rec_at
        self._prev = {b.offset: a for a, b in zip(self.layout.instrs, self.layout.instrs[1:])}
        self.blocks: list[list[Statement]] = []
        self._by_key: dict[tuple[int, str], Statement] = {}
        self.value_id: dict[int, str] = {}  # offset -> %k of its value statement
        self.branch_id: dict[int, str] = {}  # offset -> &j of its control statement
        # %0 (the function itself) and %1.. (its parameters): the statements of the
        # ArgumentNodes, which have no instruction (offset -1).
        line = code.co_firstlineno
        self.arguments = [Statement(-1, 1, "%0", "%0", line)] + [
            Statement(-1, 1, f"%{i + 1}", f"%{i + 1} = {self.local_name(i)}", line)
            for i in range(self.nparams)
        ]
        for a in self.arguments:
            self._by_key[(-1, a.id)] = a
        self._build()
        # offset -> the statement an instruction without one of its own feeds (the next
        # one it falls through to): 3.13's TO_BOOL feeds its branch.  A Python frame the
        # interpreter enters there (`__bool__` for `if x:`) is located at that statement.
        self.feeds: dict[int, Statement] = {}
        pending: list[int] = []
        for ins in self.layout.instrs:
            sid = self.value_id.get(ins.offset) or self.branch_id.get(ins.offset)
            if sid is not None:
                for off in pending:
                    self.feeds[off] = self._by_key[(ins.offset, sid)]
                pending = []
            else:
                pending.append(ins.offset)
            if ins.opname in NO_FALLTHROUGH:
                pending = []

    # -- lookup ---------------------------------------------------------------------
    def __getitem__(self, location) -> Statement:
        """The statement at a node's location (or at an instruction offset).

        An ArgumentNode's location gives its parameter's statement `%k = name`; a
        carried one's (a local read after the frame resumed) a statement naming the
        local at the instruction that read it; a frame entered at an instruction with
        no statement, the statement that instruction feeds (`ir.feeds`).
        """
        if isinstance(location, int):
            stmt = self.value_id.get(location) or self.branch_id.get(location)
            if stmt is None:
                raise KeyError(f"{self.code.co_qualname}: no statement at offset {location}")
            return self._by_key[(location, stmt)]
        if location is None:
            raise KeyError("no location (the recorder did not see the node's instruction)")
        base = location.stmt.split("#")[0]
        found = self._by_key.get((location.offset, base)) or self.feeds.get(location.offset)
        if found is not None and found.id == base:
            return found
        ins = self.layout.by_offset.get(location.offset)
        if ins is not None and base in self._local_names():
            return Statement(location.offset, self.block_of(location.offset), base,
                             f"{base} (carried in: the value the resumed frame read)", ins.line)
        if ins is not None and self._carried_slot(base, location.offset):
            return Statement(location.offset, self.block_of(location.offset), base,
                             f"{base} (carried in: a value the frame kept on its stack "
                             "while suspended)", ins.line)
        raise KeyError(f"{self.code.co_qualname}: no statement {location.stmt} at offset "
                       f"{location.offset}")

    def _carried_slot(self, name: str, offset: int) -> bool:
        # `stack[k]`: a value-stack slot live where a generator frame resumes.
        if not (name.startswith("stack[") and name.endswith("]") and name[6:-1].isdigit()):
            return False
        return int(name[6:-1]) < self.layout.depth.get(offset, 0)

    def _local_names(self) -> frozenset[str]:
        code = self.code
        return frozenset(code.co_varnames + code.co_cellvars + code.co_freevars)

    @property
    def code(self) -> CodeType:
        """The code object this IR describes."""
        code = self._code()
        if code is None:  # pragma: no cover - the IR lives on the code's own plan
            raise ReferenceError("the code object of this IR is gone")
        return code

    def block_of(self, offset: int) -> int:
        return self.layout.block_of.get(offset, 1)

    def local_name(self, index: int) -> str:
        """The name of fast local `index`; past the locals, value-stack slots (a
        resumed generator's carried stack values) are named `stack[k]`."""
        n = nlocalsplus(self.code)
        if index >= n:
            return f"stack[{index - n}]"
        return self.code._varname_from_oparg(index)  # type: ignore[attr-defined]

    def __str__(self) -> str:
        code = self.code
        params = [self.local_name(i) for i in range(self.nparams)]
        head = ", ".join(["%0"] + [f"%{i + 1} = {p}" for i, p in enumerate(params)])
        lines = [f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"]
        for k, stmts in enumerate(self.blocks, start=1):
            lines.append(f"§{k}:" + (f" ({head})" if k == 1 else ""))
            for s in stmts:
                text = s.text if s.id.startswith("%") and " = " in s.text else f"{s.id}: {s.text}" \
                    if s.id.startswith("&") else s.text
                lines.append(f"  {text:<48} L{s.line}" if s.line else f"  {text}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<IR of {self.code.co_qualname}: {len(self.blocks)} blocks>"

    # -- building ---------------------------------------------------------------------
    def _build(self) -> None:
        lay = self.layout
        counter = self.nparams + 1
        entry: dict[int, list[str]] = {}
        handler_targets = lay.handler_targets
        for block in lay.blocks:
            stmts: list[Statement] = []
            self.blocks.append(stmts)
            nbranch = 0
            if block.start not in lay.depth:
                continue
            stack = list(entry.get(block.start, ["·"] * lay.depth[block.start]))
            if block.start in handler_targets:
                stack = ["·"] * (lay.depth[block.start] - 1)
                sid = f"%{counter}"
                counter += 1
                self._add(stmts, block.start, block.id, sid, f"{sid} = $exception", None)
                stack.append(sid)
            for ins in block.instrs:
                d = lay.depth.get(ins.offset)
                if d is None:
                    break
                stack = (stack + ["·"] * d)[:d]
                counter, nbranch, stack = self._step(ins, stack, stmts, block.id, counter, nbranch,
                                                     entry)
                if stack is None:
                    break
            else:
                if stack is not None and block.end in lay.depth:
                    entry.setdefault(block.end, stack)

    def _add(self, stmts, offset, block, sid, text, line, operand=None):
        s = Statement(offset, block, sid, text, line, operand)
        stmts.append(s)
        self._by_key[(offset, sid)] = s
        if sid.startswith("%"):
            self.value_id.setdefault(offset, sid)
        else:
            self.branch_id.setdefault(offset, sid)

    def _step(self, ins, stack, stmts, block, counter, nbranch, entry):
        lay = self.layout
        eff = effect_of(ins, self.code, self._prev.get(ins.offset))
        d = len(stack)
        work = stack + ["·"] * eff.pushes
        line = ins.line

        def at(rel):
            return work[d + rel]

        def name_of_dyn():
            if ins.opname == "LOAD_BUILD_CLASS":
                return "__build_class__"
            if ins.opname == "MAKE_FUNCTION":  # named as the node shows it: its qualname
                made = getattr(self._prev.get(ins.offset), "argval", None)
                if isinstance(made, CodeType):
                    return made.co_qualname
            r = ins.argrepr.replace("NULL + ", "").replace(" + NULL|self", "")
            r = r.replace(" + NULL", "").replace("NULL|self + ", "")
            return r or ins.opname.lower()

        for step in eff.steps:
            tag = step[0]
            if tag == "set":
                _, rel, c = step
                work[d + rel] = None if c == NULL else (_Dyn(name_of_dyn()) if c == CAPTURED else "·")
            elif tag == "copy":
                work[d + step[1]] = at(step[2])
            elif tag == "swap":
                a, b = d + step[1], d + step[2]
                work[a], work[b] = work[b], work[a]
            elif tag in ("load_local", "load_cell"):
                work[d + step[1]] = self.local_name(step[2])
            elif tag == "load_const":
                work[d + step[1]] = _short.repr(self.code.co_consts[step[2]])
            elif tag in ("store_local", "store_cell"):
                sid = f"%{counter}"
                counter += 1
                self._add(stmts, ins.offset, block, sid,
                          f"{self.local_name(step[2])} = {at(step[1])}", line)
            elif tag == "getattr":
                _, rel, attr = step
                owner = at(rel)
                if isinstance(owner, _Dyn):  # an attribute of a constant: no node
                    work[d + rel] = _Dyn(f"{owner}.{attr}")
                    continue
                sid = f"%{counter}"
                counter += 1
                self._add(stmts, ins.offset, block, sid, f"{sid} = getattr({owner}, {attr!r})", line)
                work[d + rel] = sid
            elif tag == "method_pair":
                _, a, b = step
                owner = at(a)
                attr = ins.argval if isinstance(ins.argval, str) else ins.argrepr.split(" ")[0]
                head = "super()" if ins.opname == "LOAD_SUPER_ATTR" else owner
                work[d + a] = _Method(f"{head}.{attr}")
                work[d + b] = owner
            elif tag in ("record", "for_iter", "send"):
                rec = step[1]
                outs = rec.outputs
                sid = f"%{counter}"
                counter += 1
                ids = [sid] + [f"{sid}#{j}" for j in range(1, len(outs))]
                self._add(stmts, ins.offset, block, sid,
                          f"{', '.join(ids) + ' = ' if outs else ''}{self._expr(rec, work, d)}"
                          if outs else f"{sid}: {self._expr(rec, work, d)}", line)
                for j, x in enumerate(outs):
                    work[d + x] = ids[j]
                if tag == "for_iter":
                    nbranch += 1
                    exit_off = for_iter_exit(ins, lay.by_offset)
                    self._add(stmts, ins.offset, block, f"&{nbranch}",
                              f"br §{self.block_of(exit_off)} if {at(-1)} exhausted", line,
                              at(-1))
                    entry.setdefault(ins.next, (work[: d + 1]))
                    entry.setdefault(exit_off, work[: d - 1])
                    return counter, nbranch, None
                if tag == "send":
                    nbranch += 1
                    self._add(stmts, ins.offset, block, f"&{nbranch}",
                              f"br §{self.block_of(ins.target)} if {sid} returned", line)
                    rest = work[: d - eff.pops + eff.pushes]
                    entry.setdefault(ins.next, rest)
                    entry.setdefault(ins.target, rest)
                    return counter, nbranch, None
            elif tag == "branch":
                _, rel, name = step
                cond = at(rel)
                target = self.block_of(ins.target)
                nbranch += 1
                text = {
                    "POP_JUMP_IF_FALSE": f"br §{target} unless {cond}",
                    "POP_JUMP_IF_TRUE": f"br §{target} if {cond}",
                    "POP_JUMP_IF_NONE": f"br §{target} if {cond} is None",
                    "POP_JUMP_IF_NOT_NONE": f"br §{target} unless {cond} is None",
                }[name]
                self._add(stmts, ins.offset, block, f"&{nbranch}", text, line, cond)
                rest = work[: d - 1]
                entry.setdefault(ins.target, rest)
                entry.setdefault(ins.next, rest)
                return counter, nbranch, None
            elif tag == "jump":
                nbranch += 1
                self._add(stmts, ins.offset, block, f"&{nbranch}",
                          f"br §{self.block_of(ins.target)}", line)
                entry.setdefault(ins.target, work[:d])
                return counter, nbranch, None
            elif tag in ("return", "return_const", "yield", "raise"):
                nbranch += 1
                if tag == "return_const":
                    operand = _short.repr(self.code.co_consts[step[1]])
                else:
                    operand = None if step[1] is None else at(step[1])
                word = "reraise" if tag == "raise" and operand is None else tag.split("_")[0]
                what = word if operand is None else f"{word} {operand}"
                self._add(stmts, ins.offset, block, f"&{nbranch}", what, line, operand)
                if tag == "yield":
                    continue
                return counter, nbranch, None
            elif tag == "lost":
                nbranch += 1
                self._add(stmts, ins.offset, block, f"&{nbranch}", f"${ins.opname.lower()}", line)
                return counter, nbranch, None
        if eff.control == "silent_jump":
            # No event fires, but the recorder writes its JumpNode when it replays
            # the segment, as for an ordinary jump.
            nbranch += 1
            self._add(stmts, ins.offset, block, f"&{nbranch}",
                      f"br §{self.block_of(ins.target)}", line)
            entry.setdefault(ins.target, work[: d - eff.pops + eff.pushes])
            return counter, nbranch, None
        return counter, nbranch, work[: d - eff.pops + eff.pushes]

    def _expr(self, rec, work, d) -> str:
        def text(x):
            if isinstance(x, tuple):
                return _static_text(x[1])
            v = work[d + x]
            return "·" if v is None else v

        inputs = [x for x in rec.inputs if isinstance(x, tuple) or work[d + x] is not None]
        if rec.sem in (R_CALL, R_CALL_EX):
            callee, *args = [text(x) for x in inputs]
            if isinstance(callee, _Method) and args:
                args = args[1:]  # obj.m(x): the receiver is shown before the name
            if rec.sem == R_CALL_EX:
                args = [f"*{args[0]}"] + ([f"**{args[1]}"] if len(args) > 1 else [])
            elif rec.kwnames:
                k = len(rec.kwnames)
                args = args[:-k] + [f"{n}={v}" for n, v in zip(rec.kwnames, args[-k:])]
            return f"{callee}({', '.join(args)})"
        return f"{rec.display}({', '.join(text(x) for x in inputs)})"




def ir(f_or_code) -> IR:
    """The IR of a function or code object (built once and cached)."""
    code = getattr(f_or_code, "__code__", f_or_code)
    saved = getattr(code, "__tracer_ir__", None)  # a loaded trace's code stand-in (persist)
    if saved is not None:
        return saved
    if not isinstance(code, CodeType):
        raise TypeError(f"tracer.ir needs a Python function or code object, got {type(f_or_code).__name__}")
    plan = plan_for(code)
    if plan.ir is None:
        plan.ir = IR(code)
    return plan.ir
