"""What each instruction does to the value stack and locals, as abstract steps.

This is the one opcode table of the project.  The recorder's plan (plan.py) and
the IR shown to users (ir.py) both read it, so what is recorded and what is shown
cannot disagree.  Depths in steps are relative to the stack depth `d` before the
instruction: -1 is the top input, 0 the first slot the instruction may push to.
"""

from __future__ import annotations

import dis
import operator
from dataclasses import dataclass, field
from types import CodeType

from .. import callables as ops
from .._core import RecordSem
from .bytecode import PY313, Instr, _decode_fast, nlocalsplus
from .identitycache import IdentityCache

__all__ = ["Rec", "Effect", "effect_of", "NULL", "UNKNOWN", "CAPTURED", "OTHER", "METH"]

# Static classes of stack slots known to the analysis.
OTHER = 0  # resolved at run time (a node, a captured constant, or unknown)
NULL = 1  # the NULL the call protocol pushes
UNKNOWN = 2  # nothing is known about it
CAPTURED = 3  # a global, free variable or attribute of one: a constant to capture
METH = 4  # the callable half of a method pair (LOAD_ATTR with the method bit)

# Record semantics, as the core declares them (RecordSem).
R_OP, R_CALL, R_CALL_EX, R_SPECIAL = (int(r) for r in RecordSem)

_BINARY = {
    "NB_ADD": operator.add, "NB_AND": operator.and_, "NB_FLOOR_DIVIDE": operator.floordiv,
    "NB_LSHIFT": operator.lshift, "NB_MATRIX_MULTIPLY": operator.matmul,
    "NB_MULTIPLY": operator.mul, "NB_REMAINDER": operator.mod, "NB_OR": operator.or_,
    "NB_POWER": operator.pow, "NB_RSHIFT": operator.rshift, "NB_SUBTRACT": operator.sub,
    "NB_TRUE_DIVIDE": operator.truediv, "NB_XOR": operator.xor,
    "NB_INPLACE_ADD": operator.iadd, "NB_INPLACE_AND": operator.iand,
    "NB_INPLACE_FLOOR_DIVIDE": operator.ifloordiv, "NB_INPLACE_LSHIFT": operator.ilshift,
    "NB_INPLACE_MATRIX_MULTIPLY": operator.imatmul, "NB_INPLACE_MULTIPLY": operator.imul,
    "NB_INPLACE_REMAINDER": operator.imod, "NB_INPLACE_OR": operator.ior,
    "NB_INPLACE_POWER": operator.ipow, "NB_INPLACE_RSHIFT": operator.irshift,
    "NB_INPLACE_SUBTRACT": operator.isub, "NB_INPLACE_TRUE_DIVIDE": operator.itruediv,
    "NB_INPLACE_XOR": operator.ixor,
}
BINARY_OPS = [_BINARY[name] for name, _sym in dis._nb_ops]  # type: ignore[attr-defined]
COMPARE_OPS = {"<": operator.lt, "<=": operator.le, "==": operator.eq,
               "!=": operator.ne, ">": operator.gt, ">=": operator.ge}
INTRINSIC_1 = {5: operator.pos, 6: tuple}
CONVERSIONS = {1: str, 2: repr, 3: ascii}

# Instructions that only move values around: no node, no side effect worth a node.
_PLAIN_POPS = {"POP_TOP", "POP_EXCEPT", "STORE_GLOBAL", "STORE_NAME",
               "EXIT_INIT_CHECK", "POP_ITER"}
_NOTHING = {"NOP", "RESUME", "EXTENDED_ARG", "CACHE", "MAKE_CELL", "COPY_FREE_VARS",
            "KW_NAMES", "DELETE_GLOBAL", "DELETE_NAME", "SETUP_ANNOTATIONS", "NOT_TAKEN"}
# What may follow TO_BOOL without its bool being a value of its own.
_TRUTH_TESTS = ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "UNARY_NOT")
# Value-producing instructions whose result is treated as a constant.
_DYN_PUSH = {"LOAD_NAME", "LOAD_CLOSURE", "LOAD_ASSERTION_ERROR", "LOAD_BUILD_CLASS",
             "LOAD_LOCALS", "IMPORT_FROM", "LOAD_SPECIAL_METHOD"}
# Exact (pops, pushes) for generic instructions whose net stack effect hides them.
_GENERIC_COUNTS = {
    "MATCH_CLASS": (3, 1), "CHECK_EG_MATCH": (2, 2), "WITH_EXCEPT_START": (0, 1),
    "CLEANUP_THROW": (3, 2), "GET_AWAITABLE": (1, 1), "GET_AITER": (1, 1),
    "GET_ANEXT": (0, 1), "BEFORE_ASYNC_WITH": (1, 2), "END_ASYNC_FOR": (2, 0),
    "CALL_INTRINSIC_2": (2, 1), "SET_FUNCTION_ATTRIBUTE": (2, 1),
    "IMPORT_NAME": (2, 1), "LOAD_FROM_DICT_OR_GLOBALS": (1, 1),
    "LOAD_FROM_DICT_OR_DEREF": (1, 1),
}


@dataclass(slots=True)
class Rec:
    """A recorded instruction: one node per output (or one node if none)."""

    sem: int
    fn: object  # the static callable (R_OP), or a special's name (R_SPECIAL)
    inputs: list  # relative depths, or ("static", obj) for constant inputs
    outputs: list[int]  # relative depths of the values it leaves for the next event
    kwnames: tuple = ()
    display: str = ""  # how the IR names it


@dataclass(slots=True)
class Effect:
    pops: int
    pushes: int
    steps: list = field(default_factory=list)
    control: str | None = None  # branch, for_iter, send, jump, silent_jump, return, return_const, yield, raise, lost
    rec: Rec | None = None
    # The typed walk's encoding (analysis/_fastplan.pyx): pops, pushes, control and
    # steps as ints, made once per Effect, so once per process for the effects
    # analysis/effecttable.py shares.
    enc: tuple | None = field(default=None, compare=False, repr=False)


def _fn_name(fn) -> str:
    mod = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    if mod in ("builtins", None):
        return name
    if mod == "_operator":
        mod = "operator"
    if mod == "tracer.callables":
        return name
    return f"{mod}.{name}"


def _op(fn, inputs, outputs, display=None) -> Rec:
    return Rec(R_OP, fn, inputs, outputs, display=display or _fn_name(fn))


def _special(name, inputs, outputs) -> Rec:
    return Rec(R_SPECIAL, name, inputs, outputs, display=f"${name}")


def _local_index(ins: Instr) -> int:
    return ins.arg  # type: ignore[return-value]


_CELL_WRITES = ("STORE_DEREF", "DELETE_DEREF")
# Their opcodes as one-byte needles: co_code has an opcode at every even offset
# (inline caches are CACHE, 0, and arguments sit at odd offsets), so a code object
# whose even bytes hold neither writes no cell and is not decoded.
_CELL_WRITE_BYTES = tuple(bytes([dis.opmap[n]]) for n in _CELL_WRITES)
_cells_written: "IdentityCache[frozenset[str]]" = IdentityCache()


def cells_written_inside(code: CodeType) -> frozenset[str]:
    """Names of `code`'s cells that a function nested in it assigns or deletes.

    A `nonlocal` assignment in a nested function (at any depth: the cell is passed
    down as a free variable) changes the cell behind this frame's back.  Found
    statically, from the code objects in co_consts.
    """
    try:
        return _cells_written[code]
    except KeyError:
        pass
    own = set(code.co_cellvars)
    written: set[str] = set()
    stack = [c for c in code.co_consts if isinstance(c, CodeType)]
    while stack and own - written:
        inner = stack.pop()
        stack.extend(c for c in inner.co_consts if isinstance(c, CodeType))
        if not own.intersection(inner.co_freevars):
            continue
        opcodes = inner.co_code[::2]
        if not any(b in opcodes for b in _CELL_WRITE_BYTES):
            continue   # (decoding every nested function cost ~10 us per cell loaded)
        for i in _decode_fast(inner):
            if i.opname in _CELL_WRITES and i.argval in own and i.argval in inner.co_freevars:
                written.add(i.argval)
    result = frozenset(written)
    _cells_written[code] = result
    return result


def effect_of(ins: Instr, code, prev: Instr | None = None) -> Effect:
    """The abstract effect of one instruction.

    `prev` is the instruction before it in the code, which holds the keyword names
    of a call (KW_NAMES on 3.12, the LOAD_CONST of the tuple on 3.13).
    """
    name = ins.opname
    arg = ins.arg or 0

    if name in _NOTHING:
        return Effect(0, 0)
    if name in _PLAIN_POPS:
        return Effect(1, 0)
    if name == "END_SEND":
        # [receiver, value] -> [value]: the receiver below the top goes.
        return Effect(2, 1, [("copy", -2, -1)])
    if name == "PUSH_NULL":
        return Effect(0, 1, [("set", 0, NULL)])
    if name == "END_FOR":
        return Effect(1 if PY313 else 2, 0)
    if name == "COPY":
        return Effect(0, 1, [("copy", 0, -arg)])
    if name == "SWAP":
        return Effect(0, 0, [("swap", -1, -arg)])
    if name in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW"):
        return Effect(0, 1, [_load_fast(code, 0, arg)])
    if name == "LOAD_FAST_AND_CLEAR":
        return Effect(0, 1, [("load_local", 0, arg), ("delete_local", arg)])
    if name in ("LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"):
        return Effect(0, 2, [_load_fast(code, 0, arg >> 4), _load_fast(code, 1, arg & 15)])
    if name in ("STORE_FAST", "STORE_FAST_MAYBE_NULL"):
        return Effect(1, 0, [("store_local", -1, arg)])
    if name == "STORE_FAST_LOAD_FAST":
        return Effect(1, 1, [("store_local", -1, arg >> 4), ("load_local", -1, arg & 15)])
    if name == "STORE_FAST_STORE_FAST":
        return Effect(2, 0, [("store_local", -1, arg >> 4), ("store_local", -2, arg & 15)])
    if name == "DELETE_FAST":
        return Effect(0, 0, [("delete_local", arg)])
    if name in ("LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF"):
        nfree = len(code.co_freevars)
        own_cell = arg < nlocalsplus(code) - nfree
        if name == "LOAD_DEREF":
            if own_cell and ins.argval not in cells_written_inside(code):
                return Effect(0, 1, [("load_cell", 0, arg)])
            if ins.argval == "__class__":
                # super()'s class: set when the class statement ran (in C), never
                # assigned by Python code; a constant.
                return Effect(0, 1, [("set", 0, CAPTURED)])
            # A free variable, or a cell a nested function assigns (`nonlocal`): its
            # value may come from code this frame's shadow does not follow.  A node
            # of its own (no input: the cell is the frame's) says where the value
            # came from, so that a tape can read the cell again.
            return _record(0, 1, _special("load_deref", [], [0]))
        if name == "STORE_DEREF":
            # A node that refers to the value stored (a tape keeps the cells that
            # closures share up to date with it).
            rec = _special("store_deref", [-1], [])
            steps = [("store_cell", -1, arg)] if own_cell else []
            return Effect(1, 0, [("record", rec)] + steps, rec=rec)
        return Effect(0, 0, [("delete_local", arg)] if own_cell else [])
    if name == "LOAD_CONST":
        return Effect(0, 1, [("load_const", 0, arg)])
    if name == "RETURN_CONST":
        return Effect(0, 0, [("return_const", arg)], control="return_const")
    if name == "RETURN_VALUE":
        return Effect(1, 0, [("return", -1)], control="return")
    if name == "YIELD_VALUE":
        return Effect(1, 1, [("yield", -1), ("set", -1, UNKNOWN)], control="yield")
    if name == "RETURN_GENERATOR":
        return Effect(0, 1, [("set", 0, UNKNOWN)])
    if name == "LOAD_GLOBAL":
        with_null = arg & 1
        if not with_null:
            return Effect(0, 1, [("set", 0, CAPTURED)])
        if PY313:
            return Effect(0, 2, [("set", 0, CAPTURED), ("set", 1, NULL)])
        return Effect(0, 2, [("set", 0, NULL), ("set", 1, CAPTURED)])
    if name in _DYN_PUSH:
        return Effect(0, 1, [("set", 0, CAPTURED)])
    if name == "LOAD_ATTR":
        attr = code.co_names[arg >> 1]
        if arg & 1:
            # Method form: a pair (callable, self) or (NULL, attr) / (attr, NULL),
            # decided at run time by the capture of the pair.
            return Effect(1, 2, [("method_pair", -1, 0)])
        return Effect(1, 1, [("getattr", -1, attr)])
    if name == "LOAD_SUPER_ATTR":
        if arg & 1:
            # super().m: the pair is (m, self) or (bound m, NULL) -- which one depends
            # on CPython's specialization.  `self` (the top input) goes first into the
            # pair's owner slot, so the receiver keeps its node.
            return Effect(3, 2, [("copy", -3, -1), ("method_pair", -3, -2)])
        return Effect(3, 1, [("set", -3, CAPTURED)])
    if name in ("STORE_ATTR", "DELETE_ATTR"):
        attr = code.co_names[arg]
        if name == "STORE_ATTR":
            rec = _op(setattr, [-1, ("static", attr), -2], [])
            return Effect(2, 0, [("record", rec)], rec=rec)
        rec = _op(delattr, [-1, ("static", attr)], [])
        return Effect(1, 0, [("record", rec)], rec=rec)
    if name == "TO_BOOL":
        if _opname_at(code, ins.next) in _TRUTH_TESTS:
            return Effect(1, 1)  # the branch or `not` after it tests the original's truth
        # Its bool is a value (3.13 compiles `not not x` to TO_BOOL alone).
        return _record(1, 1, _op(bool, [-1], [-1]))
    if name == "BINARY_OP":
        return _record(2, 1, _op(BINARY_OPS[arg], [-2, -1], [-2]))
    if name == "COMPARE_OP":
        sym = dis.cmp_op[arg >> (5 if PY313 else 4)]
        return _record(2, 1, _op(COMPARE_OPS[sym], [-2, -1], [-2]))
    if name == "IS_OP":
        return _record(2, 1, _op(operator.is_not if arg else operator.is_, [-2, -1], [-2]))
    if name == "CONTAINS_OP":
        fn = ops.not_contains if arg else operator.contains
        return _record(2, 1, _op(fn, [-1, -2], [-2]))
    if name in ("UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT"):
        fn = {"UNARY_NEGATIVE": operator.neg, "UNARY_NOT": operator.not_,
              "UNARY_INVERT": operator.invert}[name]
        return _record(1, 1, _op(fn, [-1], [-1]))
    if name == "BINARY_SUBSCR":
        return _record(2, 1, _op(operator.getitem, [-2, -1], [-2]))
    if name == "STORE_SUBSCR":
        return _record(3, 0, _op(operator.setitem, [-2, -1, -3], []))
    if name == "DELETE_SUBSCR":
        return _record(2, 0, _op(operator.delitem, [-2, -1], []))
    if name == "BINARY_SLICE":
        return _record(3, 1, _op(ops.getslice, [-3, -2, -1], [-3]))
    if name == "STORE_SLICE":
        return _record(4, 0, _op(ops.setslice, [-3, -2, -1, -4], []))
    if name in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_STRING", "BUILD_SLICE"):
        fn = {"BUILD_TUPLE": ops.build_tuple, "BUILD_LIST": ops.build_list,
              "BUILD_SET": ops.build_set, "BUILD_STRING": ops.build_string,
              "BUILD_SLICE": ops.build_slice}[name]
        return _record(arg, 1, _op(fn, list(range(-arg, 0)), [-arg]))
    if name == "BUILD_MAP":
        n = 2 * arg
        return _record(n, 1, _op(ops.build_dict, list(range(-n, 0)), [-n]))
    if name == "BUILD_CONST_KEY_MAP":
        n = arg + 1
        return _record(n, 1, _op(ops.build_const_key_map, list(range(-n, 0)), [-n]))
    if name in ("LIST_APPEND", "SET_ADD", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE"):
        fn = {"LIST_APPEND": ops.list_append, "SET_ADD": ops.set_add,
              "LIST_EXTEND": ops.list_extend, "SET_UPDATE": ops.set_update,
              "DICT_UPDATE": ops.dict_update, "DICT_MERGE": ops.dict_merge}[name]
        return _record(1, 0, _op(fn, [-1 - arg, -1], []))
    if name == "MAP_ADD":
        return _record(2, 0, _op(ops.map_add, [-2 - arg, -2, -1], []))
    if name == "GET_ITER":
        return _record(1, 1, _op(iter, [-1], [-1]))
    if name == "GET_YIELD_FROM_ITER":
        return _record(1, 1, _special("yield_from_iter", [-1], [-1]))
    if name == "GET_LEN":
        return _record(0, 1, _op(len, [-1], [0]))
    if name == "FOR_ITER":
        rec = _op(next, [-1], [0])
        return Effect(0, 1, [("for_iter", rec)], control="for_iter", rec=rec)
    if name == "UNPACK_SEQUENCE":
        # The first item ends on top of the stack.
        rec = _special("unpack", [-1], [-1 + (arg - 1 - j) for j in range(arg)])
        return _record(1, arg, rec)
    if name == "UNPACK_EX":
        before, after = arg & 0xFF, arg >> 8
        n = before + 1 + after
        rec = _special("unpack_ex", [-1], [-1 + (n - 1 - j) for j in range(n)])
        return _record(1, n, rec)
    # f-string fields, recorded alike on 3.12 (one FORMAT_VALUE) and 3.13 (CONVERT_VALUE,
    # FORMAT_SIMPLE, FORMAT_WITH_SPEC): `{x}` is format(x), `{x:s}` format(x, s) and
    # `{x!r}` format_value(x, repr).  `{x!r:s}` stays two nodes on 3.13, repr(x) then
    # format(·, s): the conversion runs (possibly Python code, a __repr__, that needs a
    # node to nest under) before the spec is evaluated.
    if name == "FORMAT_VALUE":
        conv = CONVERSIONS.get(arg & 3)
        if conv is None:
            if arg & 4:
                return _record(2, 1, _op(format, [-2, -1], [-2]))
            return _record(1, 1, _op(format, [-1], [-1]))
        if arg & 4:
            return _record(2, 1, _op(ops.format_value, [-2, ("static", conv), -1], [-2]))
        return _record(1, 1, _op(ops.format_value, [-1, ("static", conv)], [-1]))
    if name == "CONVERT_VALUE":
        conv = CONVERSIONS[arg]
        if _opname_at(code, ins.next) == "FORMAT_SIMPLE":
            return _record(1, 1, _op(ops.format_value, [-1, ("static", conv)], [-1]))
        return _record(1, 1, _op(conv, [-1], [-1]))
    if name == "FORMAT_SIMPLE":
        if prev is not None and prev.opname == "CONVERT_VALUE":
            # The converted value is a str that FORMAT_SIMPLE passes on unchanged: the
            # node of CONVERT_VALUE, format_value(x, conversion), is the field's.
            return Effect(1, 1)
        return _record(1, 1, _op(format, [-1], [-1]))
    if name == "FORMAT_WITH_SPEC":
        return _record(2, 1, _op(format, [-2, -1], [-2]))
    if name == "SET_FUNCTION_ATTRIBUTE":
        # 3.13 sets a new function's closure, defaults, annotations one by one; the
        # function stays a constant, as 3.12's MAKE_FUNCTION leaves it.
        return Effect(2, 1, [("copy", -2, -1)])
    if name == "CALL_INTRINSIC_1":
        fn = INTRINSIC_1.get(arg)
        if fn is not None:
            return _record(1, 1, _op(fn, [-1], [-1]))
        return _record(1, 1, _special(f"intrinsic_{arg}", [-1], [-1]))
    if name == "BEFORE_WITH":
        rec = _op(ops.with_enter, [-1], [0])
        return Effect(1, 2, [("record", rec), ("set", -1, CAPTURED)], rec=rec)
    if name == "WITH_EXCEPT_START":
        # __exit__(type, exc, tb) of a with-block the exception (on top) escapes; its
        # result says whether to suppress it.  The exception is its input.
        return _record(0, 1, _special("with_except_start", [-1], [0]))
    if name == "PUSH_EXC_INFO":
        return Effect(1, 2, [("copy", 0, -1), ("set", -1, UNKNOWN)])
    if name == "CHECK_EXC_MATCH":
        return _record(1, 1, _op(ops.exception_match, [-2, -1], [-1]))
    if name == "MAKE_FUNCTION":
        pops = 1 if PY313 else 1 + bin(arg & 0xF).count("1")
        return Effect(pops, 1, [("set", -pops, CAPTURED)])
    if name == "CALL":
        kwnames = ()
        if prev is not None and prev.opname == "KW_NAMES":
            kwnames = code.co_consts[prev.arg]
        rec = Rec(R_CALL, None, list(range(-arg - 2, 0)), [-arg - 2], kwnames=kwnames)
        return _record(arg + 2, 1, rec)
    if name == "CALL_KW":
        # The keyword-name tuple is the constant loaded just before; it is not an input.
        kwnames = prev.argval if prev is not None and prev.opname == "LOAD_CONST" else ()
        rec = Rec(R_CALL, None, list(range(-arg - 3, -1)), [-arg - 3], kwnames=tuple(kwnames))
        return _record(arg + 3, 1, rec)
    if name == "CALL_FUNCTION_EX":
        n = 4 if arg & 1 else 3
        rec = Rec(R_CALL_EX, None, list(range(-n, 0)), [-n])
        return _record(n, 1, rec)
    if name in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"):
        return Effect(1, 0, [("branch", -1, name)], control="branch")
    if name in ("JUMP_FORWARD", "JUMP_BACKWARD"):
        return Effect(0, 0, [("jump",)], control="jump")
    if name in ("JUMP_BACKWARD_NO_INTERRUPT", "JUMP_NO_INTERRUPT"):
        return Effect(0, 0, control="silent_jump")
    if name == "RAISE_VARARGS":
        return Effect(arg, 0, [("raise", -arg if arg else None)], control="raise")
    if name == "RERAISE":
        return Effect(1, 0, [("raise", None)], control="raise")
    if name == "SEND":
        # [receiver, value] -> [receiver, result]: result is what the receiver
        # yielded (control goes on to YIELD_VALUE) or returned (control jumps to the
        # target, END_SEND).  A two-way branch that fires no event of its own; the
        # frame's next event tells the side (plan.py: the target gets an event).
        rec = _op(ops.send, [-2, -1], [-1])
        return Effect(1, 1, [("send", rec)], control="send", rec=rec)

    if name in ("MATCH_SEQUENCE", "MATCH_MAPPING"):
        # [subject] -> [subject, bool]: the test reads the subject without popping it
        # (live below the result), so the node refers to it and can be re-run.
        return _record(0, 1, _special(name.lower(), [-1], [0]))
    if name == "MATCH_KEYS":
        # [subject, keys] -> [subject, keys, values or None], both inputs kept.
        return _record(0, 1, _special("match_keys", [-2, -1], [0]))

    # Anything else: a special node over what it pops, producing what it pushes.
    if name in _GENERIC_COUNTS:
        pops, pushes = _GENERIC_COUNTS[name]
    else:
        try:
            eff = dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None)
        except ValueError:
            eff = 0
        pops, pushes = max(0, -eff), max(0, eff)
    outputs = list(range(-pops, -pops + pushes))
    rec = _special(name.lower(), list(range(-pops, 0)), outputs)
    return _record(pops, pushes, rec)


def _load_fast(code: CodeType, rel: int, index: int) -> tuple:
    # LOAD_FAST of a cell or free variable's slot pushes the cell itself: it is 3.12's
    # LOAD_CLOSURE (3.13 compiles LOAD_CLOSURE so), building a closure; the cell is a
    # constant, as there.
    name = code._varname_from_oparg(index)  # type: ignore[attr-defined]
    if name in code.co_cellvars or name in code.co_freevars:
        return ("set", rel, CAPTURED)
    return ("load_local", rel, index)


_raw_code: "IdentityCache[bytes]" = IdentityCache()


def _opname_at(code: CodeType, offset: int) -> str | None:
    # The instruction at `offset`, past the EXTENDED_ARGs that prefix it.  (co_code
    # makes a new copy at each access: one per code object is kept while it lives.)
    raw = _raw_code.get(code)
    if raw is None:
        raw = _raw_code[code] = code.co_code
    while 0 <= offset < len(raw) and raw[offset] == dis.EXTENDED_ARG:
        offset += 2
    return dis.opname[raw[offset]] if 0 <= offset < len(raw) else None


def _record(pops: int, pushes: int, rec: Rec) -> Effect:
    return Effect(pops, pushes, [("record", rec)], rec=rec)

