# Per-segment row templates: a run of the op loop compiled when a plan is loaded.
#
# A run of _run_ops from a given op to its segment's END or terminal op always
# does the same thing to the frame's shadow and writes the same rows, up to the
# shadows it starts from and the values the event shows: which rows (kind,
# offset, aux), which input refs (a local's or stack slot's shadow at the run's
# start, a constant, a static, a row of the same run), which value (a stack slot,
# a local the result was stored in, the value returned, the branch's truth), and
# which shadows it leaves.  _compile_tmpl walks the ops once, symbolically, into
# that form (a Tmpl); _tmpl_apply then writes the run's rows in one straight
# routine: one pass that reads the shadows and checks what the op loop checks per
# op (a constant not pooled yet, a carried local, a plan pooled by another
# recorder: then nothing is written and the op loop runs instead), one pass that
# writes the rows, then the shadows.  The rows are the op loop's, column by
# column (tests/test_segment_templates.py).
#
# Templates are made for runs that start where runs start in practice (a
# segment's first op, the op after a record: a call completed by its callee's
# return) and whose ops are all of the kinds the op loop writes itself (loads,
# constants, special shadows, copies and swaps, stores of a row, captures,
# records with at most one result, silent jumps); a run that ends in a branch
# also gets a variant with the branch's rows (its bool and its jump).

cdef enum:
    TS_LOCAL = 0     # the shadow of local `arg` at the run's start
    TS_SLOT = 1      # the shadow of stack slot `arg` at the run's start
    TS_CONST = 2     # co_consts[arg]
    TS_SPECIAL = 3   # SPECIAL_SHADOW[arg]
    TS_ROW = 4       # the run's row `arg` (0: its first)
    TS_STATIC = 5    # statics[arg] (a record's input only)

    # What a symbol must be at run time (else the op loop runs instead)
    NEED_SAFE = 1    # loaded with LF_SAFE: not unknown (the op loop adds a carried node)
    NEED_REF = 2     # a record's input: a row, NULL (no ref) or a pooled constant
    NEED_ROW = 4     # stored into a local: a row (else _stored adds a constant's node)
    NEED_COND = 8    # a jump's condition: a row, or a shadow with no ref

    TV_NONE = 0      # value None
    TV_STACK = 1     # the frame's stack slot `varg`
    TV_LOCAL = 2     # the frame's local `varg` (the result stored there; unbound: UNKNOWN)
    TV_RETURNED = 3  # the value the PY_RETURN being handled returns (NULL: UNKNOWN)
    TV_TRUTH = 4     # the branch's truth

    # A row: its words
    TR_KIND = 0
    TR_OFFSET = 1
    TR_AUX = 2
    TR_VSRC = 3
    TR_VARG = 4
    TR_NIN = 5
    TR_IN = 6        # index of its first input in Tmpl.ins
    TR_WORDS = 7

    TMPL_MAX_SYMS = 40
    TMPL_MAX_ROWS = 24
    TMPL_MAX_INS = 64
    TMPL_MAX_WRITES = 48
    TMPL_MAX_CAPS = 8
    TMPL_MAX_SHADOW = 256    # nlocalsplus + stacksize a template is made for
    REF_SKIP = -2147483647 - 1


# Off: every run goes through the op loop (tests compare the two paths' traces).
cdef bint _templates_on = True


def use_templates(bint on):
    """Switch the op loop's compiled row templates on or off (on by default);
    returns whether they were on.  For tests and measurements: the traces are
    the same either way."""
    global _templates_on
    cdef bint was = _templates_on
    _templates_on = on
    return was


def templates_of(code, int mode=PLAN_PLAIN):
    """How many runs of the plan of `code` (variant `mode`) have a template:
    (runs to their END or terminal op, runs that end in a branch's rows)."""
    cdef CPlan *plan = _plan_for(code, mode)
    cdef TmplSet *ts = <TmplSet *>plan.tmpl
    cdef int32_t i, plain = 0, branched = 0
    if ts != NULL:
        for i in range(ts.nops):
            plain += ts.plain[i] != NULL
            branched += ts.branched[i] != NULL
    return plain, branched


ctypedef struct Tmpl:
    int32_t stop           # the op the run stops at (fr.pc after it)
    int32_t nrows
    int32_t nrefs          # refs the rows write at most
    int32_t nsyms
    int32_t nwrites
    int32_t ncaps
    int32_t branch_offset  # >= 0: the run ends with the rows of the branch at this offset
    int32_t branch_c       # its target (op word c) and kind (BRANCH_KINDS)
    int32_t branch_kind
    int32_t cond_sym       # the symbol the jump tests
    int32_t *syms          # per symbol: kind, arg, needs
    int32_t *rows          # TR_WORDS per row
    int32_t *ins           # input symbols
    int32_t *writes        # per shadow written: index (locals, then nlocalsplus + slot), symbol
    int32_t *caps          # per capture, in op order: M_CAPTURE or M_CAPTURE_METHOD, a, b


ctypedef struct TmplSet:
    int32_t nops
    Tmpl **plain           # per op: the run from it to its segment's END or terminal op
    Tmpl **branched        # per op: the same run and the branch that ends it


cdef void _free_templates(void *p) noexcept:
    cdef TmplSet *ts = <TmplSet *>p
    cdef int32_t i
    if ts == NULL:
        return
    for i in range(ts.nops):
        if ts.plain != NULL:
            free(ts.plain[i])
        if ts.branched != NULL:
            free(ts.branched[i])
    free(ts.plain)
    free(ts.branched)
    free(ts)


cdef inline bint _tmpl_op(int32_t opc) noexcept:
    # The ops a template takes; any other stops the run (as in _run_ops).
    return (M_END < opc <= M_RECORD) or opc == M_SILENT_JUMP


cdef Tmpl *_compile_tmpl(CPlan *plan, int32_t first, int32_t nops, bint with_branch) noexcept:
    """The template of the run from op `first` (NULL: none; the op loop runs it)."""
    cdef int32_t nl = plan.nlocalsplus
    cdef int32_t nshadow = nl + plan.stacksize
    cdef int32_t state[TMPL_MAX_SHADOW]     # per shadow index: its symbol, or -1 (untouched)
    cdef uint8_t dyn[TMPL_MAX_SHADOW]       # a capture writes it at the run's end
    cdef int32_t syms[3 * TMPL_MAX_SYMS]
    cdef int32_t rows[TR_WORDS * TMPL_MAX_ROWS]
    cdef int32_t ins[TMPL_MAX_INS]
    cdef int32_t caps[3 * TMPL_MAX_CAPS]
    cdef int32_t nsyms = 0, nrows = 0, nins = 0, ncaps = 0, nrefs = 0, nwrites = 0
    cdef int32_t pc = first, opc, a, b, c, x, i, nin, k, sym, idx
    cdef int32_t *op
    cdef int32_t *r
    cdef int32_t *bop
    cdef int32_t branch_offset = -1, branch_c = 0, branch_kind = 0, cond_sym = -1
    cdef Tmpl *t
    cdef size_t size
    cdef char *mem
    if nshadow > TMPL_MAX_SHADOW:
        return NULL
    for i in range(nshadow):
        state[i] = -1
        dyn[i] = 0
    while pc < nops:
        op = plan.ops + pc * OP_WORDS
        opc = op[OP_CODE]
        if not _tmpl_op(opc):
            break
        a = op[OP_A]
        b = op[OP_B]
        c = op[OP_C]
        if nsyms + 4 > TMPL_MAX_SYMS or nrows + 2 > TMPL_MAX_ROWS or ncaps + 1 > TMPL_MAX_CAPS:
            return NULL
        if opc == M_LOAD_LOCAL:
            sym = _tmpl_read(state, dyn, syms, &nsyms, b, TS_LOCAL, b)
            if sym < 0:
                return NULL
            if c & LF_SAFE:
                syms[3 * sym + 2] |= NEED_SAFE
            if _tmpl_write(state, dyn, nl + a, sym) < 0:
                return NULL
        elif opc == M_LOAD_CONST or opc == M_SET:
            sym = _tmpl_sym(syms, &nsyms, TS_CONST if opc == M_LOAD_CONST else TS_SPECIAL, b)
            if _tmpl_write(state, dyn, nl + a, sym) < 0:
                return NULL
        elif opc == M_STORE_LOCAL:
            sym = _tmpl_read(state, dyn, syms, &nsyms, nl + a, TS_SLOT, a)
            if sym < 0:
                return NULL
            syms[3 * sym + 2] |= NEED_ROW
            if _tmpl_write(state, dyn, b, sym) < 0:
                return NULL
        elif opc == M_DELETE_LOCAL:
            if _tmpl_write(state, dyn, a, _tmpl_sym(syms, &nsyms, TS_SPECIAL, SET_UNKNOWN)) < 0:
                return NULL
        elif opc == M_COPY:
            sym = _tmpl_read(state, dyn, syms, &nsyms, nl + b, TS_SLOT, b)
            if sym < 0 or _tmpl_write(state, dyn, nl + a, sym) < 0:
                return NULL
        elif opc == M_SWAP:
            sym = _tmpl_read(state, dyn, syms, &nsyms, nl + a, TS_SLOT, a)
            k = _tmpl_read(state, dyn, syms, &nsyms, nl + b, TS_SLOT, b)
            if sym < 0 or k < 0 or _tmpl_write(state, dyn, nl + a, k) < 0 \
                    or _tmpl_write(state, dyn, nl + b, sym) < 0:
                return NULL
        elif opc == M_CAPTURE or opc == M_CAPTURE_METHOD:
            # Done at the run's end, after the other shadows are written: the
            # slots it writes (and, for a method, reads) are never touched again
            # in the run.
            caps[3 * ncaps] = opc
            caps[3 * ncaps + 1] = a
            caps[3 * ncaps + 2] = b
            ncaps += 1
            dyn[nl + a] = 1
            if opc == M_CAPTURE_METHOD:
                dyn[nl + b] = 1
        elif opc == M_RECORD:
            r = plan.recs + a
            if r[REC_NOUT] > 1:
                return NULL
            if _tmpl_row(plan, state, dyn, syms, &nsyms, rows, &nrows, ins, &nins, &nrefs,
                         op, r, TV_NONE) < 0:
                return NULL
        elif opc == M_SILENT_JUMP:
            k = TR_WORDS * nrows
            rows[k + TR_KIND] = K_JUMP
            rows[k + TR_OFFSET] = op[OP_OFFSET]
            rows[k + TR_AUX] = c
            rows[k + TR_VSRC] = TV_NONE
            rows[k + TR_VARG] = 0
            rows[k + TR_NIN] = 0
            rows[k + TR_IN] = nins
            nrows += 1
        else:
            return NULL
        pc += 1
    if pc >= nops:
        return NULL
    if with_branch:
        # The branch that ends the run (the RECORD_BOOL the jump pops, if one, then
        # the BRANCH): its rows as _run_ops writes them at the branch's event.
        op = plan.ops + pc * OP_WORDS
        bop = op + OP_WORDS if op[OP_CODE] == M_RECORD_BOOL else op
        if bop[OP_CODE] != M_BRANCH or (op != bop and pc + 1 >= nops):
            return NULL
        if op[OP_CODE] == M_RECORD_BOOL:
            r = plan.recs + op[OP_A]
            if r[REC_NOUT] != 1 or _tmpl_row(plan, state, dyn, syms, &nsyms, rows, &nrows, ins,
                                             &nins, &nrefs, op, r, TV_TRUTH) < 0:
                return NULL
        cond_sym = _tmpl_read(state, dyn, syms, &nsyms, nl + bop[OP_A], TS_SLOT, bop[OP_A])
        if cond_sym < 0:
            return NULL
        syms[3 * cond_sym + 2] |= NEED_COND
        nrefs += 1
        branch_offset = bop[OP_OFFSET]
        branch_c = bop[OP_C]
        branch_kind = bop[OP_B]
    for i in range(nshadow):
        if state[i] >= 0:
            nwrites += 1
    if nwrites > TMPL_MAX_WRITES:
        return NULL
    size = (sizeof(Tmpl) + sizeof(int32_t) * (3 * nsyms + TR_WORDS * nrows + nins
                                               + 2 * nwrites + 3 * ncaps))
    mem = <char *>malloc(size)
    if mem == NULL:
        return NULL
    t = <Tmpl *>mem
    t.stop = pc
    t.nrows = nrows
    t.nrefs = nrefs
    t.nsyms = nsyms
    t.nwrites = nwrites
    t.ncaps = ncaps
    t.branch_offset = branch_offset
    t.branch_c = branch_c
    t.branch_kind = branch_kind
    t.cond_sym = cond_sym
    t.syms = <int32_t *>(mem + sizeof(Tmpl))
    t.rows = t.syms + 3 * nsyms
    t.ins = t.rows + TR_WORDS * nrows
    t.writes = t.ins + nins
    t.caps = t.writes + 2 * nwrites
    memcpy(t.syms, syms, 3 * nsyms * sizeof(int32_t))
    memcpy(t.rows, rows, TR_WORDS * nrows * sizeof(int32_t))
    memcpy(t.ins, ins, nins * sizeof(int32_t))
    memcpy(t.caps, caps, 3 * ncaps * sizeof(int32_t))
    k = 0
    for i in range(nshadow):
        if state[i] >= 0:
            t.writes[2 * k] = i
            t.writes[2 * k + 1] = state[i]
            k += 1
    return t


cdef inline int32_t _tmpl_sym(int32_t *syms, int32_t *nsyms, int32_t kind, int32_t arg) noexcept:
    cdef int32_t k = nsyms[0]
    syms[3 * k] = kind
    syms[3 * k + 1] = arg
    syms[3 * k + 2] = 0
    nsyms[0] = k + 1
    return k


cdef inline int32_t _tmpl_read(int32_t *state, uint8_t *dyn, int32_t *syms, int32_t *nsyms,
                               int32_t idx, int32_t kind, int32_t arg) noexcept:
    # The symbol shadow index `idx` holds now (its start value: a new symbol), or
    # -1 if a capture made it (known only at run time).
    if dyn[idx]:
        return -1
    if state[idx] < 0:
        state[idx] = _tmpl_sym(syms, nsyms, kind, arg)
    return state[idx]


cdef inline int _tmpl_write(int32_t *state, uint8_t *dyn, int32_t idx, int32_t sym) noexcept:
    if dyn[idx]:
        return -1
    state[idx] = sym
    return 0


cdef int _tmpl_row(CPlan *plan, int32_t *state, uint8_t *dyn, int32_t *syms, int32_t *nsyms,
                   int32_t *rows, int32_t *nrows, int32_t *ins, int32_t *nins, int32_t *nrefs,
                   int32_t *op, int32_t *r, int32_t vsrc) noexcept:
    # Record r's row at op (its inputs read now); its result's slot then holds it.
    cdef int32_t nl = plan.nlocalsplus
    cdef int32_t nin = r[REC_NIN], i, x, sym, out
    cdef int32_t k = TR_WORDS * nrows[0]
    if nins[0] + nin > TMPL_MAX_INS or nsyms[0] + nin + 1 > TMPL_MAX_SYMS:
        return -1
    rows[k + TR_KIND] = K_SPECIAL if r[REC_SEM] == R_SPECIAL else K_PRIMITIVE
    rows[k + TR_OFFSET] = op[OP_OFFSET]
    rows[k + TR_AUX] = 0
    rows[k + TR_NIN] = nin
    rows[k + TR_IN] = nins[0]
    for i in range(nin):
        x = r[REC_INPUTS + i]
        if x >= 0:
            sym = _tmpl_read(state, dyn, syms, nsyms, nl + x, TS_SLOT, x)
            if sym < 0:
                return -1
        else:
            sym = _tmpl_sym(syms, nsyms, TS_STATIC, -x - 1)
        syms[3 * sym + 2] |= NEED_REF
        ins[nins[0]] = sym
        nins[0] += 1
    nrefs[0] += nin
    if vsrc == TV_TRUTH:
        rows[k + TR_VARG] = 0
    elif r[REC_NOUT] == 0:
        vsrc = TV_NONE
        rows[k + TR_VARG] = 0
    elif op[OP_C] > 0:
        vsrc = TV_LOCAL
        rows[k + TR_VARG] = op[OP_C] - 1
    elif op[OP_C] < 0:
        vsrc = TV_RETURNED
        rows[k + TR_VARG] = 0
    else:
        vsrc = TV_STACK
        rows[k + TR_VARG] = r[REC_INPUTS + nin]
    rows[k + TR_VSRC] = vsrc
    if r[REC_NOUT] == 1:
        out = r[REC_INPUTS + nin]
        if _tmpl_write(state, dyn, nl + out, _tmpl_sym(syms, nsyms, TS_ROW, nrows[0])) < 0:
            return -1
    nrows[0] += 1
    return 0


cdef void *_compile_templates(CPlan *plan, Py_ssize_t nops) noexcept:
    """The plan's templates (a TmplSet; NULL if none could be made), for runs
    starting at a segment's first op or right after a record."""
    cdef TmplSet *ts
    cdef int32_t i, opc, prev
    cdef bint any = False
    if plan.recs == NULL or nops <= 0:
        return NULL
    ts = <TmplSet *>calloc(1, sizeof(TmplSet))
    if ts == NULL:
        return NULL
    ts.nops = <int32_t>nops
    ts.plain = <Tmpl **>calloc(nops + 1, sizeof(Tmpl *))
    ts.branched = <Tmpl **>calloc(nops + 1, sizeof(Tmpl *))
    if ts.plain == NULL or ts.branched == NULL:
        _free_templates(ts)
        return NULL
    for i in range(nops):
        opc = plan.ops[i * OP_WORDS + OP_CODE]
        prev = plan.ops[(i - 1) * OP_WORDS + OP_CODE] if i > 0 else M_END
        if not _tmpl_op(opc) and opc != M_RECORD_BOOL and opc != M_BRANCH:
            continue
        if i > 0 and _tmpl_op(prev) and prev != M_RECORD:
            continue   # inside a run: runs start at a segment's first op or after a record
        ts.plain[i] = _compile_tmpl(plan, i, <int32_t>nops, False)
        ts.branched[i] = _compile_tmpl(plan, i, <int32_t>nops, True)
        if ts.plain[i] != NULL or ts.branched[i] != NULL:
            any = True
    if not any:
        _free_templates(ts)
        return NULL
    return ts


cdef int _tmpl_run(Recorder self, FrameRec *fr, int32_t branch_at, int32_t dest,
                   int32_t go_on_to) except -2:
    """_run_ops(fr, branch_at, dest, go_on_to) by the pending op's template:
    what _run_ops returns, or -1 (nothing done) when the op loop must run it."""
    cdef CPlan *plan = fr.plan
    cdef TmplSet *ts = <TmplSet *>plan.tmpl
    cdef Tmpl *t
    cdef bint taken
    cdef int32_t pc
    if (fr.hooks & ~<uint32_t>ROW_NEUTRAL_HOOKS) != 0 or fr.open_row >= 0 \
            or plan.session != self.session or not _templates_on:
        return -1
    if branch_at < 0:
        t = ts.plain[fr.pc]
        if t == NULL or _tmpl_apply(self, fr, t, NULL, -1) < 0:
            return -1
        fr.pc = t.stop
        return dest >= 0
    t = ts.branched[fr.pc]
    if t == NULL or t.branch_offset != branch_at:
        return -1
    # The truth the instruction tested: IF_FALSE/IF_TRUE test the value,
    # IF_NONE/IF_NOT_NONE test `value is None` (as _run_ops).
    taken = dest == t.branch_c
    if t.branch_kind == 0 or t.branch_kind == 3:
        taken = not taken
    if _tmpl_apply(self, fr, t, <PyObject *>(PY_TRUE if taken else PY_FALSE), dest) < 0:
        return -1
    pc = plan.seg_from[dest >> 1]
    if pc < 0:
        fr.pending = P_LOST
        return 1
    fr.pending = pc
    fr.pc = pc
    if go_on_to >= 0 and plan.seg_end[pc] == go_on_to:
        # The INSTRUCTION event's own segment, up to that instruction.
        if _tmpl_run(self, fr, -1, -1, -1) < 0:
            _run_ops(self, fr, -1, -1, -1)
    return 1


cdef int _tmpl_apply(Recorder self, FrameRec *fr, Tmpl *t, PyObject *truth,
                     int32_t dest) except -2:
    """Write template t's rows and shadows for fr, or return -1 with nothing
    written when a shadow is not what the op loop writes its rows from."""
    cdef CPlan *plan = fr.plan
    cdef int64_t *sl = _locals(self, fr)
    cdef int64_t *ss = sl + plan.nlocalsplus
    cdef int64_t sv[TMPL_MAX_SYMS]
    cdef int32_t rf[TMPL_MAX_SYMS]
    cdef int32_t *syms = t.syms
    cdef int32_t *tr
    cdef int32_t k, kind, arg, need, ref, base, row, nrefs, j, nin
    cdef int64_t s
    cdef int policy
    cdef PyObject *v
    cdef Rows w
    base = self.trace.n
    # 1. The shadows the rows read, checked as the op loop checks them.
    for k in range(t.nsyms):
        kind = syms[3 * k]
        arg = syms[3 * k + 1]
        need = syms[3 * k + 2]
        ref = REF_SKIP
        if kind == TS_LOCAL:
            s = sl[arg]
        elif kind == TS_SLOT:
            s = ss[arg]
        elif kind == TS_CONST:
            s = ((<int64_t>arg) << 2) | 1
        elif kind == TS_ROW:
            s = (<int64_t>(base + arg)) << 2
        elif kind == TS_SPECIAL:
            s = SPECIAL_SHADOW[arg]
        else:   # TS_STATIC
            s = 0
            ref = plan.static_refs[arg]
            if ref == 0:
                return -1
            sv[k] = s
            rf[k] = ref
            continue
        if need:
            if (need & NEED_SAFE) and s == S_UNKNOWN:
                return -1
            if (need & NEED_ROW) and s & 3 != 0:
                return -1
            if s & 3 == 0:
                ref = <int32_t>(s >> 2)
            elif need & (NEED_REF | NEED_COND):
                if s == S_NULL:
                    pass
                elif (need & NEED_REF) == 0 and (s == S_UNKNOWN or s == S_DYN):
                    pass   # a jump on such a condition has no ref
                elif s & 3 == 1 and (need & NEED_COND) == 0:
                    ref = plan.const_refs[s >> 2]
                    if ref == 0:
                        return -1   # a constant's first use: the op loop pools it
                else:
                    return -1
        sv[k] = s
        rf[k] = ref
    # 2. The rows.
    policy = self.trace.value_policy
    self.trace.open_rows(&w, t.nrows + 1, t.nrefs)
    nrefs = w.nrefs
    row = w.n
    tr = t.rows
    for k in range(t.nrows):
        nin = tr[TR_NIN]
        for j in range(tr[TR_IN], tr[TR_IN] + nin):
            ref = rf[t.ins[j]]
            if ref != REF_SKIP:
                w.refs[nrefs] = ref
                nrefs += 1
        kind = tr[TR_VSRC]
        if kind == TV_STACK:
            v = tracer_frame_local(fr.frame, plan.nlocalsplus + tr[TR_VARG])
        elif kind == TV_NONE:
            v = <PyObject *>None
        elif kind == TV_TRUTH:
            v = truth
        elif kind == TV_LOCAL:
            v = tracer_frame_local(fr.frame, tr[TR_VARG])
            if v == NULL:
                v = <PyObject *>UNKNOWN
        else:   # TV_RETURNED
            v = self.returning
            if v == NULL:
                v = <PyObject *>UNKNOWN
        w.parent[row] = fr.call_row
        w.offset[row] = tr[TR_OFFSET]
        w.aux[row] = tr[TR_AUX]
        w.value[row] = _row_value(policy, v)
        w.ref_start[row + 1] = nrefs
        w.kind[row] = <uint8_t>tr[TR_KIND]
        w.flags[row] = 0
        row += 1
        tr += TR_WORDS
    if t.branch_offset >= 0:
        # The jump, on the value it popped.
        ref = rf[t.cond_sym]
        if ref != REF_SKIP:
            w.refs[nrefs] = ref
            nrefs += 1
        w.parent[row] = fr.call_row
        w.offset[row] = t.branch_offset
        w.aux[row] = dest
        w.value[row] = _row_value(policy, truth)
        w.ref_start[row + 1] = nrefs
        w.kind[row] = K_JUMP
        w.flags[row] = 0
        row += 1
    self.trace.n = row
    self.trace.nrefs = nrefs
    # 3. The shadows the run leaves, then its captures (pool entries).
    for k in range(t.nwrites):
        sl[t.writes[2 * k]] = sv[t.writes[2 * k + 1]]
    for k in range(t.ncaps):
        if t.caps[3 * k] == M_CAPTURE:
            ss[t.caps[3 * k + 1]] = _capture(self, fr, t.caps[3 * k + 1])
        else:
            _capture_method(self, fr, t.caps[3 * k + 1], t.caps[3 * k + 2])
    return 0
