# Per-code plans in C form (CPlan), cached on the code object (PEP 523 co_extra).

from cpython.array cimport array as _PlanArray
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_FORMAT, PyBUF_C_CONTIGUOUS

# ---------------------------------------------------------------------------------
# Per-code plans, cached on the code object (PEP 523 co_extra)

ctypedef struct CPlan:
    PyObject *owner          # the tracer.plan.CodePlan (strong reference)
    PyObject *consts         # code.co_consts (borrowed from owner)
    PyObject *statics        # list (borrowed from owner)
    int32_t *ops
    int32_t *recs
    int32_t *rec_iv          # per record start: IV_* (which records contexts may change)
    int32_t *seg_at
    int32_t *seg_from
    int32_t *depth
    int32_t *handler
    int32_t *istart
    int32_t *seg_end         # per op: offset of the END closing its segment, or -1
    # Per op: what a body's return does to its caller's open call op at it
    # (_return_targets): (output slot << 1) | _call_then_end, or -1 (nothing).
    int32_t *ret_to
    # Per op: what _enter_plain reads of a call op (_call_entries): its offset
    # in the high half, (first input's index in recs << 8) | nin in the low
    # half; -1 for an op a plain entry never enters under.
    int64_t *call_in
    int32_t *piece_start        # per op: first offset of its straight-line piece
    int32_t *unit_flags      # per code unit: JUMP_EVENT | SILENT_BRANCH (tracer.plan)
    int32_t *branch_sides           # the successors of silent branches (plan.silent_branches)
    int32_t *branch_sides_at        # per op: index in branch_sides of the silent branch ending its segment
    int32_t *carry           # per code unit: stack slots a generator resumed there brings (bits)
    int32_t nunits
    int32_t nlocalsplus
    int32_t stacksize
    int32_t nparams
    int64_t session          # the recording session that last used it
    int64_t plain_session    # the session whose _enter_plain found its per-plan checks
                             # passed (events.pxi's _plain_plan), or -1: one compare a call
    int32_t code_id          # its code id in that session's trace
    int32_t ncellparams
    int32_t cellparams[8]
    int32_t own              # the code's _own_verdict (contexts.pxi), 0 until first asked
    # Pool refs of co_consts entries and statics already added to the current
    # session's pool (0: not yet), so each constant is pooled once per trace.
    int32_t nconsts
    int32_t nstatics
    int32_t *const_refs
    int32_t *static_refs
    # The most rows, and refs, one run of the op loop writes between slow ops
    # (_run_budget): what it reserves in the columns before it starts.
    int32_t run_rows
    int32_t run_refs
    # ...and one run that takes a silent branch on its way (_run_ops): the rows
    # and refs of two runs, the bool's and the jump's.
    int32_t branch_run_rows
    int32_t branch_run_refs
    # 3.12, plain plans: a compare's jump whose event may be off (compare312.pxi):
    # per code unit CMP_* bits, per op the guard of the segment it starts (-1:
    # none), the guard programs; NULL where the plan has no such compare.
    uint8_t *cmp_unit
    int32_t *cmp_guard
    int32_t *cmp_prog
    # Per code unit, for the INSTRUCTION event after a call (aftercall.pxi) and a
    # delegation's yield (resume.pxi): their bits; NULL until needed.
    uint16_t *end_skip
    # Whether the plan has a bool call site (aftercall.pxi's BOOL_CALL): 0 not
    # looked at yet, 1 none, 2 some (then end_skip is made).
    uint8_t bool_sites


cdef void _free_plan(void *p) noexcept:
    cdef CPlan *plan = <CPlan *>p
    if plan != NULL:
        Py_XDECREF(plan.owner)
        free(plan.const_refs)
        free(plan.static_refs)
        free(plan.seg_end)
        free(plan.ret_to)
        free(plan.call_in)
        free(plan.end_skip)
        free(plan.cmp_unit)
        free(plan.cmp_guard)
        free(plan.cmp_prog)
        free(plan)


# One co_extra slot per plan variant (PlanMode).
cdef Py_ssize_t CODE_EXTRA_INDEX[4]
for _mode in range(4):
    CODE_EXTRA_INDEX[_mode] = PyUnstable_Eval_RequestCodeExtraIndex(_free_plan)


cdef inline Py_ssize_t _extra_index(int mode) noexcept:
    return CODE_EXTRA_INDEX[mode]


cdef extern from *:
    """
    /* PyUnstable_Code_GetExtra's read, inline: a code object's co_extra is
       CPython's _PyCodeObjectExtra (pycore_code.h: the slot count, then the
       slots), the same on 3.12 and 3.13; other versions call the function. */
    static inline void *tracer_code_extra(PyObject *code, Py_ssize_t index) {
    #if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030E0000
        typedef struct { Py_ssize_t ce_size; void *ce_extras[1]; } tracer_extra_t;
        tracer_extra_t *e = (tracer_extra_t *)((PyCodeObject *)code)->co_extra;
        return (e != NULL && index < e->ce_size) ? e->ce_extras[index] : NULL;
    #else
        void *extra = NULL;
        PyUnstable_Code_GetExtra(code, index, &extra);
        return extra;
    #endif
    }
    """
    void *_code_extra "tracer_code_extra"(object code, Py_ssize_t index) noexcept


cdef inline CPlan *_entry_plan(object code, int mode) noexcept:
    # replay.pxi's _cached_plan without the call (the plain entry's; `code` is
    # the code object a PY_START event hands over).
    return <CPlan *>_code_extra(code, CODE_EXTRA_INDEX[mode])


cdef inline int32_t *_buffer_address(object arr) except? NULL:
    # The address of an array('i')'s items, read off the array (no buffer_info()
    # call and tuple: 13 per plan); the arrays are never resized after the plan is
    # built, and the CPlan keeps their owner alive.  A loaded plan's arrays are
    # int32 runs in place in their pack's bytes (immutable; analysis/_fastcache's
    # PlanInts): read through the buffer protocol.
    cdef Py_buffer view
    cdef int32_t *p
    if type(arr) is _PlanArray and (<_PlanArray>arr).ob_descr.typecode == b'i':
        return <int32_t *>(<_PlanArray>arr).data.as_ints
    PyObject_GetBuffer(arr, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS)
    p = <int32_t *>view.buf
    if view.itemsize != 4 or view.ndim != 1:
        PyBuffer_Release(&view)
        raise TypeError(f"a plan's arrays hold int32 items, not {type(arr).__name__}")
    PyBuffer_Release(&view)
    return p


cdef CPlan *_plan_for(object code, int mode=PLAN_PLAIN) except NULL:
    cdef void *extra = NULL
    cdef Py_ssize_t index = _extra_index(mode)
    if PyUnstable_Code_GetExtra(code, index, &extra) < 0:
        raise RuntimeError("tracer: cannot read the code object's extra slot")
    if extra != NULL:
        return <CPlan *>extra
    owner = _host("build_plan")(code, mode)
    # build_plan runs Python code: another thread may have stored a plan since.
    if PyUnstable_Code_GetExtra(code, index, &extra) == 0 and extra != NULL:
        return <CPlan *>extra
    cdef CPlan *plan = <CPlan *>malloc(sizeof(CPlan))
    if plan == NULL:
        raise MemoryError()
    memset(plan, 0, sizeof(CPlan))
    Py_INCREF(owner)
    plan.owner = <PyObject *>owner
    plan.consts = <PyObject *>code.co_consts
    plan.statics = <PyObject *>owner.statics
    plan.ops = _buffer_address(owner.ops)
    plan.recs = _buffer_address(owner.recs) if len(owner.recs) else NULL
    plan.rec_iv = _buffer_address(owner.rec_iv) if len(owner.rec_iv) else NULL
    plan.seg_at = _buffer_address(owner.seg_at)
    plan.seg_from = _buffer_address(owner.seg_from)
    plan.depth = _buffer_address(owner.depth)
    plan.handler = _buffer_address(owner.handler)
    plan.istart = _buffer_address(owner.istart)
    plan.piece_start = _buffer_address(owner.piece_start)
    plan.unit_flags = _buffer_address(owner.unit_flags)
    plan.branch_sides = _buffer_address(owner.branch_sides) if len(owner.branch_sides) else NULL
    plan.branch_sides_at = _buffer_address(owner.branch_sides_at)
    plan.carry = _buffer_address(owner.carry)
    plan.nunits = len(owner.seg_at)
    plan.nlocalsplus = tracer_code_nlocalsplus(<PyObject *>code)
    plan.stacksize = code.co_stacksize
    plan.nparams = owner.nparams
    plan.session = -1
    plan.plain_session = -1
    plan.nconsts = len(code.co_consts)
    plan.nstatics = len(owner.statics)
    plan.const_refs = <int32_t *>calloc(plan.nconsts + 1, sizeof(int32_t))
    plan.static_refs = <int32_t *>calloc(plan.nstatics + 1, sizeof(int32_t))
    if plan.const_refs == NULL or plan.static_refs == NULL:
        _free_plan(plan)
        raise MemoryError()
    plan.seg_end = _segment_ends(plan.ops, len(owner.ops) // OP_WORDS)
    plan.ret_to = _return_targets(plan, len(owner.ops) // OP_WORDS)
    plan.call_in = _call_entries(plan, len(owner.ops) // OP_WORDS)
    if plan.seg_end == NULL or plan.ret_to == NULL or plan.call_in == NULL:
        _free_plan(plan)
        raise MemoryError()
    _run_budget(plan, len(owner.ops) // OP_WORDS)
    if TRACER_PY312 and mode == PLAN_PLAIN:
        try:
            _compare_guards(plan, code, len(owner.ops) // OP_WORDS)
        except BaseException:
            _free_plan(plan)
            raise
    cells = owner.param_cells[:8]
    plan.ncellparams = len(cells)
    for i, c in enumerate(cells):
        plan.cellparams[i] = c
    if PyUnstable_Code_SetExtra(code, index, plan) < 0:
        _free_plan(plan)
        raise RuntimeError("tracer: cannot store the plan on the code object")
    return plan


cdef int32_t *_segment_ends(int32_t *ops, Py_ssize_t nops) noexcept:
    # For each op, the offset of the END that closes its segment, or -1 when the
    # segment ends in a control op (BRANCH, JUMP, RETURN, ...) instead.
    cdef int32_t *ends = <int32_t *>malloc((nops + 1) * sizeof(int32_t))
    cdef int32_t end = -1
    cdef Py_ssize_t i
    cdef int32_t opc
    if ends == NULL:
        return NULL
    for i in range(nops - 1, -1, -1):
        opc = ops[i * OP_WORDS + OP_CODE]
        if opc == M_END:
            end = ops[i * OP_WORDS + OP_OFFSET]
        elif opc >= M_BRANCH and opc != M_SILENT_JUMP:
            end = -1
        ends[i] = end
    return ends


cdef int32_t *_return_targets(CPlan *plan, Py_ssize_t nops) noexcept:
    # For each op, what the return of a frame entered as the body of its call
    # does to the caller (aftercall.pxi's _call_returned): a record op whose
    # value is not deferred (OP_C 0) with one result, (its output slot << 1) |
    # _call_then_end;
    # -1 for any other op.  Decided once per plan, so a return reads one word
    # the callee's entry copied into its frame record (FrameRec.ret_to) instead
    # of the caller's plan, op and record.
    cdef int32_t *to = <int32_t *>malloc((nops + 1) * sizeof(int32_t))
    cdef int32_t *op
    cdef int32_t *r
    cdef Py_ssize_t pc
    if to == NULL:
        return NULL
    for pc in range(nops):
        to[pc] = -1
        op = plan.ops + pc * OP_WORDS
        if op[OP_CODE] != M_RECORD or op[OP_C] != 0 or plan.recs == NULL:
            continue
        r = plan.recs + op[OP_A]
        if r[REC_NOUT] != 1:
            continue
        to[pc] = (r[REC_INPUTS + r[REC_NIN]] << 1) | _call_then_end(plan, <int32_t>pc)
    to[nops] = -1
    return to


# _call_entries' words: the number of inputs in bits 0..7, the index of the
# first in recs above them (the low half); the code units of the call's
# instruction in bits 32..39, its offset above them.
cdef enum:
    CALL_NIN = 0xff
    CALL_UNITS = 0xff


cdef int64_t *_call_entries(CPlan *plan, Py_ssize_t nops) noexcept:
    # For each op, what the entry of a frame under it reads (events.pxi's
    # _enter_plain), decided once per plan: a call record op (R_CALL, R_CALL_EX)
    # whose segment does not end in a silent branch and whose inputs are all
    # stack slots gives (offset << 40) | (its instruction's code units << 32) |
    # (first input's index in recs << 8) | nin; any other op (or one past what
    # the fields hold: more than CALL_NIN inputs, an offset past 2**23 bytes) -1.
    # One load and two compares at entry then stand for the op's code and
    # offset, the unit the caller executes mapped to its instruction (istart),
    # its record's kind and input count and the silent-branch test.
    cdef int64_t *at = <int64_t *>malloc((nops + 1) * sizeof(int64_t))
    cdef int32_t *op
    cdef int32_t *r
    cdef int32_t nin, first, i, off, units
    cdef Py_ssize_t pc
    if at == NULL:
        return NULL
    for pc in range(nops):
        at[pc] = -1
        op = plan.ops + pc * OP_WORDS
        off = op[OP_OFFSET]
        if op[OP_CODE] != M_RECORD or plan.recs == NULL or plan.branch_sides_at[pc] >= 0 \
                or off < 0 or off >= (1 << 23) or off & 1 or off >= 2 * plan.nunits \
                or plan.istart[off >> 1] != off:
            continue
        r = plan.recs + op[OP_A]
        if r[REC_SEM] != R_CALL and r[REC_SEM] != R_CALL_EX:
            continue
        nin = r[REC_NIN]
        first = op[OP_A] + REC_INPUTS
        if nin > CALL_NIN or first >= (1 << 23):
            continue
        units = 1
        while (off >> 1) + units < plan.nunits and plan.istart[(off >> 1) + units] == off:
            units += 1
        if units > CALL_UNITS:
            continue
        for i in range(nin):
            if r[REC_INPUTS + i] < 0:
                break   # a static input (the analysis makes none for calls): the general entry's
        else:
            at[pc] = ((<int64_t>off) << 40) | ((<int64_t>units) << 32) \
                | ((<int64_t>first) << 8) | nin
    at[nops] = -1
    return at


def plan_of(code, int mode=PLAN_PLAIN):
    """The analysis plan the recorder uses for `code` (for tests and tools)."""
    if not PLAN_PLAIN <= mode <= PLAN_INTERVENE_CALLS:
        raise ValueError(f"mode is a tracer._core.PlanMode, not {mode!r}")
    return <object>_plan_for(code, mode).owner
