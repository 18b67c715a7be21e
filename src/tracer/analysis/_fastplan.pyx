# cython: language_level=3
"""The plan builder's layout pass, typed: co_code and co_exceptiontable decoded
straight into C arrays (opcode, arg, next offset, target per code unit), the static
stack depths walked over int arrays, the basic blocks found from per-opcode flags.

It gives exactly what `bytecode.layout(code, fast=True)` gives (the same Instr,
Handler and Block objects, dicts in the same order); tests/plan_compare.py holds
the two to it over the corpus and the stdlib.  The opcode tables are dis's own,
read once per interpreter by bytecode.py and handed over in `init` (this module
imports nothing of tracer: bytecode.py imports it).
"""

from cpython.mem cimport PyMem_Malloc, PyMem_Free
from libc.string cimport memset

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
    cdef long long ext
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
                if _flags[op] & F_EXTENDED_ARG:
                    ext = (<long long>arg) << 8
                    if ext >= 2147483648:
                        ext -= 4294967296
                    extended = <int>ext
                else:
                    extended = 0
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
                                        d + _stack_effect(op, arg_obj, jump=True)))
                    nx = nxt_of[off // 2]
                    if not (_flags[op] & F_NO_FALLTHROUGH) and nx < n and nxt_of[nx // 2] > 0:
                        pending.append((nx, d + _stack_effect(op, arg_obj, jump=False)))
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
        for ins in instrs:
            off = ins.offset
            if leader[off // 2] or blk is None:
                blk = _Block(len(blocks) + 1, off, ins.next)
                blocks.append(blk)
            blk.instrs.append(ins)
            blk.end = ins.next
            block_of[off] = blk.id
        return _CodeLayout(instrs, by_offset, blocks, block_of, depth_dict, handlers,
                           handler_targets)
    finally:
        PyMem_Free(nxt_of)
