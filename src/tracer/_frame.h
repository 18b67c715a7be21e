/* The whole interface to CPython's frame internals, for the recorder.
 *
 * Everything that depends on the layout of _PyInterpreterFrame lives in _frame.c,
 * compiled as its own translation unit with Py_BUILD_CORE, so the Cython module
 * never sees an internal header.  Frames are passed around as opaque pointers.
 */
#ifndef TRACER_FRAME_H
#define TRACER_FRAME_H
#include <Python.h>

/* The current thread's state (PyThreadState *), or NULL; no checks, one TLS read. */
void *tracer_thread_state(void);

/* The frame a thread (a non-NULL tracer_thread_state()) is executing, or NULL. */
void *tracer_thread_frame(void *tstate);

/* The frame the current thread is executing, or NULL. */
void *tracer_current_frame(void);

/* The code object a frame runs (borrowed). */
PyObject *tracer_frame_code(void *frame);

/* The function object of a frame (borrowed), or NULL. */
PyObject *tracer_frame_function(void *frame);

/* Value-stack slot `index` counted from the stack base (borrowed).  The caller
 * guarantees, from the static stack-depth analysis, that the slot is live. */
PyObject *tracer_frame_stack_item(void *frame, int index);

/* Replace value-stack slot `index` with a new reference to `value`, releasing the
 * old one.  Same liveness guarantee as tracer_frame_stack_item; the old value is
 * released last, so its destructor sees the frame already consistent. */
void tracer_frame_stack_set(void *frame, int index, PyObject *value);

/* Fast local `index` (borrowed), NULL when unbound. */
PyObject *tracer_frame_local(void *frame, int index);

/* Byte offset of the code unit a frame is executing (for a frame suspended in a
 * call, one of the calling instruction's units); -1 before its first instruction. */
int tracer_frame_lasti(void *frame);

/* The Python frame that called `frame`, skipping the entry frames CPython puts on
 * the C stack when C code calls Python; NULL if none. */
void *tracer_frame_caller(void *frame);

/* 1 if `frame` was entered by a throw() that `target` made into a generator
 * suspended in `yield from` / `await`: between the two there are only the
 * delegating generator frames that throw() pushed without running them. */
int tracer_frame_thrown_from(void *frame, void *target);

/* co_nlocalsplus of a code object: fast locals, cells and free variables. */
int tracer_code_nlocalsplus(PyObject *code);

#endif
