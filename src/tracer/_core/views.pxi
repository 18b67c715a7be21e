# The base of the node views: a (trace, row) pair made and read in C.  The node classes
# themselves (tracer.views.nodes) subclass it in Python and add what is not on the hot
# path; the core makes views of the class of each row's kind (handed by configure).

@cython.freelist(64)
@cython.auto_pickle(False)   # a view pickles through its node class (it needs its trace)
cdef class NodeView:
    """A recorded node: a view of one row of a trace (see tracer.Node)."""

    cdef readonly Trace _trace
    cdef readonly int32_t _row

    def __init__(self, Trace trace, int32_t row):
        trace._check(row)
        self._trace = trace
        self._row = row

    def __eq__(self, other):
        if not isinstance(other, NodeView):
            return NotImplemented
        return (<NodeView>other)._trace is self._trace and (<NodeView>other)._row == self._row

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash((id(self._trace), self._row))

    @property
    def trace(self):
        """The Trace (arena) this node belongs to."""
        return self._trace

    @property
    def row(self):
        """This node's row in the trace (its global number)."""
        return self._row

    @property
    def value(self):
        """The value the node produced (for a raising call, the exception)."""
        cdef PyObject *v = self._trace.value_[self._row]
        return None if v == NULL else <object>v

    @property
    def children(self):
        """The node's children, in order (a list of views)."""
        return _child_views(self._trace, self._row)

    def __len__(self):
        return _count_children(self._trace, self._row)

    def __iter__(self):
        return iter(_child_views(self._trace, self._row))


cdef inline object _view(Trace t, int32_t row):
    cdef NodeView v = NodeView.__new__(<type>NODE_CLASSES[t.kind_[row]])
    v._trace = t
    v._row = row
    return v


def node_view(Trace t, int32_t row):
    """The view of `row`, of the class of its kind."""
    t._check(row)
    if not NODE_CLASSES:
        _handed(None, "node classes")
    return _view(t, row)


cdef list _child_views(Trace t, int32_t row):
    if not NODE_CLASSES:
        _handed(None, "node classes")
    cdef list out = []
    cdef int32_t c = row + 1
    cdef int32_t stop = t._end(row)
    while c < stop:
        out.append(_view(t, c))
        c = t._end(c)
    return out


def node_views(Trace t, rows):
    """Views of the given rows (an iterable of ints or an int32 array), as a list."""
    if not NODE_CLASSES:
        _handed(None, "node classes")
    np = _np()
    arr = np.ascontiguousarray(rows, dtype=np.int32)
    cdef const int32_t[::1] r = arr
    cdef Py_ssize_t i
    cdef list out = []
    for i in range(r.shape[0]):
        t._check(r[i])
        out.append(_view(t, r[i]))
    return out
