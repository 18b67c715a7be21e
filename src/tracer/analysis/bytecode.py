"""Decode a code object into instructions, basic blocks and static stack depths.

The depth of the value stack before each instruction is fixed by the compiler; it is
what makes reading the running frame's stack safe (a slot below that depth holds a
live value, a slot above it may be a dangling pointer).  Everything here is computed
once per code object and cached by the plan builder.
"""

from __future__ import annotations

import dis
import sys
from dataclasses import dataclass, field
from types import CodeType

__all__ = ["nlocalsplus", "Instr", "Handler", "Block", "CodeLayout", "layout", "AnalysisError", "PY313"]

PY313 = sys.version_info >= (3, 13)

CONDITIONAL_BRANCHES = frozenset(
    {"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"}
)
# Jumps that fire a sys.monitoring JUMP event.
MONITORED_JUMPS = frozenset({"JUMP_FORWARD", "JUMP_BACKWARD"})
# Jumps that fire no event: the analysis follows them statically.
SILENT_JUMPS = frozenset({"JUMP_BACKWARD_NO_INTERRUPT", "JUMP_NO_INTERRUPT"})
RETURNS = frozenset({"RETURN_VALUE", "RETURN_CONST"})
RAISES = frozenset({"RAISE_VARARGS", "RERAISE"})
# Instructions after which control never falls through to the next instruction.
NO_FALLTHROUGH = MONITORED_JUMPS | SILENT_JUMPS | RETURNS | RAISES


class AnalysisError(Exception):
    """The bytecode of a code object could not be analysed (a bug in tracer)."""


@dataclass(slots=True)
class Instr:
    """One instruction, with the facts the analysis needs."""

    offset: int
    next: int  # offset of the following instruction (after inline caches)
    opname: str
    opcode: int
    arg: int | None
    argval: object
    argrepr: str
    line: int | None
    target: int | None = None  # jump target offset, for jumps and branches


@dataclass(slots=True)
class Handler:
    """An exception-table entry: instructions in [start, end) unwind to target."""

    start: int
    end: int
    target: int
    depth: int
    lasti: bool

    @property
    def target_depth(self) -> int:
        """Stack depth at the first instruction of the handler."""
        return self.depth + (1 if self.lasti else 0) + 1


@dataclass(slots=True)
class Block:
    """A basic block §id: instructions [start, end)."""

    id: int
    start: int
    end: int
    instrs: list[Instr] = field(default_factory=list)


@dataclass(slots=True)
class CodeLayout:
    # No reference to the code object: layouts live in plans kept on the code (CodePlan).
    instrs: list[Instr]
    by_offset: dict[int, Instr]
    blocks: list[Block]
    block_of: dict[int, int]  # instruction offset -> block id
    depth: dict[int, int]  # instruction offset -> stack depth before it (reachable ones)
    handlers: list[Handler]
    handler_targets: dict[int, Handler]


def nlocalsplus(code: CodeType) -> int:
    """Number of fast locals, cells and free variables (CPython's co_nlocalsplus)."""
    varnames = set(code.co_varnames)
    cells = sum(1 for c in code.co_cellvars if c not in varnames)
    return code.co_nlocals + cells + len(code.co_freevars)


def _decode(code: CodeType) -> list[Instr]:
    out: list[Instr] = []
    raw = list(dis.get_instructions(code))
    own = [ins.positions.lineno if ins.positions is not None else None for ins in raw]
    # An exception handler's first instructions have no line of their own; they take
    # the line of the first instruction after them that has one (the `except` clause).
    # Other instructions without a line keep the line of the one before.
    targets = {e.target for e in dis.Bytecode(code).exception_entries}
    ahead: list[int | None] = [None] * len(raw)
    nxt_line = None
    for k in range(len(raw) - 1, -1, -1):
        if own[k] is not None:
            nxt_line = own[k]
        ahead[k] = nxt_line
    line = None
    in_handler_head = False
    for k, ins in enumerate(raw):
        if ins.offset in targets:
            in_handler_head = True
        if own[k] is not None:
            line = own[k]
            in_handler_head = False
        elif in_handler_head and ahead[k] is not None:
            line = ahead[k]
        nxt = raw[k + 1].offset if k + 1 < len(raw) else len(code.co_code)
        target = None
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            target = ins.argval if isinstance(ins.argval, int) else None
        out.append(
            Instr(ins.offset, nxt, ins.opname, ins.opcode, ins.arg, ins.argval, ins.argrepr, line, target)
        )
    return out


def _handlers(code: CodeType) -> list[Handler]:
    entries = dis.Bytecode(code).exception_entries
    return [Handler(e.start, e.end, e.target, e.depth, bool(e.lasti)) for e in entries]


# -- the plan builder's decoder: co_code read directly, tables made once per version --
# What the argument of each opcode means (A_*), its inline cache units, whether it
# jumps backwards: dis's own tables, read once here, so that decoding a code object
# makes no dis.Instruction (whose positions, argrepr and labels cost ~30 µs each).
A_NONE, A_PLAIN, A_CONST, A_NAME, A_GLOBAL, A_ATTR, A_SUPER_ATTR, A_JREL, A_JABS, A_FREE = range(10)


def _opcode_tables() -> tuple[tuple[int, ...], tuple[int, ...], frozenset[int]]:
    import opcode as _opcode

    cache_entries = _opcode._inline_cache_entries  # a list (3.12) or a dict by name (3.13)
    kinds, caches = [], []
    for op in range(256):
        name = dis.opname[op]
        if isinstance(cache_entries, dict):
            caches.append(cache_entries.get(name, 0))
        else:
            caches.append(cache_entries[op] if op < len(cache_entries) else 0)
        if op not in dis.hasarg:
            kinds.append(A_NONE)
        elif op in dis.hasconst:
            kinds.append(A_CONST)
        elif op in dis.hasname:
            kinds.append({"LOAD_GLOBAL": A_GLOBAL, "LOAD_ATTR": A_ATTR,
                          "LOAD_SUPER_ATTR": A_SUPER_ATTR}.get(name, A_NAME))
        elif op in dis.hasjrel:
            kinds.append(A_JREL)
        elif op in dis.hasjabs:
            kinds.append(A_JABS)
        elif op in dis.hasfree:
            kinds.append(A_FREE)
        else:
            kinds.append(A_PLAIN)
    backward = frozenset(op for op in range(256) if "JUMP_BACKWARD" in dis.opname[op])
    return tuple(kinds), tuple(caches), backward


_ARG_KIND, _CACHES, _BACKWARD = _opcode_tables()
_OPNAMES = tuple(dis.opname[:256])
_INT_OVERFLOW = 2 ** 31


def _decode_fast(code: CodeType) -> list[Instr]:
    """The instructions of `code` as the plan builder needs them: offset, next, opname,
    opcode, arg and target as dis gives them, argval for constants, names, cells and
    jumps (else the arg); no argrepr and no line (the IR's layout, `layout(code)`, has
    those).  The same unpacking as dis._unpack_opargs:
    EXTENDED_ARG is an instruction of its own whose argument prefixes the next one,
    inline caches are skipped."""
    raw = code.co_code
    n = len(raw)
    consts, names = code.co_consts, code.co_names
    kinds, caches_of, opnames = _ARG_KIND, _CACHES, _OPNAMES
    out: list[Instr] = []
    extended = 0
    i = 0
    while i < n:
        op = raw[i]
        kind = kinds[op]
        nxt = i + 2 + 2 * caches_of[op]
        target = None
        if kind == A_NONE:
            arg = argval = None
            extended = 0
        else:
            arg = raw[i + 1] | extended
            if op == dis.EXTENDED_ARG:
                extended = arg << 8
                if extended >= _INT_OVERFLOW:
                    extended -= 2 * _INT_OVERFLOW
            else:
                extended = 0
            if kind == A_PLAIN:
                argval = arg
            elif kind == A_CONST:
                argval = consts[arg]
            elif kind == A_NAME:
                argval = names[arg]
            elif kind == A_GLOBAL or kind == A_ATTR:
                argval = names[arg >> 1]
            elif kind == A_SUPER_ATTR:
                argval = names[arg >> 2]
            elif kind == A_JREL:
                argval = target = nxt + 2 * (-arg if op in _BACKWARD else arg)
            elif kind == A_JABS:
                argval = target = 2 * arg
            else:
                argval = code._varname_from_oparg(arg)  # type: ignore[attr-defined]
        out.append(Instr(i, nxt, opnames[op], op, arg, argval, "", None, target))
        i = nxt
    if out:
        out[-1].next = n
    return out


def _handlers_fast(code: CodeType) -> list[Handler]:
    # co_exceptiontable: entries of five varints (start, length, target, depth << 1 |
    # lasti), each 6 bits a byte, bit 6 set on all bytes but a number's last, bit 7
    # on an entry's first byte (CPython's Objects/exception_handling_notes.txt).
    table = code.co_exceptiontable
    out: list[Handler] = []
    pos, n = 0, len(table)
    fields: list[int] = []
    while pos < n:
        b = table[pos]
        pos += 1
        val = b & 63
        while b & 64:
            b = table[pos]
            pos += 1
            val = (val << 6) | (b & 63)
        fields.append(val)
        if len(fields) == 4:
            start, length, target, dl = fields
            out.append(Handler(2 * start, 2 * (start + length), 2 * target, dl >> 1, bool(dl & 1)))
            fields = []
    return out


def for_iter_exit(ins: Instr, by_offset: dict[int, Instr]) -> int:
    """Where FOR_ITER really continues when the iterator is exhausted.

    The compiler models the jump as landing on END_FOR with the exhausted iterator
    still on the stack; the interpreter skips END_FOR (and, on 3.13, the POP_TOP
    after it) and lands after them with the iterator popped.
    """
    assert ins.target is not None
    off = ins.target
    end_for = by_offset[off]
    off = end_for.next
    if PY313 and off in by_offset and by_offset[off].opname == "POP_TOP":
        off = by_offset[off].next
    return off


def successors(ins: Instr, layout_by_offset: dict[int, Instr]) -> list[tuple[int, int]]:
    """Successors of an instruction as (offset, stack effect) pairs, exceptions aside."""
    name = ins.opname
    succ: list[tuple[int, int]] = []
    if name in RETURNS or name in RAISES:
        return succ
    arg = ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None
    if name == "RETURN_GENERATOR":
        # The generator's first resume pushes the value sent (3.12's stack_effect
        # table says 0; the compiler and the interpreter push one).
        return [(ins.next, 1)]
    if ins.target is not None:
        succ.append((ins.target, dis.stack_effect(ins.opcode, arg, jump=True)))
    if name not in NO_FALLTHROUGH and ins.next in layout_by_offset:
        succ.append((ins.next, dis.stack_effect(ins.opcode, arg, jump=False)))
    return succ


def layout(code: CodeType, fast: bool = False) -> CodeLayout:
    """Decode `code` and compute blocks and the static stack depth before every
    reachable instruction.  Raises AnalysisError if the depths are inconsistent.

    `fast`: decode co_code directly (_decode_fast: no argrepr, no lines), as the plan
    builder does; the blocks and depths are the same.  The compiled pass
    (tracer.analysis._fastplan) does that when it is built; `_layout_py(code, True)`
    is its Python statement (tests compare the two)."""
    if fast and _fastplan is not None:
        return _fastplan.layout(code)
    return _layout_py(code, fast)


def _layout_py(code: CodeType, fast: bool) -> CodeLayout:
    instrs = _decode_fast(code) if fast else _decode(code)
    by_offset = {i.offset: i for i in instrs}
    handlers = _handlers_fast(code) if fast else _handlers(code)
    handler_targets = {h.target: h for h in handlers}
    # The handler each instruction unwinds to (the table's ranges do not overlap).
    covering: dict[int, Handler] = {}
    for h in handlers:
        for o in range(h.start, h.end, 2):
            covering.setdefault(o, h)

    depth: dict[int, int] = {}
    work: list[tuple[int, int]] = [(instrs[0].offset, 0)] if instrs else []
    while work:
        off, d = work.pop()
        seen = depth.get(off)
        if seen is not None:
            if seen != d:
                raise AnalysisError(
                    f"{code.co_qualname}: inconsistent stack depth at offset {off}: {seen} vs {d}"
                )
            continue
        if d < 0 or d > code.co_stacksize:
            raise AnalysisError(
                f"{code.co_qualname}: stack depth {d} at offset {off} outside 0..{code.co_stacksize}"
            )
        depth[off] = d
        ins = by_offset[off]
        for nxt, effect in successors(ins, by_offset):
            work.append((nxt, d + effect))
        h = covering.get(off)
        if h is not None and h.target not in depth:
            work.append((h.target, h.target_depth))

    leaders = {instrs[0].offset} if instrs else set()
    for ins in instrs:
        if ins.target is not None:
            leaders.add(ins.target)
            leaders.add(ins.next)
        if ins.opname in NO_FALLTHROUGH or ins.opname in CONDITIONAL_BRANCHES:
            leaders.add(ins.next)
        if ins.opname == "FOR_ITER":
            leaders.add(for_iter_exit(ins, by_offset))
    leaders.update(handler_targets)
    leaders = {o for o in leaders if o in by_offset}

    blocks: list[Block] = []
    block_of: dict[int, int] = {}
    for ins in instrs:
        if ins.offset in leaders or not blocks:
            blocks.append(Block(len(blocks) + 1, ins.offset, ins.next))
        b = blocks[-1]
        b.instrs.append(ins)
        b.end = ins.next
        block_of[ins.offset] = b.id
    return CodeLayout(instrs, by_offset, blocks, block_of, depth, handlers, handler_targets)


def _init_fastplan():
    # The compiled layout pass gets dis's tables of this interpreter, and flags per
    # opcode from the name sets above (3.12 and 3.13 number opcodes differently).
    try:
        from . import _fastplan
    except ImportError:  # not built (a source tree without the extension): the Python pass
        return None
    f = _fastplan.FLAG_NAMES
    flags = []
    for op in range(256):
        name = _OPNAMES[op]
        bits = 0
        if name in NO_FALLTHROUGH:
            bits |= f["NO_FALLTHROUGH"]
        if name in CONDITIONAL_BRANCHES:
            bits |= f["CONDITIONAL"]
        if name == "FOR_ITER":
            bits |= f["FOR_ITER"]
        if name == "RETURN_GENERATOR":
            bits |= f["RETURN_GENERATOR"]
        if name in RETURNS or name in RAISES:
            bits |= f["RETURN_OR_RAISE"]
        if op in _BACKWARD:
            bits |= f["BACKWARD"]
        if op == dis.EXTENDED_ARG:
            bits |= f["EXTENDED_ARG"]
        flags.append(bits)
    _fastplan.init(_ARG_KIND, _CACHES, _OPNAMES, flags, dis.HAVE_ARGUMENT, PY313,
                   dis.stack_effect, Instr, Handler, Block, CodeLayout, AnalysisError)
    return _fastplan


_fastplan = _init_fastplan()
