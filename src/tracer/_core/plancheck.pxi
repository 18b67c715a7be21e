# The load-time check of a plan read from disk, in one C pass over its arrays.
#
# The rules are stated in Python in tracer/analysis/plancheck.py (plan_violation,
# the reference: numpy range checks, also run on freshly built plans under
# TRACER_CHECK_PLANS=1); this is the same set of rules as loops over the int32
# items, so that loading a cached plan costs microseconds instead of ~100 numpy
# calls.  tests/test_plan_cache_checks.py holds the two to the same verdict on
# every kind of bad value and on random flips.  The messages name the first rule
# broken; they need not be the reference's (which reports another first one when
# several break).

from cpython.array cimport array as _CArray
from cpython.buffer cimport (PyObject_CheckBuffer, PyObject_GetBuffer, PyBuffer_Release,
                             PyBUF_FORMAT, PyBUF_C_CONTIGUOUS)
from cpython.object cimport Py_SIZE
from types import CodeType as _CodeType

cdef int64_t _INT32_MIN = -2147483648

cdef int _NMICRO = M_SEND + 1
cdef int _NSEM = R_SPECIAL + 1
cdef int _NIV = IV_BOOL + 1
cdef int _LF_ALL = LF_SAFE | LF_CELL | LF_DYN
cdef int _UF_ALL = JUMP_EVENT | SILENT_BRANCH
cdef int _NSPECIAL = 3   # SET_NULL, SET_UNKNOWN, SET_DYN

# Operand roles (plancheck._ROLES): which range an op's a, b or c word must be in.
cdef enum:
    _R_ANY = 0
    _R_STACK = 1
    _R_LOCAL = 2
    _R_CONST = 3
    _R_RAISE = 4
    _R_OFFSET = 5
    _R_SPECIAL = 6
    _R_FLAGS = 7
    _R_DEFER = 8
    _R_ITEM = 9        # a FOR_ITER's b: a local + 1 (a silent loop) or 0

cdef uint8_t _ROLE[M_SEND + 1][3]
memset(_ROLE, _R_ANY, sizeof(_ROLE))
for _op, _roles in (
        (M_LOAD_LOCAL, (_R_STACK, _R_LOCAL, _R_FLAGS)), (M_STORE_LOCAL, (_R_STACK, _R_LOCAL, _R_FLAGS)),
        (M_LOAD_CONST, (_R_STACK, _R_CONST, _R_ANY)), (M_SET, (_R_STACK, _R_SPECIAL, _R_ANY)),
        (M_DELETE_LOCAL, (_R_LOCAL, _R_ANY, _R_ANY)), (M_COPY, (_R_STACK, _R_STACK, _R_ANY)),
        (M_SWAP, (_R_STACK, _R_STACK, _R_ANY)), (M_CAPTURE, (_R_STACK, _R_ANY, _R_ANY)),
        (M_CAPTURE_METHOD, (_R_STACK, _R_STACK, _R_ANY)), (M_RECORD, (_R_ANY, _R_ANY, _R_DEFER)),
        (M_BRANCH, (_R_STACK, _R_ANY, _R_OFFSET)), (M_FOR_ITER, (_R_ANY, _R_ITEM, _R_OFFSET)),
        (M_RETURN, (_R_STACK, _R_ANY, _R_ANY)), (M_RETURN_CONST, (_R_CONST, _R_ANY, _R_ANY)),
        (M_YIELD, (_R_STACK, _R_ANY, _R_ANY)), (M_RAISE, (_R_RAISE, _R_ANY, _R_ANY)),
        (M_SILENT_JUMP, (_R_ANY, _R_ANY, _R_OFFSET)), (M_SEND, (_R_ANY, _R_OFFSET, _R_OFFSET))):
    for _k in range(3):
        _ROLE[_op][_k] = _roles[_k]


cdef inline bint _pc_closing(int32_t c) noexcept:
    # Ops a segment walk stops at (the core's _run_to_end, _segment_ends).
    return c == M_END or (c >= M_BRANCH and c != M_SILENT_JUMP)


cdef inline bint _pc_is_record(int32_t c) noexcept:
    return c == M_RECORD or c == M_RECORD_BOOL or c == M_FOR_ITER or c == M_SEND


cdef struct _Ints:
    const int32_t *p
    Py_ssize_t n


cdef bint _pc_touched(_Ints ops, _Ints recs, _Ints depth, Py_ssize_t i, Py_ssize_t end,
                      int64_t x) noexcept:
    """Whether an op after record op i up to `end` (its END), other than its own
    instruction's, writes, pops or moves stack slot `x` or below, or has a stack
    depth at or below `x` (analysis/plancheck.py's _waiting_outputs).  The ops
    after i and their records were checked before (the records loop runs backwards)."""
    cdef Py_ssize_t p, j
    cdef const int32_t *q
    cdef const int32_t *r
    cdef int32_t own = ops.p[i * OP_WORDS + OP_OFFSET]
    cdef int32_t c
    cdef int64_t low
    for p in range(i + 1, end + 1):
        q = ops.p + p * OP_WORDS
        if q[OP_OFFSET] == own:
            continue
        if depth.p[q[OP_OFFSET] >> 1] <= x:
            return True
        if p == end:
            break
        c = q[OP_CODE]
        low = 1 << 40
        if (c == M_LOAD_LOCAL or c == M_LOAD_CONST or c == M_SET or c == M_STORE_LOCAL
                or c == M_COPY or c == M_SWAP):
            low = q[OP_A]
        if c == M_SWAP and q[OP_B] < low:
            low = q[OP_B]
        if _pc_is_record(c):
            r = recs.p + q[OP_A]
            for j in range(r[REC_NIN] + r[REC_NOUT]):
                if 0 <= r[REC_INPUTS + j] < low:
                    low = r[REC_INPUTS + j]
        if low <= x:
            return True
    return False


# The buffers plan_problem reads through the buffer protocol (a loaded plan's arrays
# in place in their pack: tracer.analysis._fastcache.PlanInts), held until it returns.
cdef enum:
    _MAX_HELD = 20

cdef struct _Held:
    Py_buffer views[_MAX_HELD]
    int n


cdef bint _int32_format(const char *f) noexcept:
    # "i", or "i" with a native or little-endian byte-order mark (the core runs on
    # little-endian machines only where plans come from a cache).
    if f == NULL:
        return False
    if f[0] == b'@' or f[0] == b'=' or f[0] == b'<':
        f += 1
    return f[0] == b'i' and f[1] == 0


cdef object _ints_of(object x, _Ints *v, list keep, _Held *held):
    # The int32 items of `x` without a copy for an array('i') or another exporter of
    # a contiguous run of int32s (held in `held` until the check ends), else copied
    # into an array('i') (kept alive in `keep`); a message if they are not int32s.
    cdef _CArray a
    cdef Py_buffer *view
    if type(x) is _CArray and (<_CArray>x).ob_descr.typecode == b'i' \
            and (<_CArray>x).ob_descr.itemsize == 4:
        a = <_CArray>x
        v.p = <const int32_t *>a.data.as_ints
        v.n = Py_SIZE(a)
        return None
    if PyObject_CheckBuffer(x) and held.n < _MAX_HELD:
        view = &held.views[held.n]
        try:
            PyObject_GetBuffer(x, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS)
        except (BufferError, TypeError, ValueError):
            view = NULL
        if view != NULL:
            held.n += 1
            if view.ndim == 1 and view.itemsize == 4 and _int32_format(view.format) \
                    and (<size_t>view.buf & 3) == 0:
                v.p = <const int32_t *>view.buf
                v.n = view.len // 4
                return None
    try:
        a = _CArray("i", x)
    except (TypeError, OverflowError, ValueError):
        return "is not a sequence of int32"
    keep.append(a)
    v.p = <const int32_t *>a.data.as_ints
    v.n = Py_SIZE(a)
    return None


cdef inline object _field(object plan, str name):
    if type(plan) is dict:
        return (<dict>plan)[name]
    return getattr(plan, name)


cdef inline str _out(str what, Py_ssize_t at, int64_t value, int64_t lo, int64_t hi):
    return f"{what}[{at}] = {value}, not in [{lo}, {hi})"


cdef extern from *:
    """
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* Whether one of the n int32 items at p is outside [lo, lo + span) (span >= 1),
       or, with `even`, odd: one pass with no branch per item, four items a step
       where SSE2 is there (every x86-64). */
    static int tracer_pc_outside(const int32_t *p, Py_ssize_t n, int32_t lo, uint32_t span,
                                 int even) {
        uint32_t bad = 0, bits = 0;
        Py_ssize_t i = 0;
    #if defined(__SSE2__)
        const __m128i vlo = _mm_set1_epi32(lo);
        const __m128i flip = _mm_set1_epi32((int)0x80000000u);
        const __m128i last = _mm_set1_epi32((int)((span - 1u) ^ 0x80000000u));
        __m128i vbad = _mm_setzero_si128(), vbits = _mm_setzero_si128();
        uint32_t lanes[4];
        for (; i + 4 <= n; i += 4) {
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
            /* (x - lo) as an unsigned number > span - 1, by a signed compare of both
               with their top bit flipped */
            __m128i d = _mm_xor_si128(_mm_sub_epi32(x, vlo), flip);
            vbad = _mm_or_si128(vbad, _mm_cmpgt_epi32(d, last));
            vbits = _mm_or_si128(vbits, x);
        }
        vbad = _mm_or_si128(vbad, vbits = _mm_and_si128(vbits, _mm_set1_epi32(even ? 1 : 0)));
        _mm_storeu_si128((__m128i *)(void *)lanes, vbad);
        bad = lanes[0] | lanes[1] | lanes[2] | lanes[3];
    #endif
        for (; i < n; i++) {
            bad |= ((uint32_t)p[i] - (uint32_t)lo) > span - 1u;
            bits |= (uint32_t)p[i];
        }
        return bad != 0 || (even && (bits & 1u));
    }
    """
    bint tracer_pc_outside(const int32_t *p, Py_ssize_t n, int32_t lo, uint32_t span,
                           bint even) noexcept


cdef object _check_range(str what, _Ints v, int64_t lo, int64_t hi, bint even):
    # One pass over the array (tracer_pc_outside); only an array that fails is
    # walked again, for the first bad item's message.
    cdef Py_ssize_t i
    if v.n == 0:
        return None
    if -2147483648 <= lo < hi and hi - lo <= 4294967296 \
            and not tracer_pc_outside(v.p, v.n, <int32_t>lo, <uint32_t>(hi - lo), even):
        return None
    for i in range(v.n):
        if not lo <= v.p[i] < hi:
            return _out(what, i, v.p[i], lo, hi)
        if even and v.p[i] & 1:
            return f"{what}[{i}] = {v.p[i]}: an instruction offset is odd"
    return None


def plan_problem(plan, code):
    """The first invariant `plan` (a CodePlan, or a dict of its fields with array('i'),
    other buffers of int32s or int sequences) breaks for `code`, as a sentence, or
    None when the core may use it: the rules of
    tracer.analysis.plancheck.plan_violation, in one C pass."""
    cdef _Held held
    cdef int i
    held.n = 0
    try:
        return _plan_problem(plan, code, &held)
    finally:
        for i in range(held.n):
            PyBuffer_Release(&held.views[i])


cdef object _plan_problem(object plan, object code, _Held *held):
    cdef list keep = []
    cdef _Ints ops, recs, rec_iv, seg_at, seg_from, depth, handler, istart, unit_flags
    cdef _Ints piece_start, sides, sides_at, carry, events, jumps, cells
    cdef Py_ssize_t i, j, k, p, nops, nrecs, nunits, nsides, n
    cdef int64_t ncode, nlp, ss, nconsts, nstatics, nparams, h, x, lo, hi, st, nin, nout
    cdef int64_t d, w, last_bool, last_stop
    cdef int64_t role_lo[_R_ITEM + 1]
    cdef int64_t role_hi[_R_ITEM + 1]
    cdef int32_t opc, role, kw
    cdef const int32_t *op
    cdef const int32_t *rec
    cdef int32_t closer
    cdef uint8_t *starts = NULL
    if not isinstance(code, _CodeType):
        raise TypeError(f"plan_problem checks a plan against a code object, not {type(code).__name__}")
    ncode = 2 * Py_SIZE(code)   # code units of 2 bytes: len(co_code)
    nunits = <Py_ssize_t>(ncode // 2)
    nlp = tracer_code_nlocalsplus(<PyObject *>code)
    ss = code.co_stacksize
    nconsts = len(code.co_consts)
    statics = _field(plan, "statics")
    if type(statics) is not list:
        return "statics is not a list"
    nstatics = len(<list>statics)
    problem = (_ints_of(_field(plan, "ops"), &ops, keep, held)
               or _ints_of(_field(plan, "recs"), &recs, keep, held)
               or _ints_of(_field(plan, "rec_iv"), &rec_iv, keep, held)
               or _ints_of(_field(plan, "seg_at"), &seg_at, keep, held)
               or _ints_of(_field(plan, "seg_from"), &seg_from, keep, held)
               or _ints_of(_field(plan, "depth"), &depth, keep, held)
               or _ints_of(_field(plan, "handler"), &handler, keep, held)
               or _ints_of(_field(plan, "istart"), &istart, keep, held)
               or _ints_of(_field(plan, "unit_flags"), &unit_flags, keep, held)
               or _ints_of(_field(plan, "piece_start"), &piece_start, keep, held)
               or _ints_of(_field(plan, "branch_sides"), &sides, keep, held)
               or _ints_of(_field(plan, "branch_sides_at"), &sides_at, keep, held)
               or _ints_of(_field(plan, "carry"), &carry, keep, held)
               or _ints_of(_field(plan, "events"), &events, keep, held)
               or _ints_of(_field(plan, "jump_events"), &jumps, keep, held))
    if problem is not None:
        return f"an array {problem}"
    param_cells = _field(plan, "param_cells")
    for c in param_cells:
        if type(c) is not int:
            return "param_cells names no parameter"
    if _ints_of(param_cells, &cells, keep, held) is not None:
        return "param_cells names no parameter"
    if ops.n % OP_WORDS:
        return "ops is not whole micro-ops"
    nops = ops.n // OP_WORDS
    nrecs = recs.n
    nsides = sides.n
    if (seg_at.n != nunits or seg_from.n != nunits or depth.n != nunits or handler.n != nunits
            or istart.n != nunits or unit_flags.n != nunits or carry.n != nunits):
        return f"the per-code-unit arrays do not have {nunits} entries"
    if piece_start.n != nops or sides_at.n != nops:
        return "piece_start/branch_sides_at are not one per micro-op"
    if rec_iv.n != nrecs:
        return "rec_iv is not parallel to recs"
    nparams_obj = _field(plan, "nparams")
    if type(nparams_obj) is not int or not 0 <= nparams_obj <= nlp:
        return "nparams is not the number of parameters"
    nparams = nparams_obj
    for i in range(cells.n):
        if not 0 <= cells.p[i] < nparams:
            return "param_cells names no parameter"

    # -- per code unit ------------------------------------------------------------------
    problem = (_check_range("seg_at", seg_at, -1, nops, False)
               or _check_range("seg_from", seg_from, -1, nops, False)
               or _check_range("depth", depth, -1, ss + 1, False)
               or _check_range("istart", istart, 0, ncode, True)
               or _check_range("unit_flags", unit_flags, 0, _UF_ALL + 1, False)
               or _check_range("rec_iv", rec_iv, 0, _NIV, False)
               or _check_range("events", events, 0, ncode, True)
               or _check_range("jump_events", jumps, 0, ncode, True))
    if problem is not None:
        return problem
    for i in range(nunits):
        # A handler's exception lands in stack slot depth + lasti: h + (h & 1) is
        # twice it (-1: no handler).
        h = handler.p[i]
        if (h < -1) or (h >= 0 and h + (h & 1) >= 2 * ss):
            return _out("handler (2 * exception slot)", i, h, -1, 2 * ss)
        # carry: bits of stack slots a resumed generator brings, all live by the depth.
        d = depth.p[i]
        if carry.p[i] >> (0 if d < 0 else (31 if d > 31 else d)) != 0:
            return _out("carry beyond the depth", i, carry.p[i], 0, 1)

    # -- micro-ops ----------------------------------------------------------------------
    if nops == 0:
        if nsides:
            return "silent branches in a plan with no micro-ops"
        return None
    # The range of each operand role in this code object (_R_ANY is never looked up).
    role_lo[_R_STACK], role_hi[_R_STACK] = 0, ss
    role_lo[_R_LOCAL], role_hi[_R_LOCAL] = 0, nlp
    role_lo[_R_CONST], role_hi[_R_CONST] = 0, nconsts
    role_lo[_R_RAISE], role_hi[_R_RAISE] = _INT32_MIN, ss
    role_lo[_R_OFFSET], role_hi[_R_OFFSET] = 0, ncode
    role_lo[_R_SPECIAL], role_hi[_R_SPECIAL] = 0, _NSPECIAL
    role_lo[_R_FLAGS], role_hi[_R_FLAGS] = 0, _LF_ALL + 1
    # _R_DEFER: a local + 1 (> 0), READ_RETURNED (< 0) or 0
    role_lo[_R_DEFER], role_hi[_R_DEFER] = _INT32_MIN, nlp + 1
    role_lo[_R_ITEM], role_hi[_R_ITEM] = 0, nlp + 1
    last_bool = -1
    last_stop = -1
    for i in range(nops):
        op = ops.p + i * OP_WORDS
        opc = op[OP_CODE]
        if not 0 <= opc < _NMICRO:
            return _out("micro-op code", i, opc, 0, _NMICRO)
        if not 0 <= op[OP_OFFSET] < ncode or op[OP_OFFSET] & 1:
            return _out("op offset", i, op[OP_OFFSET], 0, ncode)
        if not 0 <= piece_start.p[i] < ncode:
            return _out("piece_start", i, piece_start.p[i], 0, ncode)
        if not -1 <= sides_at.p[i] < nsides:
            return _out("branch_sides_at", i, sides_at.p[i], -1, nsides)
        if opc == M_RECORD_BOOL:
            last_bool = i
        elif opc >= M_RECORD and opc != M_SILENT_JUMP:
            last_stop = i
        # Each operand word against the range its role gives it in this code object.
        for k in range(3):
            role = _ROLE[opc][k]
            if role == _R_ANY:
                continue
            w = op[OP_A + k]
            lo = role_lo[role]
            hi = role_hi[role]
            if not lo <= w < hi:
                return f"operand op {i} word {'abc'[k]} = {w}, not in [{lo}, {hi})"
            if role == _R_OFFSET and w & 1:
                return f"operand op {i} word {'abc'[k]} = {w}: an instruction offset is odd"
        # Stack values read off the frame at an op's own instruction (CAPTURE and
        # CAPTURE_METHOD at their END's) must be live there.
        if opc == M_CAPTURE or opc == M_CAPTURE_METHOD:
            w = op[OP_A] if op[OP_A] > op[OP_B] else op[OP_B]
            if not 0 <= w < depth.p[op[OP_OFFSET] >> 1]:
                return _out("captured slot", i, w, 0, depth.p[op[OP_OFFSET] >> 1])
    opc = ops.p[(nops - 1) * OP_WORDS + OP_CODE]
    if not _pc_closing(opc) or opc == M_RECORD_BOOL:
        return "the last micro-op does not close its segment"
    # A RECORD_BOOL's segment is closed by the op after it (the core's _send_returned
    # scans for one >= M_RECORD, neither a silent jump nor a RECORD_BOOL).
    if last_bool >= 0 and last_stop < last_bool:
        return "a RECORD_BOOL is not followed by the op closing its segment"

    # -- records --------------------------------------------------------------------------
    closer = -1   # the closing op at or after op i, found walking backwards
    for i in range(nops - 1, -1, -1):
        op = ops.p + i * OP_WORDS
        opc = op[OP_CODE]
        if _pc_closing(opc):
            closer = <int32_t>i
        if not _pc_is_record(opc):
            continue
        st = op[OP_A]
        if not 0 <= st <= nrecs - REC_INPUTS:
            return _out("record number", i, st, 0, nrecs - REC_INPUTS + 1)
        rec = recs.p + st
        nin = rec[REC_NIN]
        nout = rec[REC_NOUT]
        if not 0 <= rec[REC_SEM] < _NSEM:
            return _out("record semantics", st, rec[REC_SEM], 0, _NSEM)
        if not -1 <= rec[REC_FN] < nstatics:
            return _out("record function (static)", st, rec[REC_FN], -1, nstatics)
        kw = rec[REC_KW]
        if not -1 <= kw < nstatics:
            return _out("record keyword names (static)", st, kw, -1, nstatics)
        if nin < 0 or nout < 0:
            return f"record {st}: input or output count below 0"
        if st + REC_INPUTS + nin + nout > nrecs:
            return f"record {st}: its end {st + REC_INPUTS + nin + nout} is past the records ({nrecs})"
        # What the core reads without looking at nin/nout: the output of a
        # RECORD_BOOL or SEND, the iterator slot of a FOR_ITER.
        if (opc == M_RECORD_BOOL or opc == M_SEND) and nout < 1:
            return f"record {st}: a RECORD_BOOL or SEND without an output"
        if opc == M_FOR_ITER and (nin < 1 or not 0 <= rec[REC_INPUTS] < ss):
            return f"record {st}: a FOR_ITER without an iterator slot"
        # READ_STORED: an UNPACK_SEQUENCE's outputs read from the locals the
        # STORE_LOCALs after it store them in (_stored_output stops at any other op).
        if opc == M_RECORD and op[OP_C] == READ_STORED and nout < 2:
            return f"record {st}: READ_STORED with fewer than two outputs"
        # Inputs are stack slots or statics (-(index + 1)), outputs stack slots.
        for j in range(nin):
            if not -nstatics <= rec[REC_INPUTS + j] < ss:
                return _out("record slot or static", st + REC_INPUTS + j, rec[REC_INPUTS + j],
                            -nstatics, ss)
        # Outputs the recorder reads off the frame at the END closing their segment
        # must be live there (the builder's _check_reads).
        lo = 0
        hi = ss
        if opc == M_RECORD and op[OP_C] == 0 and ops.p[closer * OP_WORDS + OP_CODE] == M_END:
            d = depth.p[ops.p[closer * OP_WORDS + OP_OFFSET] >> 1]
            hi = d if d < ss else ss
            if d < 0:
                hi = 0
        for j in range(nin, nin + nout):
            if not lo <= rec[REC_INPUTS + j] < hi:
                return _out("record output slot", st + REC_INPUTS + j, rec[REC_INPUTS + j],
                            lo, hi)
        # An output that waits on the stack past other ops (plain plans) is also read
        # when a frame starts or an exception is raised at one of them (_run): no op
        # up to the END may touch its slot, and the depth may not drop to it.
        if opc == M_RECORD and op[OP_C] == 0 and ops.p[closer * OP_WORDS + OP_CODE] == M_END:
            if nout > 0 and closer > i + 1:
                x = rec[REC_INPUTS + nin]
                for j in range(nin + 1, nin + nout):
                    if rec[REC_INPUTS + j] > x:
                        x = rec[REC_INPUTS + j]
                if _pc_touched(ops, recs, depth, i, closer, x):
                    return (f"record output slot {x} at offset {op[OP_OFFSET]} "
                            f"does not stay on the stack")
        if kw >= 0:
            names = (<list>statics)[kw]
            if type(names) is not tuple:
                return f"static {kw} holds keyword names that are not a tuple of strings"
            for s in <tuple>names:
                if type(s) is not str:
                    return f"static {kw} holds keyword names that are not a tuple of strings"

    # -- silent branches ----------------------------------------------------------------
    # Per branch: its offset, next, target, then per side its END (or -1), the
    # number of ranges and the ranges.  Which words start one (for branch_sides_at).
    if nsides:
        starts = <uint8_t *>calloc(nsides, 1)
        if starts == NULL:
            raise MemoryError()
        try:
            k = 0
            while k < nsides:
                starts[k] = 1
                p = k + 3
                for j in range(2):
                    if p + 2 > nsides or not 0 <= sides.p[p + 1] <= (nsides - p - 2) // 2:
                        return "branch_sides is cut short"
                    p += 2 + 2 * sides.p[p + 1]
                for j in (1, 2):
                    # (its sign: that side written without the op loop,
                    # SIDE_STRAIGHT; any side may have it, the writer hands
                    # what it cannot finish to the loop)
                    w = sides.p[k + j] & SIDE_OFFSET
                    if not 0 <= w < ncode or w & 1:
                        return _out("silent branch successor", k + j, w, 0, ncode)
                k = p
            for i in range(nops):
                if sides_at.p[i] >= 0 and not starts[sides_at.p[i]]:
                    return "branch_sides_at names no silent branch"
        finally:
            free(starts)
    else:
        for i in range(nops):
            if sides_at.p[i] >= 0:
                return "branch_sides_at names no silent branch"
    return None
