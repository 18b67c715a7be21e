# cython: language_level=3, boundscheck=True, wraparound=False
"""The plan builder's layout pass, typed: co_code and co_exceptiontable decoded
straight into C arrays (opcode, arg, next offset, target per code unit), the static
stack depths walked over int arrays, the basic blocks found from per-opcode flags.

It gives exactly what `bytecode.layout(code, fast=True)` gives (the same Instr,
Handler and Block objects, dicts in the same order); tests/plan_compare.py holds
the two to it over the corpus and the stdlib.  The opcode tables are dis's own,
read once per interpreter by bytecode.py and handed over in `init` (this module
imports nothing of tracer: bytecode.py imports it).
"""

from cpython.mem cimport PyMem_Malloc, PyMem_Free, PyMem_Realloc
from libc.string cimport memset, memcpy
from libc.stdlib cimport qsort
from cpython cimport array as carray

cdef carray.array _INT_TEMPLATE = carray.array("i")


cdef carray.array _ints(Py_ssize_t n, int fill):
    # A new array('i') of n items, each `fill`.
    cdef carray.array a = carray.clone(_INT_TEMPLATE, n, False)
    cdef Py_ssize_t k
    cdef int* d = a.data.as_ints
    if fill == 0:
        if n:
            memset(d, 0, sizeof(int) * n)
    else:
        for k in range(n):
            d[k] = fill
    return a


# Per-opcode flags (made in init from the names, per interpreter).
cdef enum:
    F_NO_FALLTHROUGH = 1
    F_CONDITIONAL = 2
    F_FOR_ITER = 4
    F_RETURN_GENERATOR = 8
    F_RETURN_OR_RAISE = 16
    F_BACKWARD = 32
    F_EXTENDED_ARG = 64

# Argument kinds, as bytecode.A_*.
cdef enum:
    A_NONE = 0
    A_PLAIN = 1
    A_CONST = 2
    A_NAME = 3
    A_GLOBAL = 4
    A_ATTR = 5
    A_SUPER_ATTR = 6
    A_JREL = 7
    A_JABS = 8
    A_FREE = 9

cdef int _kind[256]
cdef int _caches[256]
cdef int _flags[256]
cdef int _have_argument = 256
cdef bint _ready = False
cdef bint _py313 = False
cdef int _pop_top = -1
cdef object _opnames = None
cdef object _stack_effect = None
cdef object _Instr = None
cdef object _Handler = None
cdef object _Block = None
cdef object _CodeLayout = None
cdef object _AnalysisError = None


cdef inline int _carried_arg(int op, int arg) noexcept nogil:
    """The high bits an EXTENDED_ARG instruction (argument `arg`) carries into the
    next instruction's argument, as a signed 32-bit int like dis's; 0 after any
    other opcode."""
    if not (_flags[op] & F_EXTENDED_ARG):
        return 0
    # The low 32 bits of arg * 256, read as signed (two's complement, as gcc and
    # clang convert): what dis's `(arg << 8)` wrapped to a C int gives.
    return <int>((<unsigned int>arg) << 8)


def init(kinds, caches, opnames, flags, int have_argument, bint py313, stack_effect,
         instr_cls, handler_cls, block_cls, layout_cls, analysis_error):
    """Hand over the opcode tables (per opcode: argument kind, inline cache units,
    F_* flags) and the classes the layout is made of."""
    global _have_argument, _ready, _py313, _pop_top, _opnames, _stack_effect
    global _Instr, _Handler, _Block, _CodeLayout, _AnalysisError
    cdef int op
    for op in range(256):
        _kind[op] = kinds[op]
        _caches[op] = caches[op]
        _flags[op] = flags[op]
    _have_argument = have_argument
    _py313 = py313
    _opnames = tuple(opnames)
    _pop_top = list(opnames).index("POP_TOP")
    _stack_effect = stack_effect
    _Instr, _Handler, _Block, _CodeLayout = instr_cls, handler_cls, block_cls, layout_cls
    _AnalysisError = analysis_error
    _ready = True


FLAG_NAMES = {"NO_FALLTHROUGH": F_NO_FALLTHROUGH, "CONDITIONAL": F_CONDITIONAL,
              "FOR_ITER": F_FOR_ITER, "RETURN_GENERATOR": F_RETURN_GENERATOR,
              "RETURN_OR_RAISE": F_RETURN_OR_RAISE, "BACKWARD": F_BACKWARD,
              "EXTENDED_ARG": F_EXTENDED_ARG}


cdef inline int _for_iter_exit(int target, const unsigned char* raw, int* nxt_of, int n) noexcept:
    # bytecode.for_iter_exit over the unit arrays: past END_FOR (and 3.13's POP_TOP).
    cdef int off = nxt_of[target // 2]
    if _py313 and off < n and nxt_of[off // 2] > 0 and raw[off] == _pop_top:
        off = nxt_of[off // 2]
    return off


cdef dict _effects_memo = {}


cdef int _se_tab[2][256 * 257]  # stack effects per (jump, opcode, arg + 1), _SE_UNSET if not yet
cdef int _SE_UNSET = -1000000
cdef bint _se_ready = False


cdef int _stack_eff(int op, int arg, bint has_arg, bint jump) except? -999:
    # _effect_of_op for an argument in 0..255 (or none) through a C table.
    global _se_ready
    cdef int i, j
    if not _se_ready:
        for j in range(2):
            for i in range(256 * 257):
                _se_tab[j][i] = _SE_UNSET
        _se_ready = True
    cdef int slot
    if not has_arg:
        slot = op * 257
    elif 0 <= arg < 256:
        slot = op * 257 + arg + 1
    else:
        return _effect_of_op(op, arg, jump)
    cdef int e = _se_tab[jump][slot]
    if e == _SE_UNSET:
        e = _effect_of_op(op, arg if has_arg else None, jump)
        _se_tab[jump][slot] = e
    return e


cdef int _effect_of_op(int op, arg_obj, bint jump) except? -999:
    # dis.stack_effect(op, arg, jump=jump), remembered per (opcode, arg, jump): a
    # function of those alone (an error is raised again each time, not kept).
    cdef long long a = -1 if arg_obj is None else <long long>arg_obj
    if a < -1:  # (a negative argument, from EXTENDED_ARG overflow: not remembered)
        return _stack_effect(op, arg_obj, jump=jump)
    key = ((a + 1) << 10) | (op << 1) | jump
    hit = _effects_memo.get(key)
    if hit is not None:
        return hit
    cdef int e = _stack_effect(op, arg_obj, jump=jump)
    if len(_effects_memo) < 65536:
        _effects_memo[key] = e
    return e


def layout(code):
    """bytecode.layout(code, fast=True), typed."""
    if not _ready:
        raise RuntimeError("tracer.analysis._fastplan.init was not called")
    cdef bytes co = code.co_code
    cdef const unsigned char* raw = co
    cdef int n = len(co)
    cdef int units = n // 2
    cdef int size = units + 1
    # Per code unit (offset // 2), for instruction starts: next offset, target (-1 none).
    cdef int* nxt_of = <int*>PyMem_Malloc(sizeof(int) * 5 * size)
    if nxt_of == NULL:
        raise MemoryError()
    cdef int* target_of = nxt_of + size
    cdef int* depth = nxt_of + 2 * size
    cdef int* cover = nxt_of + 3 * size  # handler index covering the unit, -1 none
    cdef int* leader = nxt_of + 4 * size  # a flag per unit: a block starts there
    cdef int i, op, kind, nx, arg, extended, target, k, off, d, h, hd, seen
    cdef object argval, tgt
    cdef list instrs = []
    cdef dict by_offset = {}
    cdef tuple consts = code.co_consts
    cdef tuple names = code.co_names
    cdef object opnames = _opnames
    cdef object Instr = _Instr
    try:
        for i in range(size):
            nxt_of[i] = 0
            target_of[i] = -1
            depth[i] = -1
            cover[i] = -1
        # -- decode (bytecode._decode_fast) ----------------------------------------
        extended = 0
        i = 0
        while i < n:
            op = raw[i]
            kind = _kind[op]
            nx = i + 2 + 2 * _caches[op]
            tgt = None
            if kind == A_NONE:
                arg_obj = argval = None
                extended = 0
            else:
                arg = raw[i + 1] | extended
                extended = _carried_arg(op, arg)
                arg_obj = arg
                if kind == A_PLAIN:
                    argval = arg_obj
                elif kind == A_CONST:
                    argval = consts[arg]
                elif kind == A_NAME:
                    argval = names[arg]
                elif kind == A_GLOBAL or kind == A_ATTR:
                    argval = names[arg >> 1]
                elif kind == A_SUPER_ATTR:
                    argval = names[arg >> 2]
                elif kind == A_JREL:
                    target = nx + 2 * (-arg if _flags[op] & F_BACKWARD else arg)
                    argval = tgt = target
                    target_of[i // 2] = target
                elif kind == A_JABS:
                    target = 2 * arg
                    argval = tgt = target
                    target_of[i // 2] = target
                else:
                    argval = code._varname_from_oparg(arg)
            if nx >= n:
                nx = n
            nxt_of[i // 2] = nx
            ins = Instr(i, nx, opnames[op], op, arg_obj, argval, "", None, tgt)
            instrs.append(ins)
            by_offset[i] = ins
            i = nx
        # -- the exception table (bytecode._handlers_fast) ---------------------------
        handlers = []
        handler_targets = {}
        table = code.co_exceptiontable
        fields = []
        pos, tn = 0, len(table)
        while pos < tn:
            b = table[pos]
            pos += 1
            val = b & 63
            while b & 64:
                b = table[pos]
                pos += 1
                val = (val << 6) | (b & 63)
            fields.append(val)
            if len(fields) == 4:
                start, length, htarget, dl = fields
                hobj = _Handler(2 * start, 2 * (start + length), 2 * htarget, dl >> 1, bool(dl & 1))
                handlers.append(hobj)
                fields = []
        for h in range(len(handlers)):
            hobj = handlers[h]
            handler_targets[hobj.target] = hobj
            for off in range(hobj.start, min(hobj.end, n), 2):
                if cover[off // 2] < 0:
                    cover[off // 2] = h
        # -- static depths (bytecode.layout's worklist, in the same order) ----------
        depth_dict = {}
        stacksize = code.co_stacksize
        # The worklist of (offset, depth) pairs, popped from its end as bytecode.layout's.
        pending = [(0, 0)] if instrs else []
        while pending:
            off, d = pending.pop()
            seen = depth[off // 2] if off < n else -1
            if seen >= 0:
                if seen != d:
                    raise _AnalysisError(
                        f"{code.co_qualname}: inconsistent stack depth at offset {off}: {seen} vs {d}")
                continue
            if d < 0 or d > stacksize:
                raise _AnalysisError(
                    f"{code.co_qualname}: stack depth {d} at offset {off} outside 0..{stacksize}")
            if off >= n or nxt_of[off // 2] == 0:
                by_offset[off]  # KeyError, as the reference's by_offset[off]
            depth[off // 2] = d
            depth_dict[off] = d
            op = raw[off]
            # successors(): (target, jump effect) then (next, fall-through effect).
            if not (_flags[op] & F_RETURN_OR_RAISE):
                if _flags[op] & F_RETURN_GENERATOR:
                    pending.append((nxt_of[off // 2], d + 1))
                else:
                    arg_obj = by_offset[off].arg if op >= _have_argument else None
                    if target_of[off // 2] >= 0:
                        pending.append((target_of[off // 2],
                                        d + _effect_of_op(op, arg_obj, True)))
                    nx = nxt_of[off // 2]
                    if not (_flags[op] & F_NO_FALLTHROUGH) and nx < n and nxt_of[nx // 2] > 0:
                        pending.append((nx, d + _effect_of_op(op, arg_obj, False)))
            h = cover[off // 2]
            if h >= 0:
                hobj = handlers[h]
                if hobj.target >= n or depth[hobj.target // 2] < 0:
                    hd = hobj.depth + (1 if hobj.lasti else 0) + 1
                    pending.append((hobj.target, hd))
        # -- blocks ---------------------------------------------------------------
        memset(leader, 0, sizeof(int) * size)
        if instrs:
            leader[0] = 1
        for ins in instrs:
            off = ins.offset
            op = raw[off]
            nx = nxt_of[off // 2]
            if target_of[off // 2] >= 0:
                target = target_of[off // 2]
                if target < n:
                    leader[target // 2] = 1
                leader[nx // 2] = 1
            if _flags[op] & (F_NO_FALLTHROUGH | F_CONDITIONAL):
                leader[nx // 2] = 1
            if _flags[op] & F_FOR_ITER:
                target = target_of[off // 2]
                if target >= n or nxt_of[target // 2] == 0:
                    by_offset[target]  # KeyError, as for_iter_exit's
                k = _for_iter_exit(target, raw, nxt_of, n)
                if k <= n:
                    leader[k // 2] = 1
        for hobj in handlers:
            if hobj.target < n:
                leader[hobj.target // 2] = 1
        blocks = []
        block_of = {}
        blk = None
        blk_instrs = None
        bid = None
        off = 0
        for ins in instrs:
            # (instructions are consecutive: each one's offset is the next of the one before)
            nx = nxt_of[off // 2]
            if leader[off // 2] or blk is None:
                if blk is not None:
                    blk.end = off
                blk = _Block(len(blocks) + 1, off, nx)
                blocks.append(blk)
                blk_instrs = blk.instrs
                bid = blk.id
            blk_instrs.append(ins)
            block_of[off] = bid
            off = nx
        if blk is not None:
            blk.end = off
        return _CodeLayout(instrs, by_offset, blocks, block_of, depth_dict, handlers,
                           handler_targets)
    finally:
        PyMem_Free(nxt_of)


# -- the segment walk (plan._Builder.walk), typed --------------------------------
# Step tags and controls as ints; the per-instruction effects (instructions.effect_of)
# encoded once per builder into them (_Prep).  Every rule is plan.py's, in the same
# order, so the ops, the events asked for and the records interned (numbered in the
# order the walk meets them) are the same: tests/plan_compare.py is the gate.

cdef enum:
    T_SET = 1
    T_COPY
    T_SWAP
    T_LOAD_LOCAL
    T_LOAD_CELL
    T_LOAD_CONST
    T_DELETE_LOCAL
    T_STORE_LOCAL
    T_STORE_CELL
    T_GETATTR
    T_METHOD_PAIR
    T_RECORD
    T_FOR_ITER
    T_SEND
    T_BRANCH
    T_JUMP
    T_RETURN
    T_RETURN_CONST
    T_YIELD
    T_RAISE
    T_LOST

cdef enum:
    C_NONE = 0
    C_BRANCH
    C_FOR_ITER
    C_SEND
    C_JUMP
    C_SILENT_JUMP
    C_RETURN
    C_RETURN_CONST
    C_YIELD
    C_RAISE
    C_LOST

_TAGS = {"set": T_SET, "copy": T_COPY, "swap": T_SWAP, "load_local": T_LOAD_LOCAL,
         "load_cell": T_LOAD_CELL, "load_const": T_LOAD_CONST, "delete_local": T_DELETE_LOCAL,
         "store_local": T_STORE_LOCAL, "store_cell": T_STORE_CELL, "getattr": T_GETATTR,
         "method_pair": T_METHOD_PAIR, "record": T_RECORD, "for_iter": T_FOR_ITER,
         "send": T_SEND, "branch": T_BRANCH, "jump": T_JUMP, "return": T_RETURN,
         "return_const": T_RETURN_CONST, "yield": T_YIELD, "raise": T_RAISE, "lost": T_LOST}
_CONTROLS = {None: C_NONE, "branch": C_BRANCH, "for_iter": C_FOR_ITER, "send": C_SEND,
             "jump": C_JUMP, "silent_jump": C_SILENT_JUMP, "return": C_RETURN,
             "return_const": C_RETURN_CONST, "yield": C_YIELD, "raise": C_RAISE, "lost": C_LOST}

# The analysis's numbers (microops.py, instructions.py), handed over by plan.py.
cdef int M_END, M_LOAD_LOCAL, M_LOAD_CONST, M_SET, M_STORE_LOCAL, M_DELETE_LOCAL, M_COPY
cdef int M_SWAP, M_CAPTURE, M_CAPTURE_METHOD, M_RECORD, M_BRANCH, M_FOR_ITER, M_JUMP
cdef int M_RETURN, M_RETURN_CONST, M_YIELD, M_RAISE, M_LOST, M_RECORD_BOOL, M_SILENT_JUMP
cdef int M_SEND, OTHER, CAPTURED, METH, METH_SELF, LF_CELL, LF_DYN, LF_SAFE
cdef int OP_FOR_ITER = -1, OP_RESUME = -1, OP_IS_OP = -1, OP_CONTAINS_OP = -1, OP_COMPARE_OP = -1, OP_UNARY_NOT = -1
cdef int READ_RETURNED, R_OP, OP_STORE_FAST = -1, OP_SFLF = -1, OP_SFSF = -1, OP_RETURN_VALUE = -1
cdef int OP_YIELD_VALUE = -1, OP_UNPACK_SEQUENCE = -1, READ_STORED = -2
cdef bint _stored_unpack = True   # plan.STORED_UNPACK (plan.set_stored_unpack)


def set_stored_unpack(bint on):
    """plan.set_stored_unpack's half for the typed builder."""
    global _stored_unpack
    _stored_unpack = on
cdef int OP_CALL = -1, OP_CALL_KW = -1, OP_KW_NAMES = -1, OP_TO_BOOL = -1, OP_LOAD_ATTR = -1
cdef int OP_LOAD_CONST = -1, OP_FORMAT_SIMPLE = -1, OP_CONVERT_VALUE = -1, OP_EXTENDED_ARG = -1
cdef int OP_POP_JUMP_IF_FALSE = -1, OP_POP_JUMP_IF_TRUE = -1
cdef int OP_LOAD_DEREF = -1, OP_STORE_DEREF = -1, OP_STORE_ATTR = -1
cdef dict _SPECIAL_SHADOW = {}
cdef int _special[16]  # SPECIAL_SHADOW for the classes 0..15 (-1: none)
cdef object _Rec = None
cdef bint _walk_ready = False


def init_walk(dict k, rec_cls, dict special_shadow):
    """Hand over the micro-op numbers, shadow classes and flags (by name), the Rec
    class and SPECIAL_SHADOW."""
    global M_END, M_LOAD_LOCAL, M_LOAD_CONST, M_SET, M_STORE_LOCAL, M_DELETE_LOCAL, M_COPY
    global M_SWAP, M_CAPTURE, M_CAPTURE_METHOD, M_RECORD, M_BRANCH, M_FOR_ITER, M_JUMP
    global M_RETURN, M_RETURN_CONST, M_YIELD, M_RAISE, M_LOST, M_RECORD_BOOL, M_SILENT_JUMP
    global M_SEND, OTHER, CAPTURED, METH, METH_SELF, LF_CELL, LF_DYN, LF_SAFE, READ_RETURNED, R_OP
    global OP_FOR_ITER, OP_RESUME, OP_IS_OP, OP_CONTAINS_OP, OP_COMPARE_OP, OP_UNARY_NOT, OP_STORE_FAST, OP_SFLF, OP_SFSF, OP_RETURN_VALUE, OP_POP_JUMP_IF_FALSE, OP_POP_JUMP_IF_TRUE
    global OP_YIELD_VALUE, OP_UNPACK_SEQUENCE, READ_STORED, OP_CALL, OP_CALL_KW, OP_KW_NAMES, OP_TO_BOOL, OP_LOAD_ATTR
    global OP_LOAD_CONST, OP_FORMAT_SIMPLE, OP_CONVERT_VALUE, OP_EXTENDED_ARG
    global OP_LOAD_DEREF, OP_STORE_DEREF, OP_STORE_ATTR
    global _SPECIAL_SHADOW, _Rec, _walk_ready
    M_END, M_LOAD_LOCAL, M_LOAD_CONST, M_SET = k["M_END"], k["M_LOAD_LOCAL"], k["M_LOAD_CONST"], k["M_SET"]
    M_STORE_LOCAL, M_DELETE_LOCAL, M_COPY = k["M_STORE_LOCAL"], k["M_DELETE_LOCAL"], k["M_COPY"]
    M_SWAP, M_CAPTURE, M_CAPTURE_METHOD = k["M_SWAP"], k["M_CAPTURE"], k["M_CAPTURE_METHOD"]
    M_RECORD, M_BRANCH, M_FOR_ITER, M_JUMP = k["M_RECORD"], k["M_BRANCH"], k["M_FOR_ITER"], k["M_JUMP"]
    M_RETURN, M_RETURN_CONST, M_YIELD = k["M_RETURN"], k["M_RETURN_CONST"], k["M_YIELD"]
    M_RAISE, M_LOST, M_RECORD_BOOL = k["M_RAISE"], k["M_LOST"], k["M_RECORD_BOOL"]
    M_SILENT_JUMP, M_SEND = k["M_SILENT_JUMP"], k["M_SEND"]
    OTHER, CAPTURED, METH, METH_SELF = k["OTHER"], k["CAPTURED"], k["METH"], k["METH_SELF"]
    LF_CELL, LF_DYN, LF_SAFE = k["LF_CELL"], k["LF_DYN"], k["LF_SAFE"]
    READ_RETURNED, R_OP = k["READ_RETURNED"], k["R_OP"]
    READ_STORED = k["READ_STORED"]
    names = list(_opnames)
    def op_of(name):
        return names.index(name) if name in names else -1
    OP_STORE_FAST = op_of("STORE_FAST")
    OP_RESUME = op_of("RESUME")
    OP_CALL, OP_CALL_KW, OP_KW_NAMES = op_of("CALL"), op_of("CALL_KW"), op_of("KW_NAMES")
    OP_TO_BOOL, OP_LOAD_ATTR, OP_LOAD_CONST = op_of("TO_BOOL"), op_of("LOAD_ATTR"), op_of("LOAD_CONST")
    OP_FORMAT_SIMPLE, OP_CONVERT_VALUE = op_of("FORMAT_SIMPLE"), op_of("CONVERT_VALUE")
    OP_EXTENDED_ARG = op_of("EXTENDED_ARG")
    OP_LOAD_DEREF, OP_STORE_DEREF = op_of("LOAD_DEREF"), op_of("STORE_DEREF")
    OP_STORE_ATTR = op_of("STORE_ATTR")
    OP_FOR_ITER = op_of("FOR_ITER")
    OP_IS_OP, OP_CONTAINS_OP = op_of("IS_OP"), op_of("CONTAINS_OP")
    OP_COMPARE_OP, OP_UNARY_NOT = op_of("COMPARE_OP"), op_of("UNARY_NOT")
    OP_SFLF = op_of("STORE_FAST_LOAD_FAST")
    OP_SFSF = op_of("STORE_FAST_STORE_FAST")
    OP_RETURN_VALUE = op_of("RETURN_VALUE")
    OP_YIELD_VALUE = op_of("YIELD_VALUE")
    OP_UNPACK_SEQUENCE = op_of("UNPACK_SEQUENCE")
    OP_POP_JUMP_IF_FALSE = op_of("POP_JUMP_IF_FALSE")
    OP_POP_JUMP_IF_TRUE = op_of("POP_JUMP_IF_TRUE")
    _SPECIAL_SHADOW = dict(special_shadow)
    cdef int c
    for c in range(16):
        _special[c] = _SPECIAL_SHADOW.get(c, -1)
    _Rec = rec_cls
    _walk_ready = True


cdef class _Prep:
    """One builder's instructions as unit arrays: what the walk reads per offset,
    decoded straight from the code object (no Instr, Block or dict per
    instruction: the builder's layout objects are made only when a Python pass
    asks for them, plan._Builder.layout), and the walk's working arrays."""
    cdef int n, units, stacksize, nh, nloc
    cdef int* mem
    cdef int* depth      # -1: unreachable or not an instruction start
    cdef int* nxt
    cdef int* target
    cdef int* opcode
    cdef int* arg
    cdef int* pops
    cdef int* pushes
    cdef int* control
    cdef int* jtarget    # 1: a jump target, handler or FOR_ITER exit (_jump_targets)
    cdef int* boolish    # 1: pushes_bool(ins); 2: plan.compare_checked(ins)
    cdef int* prev       # the offset of the instruction before, -1 for the first
    cdef int* isstart    # 1: an instruction starts at this unit
    cdef int* unknown    # 1: a local may be unknown here (unknown.py; unknown_all: all)
    cdef int* hmem       # per handler: start, end, target, depth, lasti
    cdef const int** eptr  # per unit: its effect's encoding (_encode_effect), NULL if none
    # The rounds' and walks' state per unit (wmem): events, JUMP events, the events
    # and JUMP events new in this round, the walk's visit stamps and positions, the
    # record interned at the unit (-1: none yet), results waiting (slot, next),
    # records waiting (next), jumps followed (position, offset).
    cdef int* wmem
    cdef int* evmap
    cdef int* jev
    cdef int* newev
    cdef int* newjmp
    cdef int* vstamp
    cdef int* vpos
    cdef int* recidx
    cdef int* lslot
    cdef int* lnxt
    cdef int* lrec
    cdef int* fpos
    cdef int* foff
    cdef int* work       # the stack slots' shadow classes (wcap)
    cdef int* lstamp     # per local (nloc): stamps and offsets of the post-passes
    cdef int* loff
    cdef int* cellflag   # per local (nloc): 1 a cell or free variable, 0 not, -1 not asked yet
    cdef object cellnames
    cdef int nplus       # the code's locals, cells and free variables (-1: not asked yet)
    cdef object written  # instructions.cells_written_inside(code) (None: not asked yet)
    cdef int wcap, stamp, lstamp_now, nlater, nrecs
    cdef list eff_at
    cdef list steps_at   # per unit: the objects of its effect's steps (Recs, names)
    cdef bint unknown_ready, unknown_all, unknown_none
    cdef list froms      # starts' FROM segments, for `froms_key` JUMP events
    cdef Py_ssize_t froms_key
    cdef object code
    cdef dict rec_words  # id(Rec) -> _RecWords (_record)
    cdef set s_needs     # a walk's scratch: what it asks for (_walk_once)
    cdef set s_jumps
    cdef list s_violations

    def __dealloc__(self):
        PyMem_Free(self.mem)
        PyMem_Free(self.hmem)
        PyMem_Free(self.eptr)
        PyMem_Free(self.wmem)


# An effect's encoding (Effect.enc = (array, objects)): ints
#   [pops, pushes, control, lowrel, has_rec, sem, nout, out0, outmax, nsteps,
#    per step: tag, a, c, outmax, ioff,  then per record step at ioff:
#    nin, its int inputs..., nout, its outputs...]
# where lowrel is the lowest slot (relative to the depth) its steps touch
# (_Builder._consumes), the rec fields are eff.rec's when encoded (outputs:
# how many, the first, the highest), and `objects` holds each step's Rec,
# attribute name or None.
cdef enum:
    E_POPS = 0
    E_PUSHES
    E_CONTROL
    E_LOWREL
    E_HASREC
    E_SEM
    E_NOUT
    E_OUT0
    E_OUTMAX
    E_NSTEPS
    E_STEPS


cdef tuple _encode_effect(eff):
    cdef list steps = eff.steps
    cdef Py_ssize_t k, ns = len(steps)
    cdef list head = [0] * (E_STEPS + 5 * ns)
    cdef list tail = []
    cdef list objs = []
    cdef int lowrel = -<int>eff.pops
    head[E_POPS] = eff.pops
    head[E_PUSHES] = eff.pushes
    head[E_CONTROL] = _CONTROLS[eff.control]
    rec = eff.rec
    if rec is not None:
        head[E_HASREC] = 1
        head[E_SEM] = rec.sem
        head[E_NOUT] = len(rec.outputs)
        head[E_OUT0] = rec.outputs[0] if rec.outputs else 0
        head[E_OUTMAX] = max(rec.outputs) if rec.outputs else 0
    head[E_NSTEPS] = ns
    for k in range(ns):
        step = steps[k]
        tag = _TAGS.get(step[0])
        if tag is None:
            raise AssertionError(f"unknown step {step[0]}")
        a = c = outmax = ioff = 0
        obj = None
        if tag == T_RECORD or tag == T_FOR_ITER or tag == T_SEND:
            obj = step[1]
            outs = list(obj.outputs)
            ins = [x for x in obj.inputs if isinstance(x, int)]
            a = len(outs)
            c = outs[0] if outs else 0
            outmax = max(outs) if outs else 0
            ioff = -1 - len(tail)  # (made absolute below)
            tail.append(len(ins))
            tail.extend(ins)
            tail.append(len(outs))
            tail.extend(outs)
            for x in ins:
                lowrel = min(lowrel, x)
            for x in outs:
                if isinstance(x, int):
                    lowrel = min(lowrel, x)
        elif tag == T_GETATTR:
            a = step[1]
            obj = step[2]
            lowrel = min(lowrel, a)
        elif tag == T_BRANCH:
            a = step[1]
            c = _BRANCH_KINDS[step[2]]
            lowrel = min(lowrel, a)
        elif tag == T_DELETE_LOCAL or tag == T_RETURN or tag == T_RETURN_CONST or tag == T_YIELD:
            a = step[1]
        elif tag == T_RAISE:
            a = -1 if step[1] is None else step[1]
            c = 1 if step[1] is None else 0
        elif tag == T_JUMP or tag == T_LOST:
            pass
        else:
            a = step[1]
            c = step[2]
            lowrel = min(lowrel, a)
            if tag == T_SWAP or tag == T_METHOD_PAIR:
                lowrel = min(lowrel, c)
        head[E_STEPS + 5 * k] = tag
        head[E_STEPS + 5 * k + 1] = a
        head[E_STEPS + 5 * k + 2] = c
        head[E_STEPS + 5 * k + 3] = outmax
        head[E_STEPS + 5 * k + 4] = ioff
        objs.append(obj)
    base = len(head)
    for k in range(ns):
        if head[E_STEPS + 5 * k + 4] < 0:
            head[E_STEPS + 5 * k + 4] = base + (-1 - head[E_STEPS + 5 * k + 4])
    head[E_LOWREL] = lowrel
    return (carray.array("i", head + tail), tuple(objs))


cdef _Prep _prep_of(b, pushes_bool):
    cdef _Prep p = getattr(b, "_prep", None)
    if p is None:
        p = _prepare(b.code)
        b._prep = p
        _effects(p, b.code)
    return p


def prepare(b):
    """The builder's unit arrays and effects (plan._Builder.__init__, fast)."""
    return _prep_of(b, None)


# Effects shared per (opcode, arg) for arg in -1..255 (-1: no argument): a C table
# in front of effecttable._shared (which holds the same objects).
cdef object _shared_tab = None     # list of 256 * 257 entries
cdef dict _shared_dict = None      # effecttable._shared
cdef Py_ssize_t _max_shared = 0
cdef object _effect_of = None
cdef object _Effect = None
cdef int _ctx[256]                 # 1: CONTEXTUAL, 2: and PER_CODE
# The contextual opcodes' effects, shared by what effect_of reads of their context
# (_context_key): apart from effecttable._shared, which holds only effects that are
# a function of (opcode, arg).
cdef dict _ctx_shared = {}
# LOAD_DEREF's and STORE_DEREF's effects by the form effect_of gives them (which
# reads the code object: is the slot the frame's own cell, does a nested function
# assign it) and their index where the form uses it, STORE_ATTR's by the name
# it sets: alike in every code object, where effects_of keeps one per code object.
cdef dict _named_shared = {}
cdef object _cells_written_inside = None   # instructions.cells_written_inside
cdef object _nlocalsplus = None            # bytecode.nlocalsplus
cdef object _getattr_enc = None    # the encoding of every Effect(1, 1, [("getattr", -1, name)])


def init_effects(shared, contextual, per_code, Py_ssize_t max_shared, effect_of, effect_cls):
    """Hand over effecttable's shared table, its opcode sets, effect_of and Effect."""
    global _shared_tab, _shared_dict, _max_shared, _effect_of, _Effect, _getattr_enc
    _shared_tab = [None] * (256 * 257)
    _shared_dict = shared
    _max_shared = max_shared
    _effect_of = effect_of
    _Effect = effect_cls
    _getattr_enc = None
    _ctx_shared.clear()
    _named_shared.clear()
    cdef int op
    for op in range(256):
        name = _opnames[op]
        _ctx[op] = (2 if name in per_code else 1) if name in contextual else 0
        _load_fast_form[op] = (1 if name in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW")
                               else 2 if name in ("LOAD_FAST_LOAD_FAST",
                                                  "LOAD_FAST_BORROW_LOAD_FAST_BORROW") else 0)


def init_named(cells_written_inside, nlocalsplus):
    """Hand over what effect_of reads of a code object for LOAD_DEREF and
    STORE_DEREF (instructions.cells_written_inside, bytecode.nlocalsplus)."""
    global _cells_written_inside, _nlocalsplus
    _cells_written_inside = cells_written_inside
    _nlocalsplus = nlocalsplus
    _named_shared.clear()


cdef object _named_key(_Prep p, code, int op, int a):
    # What effect_of reads of the code object for a LOAD_DEREF, STORE_DEREF or
    # STORE_ATTR, as a key under which its Effect is the same in every code object
    # (None: no key).  Kept in step with effect_of's rules for these opcodes:
    # tests/test_plan_effecttable.py compares every one with a fresh Effect.
    cdef bint own_cell
    if op == OP_STORE_ATTR:
        return (op, code.co_names[a])
    if _nlocalsplus is None or a < 0:
        return None
    if p.nplus < 0:
        p.nplus = _nlocalsplus(code)
    own_cell = a < p.nplus - len(code.co_freevars)
    if op == OP_STORE_DEREF:
        return (op, a if own_cell else -1)   # (a store into its own cell names it)
    name = code._varname_from_oparg(a)
    if own_cell:
        if p.written is None:
            p.written = _cells_written_inside(code)
        if name not in p.written:
            return (op, a)   # (load_cell of slot a)
    if name == "__class__":
        return (op, -2)
    return (op, -1)   # (the load_deref record: no index)


cdef inline int _op_at(_Prep p, int off) noexcept:
    # instructions._opname_at as an opcode (-1: none): the instruction at `off`,
    # past the EXTENDED_ARGs that prefix it.
    while 0 <= off < p.n and p.isstart[off // 2] and p.opcode[off // 2] == OP_EXTENDED_ARG:
        off += 2
    if 0 <= off < p.n and p.isstart[off // 2]:
        return p.opcode[off // 2]
    return -1


cdef long long _context_key(_Prep p, int u, int prev_u) noexcept:
    # What instructions.effect_of reads of a contextual instruction's context, as a
    # key under which its Effect is the same for every instruction and code object
    # (>= 0), or -1 when it reads the code object (kept per code object: -2 - the
    # key) or is never shared (LOAD_ATTR's attribute form, whose Effect the walk
    # writes to).  Kept in step with effect_of's rules for these opcodes:
    # tests/test_plan_effecttable.py compares every one with a fresh Effect.
    cdef int op = p.opcode[u]
    cdef long long a = p.arg[u] if _kind[op] != A_NONE else -1
    cdef int nxt_op, prev_op = p.opcode[prev_u] if prev_u >= 0 else -1
    cdef long long flag = 0
    if a < -1 or a >= (1 << 24):
        return -1
    if op == OP_CALL:
        if prev_op == OP_KW_NAMES and OP_KW_NAMES >= 0:
            if not 0 <= p.arg[prev_u] < 4096:
                return -1
            return -2 - ((((<long long>op) << 26) | ((a + 1) << 1)) * 4096 + p.arg[prev_u])
        return ((<long long>op) << 26) | ((a + 1) << 1)
    if op == OP_CALL_KW:
        if prev_op == OP_LOAD_CONST and 0 <= p.arg[prev_u] < 4096:
            return -2 - ((((<long long>op) << 26) | ((a + 1) << 1)) * 4096 + p.arg[prev_u])
        if prev_op == OP_LOAD_CONST:
            return -1
        return ((<long long>op) << 26) | ((a + 1) << 1)
    if op == OP_TO_BOOL:
        nxt_op = _op_at(p, p.nxt[u])
        flag = 1 if (nxt_op >= 0 and (nxt_op == OP_POP_JUMP_IF_FALSE or nxt_op == OP_POP_JUMP_IF_TRUE
                                      or nxt_op == OP_UNARY_NOT)) else 0
    elif op == OP_CONVERT_VALUE:
        nxt_op = _op_at(p, p.nxt[u])
        flag = 1 if (nxt_op >= 0 and nxt_op == OP_FORMAT_SIMPLE) else 0
    elif op == OP_FORMAT_SIMPLE:
        flag = 1 if (prev_op >= 0 and prev_op == OP_CONVERT_VALUE) else 0
    elif op == OP_LOAD_ATTR and (a & 1):
        a = 1  # the method form: a pair, whatever the name
    else:
        return -1
    return ((<long long>op) << 26) | ((a + 1) << 1) | flag


cdef object _instr_at(_Prep p, code, int u):
    # The Instr of the instruction at unit u, as bytecode._decode_fast makes it
    # (for effect_of, which reads the opcode's context).
    if u < 0:
        return None
    cdef int op = p.opcode[u]
    cdef int kind = _kind[op]
    cdef int a = p.arg[u]
    cdef int off = 2 * u
    tgt = None
    if kind == A_NONE:
        arg_obj = argval = None
    else:
        arg_obj = a
        if kind == A_PLAIN:
            argval = arg_obj
        elif kind == A_CONST:
            argval = code.co_consts[a]
        elif kind == A_NAME:
            argval = code.co_names[a]
        elif kind == A_GLOBAL or kind == A_ATTR:
            argval = code.co_names[a >> 1]
        elif kind == A_SUPER_ATTR:
            argval = code.co_names[a >> 2]
        elif kind == A_JREL or kind == A_JABS:
            argval = tgt = p.target[u]
        else:
            argval = code._varname_from_oparg(a)
    return _Instr(off, p.nxt[u], _opnames[op], op, arg_obj, argval, "", None, tgt)


cdef int _load_fast_form[256]  # 1: LOAD_FAST's form (one local), 2: LOAD_FAST_LOAD_FAST's (two)


cdef int _cellish(_Prep p, code, int index) except -1:
    # Whether local `index` is a cell or free variable (instructions._load_fast),
    # once per local of a code object.
    if not 0 <= index < p.nloc:
        raise AssertionError("a local index past the code's locals")
    if p.cellflag[index] < 0:
        if p.cellnames is None:
            p.cellnames = frozenset(code.co_cellvars) | frozenset(code.co_freevars)
        p.cellflag[index] = 1 if code._varname_from_oparg(index) in p.cellnames else 0
    return p.cellflag[index]


cdef void _set_getattr_enc(tuple enc) noexcept:
    global _getattr_enc
    _getattr_enc = enc


cdef void _effects(_Prep p, code) except *:
    # effecttable.effects_of over the unit arrays: an Instr made only where the
    # effect is not in the shared table yet or reads the instruction's context.
    cdef list tab = _shared_tab
    cdef dict own = {}
    cdef int u, op, a, c, prev_u = -1
    cdef Py_ssize_t slot
    cdef long long ck
    cdef carray.array ints
    cdef const int* e
    p.eff_at = [None] * p.units
    p.steps_at = [None] * p.units
    for u in range(p.n // 2):
        if not p.isstart[u]:
            continue
        if p.depth[u] >= 0:
            op = p.opcode[u]
            a = p.arg[u] if _kind[op] != A_NONE else -1
            c = _ctx[op]
            if c == 0:
                eff = None
                slot = -1
                if _kind[op] == A_NONE:
                    slot = op * 257
                elif 0 <= a < 256:
                    slot = op * 257 + a + 1
                if slot >= 0:
                    eff = tab[slot]
                if eff is None:
                    key = (op, None if _kind[op] == A_NONE else a)
                    eff = _shared_dict.get(key)
                    if eff is None:
                        eff = _effect_of(_instr_at(p, code, u), code, _instr_at(p, code, prev_u))
                        if len(_shared_dict) < _max_shared:
                            _shared_dict[key] = eff
                            if slot >= 0:
                                tab[slot] = eff
                    elif slot >= 0:
                        tab[slot] = eff
            elif c == 2 and _load_fast_form[op] and 0 <= a < (1 << 24):
                # LOAD_FAST and the like: the same Effect wherever the locals
                # loaded are alike plain or cells (instructions._load_fast).
                if _load_fast_form[op] == 1:
                    ck = _cellish(p, code, a)
                else:
                    ck = _cellish(p, code, a >> 4) | (_cellish(p, code, a & 15) << 1)
                ck = ((<long long>op) << 30) | ((<long long>a) << 2) | ck
                eff = _ctx_shared.get(ck)
                if eff is None:
                    eff = _effect_of(_instr_at(p, code, u), code, _instr_at(p, code, prev_u))
                    if len(_ctx_shared) < _max_shared:
                        _ctx_shared[ck] = eff
            elif c == 2 and (op == OP_LOAD_DEREF or op == OP_STORE_DEREF or op == OP_STORE_ATTR) \
                    and (nkey := _named_key(p, code, op, a)) is not None:
                eff = _named_shared.get(nkey)
                if eff is None:
                    eff = _effect_of(_instr_at(p, code, u), code, _instr_at(p, code, prev_u))
                    if len(_named_shared) < _max_shared:
                        _named_shared[nkey] = eff
            elif c == 2:
                key = ((<long long>op) << 32) | (<long long>a + 1)
                eff = own.get(key)
                if eff is None:
                    eff = own[key] = _effect_of(_instr_at(p, code, u), code,
                                                _instr_at(p, code, prev_u))
            else:
                ck = _context_key(p, u, prev_u)
                if ck >= 0:
                    eff = _ctx_shared.get(ck)
                    if eff is None:
                        eff = _effect_of(_instr_at(p, code, u), code, _instr_at(p, code, prev_u))
                        if len(_ctx_shared) < _max_shared:
                            _ctx_shared[ck] = eff
                elif ck <= -2:
                    eff = own.get(ck)
                    if eff is None:
                        eff = own[ck] = _effect_of(_instr_at(p, code, u), code,
                                                   _instr_at(p, code, prev_u))
                elif op == OP_LOAD_ATTR:
                    # The attribute form, its own Effect (the walk sets its rec):
                    # effect_of's, made here, with the encoding they all share.
                    eff = _Effect(1, 1, [("getattr", -1, code.co_names[a >> 1])])
                    if _getattr_enc is None:
                        _set_getattr_enc(_encode_effect(eff))
                    eff.enc = (_getattr_enc[0], (code.co_names[a >> 1],))
                else:
                    eff = _effect_of(_instr_at(p, code, u), code, _instr_at(p, code, prev_u))
            p.eff_at[u] = eff
            enc = eff.enc
            if enc is None:  # (shared effects are encoded once: analysis/effecttable.py)
                enc = eff.enc = _encode_effect(eff)
            ints = <carray.array>enc[0]
            e = ints.data.as_ints  # (alive as long as the Effect, which eff_at holds)
            p.eptr[u] = e
            p.pops[u] = e[E_POPS]
            p.pushes[u] = e[E_PUSHES]
            p.control[u] = e[E_CONTROL]
            p.steps_at[u] = enc[1]
        prev_u = u


def effects_dict(b):
    """Offset -> Effect of every reachable instruction (plan._Builder.effects, fast):
    the walk's own objects."""
    cdef _Prep p = b._prep
    cdef int u
    return {2 * u: p.eff_at[u] for u in range(p.n // 2) if p.eff_at[u] is not None}


def rec_at(b):
    """Offset -> the Rec of every recorded instruction (CodePlan.rec_at)."""
    cdef _Prep p = b._prep
    cdef int u
    cdef dict out = {}
    for u in range(p.n // 2):
        # (a record is known when the effect was encoded, or a LOAD_ATTR's getattr)
        if p.eptr[u] != NULL and (p.eptr[u][E_HASREC] or p.opcode[u] == OP_LOAD_ATTR):
            rec = p.eff_at[u].rec
            if rec is not None:
                out[2 * u] = rec
    return out


cdef _Prep _prepare(code):
    # bytecode.layout(code, fast=True)'s decode, exception table and depth worklist
    # (in the same order, with the same errors), into unit arrays only.
    cdef _Prep p = _Prep()
    p.froms_key = -1
    p.nplus = -1
    p.code = code
    p.s_needs = set()
    p.rec_words = {}
    p.s_jumps = set()
    p.s_violations = []
    cdef bytes co = code.co_code
    cdef const unsigned char* raw = co
    cdef int n = len(co)
    cdef int size = n // 2 + 1
    cdef int i, u, op, arg, kind, nx, extended = 0, prev_off = -1
    p.n = n
    p.units = size
    p.stacksize = code.co_stacksize
    p.mem = <int*>PyMem_Malloc(sizeof(int) * 15 * size)
    if p.mem == NULL:
        raise MemoryError()
    p.depth, p.nxt, p.target = p.mem, p.mem + size, p.mem + 2 * size
    p.opcode, p.arg, p.pops = p.mem + 3 * size, p.mem + 4 * size, p.mem + 5 * size
    p.pushes, p.control = p.mem + 6 * size, p.mem + 7 * size
    p.jtarget, p.boolish = p.mem + 8 * size, p.mem + 9 * size
    p.prev, p.isstart, p.unknown = p.mem + 10 * size, p.mem + 11 * size, p.mem + 12 * size
    cdef int* cover = p.mem + 13 * size
    cdef int* work = NULL
    memset(p.mem, 0, sizeof(int) * 15 * size)
    p.eptr = <const int**>PyMem_Malloc(sizeof(int*) * size)
    p.nloc = len(code.co_varnames) + len(code.co_cellvars) + len(code.co_freevars) + 1
    p.wcap = p.stacksize + 64
    p.wmem = <int*>PyMem_Malloc(sizeof(int) * (13 * size + p.wcap + 3 * p.nloc))
    if p.eptr == NULL or p.wmem == NULL:
        raise MemoryError()
    memset(p.eptr, 0, sizeof(int*) * size)
    memset(p.wmem, 0, sizeof(int) * (13 * size + p.wcap + 3 * p.nloc))
    p.evmap, p.jev, p.newev, p.newjmp = p.wmem, p.wmem + size, p.wmem + 2 * size, p.wmem + 3 * size
    p.vstamp, p.vpos, p.recidx = p.wmem + 4 * size, p.wmem + 5 * size, p.wmem + 6 * size
    p.lslot, p.lnxt, p.lrec = p.wmem + 7 * size, p.wmem + 8 * size, p.wmem + 9 * size
    p.fpos, p.foff = p.wmem + 10 * size, p.wmem + 11 * size
    p.work = p.wmem + 13 * size
    p.lstamp = p.work + p.wcap
    p.loff = p.lstamp + p.nloc
    p.cellflag = p.loff + p.nloc
    for i in range(p.nloc):
        p.cellflag[i] = -1
    for i in range(size):
        p.recidx[i] = -1
    for i in range(size):
        p.depth[i] = -1
        p.target[i] = -1
        cover[i] = -1
    # -- decode (bytecode._decode_fast) ------------------------------------------------
    i = 0
    while i < n:
        op = raw[i]
        kind = _kind[op]
        nx = i + 2 + 2 * _caches[op]
        u = i // 2
        if kind == A_NONE:
            arg = 0
            extended = 0
        else:
            arg = raw[i + 1] | extended
            extended = _carried_arg(op, arg)
            if kind == A_JREL:
                p.target[u] = nx + 2 * (-arg if _flags[op] & F_BACKWARD else arg)
            elif kind == A_JABS:
                p.target[u] = 2 * arg
        if nx >= n:
            nx = n
        p.isstart[u] = 1
        p.nxt[u] = nx
        p.opcode[u] = op
        p.arg[u] = arg
        p.prev[u] = prev_off
        prev_off = i
        # plan.pushes_bool
        p.boolish[u] = 1 if (op == OP_IS_OP or op == OP_CONTAINS_OP
                             or (_py313 and op == OP_COMPARE_OP and arg & 16)) else 0
        # plan.compare_checked: 3.12's COMPARE_OP, a bool into a branch in plain plans
        if not _py313 and op == OP_COMPARE_OP:
            p.boolish[u] = 2
        i = nx
    # -- the exception table (bytecode._handlers_fast) -----------------------------------
    cdef bytes table = code.co_exceptiontable
    cdef const unsigned char* tb = table
    cdef Py_ssize_t pos = 0, tn = len(table)
    cdef long long val, fields[4]
    cdef int nf = 0, h, cap = 0, start, end
    cdef unsigned char byte
    while pos < tn:
        byte = tb[pos]
        pos += 1
        val = byte & 63
        while byte & 64:
            if pos >= tn:
                raise IndexError("index out of range")
            byte = tb[pos]
            pos += 1
            val = (val << 6) | (byte & 63)
        fields[nf] = val
        nf += 1
        if nf == 4:
            nf = 0
            if p.nh == cap:
                cap = 2 * cap + 8
                work = <int*>PyMem_Realloc(p.hmem, sizeof(int) * 5 * cap)
                if work == NULL:
                    raise MemoryError()
                p.hmem = work
            h = p.nh
            p.hmem[5 * h] = <int>(2 * fields[0])
            p.hmem[5 * h + 1] = <int>(2 * (fields[0] + fields[1]))
            p.hmem[5 * h + 2] = <int>(2 * fields[2])
            p.hmem[5 * h + 3] = <int>(fields[3] >> 1)
            p.hmem[5 * h + 4] = <int>(fields[3] & 1)
            p.nh += 1
    for h in range(p.nh):
        start = p.hmem[5 * h]
        end = p.hmem[5 * h + 1]
        if end > n:
            end = n
        for i in range(start, end, 2):
            if cover[i // 2] < 0:
                cover[i // 2] = h
    # -- static depths (bytecode.layout's worklist, in the same order) ------------------
    cdef int stacksize = p.stacksize, off, d, seen, top = 0, t
    cdef bint has_arg
    cdef int wcap = 3 * size + 8
    work = <int*>PyMem_Malloc(sizeof(int) * 2 * wcap)
    if work == NULL:
        raise MemoryError()
    try:
        if n > 0:
            work[0] = 0
            work[1] = 0
            top = 1
        while top > 0:
            top -= 1
            off = work[2 * top]
            d = work[2 * top + 1]
            seen = p.depth[off // 2] if 0 <= off < n else -1
            if seen >= 0:
                if seen != d:
                    raise _AnalysisError(
                        f"{code.co_qualname}: inconsistent stack depth at offset {off}: {seen} vs {d}")
                continue
            if d < 0 or d > stacksize:
                raise _AnalysisError(
                    f"{code.co_qualname}: stack depth {d} at offset {off} outside 0..{stacksize}")
            if off < 0 or off >= n or not p.isstart[off // 2]:
                raise KeyError(off)  # (the reference's by_offset[off])
            u = off // 2
            p.depth[u] = d
            op = p.opcode[u]
            if top + 3 > wcap:
                raise AssertionError("the depth worklist overflowed")
            if not (_flags[op] & F_RETURN_OR_RAISE):
                if _flags[op] & F_RETURN_GENERATOR:
                    work[2 * top] = p.nxt[u]
                    work[2 * top + 1] = d + 1
                    top += 1
                else:
                    has_arg = op >= _have_argument and _kind[op] != A_NONE
                    if p.target[u] >= 0:
                        work[2 * top] = p.target[u]
                        work[2 * top + 1] = d + _stack_eff(op, p.arg[u], has_arg, True)
                        top += 1
                    nx = p.nxt[u]
                    if not (_flags[op] & F_NO_FALLTHROUGH) and nx < n and p.isstart[nx // 2]:
                        work[2 * top] = nx
                        work[2 * top + 1] = d + _stack_eff(op, p.arg[u], has_arg, False)
                        top += 1
            h = cover[u]
            if h >= 0:
                t = p.hmem[5 * h + 2]
                if t >= n or p.depth[t // 2] < 0:
                    work[2 * top] = t
                    work[2 * top + 1] = p.hmem[5 * h + 3] + p.hmem[5 * h + 4] + 1
                    top += 1
    finally:
        PyMem_Free(work)
    # plan._Builder._jump_targets: targets of jumps, handlers, FOR_ITER exits.
    for u in range(n // 2):
        if p.isstart[u] and p.target[u] >= 0:
            _mark_jtarget(p, p.target[u])
    for h in range(p.nh):
        _mark_jtarget(p, p.hmem[5 * h + 2])
    for u in range(n // 2):
        if p.isstart[u] and p.opcode[u] == OP_FOR_ITER:
            _mark_jtarget(p, _for_iter_exit_p(p, u))
    return p


cdef inline void _mark_jtarget(_Prep p, int t) noexcept:
    if 0 <= t < p.n:
        p.jtarget[t // 2] = 1
    elif t == p.n:
        p.jtarget[p.units - 1] = 1


cdef inline bint _is_dyn(int c) noexcept:
    return c == CAPTURED or c == METH or c == METH_SELF


cdef inline bint _reachable(_Prep p, int off) noexcept:
    return 0 <= off < p.n and p.depth[off // 2] >= 0


cdef inline bint _jump_target(_Prep p, int off) noexcept:
    if off < 0 or off > p.n:
        return False
    return p.jtarget[off // 2] != 0


cdef inline int _deferral(_Prep p, int u, int d, int nout, int out0, bint exact) noexcept:
    # plan._Builder.deferral (nout, out0: how many outputs the record has, the first)
    cdef int nx, op
    if exact or p.control[u] != C_NONE:
        return 0
    if nout > 1 and p.opcode[u] == OP_UNPACK_SEQUENCE and _stored_unpack:
        nx = p.nxt[u]
        if not _reachable(p, nx) or not p.isstart[nx // 2]:
            return 0
        op = p.opcode[nx // 2]
        if op == OP_STORE_FAST or op == OP_SFSF or op == OP_SFLF:
            return READ_STORED
        return 0
    if nout != 1:
        return 0
    if d + out0 != d - p.pops[u] + p.pushes[u] - 1:
        return 0
    nx = p.nxt[u]
    if not _reachable(p, nx) or not p.isstart[nx // 2]:
        return 0
    cdef int v = nx // 2
    op = p.opcode[v]
    if op == OP_STORE_FAST:
        return p.arg[v] + 1
    if op == OP_SFLF or op == OP_SFSF:
        return (p.arg[v] >> 4) + 1
    if op == OP_RETURN_VALUE or op == OP_YIELD_VALUE:
        return READ_RETURNED
    return 0


cdef inline bint _event_at(_Prep p, int off) noexcept:
    # `off in events` (the builder's events, mirrored in p.evmap)
    return 0 <= off <= p.n and p.evmap[off // 2] != 0


cdef class _Ops:
    """One segment's walk: its micro-ops (OP_WORDS ints each, in a C buffer), the
    offsets it went through (in no particular order), and what it asked for: the
    events (`needs`), the JUMP events and the violations."""
    cdef int* data
    cdef Py_ssize_t n, cap
    cdef int* vis
    cdef Py_ssize_t nvis, viscap
    cdef set needs
    cdef set jumps
    cdef list violations

    def __dealloc__(self):
        PyMem_Free(self.data)
        PyMem_Free(self.vis)

    def __len__(self):
        return self.n

    def tolist(self):
        """The ops as plan.py's lists of five ints."""
        cdef Py_ssize_t k
        return [[self.data[5 * k], self.data[5 * k + 1], self.data[5 * k + 2],
                 self.data[5 * k + 3], self.data[5 * k + 4]] for k in range(self.n)]

    def visited(self):
        """The offsets the walk went through, as a set (plan._Builder.walked)."""
        cdef Py_ssize_t k
        return {self.vis[k] for k in range(self.nvis)}


cdef int _ops_add(_Ops o, int a, int b, int c, int d, int e) except -1:
    cdef int* grown
    if o.n == o.cap:
        o.cap = 2 * o.cap + 16
        grown = <int*>PyMem_Realloc(o.data, sizeof(int) * 5 * o.cap)
        if grown == NULL:
            raise MemoryError()
        o.data = grown
    cdef int* w = o.data + 5 * o.n
    w[0] = a
    w[1] = b
    w[2] = c
    w[3] = d
    w[4] = e
    o.n += 1
    return 0


cdef int _ops_visit(_Ops o, int off) except -1:
    cdef int* grown
    if o.nvis == o.viscap:
        o.viscap = 2 * o.viscap + 16
        grown = <int*>PyMem_Realloc(o.vis, sizeof(int) * o.viscap)
        if grown == NULL:
            raise MemoryError()
        o.vis = grown
    o.vis[o.nvis] = off
    o.nvis += 1
    return 0


cdef _Ops _ops_of_lists(list ops, visited):
    # A segment the Python walk made (_Fallback), as an _Ops.
    cdef _Ops o = _Ops()
    for op in ops:
        _ops_add(o, op[0], op[1], op[2], op[3], op[4])
    for off in visited:
        _ops_visit(o, off)
    return o


cdef int _read_point(_Prep p, int u, int d, int nout, int out0, int outmax, set needs,
                     bint exact) except? -9:
    # plan._Builder._read_point (the record's outputs: how many, the first, the highest)
    cdef int nx = p.nxt[u]
    if _event_at(p, nx):
        return 0
    cdef int deferred = _deferral(p, u, d, nout, out0, exact)
    if not deferred:
        if exact:
            needs.add(nx)
        elif p.nrecs >= p.units or p.nlater >= p.units:
            raise _Fallback()
        elif nout == 0:
            p.lrec[p.nrecs] = nx
            p.nrecs += 1
        else:
            p.lslot[p.nlater] = d + outmax
            p.lnxt[p.nlater] = nx
            p.nlater += 1
    return deferred


cdef void _read_now(_Prep p, set needs) except *:
    cdef int k
    for k in range(p.nlater):
        needs.add(p.lnxt[k])
    for k in range(p.nrecs):
        needs.add(p.lrec[k])
    p.nlater = 0
    p.nrecs = 0


cdef inline bint _consumes(_Prep p, int u, int d, int top) noexcept:
    # plan._Builder._consumes (top: the highest slot a result waits in)
    cdef int control = p.control[u]
    if control != C_NONE and control != C_SILENT_JUMP and control != C_BRANCH and not (
            control == C_JUMP and not p.jev[u]):
        return True
    return top >= d + p.eptr[u][E_LOWREL]


cdef void _captures(_Prep p, int ncls, int off, _Ops o) except *:
    cdef int k, c
    for k in range(ncls):
        c = p.work[k]
        if c == CAPTURED:
            _ops_add(o, M_CAPTURE, off, k, 0, 0)
        elif c == METH and k + 1 < ncls and p.work[k + 1] == METH_SELF:
            _ops_add(o, M_CAPTURE_METHOD, off, k, k + 1, 0)


cdef void _check_reads(b, _Ops o, int depth, list violations) except *:
    cdef carray.array recs = b.recs
    cdef const int* rc = recs.data.as_ints
    cdef int r, nin, nout, x, j
    cdef Py_ssize_t k
    cdef int* op
    for k in range(o.n):
        op = o.data + 5 * k
        if op[0] == M_RECORD and not op[4]:
            r = op[2]
            nin, nout = rc[r + 2], rc[r + 3]
            for j in range(nout):
                x = rc[r + 5 + nin + j]
                if x >= depth:
                    violations.append(
                        f"{b.code.co_qualname}: offset {op[1]}: output slot {x} is not "
                        f"live at the event (depth {depth})")


cdef dict _getattr_recs = {}


cdef object _getattr_rec(int a, attr):
    # The Rec of a LOAD_ATTR's getattr (plan._Builder._steps makes it afresh each
    # time): equal ones shared, as they are data the builder only reads.
    key = (a, attr)
    rec = _getattr_recs.get(key)
    if rec is None:
        rec = _Rec(R_OP, getattr, [a, ("static", attr)], [a], display="getattr")
        if len(_getattr_recs) < 4096:
            _getattr_recs[key] = rec
    return rec


cdef int R_CALL = -1, R_CALL_EX = -1, IV_NONE = 0, IV_ANY = 0, IV_BOOL = 0
cdef bint _iv_any_op[256]


def init_record(dict k, iv_any_ops):
    """Hand over the record semantics and intervention classes (by name) and the
    opnames whose records may be replaced by any value (plan._IV_ANY_OPS)."""
    global R_CALL, R_CALL_EX, IV_NONE, IV_ANY, IV_BOOL
    R_CALL, R_CALL_EX = k["R_CALL"], k["R_CALL_EX"]
    IV_NONE, IV_ANY, IV_BOOL = k["IV_NONE"], k["IV_ANY"], k["IV_BOOL"]
    cdef int op
    for op in range(256):
        _iv_any_op[op] = _opnames[op] in iv_any_ops


cdef inline int _iv_of(_Prep p, int u, int sem, int nout) noexcept:
    # plan.intervention_class, from the record's semantics and output count
    if sem == R_CALL or sem == R_CALL_EX:
        return IV_ANY
    if sem != R_OP or nout == 0:
        return IV_NONE
    if p.boolish[u] == 1 or p.opcode[u] == OP_UNARY_NOT:
        return IV_BOOL
    if _iv_any_op[p.opcode[u]]:
        return IV_ANY
    return IV_NONE


cdef int _static(b, obj) except? -9:
    # plan._Builder.static: interned by value (str, int, tuple) or by identity.
    if isinstance(obj, (str, int, tuple)):
        key = (type(obj), obj)
    else:
        key = (type(obj), id(obj))
    cdef dict ids = b.static_ids
    idx = ids.get(key)
    if idx is not None:
        return idx
    cdef list statics = b.statics
    cdef int i = len(statics)
    statics.append(obj)
    ids[key] = i
    return i


cdef class _RecWords:
    """A Rec as one builder writes it into `recs`: its words with the statics
    interned, and which words take the depth (a relative slot)."""
    cdef object rec      # (kept: the template is looked up by the Rec's identity)
    cdef int* words
    cdef int* rel        # 1 where the word is a slot relative to the depth
    cdef int n, sem, nout

    def __dealloc__(self):
        PyMem_Free(self.words)


cdef _RecWords _rec_words(b, _Prep p, rec):
    # The words of `rec` (plan._Builder.record's, with d = 0), made once per Rec
    # and builder: the statics are interned the first time, in record()'s order.
    key = id(rec)
    cdef _RecWords t = p.rec_words.get(key)
    if t is not None and t.rec is rec:
        return t
    t = _RecWords()
    t.rec = rec
    cdef int fn = -1 if rec.fn is None else _static(b, rec.fn)
    kwnames = rec.kwnames
    cdef int kw = _static(b, tuple(kwnames)) if kwnames else -1
    inputs = rec.inputs
    outputs = rec.outputs
    cdef Py_ssize_t nin = len(inputs), nout = len(outputs), k
    t.n = <int>(5 + nin + nout)
    t.words = <int*>PyMem_Malloc(sizeof(int) * 2 * t.n)
    if t.words == NULL:
        raise MemoryError()
    t.rel = t.words + t.n
    memset(t.words, 0, sizeof(int) * 2 * t.n)
    t.sem = rec.sem
    t.nout = <int>nout
    t.words[0] = t.sem
    t.words[1] = fn
    t.words[2] = <int>nin
    t.words[3] = <int>nout
    t.words[4] = kw
    k = 5
    for x in inputs:
        if isinstance(x, tuple):
            t.words[k] = -(_static(b, x[1]) + 1)
        else:
            t.words[k] = <int>x
            t.rel[k] = 1
        k += 1
    for x in outputs:
        t.words[k] = <int>x
        t.rel[k] = 1
        k += 1
    p.rec_words[key] = t
    return t


cdef int _record(b, _Prep p, int off, rec, int d) except? -9:
    # plan._Builder.record: records interned by (offset, depth) -- the depth is the
    # offset's own, so by offset (p.recidx; b.rec_index holds the ones the Python
    # walk interned) -- numbered in the order the walk meets them; written
    # straight into the int32 arrays.
    cdef int u = off // 2
    if p.recidx[u] >= 0 and d == p.depth[u]:
        return p.recidx[u]
    if d != p.depth[u]:
        raise _Fallback()
    cdef _RecWords t = _rec_words(b, p, rec)
    cdef carray.array recs = b.recs
    cdef carray.array rec_iv = b.rec_iv
    cdef Py_ssize_t idx = len(recs), k, old_iv = len(rec_iv)
    carray.resize_smart(recs, idx + t.n)
    cdef int* w = recs.data.as_ints + idx
    for k in range(t.n):
        w[k] = t.words[k] + d if t.rel[k] else t.words[k]
    carray.resize_smart(rec_iv, idx + t.n)
    for k in range(old_iv, idx + t.n):
        rec_iv.data.as_ints[k] = 0
    rec_iv.data.as_ints[idx] = _iv_of(p, u, t.sem, t.nout)
    p.recidx[u] = <int>idx
    return <int>idx


cdef int _next_lstamp(_Prep p) noexcept:
    p.lstamp_now += 1
    return p.lstamp_now


cdef inline bint _local_ok(_Prep p, int local) noexcept:
    return 0 <= local < p.nloc


cdef int _stored_locals(const int* rc, _Ops o, Py_ssize_t i, int* locals_out) noexcept:
    """plan._Builder.stored_locals: 1 with the locals READ_STORED record op i is
    read back from written to `locals_out` by output (at most 255 of them), or 0."""
    cdef int* op = o.data + 5 * i
    cdef int r = op[2]
    cdef int nin = rc[r + 2], nout = rc[r + 3], j, k, found
    cdef Py_ssize_t m
    cdef int* q
    if nout > 255 or i + nout >= o.n:
        return 0
    for j in range(nout):
        q = o.data + 5 * (i + 1 + j)
        if q[0] != M_STORE_LOCAL or q[4] & (LF_CELL | LF_DYN):
            return 0
    for j in range(nout):
        found = 0
        for k in range(nout):
            q = o.data + 5 * (i + 1 + k)
            if q[2] == rc[r + 5 + nin + j]:
                found += 1
                locals_out[j] = q[3]
        if found != 1:
            return 0
    for j in range(nout):
        for k in range(j + 1, nout):
            if locals_out[j] == locals_out[k]:
                return 0
    for m in range(i + 1 + nout, o.n):
        q = o.data + 5 * m
        for j in range(nout):
            if (q[0] == M_STORE_LOCAL and q[3] == locals_out[j]) or \
                    (q[0] == M_DELETE_LOCAL and q[2] == locals_out[j]):
                return 0
    return 1


cdef void _check_deferred(_Prep p, _Ops o, set needs, const int* rc) except *:
    # plan._Builder._check_deferred
    cdef Py_ssize_t i, j, nops = o.n
    cdef int local, count
    cdef bint first_is_store
    cdef int* op
    cdef int* q
    cdef int stored[256]
    for i in range(nops):
        op = o.data + 5 * i
        if op[0] == M_RECORD and op[4] == READ_STORED:
            if not _stored_locals(rc, o, i, stored):
                needs.add(p.nxt[op[1] // 2])
            continue
        if op[0] != M_RECORD or op[4] <= 0:
            continue
        local = op[4] - 1
        count = 0
        first_is_store = False
        for j in range(i + 1, nops):
            q = o.data + 5 * j
            if (q[0] == M_STORE_LOCAL and q[3] == local) or (q[0] == M_DELETE_LOCAL and q[2] == local):
                if count == 0:
                    first_is_store = q[0] == M_STORE_LOCAL
                count += 1
        if count != 1 or not first_is_store:
            needs.add(p.nxt[op[1] // 2])


cdef void _mark_safe_loads(_Prep p, _Ops o) except *:
    # plan._Builder._mark_safe_loads, step for step (kept apart: it changes with it).
    # A local whose shadow is unknown is read back from the frame when it is
    # loaded, at the segment's end: right only if the segment does not assign the
    # local again after the load.
    cdef int s = _next_lstamp(p)
    cdef Py_ssize_t i
    cdef int* op
    for i in range(o.n - 1, -1, -1):
        op = o.data + 5 * i
        if op[0] == M_STORE_LOCAL:
            if not _local_ok(p, op[3]):
                raise _Fallback()
            p.lstamp[op[3]] = s
        elif op[0] == M_DELETE_LOCAL:
            if not _local_ok(p, op[2]):
                raise _Fallback()
            p.lstamp[op[2]] = s
        elif op[0] == M_LOAD_LOCAL:
            if not _local_ok(p, op[3]):
                raise _Fallback()
            if p.lstamp[op[3]] != s:
                op[4] |= LF_SAFE


cdef void _event_before_reassign(_Prep p, _Ops o, set needs) except *:
    # unknown.UnknownLocals._event_before_reassign
    if not p.unknown_ready:
        _may_be_unknown(p)
    if p.unknown_none:
        return
    cdef bint everywhere = p.unknown_all
    cdef int s = _next_lstamp(p)
    cdef Py_ssize_t i
    cdef int* op
    cdef int at, local
    for i in range(o.n - 1, -1, -1):
        op = o.data + 5 * i
        if op[0] == M_STORE_LOCAL or op[0] == M_DELETE_LOCAL:
            local = op[3] if op[0] == M_STORE_LOCAL else op[2]
            if not _local_ok(p, local):
                raise _Fallback()
            p.lstamp[local] = s
            p.loff[local] = op[1]
        elif op[0] == M_LOAD_LOCAL:
            local = op[3]
            if not _local_ok(p, local):
                raise _Fallback()
            if p.lstamp[local] == s and (everywhere or (0 <= op[1] < p.n and p.unknown[op[1] // 2])):
                at = p.loff[local]
                if at != op[1]:
                    needs.add(at)


cdef _Ops _walk(b, _Prep p, int kind, int start, set needs, int at_kind, set jump_needs,
                list violations):
    # plan._Builder._walk_py, typed: the ops into a C buffer, the stack's shadow
    # classes, the visits, the results waiting and the jumps followed in the
    # builder's unit arrays.
    if not _reachable(p, start):
        raise _Fallback()  # (the Python walk raises KeyError there)
    cdef bint exact = b.exact
    cdef bint before = b.before
    cdef _Ops o = _Ops()
    p.stamp += 1
    cdef int s = p.stamp
    cdef int ncls = p.depth[start // 2]
    cdef int k, j, off, d, u, nw, tag, a, c, micro, deferred, newlen, nfol = 0, at, x, nin
    cdef bint first = True, terminal, captured
    cdef int* work = p.work
    cdef const int* e
    cdef const int* st
    cdef const int* io
    cdef set dyn_stored = None
    cdef tuple objs
    p.nlater = 0
    p.nrecs = 0
    if ncls + 8 > p.wcap:
        raise _Fallback()
    for k in range(ncls):
        work[k] = OTHER
    off = start
    while True:
        if not _reachable(p, off) or not p.isstart[off // 2]:
            _read_now(p, needs)
            _ops_add(o, M_LOST, off, 0, 0, 0)
            break
        u = off // 2
        if p.evmap[u] and not (first and kind == at_kind):
            _check_reads(b, o, p.depth[u], violations)
            _captures(p, ncls, off, o)
            _ops_add(o, M_END, off, 0, 0, 0)
            break
        if p.vstamp[u] == s:
            # A loop with no event on it: the last jump taken on the loop fires
            # its JUMP event (in the next round).
            for k in range(nfol - 1, -1, -1):
                if p.fpos[k] >= p.vpos[u]:
                    jump_needs.add(p.foff[k])
                    break
            _read_now(p, needs)
            _ops_add(o, M_LOST, off, 0, 0, 0)
            break
        p.vstamp[u] = s
        p.vpos[u] = <int>o.nvis
        _ops_visit(o, off)
        first = False
        d = p.depth[u]
        e = p.eptr[u]
        if p.nlater:
            c = p.lslot[0]
            for k in range(1, p.nlater):
                if p.lslot[k] > c:
                    c = p.lslot[k]
            if _consumes(p, u, d, c):
                captured = False
                rec = p.eff_at[u].rec
                if rec is not None:
                    for y in rec.inputs:
                        if isinstance(y, int) and 0 <= d + <int>y < ncls and _is_dyn(work[d + <int>y]):
                            captured = True
                            break
                at = -1
                if captured:
                    if not _jump_target(p, off):
                        at = off
                else:
                    k = p.lnxt[p.nlater - 1]
                    if not _jump_target(p, k):
                        at = k
                    elif not _jump_target(p, off):
                        at = off
                if at < 0:
                    _read_now(p, needs)
                else:
                    needs.add(at)
                    p.nlater = 0
        nw = ncls + e[E_PUSHES]
        if nw + 8 > p.wcap or d + 8 > p.wcap:
            raise _Fallback()
        for k in range(ncls, nw):
            work[k] = OTHER
        terminal = False
        objs = <tuple>p.steps_at[u]
        for j in range(e[E_NSTEPS]):
            st = e + E_STEPS + 5 * j
            tag = st[0]
            a = st[1]
            c = st[2]
            if tag == T_SET:
                _slot_check(d + a, nw)
                work[d + a] = c
                if 0 <= c < 16:
                    if _special[c] != -1:
                        _ops_add(o, M_SET, off, d + a, _special[c], 0)
                elif c in _SPECIAL_SHADOW:
                    _ops_add(o, M_SET, off, d + a, _SPECIAL_SHADOW[c], 0)
            elif tag == T_COPY:
                _slot_check(d + a, nw)
                _slot_check(d + c, nw)
                work[d + a] = work[d + c]
                _ops_add(o, M_COPY, off, d + a, d + c, 0)
            elif tag == T_SWAP:
                _slot_check(d + a, nw)
                _slot_check(d + c, nw)
                k = work[d + a]
                work[d + a] = work[d + c]
                work[d + c] = k
                _ops_add(o, M_SWAP, off, d + a, d + c, 0)
            elif tag == T_LOAD_LOCAL or tag == T_LOAD_CELL:
                _slot_check(d + a, nw)
                work[d + a] = OTHER
                _ops_add(o, M_LOAD_LOCAL, off, d + a, c, LF_CELL if tag == T_LOAD_CELL else 0)
            elif tag == T_LOAD_CONST:
                _slot_check(d + a, nw)
                work[d + a] = OTHER
                _ops_add(o, M_LOAD_CONST, off, d + a, c, 0)
            elif tag == T_DELETE_LOCAL:
                if dyn_stored is not None and a in dyn_stored:
                    needs.add(off)
                _ops_add(o, M_DELETE_LOCAL, off, a, 0, 0)
            elif tag == T_STORE_LOCAL or tag == T_STORE_CELL:
                _slot_check(d + a, nw)
                k = LF_CELL if tag == T_STORE_CELL else 0
                if dyn_stored is not None and c in dyn_stored:
                    needs.add(off)
                if _is_dyn(work[d + a]):
                    k |= LF_DYN
                    if dyn_stored is None:
                        dyn_stored = set()
                    dyn_stored.add(c)
                _ops_add(o, M_STORE_LOCAL, off, d + a, c, k)
            elif tag == T_GETATTR:
                _slot_check(d + a, nw)
                if work[d + a] == CAPTURED:
                    continue  # an attribute of a constant is a constant
                rec = _getattr_rec(a, objs[j])
                p.eff_at[u].rec = rec
                deferred = _read_point(p, u, d, 1, a, a, needs, exact)
                _ops_add(o, M_RECORD, off, _record(b, p, off, rec, d), 0, deferred)
                work[d + a] = OTHER
            elif tag == T_METHOD_PAIR:
                _slot_check(d + a, nw)
                _slot_check(d + c, nw)
                _ops_add(o, M_COPY, off, d + c, d + a, 0)
                _ops_add(o, M_SET, off, d + a, _special[CAPTURED], 0)
                work[d + c] = METH_SELF
                work[d + a] = METH
            elif tag == T_RECORD:
                micro = M_RECORD
                deferred = 0
                if not _event_at(p, p.nxt[u]) and _bool_into_branch(p, u, exact, before):
                    micro = M_RECORD_BOOL
                else:
                    deferred = _read_point(p, u, d, a, c, st[3], needs, exact)
                io = e + st[4]
                nin = io[0]
                for k in range(1, nin + 1):
                    _slot_check(d + io[k], nw)
                    if _is_dyn(work[d + io[k]]):
                        needs.add(off)
                _ops_add(o, micro, off, _record(b, p, off, objs[j], d), 0, deferred)
                io = io + nin + 1
                for k in range(1, io[0] + 1):
                    _slot_check(d + io[k], nw)
                    work[d + io[k]] = OTHER
            elif tag == T_FOR_ITER:
                _slot_check(d - 1, nw)
                if _is_dyn(work[d - 1]):
                    needs.add(off)
                _ops_add(o, M_FOR_ITER, off, _record(b, p, off, objs[j], d), 0, p.nxt[u])
                terminal = True
                break
            elif tag == T_SEND:
                io = e + st[4]
                nin = io[0]
                for k in range(1, nin + 1):
                    _slot_check(d + io[k], nw)
                    if _is_dyn(work[d + io[k]]):
                        needs.add(off)
                _ops_add(o, M_SEND, off, _record(b, p, off, objs[j], d), p.nxt[u], p.target[u])
                terminal = True
                break
            elif tag == T_BRANCH:
                _captures(p, min(d + a, nw), off, o)
                _ops_add(o, M_BRANCH, off, d + a, c, p.target[u])
                terminal = True
                break
            elif tag == T_JUMP:
                if not p.jev[u]:
                    continue
                _captures(p, min(d, nw), off, o)
                _ops_add(o, M_JUMP, off, 0, 0, 0)
                terminal = True
                break
            elif tag == T_RETURN:
                _ops_add(o, M_RETURN, off, d + a, 0, 0)
                terminal = True
                break
            elif tag == T_RETURN_CONST:
                _ops_add(o, M_RETURN_CONST, off, a, 0, 0)
                terminal = True
                break
            elif tag == T_YIELD:
                _ops_add(o, M_YIELD, off, d + a, 0, 0)
                terminal = True
                break
            elif tag == T_RAISE:
                _ops_add(o, M_RAISE, off, -1 if c else d + a, 0, 0)
                terminal = True
                break
            elif tag == T_LOST:
                _ops_add(o, M_LOST, off, 0, 0, 0)
                terminal = True
                break
        newlen = d - e[E_POPS] + e[E_PUSHES]
        ncls = newlen if newlen < nw else nw
        if ncls < 0:
            raise _Fallback()
        if terminal:
            break
        if p.control[u] == C_SILENT_JUMP or p.control[u] == C_JUMP:
            if p.control[u] == C_JUMP:
                p.fpos[nfol] = p.vpos[u]
                p.foff[nfol] = off
                nfol += 1
            _ops_add(o, M_SILENT_JUMP, off, 0, 0, p.target[u])
            off = p.target[u]
        else:
            off = p.nxt[u]
    _event_before_reassign(p, o, needs)  # tracer.analysis.unknown
    _mark_safe_loads(p, o)
    _check_deferred(p, o, needs, (<carray.array>b.recs).data.as_ints)
    return o


class _Fallback(Exception):
    """The typed walk met a stack shape it does not model (a slot outside the
    frame's depth): the builder walks that segment in Python instead."""


cdef inline void _slot_check(int slot, int nw) except *:
    # Python lists would wrap a negative index or raise past the end: both are
    # cases the typed walk leaves to the Python one.
    if slot < 0 or slot >= nw:
        raise _Fallback()


cdef dict _BRANCH_KINDS = {}


def init_branch_kinds(dict kinds):
    _BRANCH_KINDS.update(kinds)


cdef inline int _branch_kind(name) except? -9:
    return _BRANCH_KINDS[name]


cdef inline bint _bool_into_branch(_Prep p, int u, bint exact, bint before) noexcept:
    # plan._Builder.bool_into_branch
    if exact or not p.boolish[u] or (before and p.boolish[u] == 2):
        return False
    cdef int nx = p.nxt[u]
    if nx < 0 or nx >= p.n or not p.isstart[nx // 2]:
        return False
    return p.opcode[nx // 2] == OP_POP_JUMP_IF_FALSE or p.opcode[nx // 2] == OP_POP_JUMP_IF_TRUE


def assemble(list segments, int units, int at_kind):
    """The ops, piece starts and segment tables of plan._Builder.build, from its
    segments [(kind, start, _Ops)]: (ops, piece_start, seg_at, seg_from) as int32
    arrays."""
    cdef Py_ssize_t total = 0, k = 0, j
    cdef int lo, kind, start
    cdef _Ops o
    for seg in segments:
        total += (<_Ops>seg[2]).n
    cdef carray.array ops = _ints(5 * total, 0)
    cdef carray.array pieces = _ints(total, 0)
    cdef carray.array seg_at = _ints(units, -1)
    cdef carray.array seg_from = _ints(units, -1)
    cdef int* pc = pieces.data.as_ints
    cdef int* sa = seg_at.data.as_ints
    cdef int* sf = seg_from.data.as_ints
    cdef int* out = ops.data.as_ints
    for seg in segments:
        kind = seg[0]
        start = seg[1]
        o = <_Ops>seg[2]
        if kind == at_kind:
            sa[start // 2] = <int>k
        else:
            sf[start // 2] = <int>k
        if o.n:
            memcpy(out + 5 * k, o.data, sizeof(int) * 5 * o.n)
        lo = start
        for j in range(o.n):
            pc[k] = lo
            if o.data[5 * j] == M_SILENT_JUMP:
                lo = o.data[5 * j + 4]
            k += 1
    return ops, pieces, seg_at, seg_from


def unit_tables(b, int units):
    """depth, handler and istart of plan._Builder.build, as int32 arrays (from the
    builder's unit arrays)."""
    cdef _Prep p = b._prep
    cdef carray.array depth = _ints(units, -1)
    cdef carray.array handler = _ints(units, -1)
    cdef carray.array istart = _ints(units, 0)
    cdef int* dp = depth.data.as_ints
    cdef int* hd = handler.data.as_ints
    cdef int* ist = istart.data.as_ints
    cdef int off, u, v, nx, h, t
    for u in range(p.n // 2):
        if p.isstart[u]:
            if p.depth[u] >= 0:
                dp[u] = p.depth[u]
            nx = p.nxt[u]
            for v in range(u, nx // 2):
                ist[v] = 2 * u
    for h in range(p.nh):
        t = p.hmem[5 * h + 2]
        if _reachable(p, t):
            hd[t // 2] = (p.hmem[5 * h + 3] << 1) | p.hmem[5 * h + 4]
    return depth, handler, istart


cdef int _RESUMABLE = 0x20 | 0x80 | 0x100 | 0x200


cdef void _may_be_unknown(_Prep p) except *:
    # unknown.UnknownLocals._may_be_unknown, as flags per unit: every unit of a
    # resumable code object (unknown_all), else those reachable from a handler.
    p.unknown_ready = True
    if p.code.co_flags & _RESUMABLE:
        p.unknown_all = True
        return
    cdef int h, off, u, top = 0, count = 0
    cdef int cap = 3 * p.units + p.nh + 8
    cdef int* todo = <int*>PyMem_Malloc(sizeof(int) * cap)
    if todo == NULL:
        raise MemoryError()
    try:
        for h in range(p.nh - 1, -1, -1):  # (popped from the end: the handlers in order)
            if _reachable(p, p.hmem[5 * h + 2]):
                todo[top] = p.hmem[5 * h + 2]
                top += 1
        while top > 0:
            top -= 1
            off = todo[top]
            if not _reachable(p, off):
                continue
            u = off // 2
            if p.unknown[u]:
                continue
            p.unknown[u] = 1
            count += 1
            if not p.isstart[u]:
                continue
            if top + 3 > cap:
                raise AssertionError("the worklist overflowed")
            if not (_flags[p.opcode[u]] & F_NO_FALLTHROUGH):
                todo[top] = p.nxt[u]
                top += 1
            if p.target[u] >= 0:
                todo[top] = p.target[u]
                top += 1
                if p.opcode[u] == OP_FOR_ITER:
                    todo[top] = _for_iter_exit_p(p, u)
                    top += 1
    finally:
        PyMem_Free(todo)
    p.unknown_none = count == 0


# -- the rest of plan._Builder.build, typed ----------------------------------------
# The events of the first round, each round's segment starts, the rounds with their
# memo of unchanged walks and the silent branches: each the statement of the
# Python method named, in the same order (tests/plan_compare.py is the gate).

cdef bint _read_right_after(_Prep p, int u) except -1:
    # plan._Builder._read_right_after
    cdef const int* e = p.eptr[u]
    cdef int nx = p.nxt[u]
    if e[E_NOUT] == 0:
        return False
    if not _reachable(p, nx) or not p.isstart[nx // 2]:
        return True
    if _jump_target(p, nx):
        return True
    return _consumes(p, nx // 2, p.depth[nx // 2], p.depth[u] + e[E_OUTMAX])


def initial_events(b, pushes_bool):
    """plan._Builder.initial_events(), typed."""
    cdef _Prep p = _prep_of(b, pushes_bool)
    cdef bint exact = b.exact
    cdef bint before = b.before
    cdef bint before_ops = b.before_ops   # PLAN_INTERVENE: operators too, not calls only
    cdef set events = set()
    cdef int u, off, c, h, sem
    cdef const int* e
    for u in range(p.n // 2):
        e = p.eptr[u]
        if e == NULL:  # (not an instruction, or not reachable)
            continue
        off = 2 * u
        c = p.control[u]
        if e[E_HASREC] and c != C_FOR_ITER and c != C_SEND \
                and not _bool_into_branch(p, u, exact, before) \
                and not _deferral(p, u, p.depth[u], e[E_NOUT], e[E_OUT0], exact):
            if exact or _read_right_after(p, u):
                events.add(p.nxt[u])
            sem = e[E_SEM]
            if before and (before_ops or sem == R_CALL or sem == R_CALL_EX):
                events.add(off)
        if c == C_SEND and _reachable(p, p.target[u]):
            events.add(p.target[u])
    for h in range(p.nh):
        if _reachable(p, p.hmem[5 * h + 2]):
            events.add(p.hmem[5 * h + 2])
    return events


cdef int _for_iter_exit_p(_Prep p, int u) except? -9:
    # bytecode.for_iter_exit over the unit arrays.
    cdef int t = p.target[u]
    if t < 0 or t >= p.n or not p.isstart[t // 2]:
        raise KeyError(t)
    cdef int off = p.nxt[t // 2]
    if _py313 and 0 <= off < p.n and p.isstart[off // 2] \
            and p.opcode[off // 2] == _pop_top:
        off = p.nxt[off // 2]
    return off


cdef list _starts(b, _Prep p, set events, int at_kind, int from_kind):
    # plan._Builder.starts; the FROM starts change only with the JUMP events
    # (which only grow), so they are made again only when those did.
    cdef list out = [(at_kind, o) for o in sorted(events)]
    cdef set jump_events = b.jump_events
    cdef set froms
    cdef int u, off, c
    if p.froms_key != len(jump_events):
        froms = set()
        for u in range(p.n // 2):
            if p.eptr[u] == NULL:
                continue
            off = 2 * u
            if p.opcode[u] == OP_RESUME:
                froms.add(off)
            c = p.control[u]
            if c == C_BRANCH:
                froms.add(p.target[u])
                froms.add(p.nxt[u])
            elif c == C_FOR_ITER:
                froms.add(p.nxt[u])
                froms.add(_for_iter_exit_p(p, u))
            elif c == C_JUMP and p.jev[u]:
                froms.add(p.target[u])
        p.froms = [(from_kind, o) for o in sorted(froms) if _reachable(p, o)]
        p.froms_key = len(jump_events)
    out.extend(p.froms)
    return out


cdef bint _unchanged(_Prep p, _Ops o) noexcept:
    # Whether nothing a memoised walk read changed this round: no new event at
    # the offsets it went through, the instructions after them or where it
    # ended, no new JUMP event on its jumps (plan._Builder._walk_once's test).
    cdef Py_ssize_t k
    cdef int off, nx
    for k in range(o.nvis):
        off = o.vis[k]
        if p.newev[off // 2] or p.newjmp[off // 2]:
            return False
        nx = p.nxt[off // 2]
        if 0 <= nx <= p.n and p.newev[nx // 2]:
            return False
    if o.n:
        off = o.data[5 * (o.n - 1) + 1]
        if 0 <= off <= p.n and p.newev[off // 2]:
            return False
    return True


cdef _Ops _walk_once(b, _Prep p, dict memo, int kind, int start, set events, set needs,
                     bint use_memo, int at_kind, set jump_needs, list violations):
    # plan._Builder._walk_once: the segment's walk of the round before when nothing
    # it read has changed since.
    key = 2 * start + kind
    cdef _Ops o = memo.get(key) if use_memo else None
    if o is None or not _unchanged(p, o):
        # (the walk asks into the builder's scratch containers, kept per segment
        # only when not empty, as they mostly are)
        seg_needs = p.s_needs
        seg_jumps = p.s_jumps
        seg_violations = p.s_violations
        try:
            o = _walk(b, p, kind, start, seg_needs, at_kind, seg_jumps, seg_violations)
        except _Fallback:  # a stack shape the typed walk leaves to the Python one
            o = _walk_python(b, p, kind, start, events, seg_needs, seg_jumps, seg_violations,
                             jump_needs, violations)
        if seg_needs:
            o.needs = set(seg_needs)
            seg_needs.clear()
        if seg_jumps:
            o.jumps = set(seg_jumps)
            seg_jumps.clear()
        if seg_violations:
            o.violations = list(seg_violations)
            del seg_violations[:]
        memo[key] = o
    if o.needs is not None:
        needs |= o.needs
    if o.jumps is not None:
        jump_needs |= o.jumps
    if o.violations is not None:
        violations += o.violations
    return o


cdef _Ops _walk_python(b, _Prep p, int kind, int start, set events, set seg_needs,
                       set seg_jumps, list seg_violations, set jump_needs, list violations):
    # The Python walk (plan._Builder._walk_py), with the records interned so far
    # handed over both ways.
    cdef int u
    cdef dict index = b.rec_index
    for u in range(p.n // 2):
        if p.recidx[u] >= 0:
            index[(2 * u, p.depth[u])] = p.recidx[u]
    b.jump_needs, b.violations = seg_jumps, seg_violations
    try:
        ops = b._walk_py(kind, start, events, seg_needs)
    finally:
        b.jump_needs, b.violations = jump_needs, violations
    for (off, d), idx in index.items():
        if 0 <= off < p.n and p.depth[off // 2] == d:
            p.recidx[off // 2] = idx
    return _ops_of_lists(ops, b.walked[(kind, start)])


cdef void _flag(_Prep p, int* flags, set offsets) noexcept:
    cdef int off
    for o in offsets:
        off = o
        if 0 <= off <= p.n:
            flags[off // 2] = 1


def rounds(b, set events, int at_kind, int from_kind, pushes_bool):
    """plan._Builder.build's rounds: walk every segment, add the events and JUMP
    events the walks asked for, until none is new.  Returns the segments
    [(kind, start, _Ops)]; `events` and b.jump_events are the final ones."""
    cdef _Prep p = _prep_of(b, pushes_bool)
    cdef dict memo = {}
    cdef bint use_memo = False
    cdef set needs, jump_needs
    cdef list segments, violations
    memset(p.evmap, 0, sizeof(int) * p.units)
    memset(p.jev, 0, sizeof(int) * p.units)
    _flag(p, p.evmap, events)
    _flag(p, p.jev, b.jump_events)
    while True:
        needs = set()
        b.jump_needs = jump_needs = set()
        b.walked = {}
        b.violations = violations = []
        segments = [(k, s, _walk_once(b, p, memo, k, s, events, needs, use_memo, at_kind,
                                      jump_needs, violations))
                    for k, s in _starts(b, p, events, at_kind, from_kind)]
        if needs <= events and jump_needs <= b.jump_events:
            break
        memset(p.newev, 0, sizeof(int) * p.units)
        memset(p.newjmp, 0, sizeof(int) * p.units)
        _flag(p, p.newev, needs - events)
        _flag(p, p.newjmp, jump_needs - b.jump_events)
        events |= needs
        b.jump_events |= jump_needs
        _flag(p, p.evmap, needs)
        _flag(p, p.jev, jump_needs)
        use_memo = True
    return segments


cdef int _cmp_int(const void* a, const void* b) noexcept nogil:
    cdef int x = (<const int*>a)[0]
    cdef int y = (<const int*>b)[0]
    return (x > y) - (x < y)


cdef list _ranges(_Prep p, _Ops o):
    # silent.SilentBranches._ranges: the offsets a walk went through as [first,
    # last] ranges of consecutive instructions, flattened (in order; the
    # instruction before each from the unit array).
    cdef list out = []
    cdef int off, prev_off, last = -1
    cdef Py_ssize_t k
    cdef int* sorted_vis = <int*>PyMem_Malloc(sizeof(int) * (o.nvis + 1))
    if sorted_vis == NULL:
        raise MemoryError()
    try:
        if o.nvis:
            memcpy(sorted_vis, o.vis, sizeof(int) * o.nvis)
        qsort(sorted_vis, o.nvis, sizeof(int), _cmp_int)
        for k in range(o.nvis):
            off = sorted_vis[k]
            if k and off == sorted_vis[k - 1]:
                continue
            if off < 0 or off >= p.n or not p.isstart[off // 2]:
                continue
            prev_off = p.prev[off // 2]
            if out and prev_off >= 0 and last == prev_off:
                out[len(out) - 1] = off
            else:
                out.append(off)
                out.append(off)
            last = off
    finally:
        PyMem_Free(sorted_vis)
    return out


cdef bint _disjoint(_Prep p, _Ops a, _Ops b) noexcept:
    # Whether two walks went through no offset in common (visit stamps).
    p.stamp += 1
    cdef int s = p.stamp
    cdef Py_ssize_t k
    for k in range(a.nvis):
        p.vstamp[a.vis[k] // 2] = s
    for k in range(b.nvis):
        if p.vstamp[b.vis[k] // 2] == s:
            return False
    return True


cdef int _grow_ints(int** buf, Py_ssize_t* cap, Py_ssize_t need) except -1:
    cdef int* grown
    if need <= cap[0]:
        return 0
    cap[0] = 2 * need + 16
    grown = <int*>PyMem_Realloc(buf[0], sizeof(int) * cap[0])
    if grown == NULL:
        raise MemoryError()
    buf[0] = grown
    return 0


cdef bint _loop_side_ends_ok(_Prep p, _Ops side, int* silent_at) noexcept:
    """silent.SilentBranches._loop_side_ends_ok: a loop's side ends in no silent
    conditional jump."""
    cdef int* last = side.data + 5 * (side.n - 1)
    if last[0] != M_BRANCH:
        return True
    return not (0 <= last[1] < p.n and silent_at[last[1] // 2])


cdef bint _branch_side_ends_ok(_Prep p, _Ops side, int* silent_at, int u, bint chained) noexcept:
    """silent.SilentBranches._branch_side_ends_ok: a conditional jump's side ends
    in no silent loop, and in no conditional jump, or (`chained`) in one that is
    not silent, not the jump (unit `u`) itself and not a 3.12 compare's guarded
    jump."""
    cdef int* last = side.data + 5 * (side.n - 1)
    if last[0] == M_FOR_ITER:
        return not (0 <= last[1] < p.n and silent_at[last[1] // 2])
    if last[0] != M_BRANCH:
        return True
    if not chained or not (0 <= last[1] < p.n) or last[1] // 2 == u or silent_at[last[1] // 2]:
        return False
    if side.n > 1 and last[-5] == M_RECORD_BOOL and 0 <= last[-4] < p.n \
            and p.boolish[last[-4] // 2] == 2:
        return False
    return True


cdef int _item_stored(const int* rc, list objs, int i, int* chain, _Ops body) except? -9:
    """silent.SilentBranches._item_stored: the local a FOR_ITER's body stores the
    next value in first (the FOR_ITER's one output slot, a plain local) and assigns
    nowhere else in its segment, or -1.  `i`: the first segment ending in the
    FOR_ITER (the others through `chain`)."""
    cdef int* first = body.data
    cdef int* op
    cdef int r, local
    cdef Py_ssize_t k
    cdef _Ops o
    if body.n == 0 or first[0] != M_STORE_LOCAL or first[4] & (LF_CELL | LF_DYN):
        return -1
    while i >= 0:
        o = <_Ops>objs[i]
        r = o.data[5 * (o.n - 1) + 2]
        if rc[r + 3] != 1 or first[2] != rc[r + 5 + rc[r + 2]]:
            return -1
        i = chain[i]
    local = first[3]
    for k in range(1, body.n):
        op = body.data + 5 * k
        if (op[0] == M_STORE_LOCAL and op[3] == local) or (op[0] == M_DELETE_LOCAL and op[2] == local):
            return -1
    return local


def silent_branches(b, list segments, Py_ssize_t nops, int from_kind, bint loops=True,
                    bint chains=True):
    """silent.SilentBranches.silent_branches, typed: the segments indexed by their
    start unit, the locals read late and assigned marked with stamps.  `loops`:
    silent.SILENT_FOR_ITER (FOR_ITERs taken too, after the conditional jumps);
    `chains`: silent.SILENT_CHAINS (the conditional jumps left taken again, chained)."""
    cdef carray.array branch_sides_at = _ints(nops, -1)
    if b.exact:
        return _ints(0, 0), branch_sides_at
    cdef _Prep p = b._prep
    cdef Py_ssize_t nseg = len(segments), i, k, at, base
    cdef int units = p.units
    # per unit: the FROM segment starting there; per segment: its first op; per
    # branch unit: the segments ending in it (a list through `chain`, in order)
    cdef int* mem = <int*>PyMem_Malloc(sizeof(int) * (3 * units + 5 * nseg + 5 + units + 1))
    if mem == NULL:
        raise MemoryError()
    cdef int* from_at = mem
    cdef int* head = mem + units
    cdef int* tail = mem + 2 * units
    cdef int* first = mem + 3 * units
    cdef int* chain = first + nseg + 1
    cdef int* ordered = chain + nseg + 1
    cdef int* ordered_loops = ordered + nseg + 1   # FOR_ITER units, after the branches
    cdef int* taken = ordered_loops + nseg + 1      # per segment: a silent branch's side
    cdef int* silent_at = taken + nseg + 1          # per unit: a silent branch or loop
    cdef int nloops = 0, item_local
    cdef bint loop, chained
    cdef const int* rc = (<carray.array>b.recs).data.as_ints
    cdef int* out = NULL
    cdef Py_ssize_t nout = 0, cap = 0
    cdef int u, nx, tg, code, e0, e1, last0, last1, start, kind, s1, local, j, br, nbr = 0
    cdef bint captures, clash
    cdef int* op
    cdef _Ops seg, s0, sA, o
    cdef list objs = [None] * nseg
    cdef int* bsa = branch_sides_at.data.as_ints
    try:
        for u in range(units):
            from_at[u] = -1
            head[u] = -1
            tail[u] = -1
            silent_at[u] = 0
        base = 0
        for i in range(nseg):
            taken[i] = 0
            t = <tuple>segments[i]
            kind = t[0]
            start = t[1]
            seg = <_Ops>t[2]
            objs[i] = seg
            first[i] = <int>base
            chain[i] = -1
            base += seg.n
            if kind == from_kind and 0 <= start <= p.n:
                from_at[start // 2] = <int>i  # (a later segment of the same start wins, as in a dict)
            if seg.n and (seg.data[5 * (seg.n - 1)] == M_BRANCH
                          or (loops and seg.data[5 * (seg.n - 1)] == M_FOR_ITER)):
                br = seg.data[5 * (seg.n - 1) + 1]
                if 0 <= br < p.n:
                    u = br // 2
                    if head[u] < 0:
                        head[u] = <int>i
                        if seg.data[5 * (seg.n - 1)] == M_BRANCH:
                            ordered[nbr] = u
                            nbr += 1
                        else:
                            ordered_loops[nloops] = u
                            nloops += 1
                    else:
                        chain[tail[u]] = <int>i
                    tail[u] = <int>i
        qsort(ordered, nbr, sizeof(int), _cmp_int)
        qsort(ordered_loops, nloops, sizeof(int), _cmp_int)
        # (the conditional jumps, the loops, then the conditional jumps left,
        # chained: silent.SilentBranches.silent_branches)
        for j in range(nbr + nloops + (nbr if chains else 0)):
            loop = nbr <= j < nbr + nloops
            chained = j >= nbr + nloops
            u = ordered_loops[j - nbr] if loop else ordered[j - nbr - nloops if chained else j]
            if silent_at[u]:
                continue
            nx = p.nxt[u]
            # (a jump or loop whose segments end a silent branch's side: that
            # side's end would be this silent BRANCH)
            i = head[u]
            while i >= 0 and not taken[i]:
                i = chain[i]
            if i >= 0:
                continue
            if loop:
                tg = _for_iter_exit_p(p, u)
            else:
                tg = p.target[u]
            if not (0 <= nx <= p.n and 0 <= tg <= p.n) or from_at[nx // 2] < 0 or from_at[tg // 2] < 0:
                continue
            s0 = <_Ops>objs[from_at[nx // 2]]
            sA = <_Ops>objs[from_at[tg // 2]]
            last0 = s0.data[5 * (s0.n - 1)]
            last1 = sA.data[5 * (sA.n - 1)]
            if last0 == M_LOST or last1 == M_LOST:
                continue
            if chained and last0 != M_BRANCH and last1 != M_BRANCH:
                continue   # (the first round's verdict: nothing since can change it)
            if not loop and not (_branch_side_ends_ok(p, s0, silent_at, u, chained)
                                 and _branch_side_ends_ok(p, sA, silent_at, u, chained)):
                continue
            if loop:
                if last0 == M_FOR_ITER or last1 == M_FOR_ITER \
                        or not _loop_side_ends_ok(p, s0, silent_at) \
                        or not _loop_side_ends_ok(p, sA, silent_at):
                    continue
                item_local = _item_stored(rc, objs, head[u], chain, s0)
                if item_local < 0:
                    continue
            e0 = s0.data[5 * (s0.n - 1) + 1] if last0 == M_END else -1
            e1 = sA.data[5 * (sA.n - 1) + 1] if last1 == M_END else -1
            if not _disjoint(p, s0, sA) or (e0 >= 0 and e0 == e1):
                continue
            # What replaying the branch's segments late reads from the frame.
            s1 = _next_lstamp(p)
            captures = False
            i = head[u]
            while i >= 0 and not captures:
                o = <_Ops>objs[i]
                for k in range(o.n):
                    op = o.data + 5 * k
                    code = op[0]
                    local = -1
                    if code == M_CAPTURE or code == M_CAPTURE_METHOD or (
                            code == M_RECORD and op[4] == 0 and not (loop and rc[op[2] + 3] == 0)):
                        captures = True
                        break
                    elif code == M_RECORD and op[4] > 0:
                        local = op[4] - 1
                    elif code == M_RECORD and op[4] == READ_STORED:
                        # (an UNPACK_SEQUENCE's outputs, read from the locals
                        # the STORE_LOCALs right after it store them in)
                        for j in range(rc[op[2] + 3]):
                            if k + 1 + j < o.n:
                                local = o.data[5 * (k + 1 + j) + 3]
                                if not _local_ok(p, local):
                                    raise AssertionError("a local index past the code's locals")
                                p.lstamp[local] = s1
                        local = -1
                    elif code == M_LOAD_LOCAL and op[4] & LF_SAFE:
                        local = op[3]
                    elif code == M_STORE_LOCAL and op[4] & LF_DYN:
                        local = op[3]
                    if local >= 0:
                        if not _local_ok(p, local):
                            raise AssertionError("a local index past the code's locals")
                        p.lstamp[local] = s1
                i = chain[i]
            if captures:
                continue
            clash = False
            for o in (s0, sA):
                for k in range(o.n):
                    op = o.data + 5 * k
                    local = op[3] if op[0] == M_STORE_LOCAL else (op[2] if op[0] == M_DELETE_LOCAL else -1)
                    if local >= 0 and _local_ok(p, local) and p.lstamp[local] == s1:
                        clash = True
                        break
                if clash:
                    break
            if clash:
                continue
            at = nout
            silent_at[u] = 1
            taken[from_at[nx // 2]] = 1
            taken[from_at[tg // 2]] = 1
            _grow_ints(&out, &cap, nout + 3)
            out[nout] = 2 * u
            out[nout + 1] = nx
            out[nout + 2] = tg
            nout += 3
            for o, e in ((s0, e0), (sA, e1)):
                ranges = _ranges(p, o)
                _grow_ints(&out, &cap, nout + 2 + len(ranges))
                out[nout] = e
                out[nout + 1] = <int>(len(ranges) // 2)
                nout += 2
                for r in ranges:
                    out[nout] = r
                    nout += 1
            i = head[u]
            while i >= 0:
                base = first[i]
                for k in range((<_Ops>objs[i]).n):
                    bsa[base + k] = <int>at
                i = chain[i]
        branch_sides = _ints(nout, 0)
        if nout:
            memcpy((<carray.array>branch_sides).data.as_ints, out, sizeof(int) * nout)
        return branch_sides, branch_sides_at
    finally:
        PyMem_Free(mem)
        PyMem_Free(out)


def straight_sides(ops, recs, seg_from, branch_sides, branch_sides_at, int side_straight):
    """silent.straight_sides, typed (the caller asks silent.STRAIGHT_SIDES): the
    sides of silent conditional jumps the core writes without its op loop, marked
    with `side_straight` (the sign) in their successor words, in place."""
    cdef Py_ssize_t nsides = len(branch_sides), nops = len(ops) // 5, i
    if nsides == 0 or nops == 0:
        return
    cdef const int* o = (<carray.array>ops).data.as_ints
    cdef const int* rc = (<carray.array>recs).data.as_ints
    cdef const int* sf = (<carray.array>seg_from).data.as_ints
    cdef int* sides = (<carray.array>branch_sides).data.as_ints
    cdef const int* at = (<carray.array>branch_sides_at).data.as_ints
    cdef Py_ssize_t nunits = len(seg_from)
    # per op: bit 1 the writer reaches its segment's END or terminal op from it,
    # bit 2 its segment's BRANCH; per branch word: bit 1 a branch some op of
    # whose segments does not reach it, bit 2 one that some op names
    cdef unsigned char* mark = <unsigned char*>PyMem_Malloc(nops + nsides)
    if mark == NULL:
        raise MemoryError()
    cdef unsigned char* bad = mark + nops
    cdef unsigned char m = 0
    cdef int opc, k, side, w, pc, rows = 0
    try:
        memset(bad, 0, nsides)
        for i in range(nops - 1, -1, -1):
            opc = o[5 * i]
            if opc == M_LOAD_LOCAL or opc == M_LOAD_CONST or opc == M_SET or opc == M_COPY \
                    or opc == M_SWAP or opc == M_CAPTURE:
                pass
            elif opc == M_RECORD and rc[o[5 * i + 2] + 3] == 1:
                rows += 1
            elif opc == M_BRANCH:
                m = 3
                rows = 0
            elif opc == M_RECORD_BOOL:
                if (m & 2) and i + 1 < nops and o[5 * (i + 1)] == M_BRANCH and rc[o[5 * i + 2] + 3] == 1:
                    m = 3
                else:
                    m = 1
                rows = 0
            elif opc == M_END or (opc > M_RECORD and opc != M_SILENT_JUMP):
                m = 1
                rows = 0
            else:
                m = 0
                rows = 0
            # (bit 1 only where the writer writes at most one row to the end)
            mark[i] = m if rows <= 1 else (m & 2)
        for i in range(nops):
            k = at[i]
            if 0 <= k < nsides:
                bad[k] |= 2 | (0 if mark[i] & 2 else 1)
        for k in range(nsides):
            if bad[k] != 2:
                continue
            for side in range(1, 3):
                w = sides[k + side] & ~side_straight
                if (w >> 1) < nunits:
                    pc = sf[w >> 1]
                    if 0 <= pc < nops and (mark[pc] & 1):
                        sides[k + side] |= side_straight
    finally:
        PyMem_Free(mark)


def flag_silent(unit_flags, ops, branch_sides_at, int silent_bit, seg_from):
    """plan._Builder.build's marking of silent branches: SILENT_BRANCH on the unit
    of each BRANCH or FOR_ITER op that ends a silent branch's segment; a silent
    FOR_ITER's `b` word: the local its body stores the next value in, + 1 (the
    body's first op, silent.SilentBranches._item_stored)."""
    cdef int* flags = (<carray.array>unit_flags).data.as_ints
    cdef int* o = (<carray.array>ops).data.as_ints
    cdef int* at = (<carray.array>branch_sides_at).data.as_ints
    cdef int* sf = (<carray.array>seg_from).data.as_ints
    cdef Py_ssize_t k
    for k in range(len(branch_sides_at)):
        if at[k] >= 0 and (o[k * 5] == M_BRANCH or o[k * 5] == M_FOR_ITER):
            flags[o[k * 5 + 1] // 2] |= silent_bit
            if o[k * 5] == M_FOR_ITER:
                o[k * 5 + 3] = o[sf[o[k * 5 + 4] // 2] * 5 + 3] + 1



def carry_masks(b, list segments, int units, int from_kind, written_first):
    """resume.ResumeCarry.carry_masks over the builder's unit arrays (only
    RESUMEs after a yield carry anything: their segments are looked up then)."""
    cdef _Prep p = b._prep
    carry = _ints(units, 0)
    cdef int u, d, nx
    by_start = None
    for u in range(p.n // 2):
        d = p.depth[u]
        if d <= 0 or not p.isstart[u] or p.opcode[u] != OP_RESUME or not p.arg[u]:
            continue
        if by_start is None:
            by_start = {(seg[0], seg[1]): seg[2] for seg in segments}
        live = (1 << min(d, 31)) - 1
        seg = by_start.get((from_kind, 2 * u))
        written = written_first(seg.tolist(), b.recs) if seg else 0
        nx = p.nxt[u]
        if 0 <= nx < p.n and p.isstart[nx // 2] and p.opcode[nx // 2] == _pop_top:
            written |= 1 << (d - 1)
        carry[u] = live & ~written
    return carry
