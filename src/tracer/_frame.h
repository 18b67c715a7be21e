/* The whole interface to CPython's frame internals, for the recorder.
 *
 * Everything that depends on the layout of _PyInterpreterFrame lives in _frame.c,
 * compiled as its own translation unit with Py_BUILD_CORE, so the Cython module
 * never sees an internal header.  Frames are passed around as opaque pointers.
 */
#ifndef TRACER_FRAME_H
#define TRACER_FRAME_H
#include <Python.h>

/* What this header declares is defined in _frame.c, linked into the same
 * extension and used by nothing outside it: hidden, so that the Cython module
 * reads the frame offsets below with one load (not first their address from the
 * GOT, a load more on every read of a frame's slot) and calls the functions
 * directly (not through the PLT).  (-fvisibility=hidden would not do it: it
 * hides definitions, not what a declaration lets the compiler assume.) */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* The current thread's state (PyThreadState *), or NULL; no checks, one TLS read.
 * Inline: every event asks (one call into libpython instead of two). */
static inline void *tracer_thread_state(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyThreadState_GetUnchecked();
#else
    return _PyThreadState_UncheckedGet();
#endif
}

/* The frame the current thread is executing, or NULL. */
void *tracer_current_frame(void);

/* Whether the calling thread is the one whose state is `tstate`: asked by every
 * event (another thread running a followed code object fires the same callbacks).
 *
 * With a GIL (3.12, 3.13 built with one) the answer is read where the GIL keeps
 * its last holder: `cell` (tracer_thread_cell(tstate), asked once per recorder)
 * is &tstate->interp->ceval.gil->last_holder.  An event runs on a thread that
 * holds the GIL; every way a thread state becomes a thread's current one takes
 * the GIL with it (take_gil stores it as last_holder: PyEval_RestoreThread,
 * PyEval_AcquireThread, PyThreadState_Swap, a forked child's re-init), and one
 * that stops being current is stored there again or loses the GIL before
 * another thread runs (drop_gil).  So while an event runs the cell holds that
 * thread's state: the same answer as tracer_thread_state() == tstate, in one
 * load instead of a call into libpython and its TLS read (__tls_get_addr, ~18
 * instructions an event).  Free-threaded builds and 3.14 (layout not checked
 * here) ask tracer_thread_state(); `cell` is then NULL and unused. */
#if PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED)
#define TRACER_THREAD_CELL 1
#else
#define TRACER_THREAD_CELL 0
#endif
void **tracer_thread_cell(void *tstate);

static inline int tracer_on_thread(void **cell, void *tstate)
{
#if TRACER_THREAD_CELL
    return *(void *volatile *)cell == tstate;
#else
    (void)cell;
    return tracer_thread_state() == tstate;
#endif
}

/* The reads below run several times per recorded node.  Before 3.14 a frame's
 * slots are plain object pointers, so they are inline loads at offsets _frame.c
 * measures in the internal struct (the module still sees no internal header);
 * 3.14's tagged slots go through _frame.c. */
#if PY_VERSION_HEX < 0x030E0000
extern const Py_ssize_t tracer_localsplus_offset;   /* _PyInterpreterFrame.localsplus */
extern const Py_ssize_t tracer_executable_offset;   /* .f_executable (3.12: .f_code) */
extern const Py_ssize_t tracer_funcobj_offset;      /* .f_funcobj */
extern const Py_ssize_t tracer_instr_offset;        /* .instr_ptr (3.12: .prev_instr) */
extern const Py_ssize_t tracer_previous_offset;     /* .previous */
extern const Py_ssize_t tracer_gen_iframe_offset;   /* PyGenObject.gi_iframe (coroutines: the same) */

/* The frame below `frame` on its thread's frame stack, whatever owns it (see
 * tracer_frame_caller for the calling Python frame). */
static inline void *tracer_frame_previous(void *frame)
{
    return *(void **)((char *)frame + tracer_previous_offset);
}

/* The frame a thread (a non-NULL tracer_thread_state()) is executing, or NULL. */
static inline void *tracer_thread_frame(void *tstate)
{
#if PY_VERSION_HEX >= 0x030D0000
    return ((PyThreadState *)tstate)->current_frame;
#else
    return ((PyThreadState *)tstate)->cframe->current_frame;
#endif
}

/* The code object a frame runs (borrowed). */
static inline PyObject *tracer_frame_code(void *frame)
{
    return *(PyObject **)((char *)frame + tracer_executable_offset);
}

/* The function object of a frame (borrowed), or NULL. */
static inline PyObject *tracer_frame_function(void *frame)
{
    return *(PyObject **)((char *)frame + tracer_funcobj_offset);
}

/* The code object of a generator or coroutine (borrowed: the one its frame
 * runs, kept while the generator lives, exhausted or not; PyGen_GetCode's
 * without the call and the reference). */
static inline PyObject *tracer_gen_code_of(PyObject *gen)
{
    return tracer_frame_code((char *)gen + tracer_gen_iframe_offset);
}

/* Fast local `index` (borrowed), NULL when unbound. */
static inline PyObject *tracer_frame_local(void *frame, int index)
{
    return ((PyObject **)((char *)frame + tracer_localsplus_offset))[index];
}

/* Value-stack slot `index` counted from the stack base (borrowed).  The caller
 * guarantees, from the static stack-depth analysis, that the slot is live. */
static inline PyObject *tracer_frame_stack_item(void *frame, int index)
{
    PyCodeObject *code = (PyCodeObject *)tracer_frame_code(frame);
    return tracer_frame_local(frame, code->co_nlocalsplus + index);
}

/* Byte offset of the code unit a frame is executing (for a frame suspended in a
 * call, one of the calling instruction's units); -1 before its first instruction
 * (CPython's _PyInterpreterFrame_LASTI). */
static inline int tracer_frame_lasti(void *frame)
{
    /* Code units are two bytes from co_code_adaptive (_PyCode_CODE). */
    const char *ip = *(const char **)((char *)frame + tracer_instr_offset);
    int bytes = (int)(ip - ((PyCodeObject *)tracer_frame_code(frame))->co_code_adaptive);
    return bytes < 0 ? -1 : bytes;
}
#else
int tracer_frame_lasti(void *frame);
void *tracer_frame_previous(void *frame);
void *tracer_thread_frame(void *tstate);
PyObject *tracer_frame_code(void *frame);
PyObject *tracer_gen_code_of(PyObject *gen);
PyObject *tracer_frame_function(void *frame);
PyObject *tracer_frame_local(void *frame, int index);
PyObject *tracer_frame_stack_item(void *frame, int index);
#endif

/* Replace value-stack slot `index` with a new reference to `value`, releasing the
 * old one.  Same liveness guarantee as tracer_frame_stack_item; the old value is
 * released last, so its destructor sees the frame already consistent. */
void tracer_frame_stack_set(void *frame, int index, PyObject *value);

/* The Python frame that called `frame`, skipping the entry frames CPython puts on
 * the C stack when C code calls Python; NULL if none. */
void *tracer_frame_caller(void *frame);

/* 1 if `frame` was entered by a throw() that `target` made into a generator
 * suspended in `yield from` / `await`: between the two there are only the
 * delegating generator frames that throw() pushed without running them. */
int tracer_frame_thrown_from(void *frame, void *target);

/* 1 if the generator `gen` (an exact generator) has not started: its frame's
 * first run will fire PY_START. */
int tracer_gen_unstarted(PyObject *gen);

/* co_nlocalsplus of a code object: fast locals, cells and free variables. */
int tracer_code_nlocalsplus(PyObject *code);

/* Whether the value FOR_ITER will take next from iterator `it` is an exact int,
 * float, bool or str, or there is none (the iterator is exhausted): 1; 0 when
 * that cannot be told without running it.  Exact list, tuple and range
 * iterators are read in place (no code runs); any other iterator answers 0.
 * For 3.12's compare guards (compare312.pxi): FOR_ITER runs no code between the
 * INSTRUCTION event that asks and its next(). */
int tracer_next_is_exact_scalar(PyObject *it);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#endif
