# The C-API and frame-shim declarations the core uses (the only externs).

cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_DECREF, Py_XDECREF, Py_XINCREF
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memcmp, memcpy, memset

import sys

cdef extern from "Python.h":
    ctypedef void (*freefunc)(void *)
    Py_ssize_t PyUnstable_Eval_RequestCodeExtraIndex(freefunc)
    int PyUnstable_Code_GetExtra(object code, Py_ssize_t index, void **extra)
    int PyUnstable_Code_SetExtra(object code, Py_ssize_t index, void *extra)
    void *PyThreadState_Get()
    bint PyCell_Check(PyObject *)
    bint PyMethod_Check(PyObject *) nogil
    PyObject *PyMethod_GET_SELF(PyObject *) nogil
    object PyMethod_New(object func, object self)
    PyObject *PyCell_GET(PyObject *)
    bint PyType_IS_GC(PyTypeObject *t)
    PyTypeObject *Py_TYPE(PyObject *o)

cdef extern from "_frame.h":
    void *tracer_current_frame()
    void *tracer_thread_state()
    void **tracer_thread_cell(void *tstate)
    bint tracer_on_thread(void **cell, void *tstate)
    void *tracer_thread_frame(void *tstate)
    void *tracer_frame_caller(void *frame)
    void *tracer_frame_previous(void *frame)
    int tracer_frame_thrown_from(void *frame, void *target)
    PyObject *tracer_frame_function(void *frame)
    PyObject *tracer_frame_stack_item(void *frame, int index)
    void tracer_frame_stack_set(void *frame, int index, PyObject *value)
    PyObject *tracer_frame_local(void *frame, int index)
    int tracer_frame_lasti(void *frame)
    int tracer_code_nlocalsplus(PyObject *code)
    int tracer_next_is_exact_scalar(PyObject *it)
    const Py_ssize_t tracer_localsplus_offset   # _PyInterpreterFrame.localsplus

# 3.12, whose COMPARE_OP into a branch is checked before it runs (compare312.pxi).
cdef extern from *:
    """
    #define TRACER_PY312 (PY_VERSION_HEX < 0x030D0000)
    """
    bint TRACER_PY312
