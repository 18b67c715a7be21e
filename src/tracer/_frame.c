/* Frame-internals shim: reads a running frame's locals and value stack.
 * One small C file per the architecture; the only user of internal headers. */
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_VERSION_HEX < 0x030C0000
#error "tracer needs CPython 3.12 or newer"
#endif
#include "internal/pycore_frame.h"
#if PY_VERSION_HEX >= 0x030D0000
#include "internal/pycore_tstate.h"
#endif
#include "internal/pycore_interp.h"
#include "internal/pycore_gil.h"
#if PY_VERSION_HEX < 0x030D0000
#include "internal/pycore_list.h"
#include "internal/pycore_tuple.h"
#endif
#include "_frame.h"

/* On 3.14 frame slots are tagged _PyStackRef values; before that plain pointers. */
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_stackref.h"
#define SLOT_AS_OBJECT(slot) PyStackRef_AsPyObjectBorrow(slot)
#define SLOT_IS_NULL(slot) PyStackRef_IsNull(slot)
#else
#define SLOT_AS_OBJECT(slot) (slot)
#define SLOT_IS_NULL(slot) ((slot) == NULL)
#endif

#if PY_VERSION_HEX < 0x030E0000
/* The layout _frame.h's inline reads use (see there). */
const Py_ssize_t tracer_localsplus_offset = offsetof(_PyInterpreterFrame, localsplus);
#if PY_VERSION_HEX >= 0x030D0000
const Py_ssize_t tracer_executable_offset = offsetof(_PyInterpreterFrame, f_executable);
#else
const Py_ssize_t tracer_executable_offset = offsetof(_PyInterpreterFrame, f_code);
#endif
const Py_ssize_t tracer_funcobj_offset = offsetof(_PyInterpreterFrame, f_funcobj);
#if PY_VERSION_HEX >= 0x030D0000
const Py_ssize_t tracer_instr_offset = offsetof(_PyInterpreterFrame, instr_ptr);
#else
const Py_ssize_t tracer_instr_offset = offsetof(_PyInterpreterFrame, prev_instr);
#endif
const Py_ssize_t tracer_previous_offset = offsetof(_PyInterpreterFrame, previous);
const Py_ssize_t tracer_gen_iframe_offset = offsetof(PyGenObject, gi_iframe);
#endif

#if PY_VERSION_HEX >= 0x030E0000
/* 3.14: the reads _frame.h inlines before 3.14, through tagged slots. */
void *tracer_thread_frame(void *tstate)
{
    return ((PyThreadState *)tstate)->current_frame;
}

void *tracer_frame_previous(void *frame)
{
    return ((_PyInterpreterFrame *)frame)->previous;
}

PyObject *tracer_frame_code(void *frame)
{
    return PyStackRef_AsPyObjectBorrow(((_PyInterpreterFrame *)frame)->f_executable);
}

PyObject *tracer_frame_function(void *frame)
{
    return PyStackRef_AsPyObjectBorrow(((_PyInterpreterFrame *)frame)->f_funcobj);
}

PyObject *tracer_gen_code_of(PyObject *gen)
{
    return tracer_frame_code(&((PyGenObject *)gen)->gi_iframe);
}

PyObject *tracer_frame_stack_item(void *frame, int index)
{
    _PyInterpreterFrame *f = (_PyInterpreterFrame *)frame;
    PyCodeObject *code = (PyCodeObject *)tracer_frame_code(frame);
    return SLOT_AS_OBJECT(f->localsplus[code->co_nlocalsplus + index]);
}
#endif

void *tracer_current_frame(void)
{
    void *tstate = tracer_thread_state();
    return tstate == NULL ? NULL : tracer_thread_frame(tstate);
}

void **tracer_thread_cell(void *tstate)
{
#if TRACER_THREAD_CELL
    struct _gil_runtime_state *gil = ((PyThreadState *)tstate)->interp->ceval.gil;
    /* 3.12 keeps last_holder as a _Py_atomic_address (a uintptr_t in a struct),
       3.13 as a PyThreadState pointer: one pointer-sized word either way. */
    Py_BUILD_ASSERT(sizeof(gil->last_holder) == sizeof(void *));
    return (void **)&gil->last_holder;
#else
    (void)tstate;
    return NULL;
#endif
}

void tracer_frame_stack_set(void *frame, int index, PyObject *value)
{
    _PyInterpreterFrame *f = (_PyInterpreterFrame *)frame;
    PyCodeObject *code = (PyCodeObject *)tracer_frame_code(frame);
    int slot = code->co_nlocalsplus + index;
#if PY_VERSION_HEX >= 0x030E0000
    _PyStackRef old = f->localsplus[slot];
    f->localsplus[slot] = PyStackRef_FromPyObjectNew(value);
    PyStackRef_XCLOSE(old);
#else
    PyObject *old = f->localsplus[slot];
    Py_INCREF(value);
    f->localsplus[slot] = value;
    Py_XDECREF(old);
#endif
}

#if PY_VERSION_HEX >= 0x030E0000
PyObject *tracer_frame_local(void *frame, int index)
{
    _PyInterpreterFrame *f = (_PyInterpreterFrame *)frame;
    if (SLOT_IS_NULL(f->localsplus[index])) {
        return NULL;
    }
    return SLOT_AS_OBJECT(f->localsplus[index]);
}
#endif

#if PY_VERSION_HEX >= 0x030E0000
int tracer_frame_lasti(void *frame)
{
    int units = _PyInterpreterFrame_LASTI((_PyInterpreterFrame *)frame);
    return units < 0 ? -1 : units * (int)sizeof(_Py_CODEUNIT);
}
#endif

void *tracer_frame_caller(void *frame)
{
    /* The calling Python frame, skipping frames that are not ones yet: C-stack
       entry frames and shims (3.13's CALL_ALLOC_AND_ENTER_INIT runs __init__ above
       an _Py_InitCleanup shim), the frames Python's own f_back skips. */
    _PyInterpreterFrame *f = ((_PyInterpreterFrame *)frame)->previous;
    while (f != NULL && (f->owner == FRAME_OWNED_BY_CSTACK || _PyFrame_IsIncomplete(f))) {
        f = f->previous;
    }
    return f;
}

int tracer_frame_thrown_from(void *frame, void *target)
{
    /* gen.throw() on a generator suspended in `yield from` / `await` does not run
       its frame: it pushes it (so tracebacks show it) and throws straight into the
       generator it delegates to, recursively (genobject.c, _gen_throw).  The
       innermost frame, the only one that runs, then has these pushed generator
       frames between it and `target`, the frame that called throw(). */
    _PyInterpreterFrame *f = tracer_frame_caller(frame);
    int hops = 0;
    while (f != NULL && f != (_PyInterpreterFrame *)target
           && f->owner == FRAME_OWNED_BY_GENERATOR && hops++ < 1024) {
        f = tracer_frame_caller(f);
    }
    return hops > 0 && f == (_PyInterpreterFrame *)target;
}

int tracer_gen_unstarted(PyObject *gen)
{
    return ((PyGenObject *)gen)->gi_frame_state == FRAME_CREATED;
}

int tracer_code_nlocalsplus(PyObject *code)
{
    return ((PyCodeObject *)code)->co_nlocalsplus;
}

#if PY_VERSION_HEX < 0x030D0000
static int exact_scalar(PyObject *v)
{
    return PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyBool_Check(v)
        || PyUnicode_CheckExact(v);
}

int tracer_next_is_exact_scalar(PyObject *it)
{
    Py_ssize_t i;
    if (it == NULL)
        return 0;
    if (Py_IS_TYPE(it, &PyRangeIter_Type))
        return 1;   /* exact ints, or exhausted */
    if (Py_IS_TYPE(it, &PyListIter_Type)) {
        PyListObject *seq = ((_PyListIterObject *)it)->it_seq;
        i = ((_PyListIterObject *)it)->it_index;
        if (seq == NULL || i < 0 || i >= PyList_GET_SIZE(seq))
            return 1;   /* exhausted: FOR_ITER leaves the loop */
        return exact_scalar(PyList_GET_ITEM(seq, i));
    }
    if (Py_IS_TYPE(it, &PyTupleIter_Type)) {
        PyTupleObject *tup = ((_PyTupleIterObject *)it)->it_seq;
        i = ((_PyTupleIterObject *)it)->it_index;
        if (tup == NULL || i < 0 || i >= PyTuple_GET_SIZE(tup))
            return 1;
        return exact_scalar(PyTuple_GET_ITEM(tup, i));
    }
    return 0;
}
#else
int tracer_next_is_exact_scalar(PyObject *it)
{
    (void)it;
    return 0;   /* (asked on 3.12 only: compare312.pxi) */
}
#endif
