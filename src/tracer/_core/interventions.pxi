# What contexts change: snapshots of values, substitute and override.

cdef bint _bool_kept(Recorder self, object value, int32_t iv, str what) noexcept:
    # An IV_BOOL record's result feeds instructions that only accept a bool.
    if iv != IV_BOOL or value is True or value is False:
        return True
    _stop_for_hook(self, TypeError(
        f"{what} must give a bool here (the result of a comparison, `in` or `is` "
        f"that a branch or `not` consumes), got {type(value).__name__}"))
    return False


# -- snapshots --------------------------------------------------------------------------
cdef PyObject *_kept(Recorder self, FrameRec *fr, PyObject *v) except? NULL:
    """What the trace keeps of a value just read: fr's context's snapshot of it
    (borrowed from self.kept, to be stored at once)."""
    if v == NULL:
        return NULL
    self.kept = _snapshot(self, fr, <object>v)
    return <PyObject *>self.kept


cdef object _snapshot(Recorder self, FrameRec *fr, object v):
    # Context(snapshot="copy") copies the mutable builtins in C; "deepcopy" and a
    # user's policy run Python code (as a hook: the collector waits, an error
    # stops tracking).  A value the policy cannot copy is kept itself.
    cdef type tp = type(v)
    if fr.hooks & H_SNAP_COPY:
        if tp is list:
            return list(<list>v)
        if tp is dict:
            return (<dict>v).copy()
        if tp is set:
            return set(<set>v)
        if tp is bytearray:
            return bytearray(v)
        return v
    if self.broken:
        return v
    _user_code_starts(self)
    try:
        if fr.hooks & H_SNAP_DEEP:
            try:
                return _deepcopy()(v)
            except Exception:
                return v
        return (<object>fr.ctx).snapshot(v)
    except BaseException as exc:
        _stop_for_hook(self, exc)
        return v
    finally:
        _user_code_ran(self)


# -- substitution -----------------------------------------------------------------------
cdef int _substitute(Recorder self, FrameRec *fr, int32_t *op) except -1:
    """Ask the context for a replacement of the call or operator about to run.

    At the event before the instruction: its inputs are live on the stack.  A
    call's callee slot is replaced at once, so the replacement runs natively
    instead; an operator's operands are kept to call the replacement with once
    the operator has run (_substituted).
    """
    cdef int32_t *r = fr.plan.recs + op[OP_A]
    cdef int32_t sem = r[REC_SEM], nin = r[REC_NIN], i, x, callee_slot = -1
    cdef PyObject *v
    cdef list values
    cdef object statics = <object>fr.plan.statics
    cdef object f, new
    cdef tuple args, parts
    cdef dict kwargs
    cdef PyObject *callee = NULL
    if fr.plan.rec_iv[op[OP_A]] == IV_NONE:
        return 0
    new = None
    if fr.hooks & H_SUBST_BY:
        # The context's filter, matched before anything is read into Python objects.
        if sem == R_OP:
            callee = PyList_GET_ITEM(statics, r[REC_FN]) if r[REC_FN] >= 0 else NULL
        else:
            for i in range(nin):
                x = r[REC_INPUTS + i]
                callee = (PyList_GET_ITEM(statics, -x - 1) if x < 0
                          else tracer_frame_stack_item(fr.frame, x))
                if callee != NULL:
                    break
        new = _filtered_substitute(self, fr, callee)
        if new is None and not (fr.hooks & H_SUBSTITUTE):
            return 0
    values = []
    for i in range(nin):
        x = r[REC_INPUTS + i]
        if x < 0:
            values.append(statics[-x - 1])
            continue
        v = tracer_frame_stack_item(fr.frame, x)
        if v == NULL:
            continue
        if not values:  # the callee: the first input present
            callee_slot = x
        values.append(<object>v)
    if sem != R_OP and not values:
        return 0
    if new is not None and sem != R_OP:
        f = values[0]
        args = ()
    else:
        parts = _split_call(r, statics, values)
        if parts is None:  # f(*it) with `it` not yet a tuple: reading it would consume it
            return 0
        f, args, kwargs = parts
    if new is None:
        _user_code_starts(self)
        try:
            new = _host("ask_substitute")(<object>fr.ctx, f, args, kwargs)
        except BaseException as exc:
            _stop_for_hook(self, exc)
            return 0
        finally:
            _user_code_ran(self)
    if new is None:
        return 0
    if sem != R_OP and callee_slot < 0:
        return 0  # the callee is a constant of the code, not a stack slot to replace
    if fr.subst_pc >= 0:
        _clear_substitution(fr)
    if sem != R_OP:
        tracer_frame_stack_set(fr.frame, callee_slot, <PyObject *>new)
    else:
        Py_INCREF(args)
        fr.subst_args = <PyObject *>args
    Py_INCREF(new)
    Py_INCREF(f)
    fr.subst_new = <PyObject *>new
    fr.subst_orig = <PyObject *>f
    fr.subst_pc = fr.pc
    fr.plain_ret = 0   # (its return takes _leave's general path from now on)
    return 0


cdef int _patch_callee(Recorder self, FrameRec *fr, int32_t row) except -1:
    # The call's recorded callee is the replacement that ran.
    cdef Trace t = self.trace
    if t.ref_start_[row] < t.ref_start_[row + 1]:
        t.refs_[t.ref_start_[row]] = t.pool_add(<object>fr.subst_new)
    _note_substituted(t, row, <object>fr.subst_orig)    # no dict for the row (metadata.pxi)
    return 0


cdef int _substituted(Recorder self, FrameRec *fr, int32_t row, int32_t out, int32_t iv) except -1:
    """Finish the substitution of the op just recorded at `row`."""
    cdef Trace t = self.trace
    cdef object result
    if fr.subst_args == NULL:
        _patch_callee(self, fr, row)
    elif out >= 0 and not self.broken:
        # An operator ran itself; its replacement's result takes its place.
        _user_code_starts(self)
        try:
            result = (<object>fr.subst_new)(*<tuple>fr.subst_args)
        except BaseException as exc:
            _stop_for_hook(self, exc)
            _clear_substitution(fr)
            return 0
        finally:
            _user_code_ran(self)
        if not _bool_kept(self, result, iv, "a substitute for this operator"):
            _clear_substitution(fr)
            return 0
        md = _metadata(self, row)
        md["substituted"] = <object>fr.subst_orig
        md["operator_result"] = t.value(row)
        t.substituted_operators[row] = <object>fr.subst_new
        tracer_frame_stack_set(fr.frame, out, <PyObject *>result)
        t.set_value(row, _kept(self, fr, <PyObject *>result) if fr.hooks & H_SNAP_ANY
                    else <PyObject *>result)
    _clear_substitution(fr)
    return 0


cdef dict _metadata(Recorder self, int32_t row):
    return _md(self.trace, row)


cdef int _override(Recorder self, FrameRec *fr, int32_t row, int32_t out, int32_t iv) except -1:
    cdef Trace t = self.trace
    cdef object new, old
    _user_code_starts(self)
    try:
        new = (<object>fr.ctx).override(_node_view(self.trace, row))
    except BaseException as exc:
        _stop_for_hook(self, exc)
        return 0
    finally:
        _user_code_ran(self)
    if new is _keep() or not _bool_kept(self, new, iv, "override"):
        return 0
    return _replace_value(self, fr, row, out, new)


cdef int _replace_value(Recorder self, FrameRec *fr, int32_t row, int32_t out,
                        object new) except -1:
    # The program goes on with `new` instead of the value recorded at `row`.
    cdef Trace t = self.trace
    cdef object old = t.value(row)
    tracer_frame_stack_set(fr.frame, out, <PyObject *>new)
    t.set_value(row, _kept(self, fr, <PyObject *>new) if fr.hooks & H_SNAP_ANY
                else <PyObject *>new)
    _metadata(self, row)["original"] = old
    return 0


cdef object _DEEPCOPY = None


cdef object _deepcopy():
    global _DEEPCOPY
    if _DEEPCOPY is None:
        import copy
        _DEEPCOPY = copy.deepcopy
    return _DEEPCOPY


cdef object _keep():
    return _host("keep")


cdef void _clear_substitution(FrameRec *fr) noexcept:
    Py_XDECREF(fr.subst_new)
    Py_XDECREF(fr.subst_orig)
    Py_XDECREF(fr.subst_args)
    fr.subst_new = fr.subst_orig = fr.subst_args = NULL
    fr.subst_pc = -1
