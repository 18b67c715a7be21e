# The value policy: what a trace keeps of each value it stores (Context(values=...)).
# Applied in C where rows take their values (Trace.add_row, set_value, pool_add),
# without running any of the program's code, so that under every policy but
# "keep" the trace holds no reference that changes when the program's objects die.

cdef extern from "Python.h":
    bint PyFunction_Check(PyObject *)
    bint PyType_Check(PyObject *)
    bint PyModule_Check(PyObject *)
    bint PyCode_Check(PyObject *)
    bint PyLong_CheckExact(PyObject *)
    bint PyFloat_CheckExact(PyObject *)
    bint PyComplex_CheckExact(PyObject *)
    bint PyUnicode_CheckExact(PyObject *)
    bint PyBytes_CheckExact(PyObject *)
    bint PyTuple_CheckExact(PyObject *)
    bint PyFrozenSet_CheckExact(PyObject *)
    bint PyExceptionInstance_Check(PyObject *)
    bint PyObject_TypeCheck(PyObject *, PyTypeObject *)
    Py_ssize_t PyTuple_GET_SIZE(PyObject *)
    Py_ssize_t PyDict_GET_SIZE(PyObject *)
    Py_ssize_t PySet_GET_SIZE(PyObject *)
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject *)
    Py_ssize_t PyBytes_GET_SIZE(PyObject *)
    object PyWeakref_NewRef(object ob, object callback)
    PyObject *PyCFunction_GET_SELF(PyObject *)
    PyTypeObject PyWrapperDescr_Type
    PyTypeObject PyCFunction_Type
    PyTypeObject PyClassMethodDescr_Type
    PyTypeObject PyGetSetDescr_Type
    PyTypeObject PyMemberDescr_Type
    PyTypeObject PyUnicode_Type
    PyTypeObject PyBytes_Type
    PyTypeObject PyList_Type
    PyTypeObject PyTuple_Type
    PyTypeObject PyDict_Type
    PyTypeObject PySet_Type
    PyTypeObject PyFrozenSet_Type
    PyTypeObject PyByteArray_Type
    PyTypeObject PyGen_Type
    PyTypeObject PyCoro_Type
    PyTypeObject PyAsyncGen_Type

cdef extern from *:
    """
    static inline int tracer_weakrefable(PyObject *o) {
        return Py_TYPE(o)->tp_weaklistoffset != 0;
    }
    /* A function of a C type that is not a plain builtin (Cython's cyfunction):
       its type says it binds like a function (only C types can say so). */
    static inline int tracer_function_like(PyObject *o) {
        return (Py_TYPE(o)->tp_flags & Py_TPFLAGS_METHOD_DESCRIPTOR) != 0;
    }
    /* Types a policy decides for every instance alike, remembered by address
       and version tag: table 0, "none"'s types whose instances are all NOT_KEPT
       (not the program's code, an exception, a bound method or a builtin);
       table 1, "summary"'s types whose instances all get their type's shared
       summary (none of those, nor an immutable value, an array, a frozenset or
       a bytearray); table 2, "weak"'s types whose instances are all referred
       to weakly, with their type's shared summary (none of table 1's
       exceptions, nor a tuple or a set, nor a type without weak references).
       A type freed and another made at its address has another
       tag (tags are never reused; 0, none assigned yet, is never remembered), so
       no reference to a type is held.  Direct-mapped, 64 entries each: a
       method's `self` decided once per class.  Cleared when a trace starts. */
    static PyTypeObject *tracer_decided_types[3][64];
    static unsigned int tracer_decided_tags[3][64];
    static inline size_t tracer_decided_slot(PyTypeObject *t) {
        return ((size_t)t >> 4) & 63;
    }
    static inline int tracer_type_decided(int table, PyTypeObject *t) {
        size_t i = tracer_decided_slot(t);
        return tracer_decided_types[table][i] == t && t->tp_version_tag != 0
            && tracer_decided_tags[table][i] == t->tp_version_tag;
    }
    static inline void tracer_decided_forget(void) {
        memset(tracer_decided_types, 0, sizeof tracer_decided_types);
    }
    static inline void tracer_type_note(int table, PyTypeObject *t) {
        size_t i = tracer_decided_slot(t);
        if (t->tp_version_tag != 0) {
            tracer_decided_types[table][i] = t;
            tracer_decided_tags[table][i] = t->tp_version_tag;
        }
    }
    /* The object a weakref.ref refers to, read from its C struct without a
       reference taken (Py_None once it died): whether a cached reference is
       still one to `o` is a comparison, not a call of the reference. */
    static inline int tracer_weakref_is(PyObject *r, PyObject *o) {
        return ((PyWeakReference *)r)->wr_object == o;
    }
    /* An exception's args, read from its C struct (a borrowed reference, or
       NULL): the `args` attribute could be a property of the program's class. */
    static inline PyObject *tracer_exception_args(PyObject *o) {
        return ((PyBaseExceptionObject *)o)->args;
    }
    """
    bint tracer_weakrefable(PyObject *o)
    bint tracer_function_like(PyObject *o)
    bint tracer_type_decided(int table, PyTypeObject *t)
    void tracer_type_note(int table, PyTypeObject *t)
    void tracer_decided_forget()
    bint tracer_weakref_is(PyObject *r, PyObject *o)
    PyObject *tracer_exception_args(PyObject *o)

# What the collector need not walk (_untrack_summary, _untrack_weak).  An object the
# collector does not track is never part of a garbage cycle it finds, so it may be
# untracked only when no cycle can pass through it: when nothing it refers to can
# ever refer back to it.  These say which referents are such leaves.
cdef extern from *:
    """
    /* None, an exact int, float, str or bytes: no references at all. */
    static inline int tracer_gc_atom(PyObject *o) {
        return o == NULL || o == Py_None || PyLong_CheckExact(o) || PyFloat_CheckExact(o)
            || PyUnicode_CheckExact(o) || PyBytes_CheckExact(o);
    }
    /* A static (non-heap) type: never tracked, never freed, its attributes
       cannot be set (builtins, C extensions' types): it reaches no object a
       program could make. */
    static inline int tracer_static_type(PyObject *t) {
        return PyType_Check(t) && !(((PyTypeObject *)t)->tp_flags & Py_TPFLAGS_HEAPTYPE);
    }
    /* An exact tuple of exact ints (an array's shape). */
    static inline int tracer_int_tuple(PyObject *o) {
        Py_ssize_t i, n;
        if (!PyTuple_CheckExact(o)) return 0;
        n = PyTuple_GET_SIZE(o);
        for (i = 0; i < n; i++)
            if (!PyLong_CheckExact(PyTuple_GET_ITEM(o, i))) return 0;
        return 1;
    }
    /* An object of a type the collector never follows (numpy's dtype). */
    static inline int tracer_not_gc(PyObject *o) { return !PyObject_IS_GC(o); }
    /* A weakref.ref with no callback (what PyWeakref_NewRef(ob, None) returns,
       an object's basic reference): its traversal visits only its callback,
       which it never gets, so it is a leaf for the collector. */
    static inline int tracer_plain_weakref(PyObject *r) {
        return PyWeakref_CheckRefExact(r) && ((PyWeakReference *)r)->wr_callback == NULL;
    }
    static inline int tracer_gc_tracked(PyObject *o) {
        return PyObject_IS_GC(o) && PyObject_GC_IsTracked(o);
    }
    static inline void tracer_gc_untrack(PyObject *o) {
        if (PyObject_IS_GC(o) && PyObject_GC_IsTracked(o)) PyObject_GC_UnTrack(o);
    }
    """
    bint tracer_gc_atom(PyObject *o)
    bint tracer_static_type(PyObject *t)
    bint tracer_int_tuple(PyObject *o)
    bint tracer_not_gc(PyObject *o)
    bint tracer_plain_weakref(PyObject *r)
    bint tracer_gc_tracked(PyObject *o)
    void tracer_gc_untrack(PyObject *o)

cdef enum:
    VP_KEEP = 0       # the objects themselves (the default)
    VP_NONE = 1       # None, True and False (branches), the program's code; nothing else
    VP_SUMMARY = 2    # immutable scalars and code kept, everything else a ValueSummary
    VP_WEAK = 3       # immutable values and code kept, others by weak reference or summary

VALUE_POLICIES = {"keep": VP_KEEP, "none": VP_NONE, "summary": VP_SUMMARY, "weak": VP_WEAK}
cdef tuple _POLICY_NAMES = ("keep", "none", "summary", "weak")
cdef int SHORT_TEXT = 80      # str and bytes up to this length are kept under "summary"


@cython.final
cdef class NotKept:
    """What a trace recorded with `values="none"` holds for a value it did not keep."""

    def __repr__(self):
        return "⟨not kept⟩"

    def __reduce__(self):
        return "NOT_KEPT"


NOT_KEPT = NotKept()
# The same object for the C code that stores it per row: a module-level Python
# name is a dict lookup at every use on 3.12+ (Cython keeps no cache of module
# globals there), which made `values="none"` slower than keeping every value.
cdef object _NOT_KEPT = NOT_KEPT


@cython.final
cdef class ValueSummary:
    """What a trace keeps of a value instead of the value (Context(values="summary"),
    or "weak" for a value that cannot be weakly referenced and a bound method, and
    for exceptions under every policy but "keep"): its type, its shape, dtype and
    length when it has them (arrays, builtin containers), an exception's message,
    a bound method's function, and a bounded text — made in C, running none of
    the program's code (no __repr__ or property is called).  It holds nothing of
    the object, so an exception summarised keeps no traceback, and none of the
    frames and locals a traceback holds."""

    cdef readonly object type     # the value's type
    cdef readonly object shape    # a tuple (arrays), or None
    cdef readonly object dtype    # the array's dtype, or None
    cdef readonly object length   # len() of a builtin container, str or bytes, or None
    cdef str _text                # a bounded description, made when first read
    cdef object prefix            # the first SHORT_TEXT characters of a str or bytes
    cdef readonly object function # a bound method's function (what it calls), or None
    cdef readonly object message  # an exception's one str/int/float argument (str), or None
    cdef size_t key               # the address CallFilter matches (the function's)
    cdef Py_ssize_t n             # a shared summary's length, -1 for none (the cache's key)

    @property
    def text(self):
        """A bounded description: the type, an array's dtype and shape, a container's
        length, the start of a str or bytes."""
        if self._text is None:
            self._text = _summary_text(self)
        return self._text

    def __reduce__(self):
        return (_summary, (self.type, self.shape, self.dtype, self.length, self.text,
                           self.message))

    def __repr__(self):
        return self.text

    def __eq__(self, other):
        if not isinstance(other, ValueSummary):
            return NotImplemented
        o = <ValueSummary>other
        return (self.type is o.type and self.shape == o.shape and self.dtype == o.dtype
                and self.length == o.length and self.text == o.text
                and self.message == o.message)

    def __hash__(self):
        return hash((id(self.type), self.text))


def _summary(tp, shape, dtype, length, text, message=None):
    # (message: pickles made before session 10 have five arguments)
    cdef ValueSummary s = ValueSummary.__new__(ValueSummary)
    s.type, s.shape, s.dtype, s.length, s._text = tp, shape, dtype, length, text
    s.message = message
    _untrack_summary(s)
    return s


cdef str _summary_text(ValueSummary s):
    tp = s.type
    name = tp.__qualname__
    if s.shape is not None:
        return f"⟨{name} {s.dtype} {'×'.join(map(str, s.shape)) or 'scalar'}⟩"
    if s.prefix is not None:
        return repr(s.prefix) + "…"
    if s.length is not None:
        return f"⟨{name} of {s.length}⟩"
    if s.function is not None:
        return f"⟨bound method {getattr(s.function, '__qualname__', '?')}⟩"
    if issubclass(tp, BaseException):
        if s.message is not None:
            return f"⟨{name} raised: {s.message}⟩"
        return f"⟨{name} raised⟩"
    return f"⟨{tp.__module__}.{name} object⟩"


@cython.final
cdef class WeakValue:
    """A value a trace recorded with `values="weak"` refers to weakly: the node's
    value is the object while the program keeps it alive, then its summary."""

    cdef readonly object ref          # weakref.ref to the value
    cdef readonly ValueSummary summary

    def get(self):
        """The value if it is still alive, else its ValueSummary."""
        v = self.ref()
        return self.summary if v is None else v

    def __repr__(self):
        v = self.ref()
        return f"⟨weak {self.summary.text}{'' if v is not None else ', dead'}⟩"

    def __reduce__(self):
        # A saved trace holds what it knew of the value, never the value (alive or not).
        return self.summary.__reduce__()


cdef void _untrack_summary(ValueSummary s) noexcept:
    # A summary that refers only to leaves -- a static type, None, ints, floats,
    # str and bytes, a tuple of ints, an object of a type the collector never
    # follows -- is taken out of the collector's lists: no object it refers to can
    # refer back to it, so it is never part of a cycle, and it is freed when the
    # last reference to it goes (traces, the shared caches, the program), as
    # before.  Summaries of the program's own classes (a heap type: its methods'
    # globals or closures may reach the trace that holds the summary) and of bound
    # methods (the function) stay tracked.  Most summaries toolz's suite makes
    # (builtin exceptions, str, containers) are leaves-only: collections then walk
    # fewer objects and promote fewer to the older generations.
    if s.function is not None or s.type is None:
        return
    if not tracer_static_type(<PyObject *>s.type):
        return
    if s.dtype is not None and not tracer_not_gc(<PyObject *>s.dtype):
        return
    if s.shape is not None and not tracer_int_tuple(<PyObject *>s.shape):
        return
    if not (tracer_gc_atom(<PyObject *>s.length) and tracer_gc_atom(<PyObject *>s.prefix)
            and tracer_gc_atom(<PyObject *>s.message) and tracer_gc_atom(<PyObject *>s._text)):
        return
    tracer_gc_untrack(<PyObject *>s)


cdef void _untrack_weak(WeakValue w) noexcept:
    # A WeakValue whose summary is untracked (above) and whose reference is a
    # plain weakref.ref (no callback) is never part of a cycle: the reference's
    # traversal visits only its callback, which a basic reference never gets.
    # Only the WeakValue (tracer's own object) is untracked.  The reference
    # stays as it is: it is the object's basic reference, the same object the
    # program's weakref.ref(obj) returns, and tracing must not change what the
    # program can observe of it (gc.is_tracked, gc.get_objects).
    if not tracer_plain_weakref(<PyObject *>w.ref):
        return
    if w.summary is not None and not tracer_gc_tracked(<PyObject *>w.summary):
        tracer_gc_untrack(<PyObject *>w)


cdef object _NDARRAY = None
cdef object _NPGENERIC = None    # numpy.generic once numpy is imported
cdef object _NPUFUNC = None      # numpy.ufunc (np.tanh: the program's code, kept)


cdef inline bint _builtin_is_code(PyObject *v) noexcept:
    # Whether builtin `v` is a builtin function, not one bound to the program's
    # object (a module's function, a type's static method; a Cython function is
    # its own self).
    cdef PyObject *self_ = PyCFunction_GET_SELF(v)
    return self_ == NULL or self_ == v or PyModule_Check(self_) or PyType_Check(self_)


cdef inline bint _is_code(PyObject *v) noexcept:
    # The program's definitions: kept under every policy (they are not its data,
    # and callees must stay recognisable: node.callee, Context(on_call=...)).
    cdef PyTypeObject *tp = Py_TYPE(v)
    if PyFunction_Check(v) or PyType_Check(v) or PyModule_Check(v) or PyCode_Check(v):
        return True
    if tp == &PyMethodDescr_Type or tp == &PyWrapperDescr_Type or \
            tp == &PyClassMethodDescr_Type or tp == &PyGetSetDescr_Type or \
            tp == &PyMemberDescr_Type:
        return True
    if PyCFunction_Check(v) and _builtin_is_code(v):
        return True
    if _NPUFUNC is not None and tp == <PyTypeObject *>_NPUFUNC:
        return True
    return tracer_function_like(v)


cdef bint _is_immutable(PyObject *v, int depth) noexcept:
    # Immutable builtin values (kept by "weak"; scalars also by "summary").
    cdef Py_ssize_t i, n
    if v == <PyObject *>None or v == <PyObject *>PY_TRUE or v == <PyObject *>PY_FALSE:
        return True
    if PyLong_CheckExact(v) or PyFloat_CheckExact(v) or PyComplex_CheckExact(v) or \
            PyUnicode_CheckExact(v) or PyBytes_CheckExact(v):
        return True
    if v == <PyObject *>Ellipsis or v == <PyObject *>NotImplemented:
        return True
    if _NPGENERIC is not None and PyObject_TypeCheck(v, <PyTypeObject *>_NPGENERIC):
        return True   # a numpy scalar (np.float64): immutable
    if depth > 0 and PyTuple_CheckExact(v):
        n = PyTuple_GET_SIZE(v)
        if n > 16:
            return False
        for i in range(n):
            if not _is_immutable(PyTuple_GET_ITEM(<object>v, i), depth - 1):
                return False
        return True
    return False


cdef ValueSummary _summarise(PyObject *v):
    cdef PyTypeObject *tp = Py_TYPE(v)
    cdef object obj = <object>v
    cdef ValueSummary s
    # Type checks in C: isinstance() would read a non-instance's __class__, which
    # a program's class may define as a property.
    if _NDARRAY is not None and PyObject_TypeCheck(v, <PyTypeObject *>_NDARRAY):
        # The array's own C getters: no Python code of the program runs.
        s = ValueSummary.__new__(ValueSummary)
        s.type = <object>tp
        s.shape = obj.shape
        s.dtype = obj.dtype
        _untrack_summary(s)
        return s
    if tp == &PyUnicode_Type or tp == &PyBytes_Type:
        s = ValueSummary.__new__(ValueSummary)
        s.type = <object>tp
        s.length = len(obj)
        s.prefix = obj[:SHORT_TEXT]
        _untrack_summary(s)
        return s
    if tp == &PyList_Type or tp == &PyTuple_Type or tp == &PyDict_Type or \
            tp == &PySet_Type or tp == &PyFrozenSet_Type or tp == &PyByteArray_Type:
        return _shared_summary(tp, len(obj))
    if PyMethod_Check(v) or PyCFunction_Check(v):
        return _method_summary(v)
    if PyExceptionInstance_Check(v):
        s = ValueSummary.__new__(ValueSummary)
        s.type = <object>tp
        s.message = _exception_message(v)
        _untrack_summary(s)
        return s
    return _shared_summary(tp, -1)


# Summaries that say only a type (and a container's length) are shared: a trace
# of toolz's suite made 472,000 summaries of 4,000 distinct ones, and each made
# is an object the collector tracks (collections every 2,000 new ones, and full
# ones walking every summary of every live trace).  A direct-mapped cache of
# them, emptied when a trace with a value policy starts and ends, so that it
# holds nothing (types, which traces keep as code anyway) between traces.
cdef enum:
    SUMMARY_SLOTS = 1024   # a power of two (the hash's top 10 bits)
cdef PyObject *_summary_slots[SUMMARY_SLOTS]
cdef Py_ssize_t _summary_filled = 0


cdef inline size_t _summary_slot(PyTypeObject *tp, Py_ssize_t n) noexcept:
    cdef uint64_t h = ((<uint64_t><size_t>tp) >> 4) ^ (<uint64_t>(n + 1) * <uint64_t>0x9E3779B9)
    return <size_t>((h * <uint64_t>0x9E3779B97F4A7C15) >> 54)   # 10 bits: 1024 slots


cdef inline PyObject *_summary_cached(PyTypeObject *tp, Py_ssize_t n) noexcept:
    # The shared summary of (tp, n) if the cache holds it (borrowed), else NULL.
    cdef PyObject *s = _summary_slots[_summary_slot(tp, n)]
    if s != NULL and <PyTypeObject *>(<ValueSummary>s).type == tp and (<ValueSummary>s).n == n:
        return s
    return NULL


cdef inline void _slot_store(PyObject **slots, size_t i, object s) noexcept:
    # Slot i of one of the shared caches below (summaries, WeakValues, method
    # summaries) made to hold `s` (a new reference), the object it held released.
    global _summary_filled
    cdef PyObject *old = slots[i]
    Py_INCREF(s)
    slots[i] = <PyObject *>s
    if old == NULL:
        _summary_filled += 1
    else:
        Py_DECREF(<object>old)   # still held by the rows it was given to


cdef ValueSummary _shared_summary(PyTypeObject *tp, Py_ssize_t n):
    cdef size_t i = _summary_slot(tp, n)
    cdef PyObject *old = _summary_slots[i]
    cdef ValueSummary s
    if old != NULL:
        s = <ValueSummary>old
        if <PyTypeObject *>s.type == tp and s.n == n:
            return s
    s = ValueSummary.__new__(ValueSummary)
    s.type = <object>tp
    s.n = n
    if n >= 0:
        s.length = n
    _untrack_summary(s)
    _slot_store(_summary_slots, i, s)
    return s


# The same for weak values: a value read again (an object passed down a chain of
# calls, a method's self) is one WeakValue while its summary is the same.  A
# WeakValue holds a weak reference, never the object: the cache changes no
# lifetime of the program's.
cdef PyObject *_weak_slots[SUMMARY_SLOTS]


cdef inline size_t _weak_slot(PyObject *v, PyObject *s) noexcept:
    cdef uint64_t h = ((<uint64_t><size_t>v) >> 4) ^ \
        (((<uint64_t><size_t>s) >> 4) * <uint64_t>0x9E3779B9)
    return <size_t>((h * <uint64_t>0x9E3779B97F4A7C15) >> 54)


cdef inline PyObject *_weak_cached(PyObject *v, PyObject *s) noexcept:
    # The cached WeakValue of `v` with summary `s` (borrowed), else NULL.  The
    # address alone could be a new object's: the cached reference, if it is
    # still alive, says whether it is the same one.
    cdef PyObject *w = _weak_slots[_weak_slot(v, s)]
    if w != NULL and <PyObject *>(<WeakValue>w).summary == s \
            and tracer_weakref_is(<PyObject *>(<WeakValue>w).ref, v):
        return w
    return NULL


cdef WeakValue _weak_value(PyObject *v, ValueSummary s):
    # The WeakValue of `v` with summary `s` (_summarise's), from the cache or made.
    cdef PyObject *cached = _weak_cached(v, <PyObject *>s)
    cdef WeakValue w
    if cached != NULL:
        return <WeakValue>cached
    w = WeakValue.__new__(WeakValue)
    w.ref = PyWeakref_NewRef(<object>v, None)   # the object's own basic ref, reused
    w.summary = s
    _untrack_weak(w)
    _slot_store(_weak_slots, _weak_slot(v, <PyObject *>s), w)
    return w


# And for bound methods: a method read off an instance (`obj.method`, difflib's
# `j2len.get` once per loop step) is a new object at each read, and what its
# summary says is its function (or a builtin's method def) and its type: one
# summary per method, not per read.  Keyed by the summary's `key`, the function
# (which the summary holds, so its address is never reused while cached) or
# the builtin's method def (static in its module).
cdef PyObject *_method_slots[SUMMARY_SLOTS]


cdef inline size_t _method_key(PyObject *v) noexcept:
    # The function or method def a bound method calls (0 for anything else).
    if PyMethod_Check(v):
        return <size_t>PyMethod_GET_FUNCTION(v)
    if PyCFunction_Check(v):
        return <size_t>(<PyCFunctionObject *>v).m_ml
    return 0


cdef inline size_t _method_slot(PyObject *v, size_t key) noexcept:
    return _summary_slot(Py_TYPE(v), <Py_ssize_t>(key >> 4))


cdef inline PyObject *_method_summary_cached(PyObject *v) noexcept:
    # The shared summary of bound method `v` if the cache holds it (borrowed), else NULL.
    cdef size_t key = _method_key(v)
    cdef PyObject *s = _method_slots[_method_slot(v, key)]
    if s != NULL and <PyTypeObject *>(<ValueSummary>s).type == Py_TYPE(v) \
            and (<ValueSummary>s).key == key:
        return s
    return NULL


cdef ValueSummary _method_summary(PyObject *v):
    # The summary of bound method `v` (a Python method, or a builtin bound to the
    # program's object): its type and its function (what a CallFilter matches),
    # not its instance; shared per method (above).
    cdef PyObject *cached = _method_summary_cached(v)
    cdef size_t key = _method_key(v)
    cdef ValueSummary s
    if cached != NULL:
        return <ValueSummary>cached
    s = ValueSummary.__new__(ValueSummary)
    s.type = <object>Py_TYPE(v)
    s.key = key
    if PyMethod_Check(v):
        s.function = <object>PyMethod_GET_FUNCTION(v)   # (code: kept by every policy)
    else:
        # (its name, the builtin type's own getter: no code of the program
        # runs; made once per method)
        s._text = f"⟨bound builtin {(<object>v).__name__}⟩"
        _untrack_summary(s)
    _slot_store(_method_slots, _method_slot(v, key), s)
    return s


cdef int _clear_summaries() except -1:
    global _summary_filled
    cdef Py_ssize_t i
    cdef PyObject *old
    if _summary_filled == 0:
        return 0
    for i in range(SUMMARY_SLOTS):
        old = _summary_slots[i]
        if old != NULL:
            _summary_slots[i] = NULL
            Py_DECREF(<object>old)
        old = _weak_slots[i]
        if old != NULL:
            _weak_slots[i] = NULL
            Py_DECREF(<object>old)
        old = _method_slots[i]
        if old != NULL:
            _method_slots[i] = NULL
            Py_DECREF(<object>old)
    _summary_filled = 0
    return 0


cdef object _exception_message(PyObject *v):
    # The message of an exception made with one str, int or float argument (what
    # most raise statements give), without calling its __str__ (the program's code
    # for its own classes): bounded like a short str.
    cdef PyObject *args = tracer_exception_args(v)
    cdef PyObject *a
    if args == NULL or not PyTuple_CheckExact(args) or PyTuple_GET_SIZE(args) != 1:
        return None
    a = PyTuple_GET_ITEM(<object>args, 0)
    if PyUnicode_CheckExact(a):
        text = <object>a
        return text if len(text) <= SHORT_TEXT else text[:SHORT_TEXT] + "…"
    if PyFloat_CheckExact(a) or (PyLong_CheckExact(a) and (<object>a).bit_length() <= 64):
        return repr(<object>a)   # int's and float's own repr (a short one)
    return None


cdef inline PyObject *_policy_value(int policy, PyObject *v) noexcept:
    """A new reference to what a trace with `policy` stores for value `v` (not NULL)."""
    # The values most rows hold first, without a call: ints and floats, then a
    # branch's bool and a jump's None, kept under every policy (immortal on every
    # Python tracer supports, 3.12+, PEP 683: no reference counted, as
    # replay.pxi's _immortal_value holds them).
    if PyLong_CheckExact(v) or PyFloat_CheckExact(v):
        if policy == VP_NONE:
            v = <PyObject *>_NOT_KEPT
        Py_INCREF(<object>v)
        return v
    if v == <PyObject *>None or v == <PyObject *>PY_TRUE or v == <PyObject *>PY_FALSE:
        return v
    if PyFunction_Check(v):
        Py_INCREF(<object>v)   # (code: kept under every policy, _is_code)
        return v
    return _policy_value_slow(policy, v)


# _policy_value_slow calls the rest (_policy_value_made) through this pointer:
# inlined (gcc inlines a static function called once), its try's frame and
# registers were set up on every call, for the plain data too (json under
# "summary": ~100 instructions a call).  (Set once, after it; gcc cannot see
# through it.)
ctypedef PyObject *(*_policy_fn)(int, PyObject *) noexcept
cdef _policy_fn _policy_value_made_out


cdef PyObject *_policy_value_slow(int policy, PyObject *v) noexcept:
    # A new reference to what `policy` keeps of `v` (not an int, float, None,
    # bool or function).  The program's plain data first (str, bytes, list,
    # dict, tuple, set, a generator or coroutine: what most rows that reach here
    # hold), decided from its exact type, without the checks of
    # _policy_value_made (each PyObject_TypeCheck of a value that is no
    # instance, a module's or an array's, is a call) and outside its try (which
    # reads the thread state): the same answers, for a shared summary when the
    # cache holds it already.  Under "none" and "summary", any other value too
    # when its type decides it (_none_decided, _summary_decided, _weak_decided).
    cdef PyTypeObject *tp = Py_TYPE(v)
    cdef PyObject *kept = NULL
    cdef Py_ssize_t n = -1        # a shared summary's length (-1: none)
    cdef bint shared = True       # a shared summary under "summary" and "weak"
    if tp == &PyUnicode_Type or tp == &PyBytes_Type:
        shared = False
        if policy == VP_NONE:
            kept = <PyObject *>_NOT_KEPT
        elif policy == VP_WEAK or (PyUnicode_GET_LENGTH(v) if tp == &PyUnicode_Type
                                   else PyBytes_GET_SIZE(v)) <= SHORT_TEXT:
            kept = v
    elif tp == &PyList_Type:
        n = PyList_GET_SIZE(<object>v)
    elif tp == &PyDict_Type:
        n = PyDict_GET_SIZE(v)
    elif tp == &PyTuple_Type:
        n = PyTuple_GET_SIZE(v)
        if policy == VP_WEAK and _is_immutable(v, 3):
            shared = False        # ("weak" keeps a tuple of immutables)
            kept = v
    elif tp == &PySet_Type and policy != VP_WEAK:
        n = PySet_GET_SIZE(v)     # ("weak" refers to a set weakly)
    elif (tp == &PyGen_Type or tp == &PyCoro_Type or tp == &PyAsyncGen_Type) \
            and policy != VP_WEAK:
        pass                      # (its type alone; "weak" refers to it weakly)
    else:
        shared = False
        if PyType_Check(v) or (tp == &PyCFunction_Type and _builtin_is_code(v)):
            # (the program's code most rows of it hold, a class or a builtin
            # function: json's `str` and `isinstance`, 80,000 a run; kept by
            # every policy, without the tables and _is_code's other checks)
            kept = v
        elif policy == VP_NONE:
            kept = _none_decided(v)
        elif policy == VP_SUMMARY:
            kept = _summary_decided(v)
        elif policy == VP_WEAK:
            kept = _weak_decided(v)
    if shared:
        # (and the type noted, so that _policy_plain answers for its instances in
        # line from then on: a list returned, a `yield from`'s receiver carried
        # across each resume; "summary" shares one summary per type only for
        # those with no length, a generator's)
        if policy == VP_NONE:
            kept = <PyObject *>_NOT_KEPT
            tracer_type_note(DECIDED_NONE, tp)
        else:
            kept = _summary_cached(tp, n)
            if n < 0 and kept != NULL and policy == VP_SUMMARY:
                tracer_type_note(DECIDED_SUMMARY, tp)
    if kept != NULL:
        Py_INCREF(<object>kept)
        return kept
    return _policy_value_made_out(policy, v)


# The tables of types a policy decides alike (tracer_type_decided).
cdef enum:
    DECIDED_NONE = 0
    DECIDED_SUMMARY = 1
    DECIDED_WEAK = 2


cdef PyObject *_none_decided(PyObject *v) noexcept:
    """What "none" keeps of `v` (no plain data: _policy_value_slow's) when its
    type decides it (a borrowed reference): the program's code as it is, a
    bound method's shared summary (_method_summary; NULL when not made yet),
    and NOT_KEPT for everything else but an exception, which
    _policy_value_made summarises (NULL).  _policy_value_made's answers in its
    order (the code first), without its try; a type whose every instance is
    NOT_KEPT is remembered (table DECIDED_NONE: a method's `self`, decided once
    per class, and then in line by _policy_plain)."""
    cdef PyTypeObject *tp = Py_TYPE(v)
    if tracer_type_decided(DECIDED_NONE, tp):
        return <PyObject *>_NOT_KEPT
    if _is_code(v):
        return v
    if PyMethod_Check(v):
        return _method_summary_cached(v)   # (NULL if not made: _summarise makes it)
    if PyExceptionInstance_Check(v):
        return NULL
    if not PyCFunction_Check(v):
        tracer_type_note(DECIDED_NONE, tp)   # (a builtin's answer depends on its self: _is_code)
    return <PyObject *>_NOT_KEPT


cdef PyObject *_summary_decided(PyObject *v) noexcept:
    """What "summary" keeps of `v` (no plain data: _policy_value_slow's) when its
    type decides it (a borrowed reference): its type's shared summary, as
    _summarise gives an instance of the program's classes, and the program's
    code as it is (as every policy keeps it), a bound method's shared summary
    (_method_summary); NULL when that summary is not made yet, or for what
    _policy_value_made answers otherwise (an exception, an immutable value, an
    array, a frozenset or a bytearray, whose summaries differ per value).  A
    type so decided is remembered (table DECIDED_SUMMARY)."""
    cdef PyTypeObject *tp = Py_TYPE(v)
    if not tracer_type_decided(DECIDED_SUMMARY, tp):
        if _is_code(v):
            return v
        if PyMethod_Check(v) or PyCFunction_Check(v):
            return _method_summary_cached(v)   # (NULL if not made: _summarise makes it)
        if not _summary_by_type(v):
            return NULL
        tracer_type_note(DECIDED_SUMMARY, tp)
    return _summary_cached(tp, -1)


cdef inline bint _summary_by_type(PyObject *v) noexcept:
    # Whether _summarise gives `v` (not the program's code: the caller's check)
    # its type's shared summary, and the policies give it that summary whatever
    # the instance: not an exception, a bound method or a builtin, an immutable
    # value (whose answer may be the value itself), an array, a frozenset or a
    # bytearray (whose summaries differ per value).  (The plain data
    # _policy_value_slow decides first never reaches here, but a tuple and a set
    # under "weak".)
    cdef PyTypeObject *tp = Py_TYPE(v)
    if tp == &PyFrozenSet_Type or tp == &PyByteArray_Type or PyMethod_Check(v) \
            or PyCFunction_Check(v) or PyExceptionInstance_Check(v) or _is_immutable(v, 0):
        return False
    return _NDARRAY is None or not PyObject_TypeCheck(v, <PyTypeObject *>_NDARRAY)


cdef inline PyObject *_weak_by_type(PyObject *v) noexcept:
    # The WeakValue cached for `v`, an instance of a type "weak" decided
    # (DECIDED_WEAK), with its type's shared summary (borrowed), else NULL.
    cdef PyObject *s = _summary_cached(Py_TYPE(v), -1)
    return _weak_cached(v, s) if s != NULL else NULL


cdef PyObject *_weak_decided(PyObject *v) noexcept:
    """What "weak" keeps of `v` (no plain data: _policy_value_slow's) when its
    type decides it (a borrowed reference): for an instance of the program's
    classes, a WeakValue (a weak reference and its type's shared summary, as
    _policy_value_made gives it; made here when the cache holds none); for one
    of a type without weak references, its type's shared summary
    (_summary_decided's, which "summary" gives it too); a bound method's shared
    summary, as "summary" gives it (NULL when not made yet); the program's code
    as it is; NULL for what _policy_value_made answers otherwise
    (_summary_by_type's exceptions, and a tuple or a set, whose summaries differ
    per value), or when a WeakValue cannot be made.  A type so decided is
    remembered (table DECIDED_WEAK): an object passed down a chain of calls, a
    method's `self`, is then found in line (_policy_plain)."""
    cdef PyTypeObject *tp = Py_TYPE(v)
    cdef PyObject *s
    cdef PyObject *w
    if not tracer_type_decided(DECIDED_WEAK, tp):
        if tp == &PyTuple_Type or tp == &PySet_Type:
            return NULL
        if not tracer_weakrefable(v):
            return _summary_decided(v)
        if _is_code(v):
            return v
        if PyMethod_Check(v) or PyCFunction_Check(v):
            return _method_summary_cached(v)   # (as "summary": _policy_value_made)
        if not _summary_by_type(v):
            return NULL
        tracer_type_note(DECIDED_WEAK, tp)
    s = _summary_cached(tp, -1)
    if s == NULL:
        return NULL                     # (_policy_value_made makes the summary)
    w = _weak_cached(v, s)
    return w if w != NULL else _weak_made(v, s)


cdef PyObject *_weak_made(PyObject *v, PyObject *s) noexcept:
    # A new WeakValue of `v` with summary `s`, held by the cache (borrowed), or
    # NULL if it cannot be made (_policy_value_made's answer then).  (`summary`
    # holds the cache's summary while the WeakValue is made: an allocation may
    # collect.)
    cdef ValueSummary summary = <ValueSummary>s
    cdef WeakValue w
    try:
        w = _weak_value(v, summary)
    except BaseException:
        return NULL
    return <PyObject *>w


cdef PyObject *_policy_value_made(int policy, PyObject *v) noexcept:
    cdef object kept
    try:
        if v == <PyObject *>None or v == <PyObject *>PY_TRUE or v == <PyObject *>PY_FALSE or _is_code(v):
            kept = <object>v
        elif PyExceptionInstance_Check(v):
            # An exception raised and caught inside: what was raised, never the
            # object, whose traceback holds every frame it passed through and their
            # locals (under "weak" too: a live exception would be the program's
            # frames seen through the trace).
            kept = _summarise(v)
        elif policy == VP_NONE:
            # A bound method: its summary (its function, which every policy
            # keeps, and its type; not its instance), so that the frame it
            # starts is still known as the call's body and a filter naming its
            # function still matches it.
            kept = _summarise(v) if PyMethod_Check(v) else _NOT_KEPT
        elif policy == VP_SUMMARY:
            if _is_immutable(v, 0) and not ((PyUnicode_CheckExact(v) or PyBytes_CheckExact(v))
                                            and len(<object>v) > SHORT_TEXT):
                kept = <object>v
            else:
                kept = _summarise(v)
        elif _is_immutable(v, 3):
            kept = <object>v
        elif PyMethod_Check(v) or PyCFunction_Check(v):
            # A bound method: its summary, as under "summary" (a wrapper made
            # at each read of obj.method, dead once its call returns: a weak
            # reference to it would be a dead one in the trace).
            kept = _summarise(v)
        elif tracer_weakrefable(v):
            kept = _weak_value(v, _summarise(v))
        else:
            kept = _summarise(v)
    except BaseException:
        kept = _NOT_KEPT
    Py_INCREF(kept)
    return <PyObject *>kept


_policy_value_made_out = _policy_value_made


cdef inline size_t _summary_key(PyObject *v) noexcept:
    # The address a CallFilter matches for a callee the policy summarised.
    if Py_TYPE(v) == <PyTypeObject *>ValueSummary:
        return (<ValueSummary>v).key
    return 0


cdef int _release_root_callee(Trace t) except -1:
    # The callable track() was given is kept while recording (begin_root: a bound
    # method made for the call must be alive when its frame starts, to be known as
    # the root's body); once recorded it is what the policy keeps, like any other
    # callee: a bound method holds its instance, the program's data.
    cdef PyObject *kept
    cdef int32_t ref
    if t.value_policy == VP_KEEP:
        return 0
    _clear_summaries()
    if t.n == 0 or t.ref_start_[1] == t.ref_start_[0]:
        return 0
    ref = t.refs_[t.ref_start_[0]]   # the root's first operand: the callee's pool entry
    if ref >= 0:
        return 0
    kept = _policy_value(t.value_policy, PyList_GET_ITEM(t.pool, -ref - 1))
    t.pool[-ref - 1] = <object>kept
    Py_XDECREF(kept)
    return 0


cdef int _set_value_policy(Trace t, object ctx) except -1:
    # The root context's policy, for the whole trace (begin_root).
    cdef int policy = getattr(ctx, "_values_policy", VP_KEEP)
    if policy < VP_KEEP or policy > VP_WEAK:
        raise ValueError(f"unknown value policy {policy}")
    t.value_policy = policy
    if policy != VP_KEEP:
        _find_numpy()
        _clear_summaries()
        tracer_decided_forget()   # (a type's answer may depend on numpy's types, found above)
        t._values_kept = _POLICY_NAMES[policy]
    return 0


cdef int _find_numpy() except -1:
    # numpy's array and scalar types, if the program uses numpy (read per trace).
    global _NDARRAY, _NPGENERIC, _NPUFUNC
    np_ = sys.modules.get("numpy")
    if np_ is not None and _NPGENERIC is None:
        _NDARRAY = getattr(np_, "ndarray", False)
        _NPGENERIC = getattr(np_, "generic", None)
        _NPUFUNC = getattr(np_, "ufunc", None)
    return 0


def value_policy(name):
    """The core's number of a value policy name ("keep", "none", "summary", "weak")."""
    try:
        return VALUE_POLICIES[name]
    except (KeyError, TypeError):
        raise ValueError(f"values must be one of {sorted(VALUE_POLICIES)} or a function of "
                         f"one value, got {name!r}") from None
