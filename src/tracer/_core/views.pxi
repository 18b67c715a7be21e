# The base of the node views: a (trace, row) pair made and read in C.  The node classes
# themselves (tracer.views.nodes) subclass it in Python and add what is not on the hot
# path; the core makes views of the class of each row's kind (the host's node_classes, handed.pxi).

from operator import index as _operator_index   # Children[k]: what a list accepts as k

@cython.freelist(64)
@cython.auto_pickle(False)   # a view pickles through its node class (it needs its trace)
cdef class NodeView:
    """A recorded node: a view of one row of a trace (see tracer.views.Node)."""

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
        if v != NULL and Py_TYPE(v) == <PyTypeObject *>WeakValue:   # values="weak"
            return (<WeakValue>v).get()
        return None if v == NULL else <object>v

    @property
    def children(self):
        """The node's children, in order: a sequence of views, made as they are read
        (iterating a call of 10^7 children holds one view at a time)."""
        return Children.__new__(Children, self._trace, self._row)

    def __len__(self):
        return _count_children(self._trace, self._row)

    def __iter__(self):
        _need_node_classes()
        return _ChildIterator.__new__(_ChildIterator, self._trace, self._row)


cdef tuple _NO_ARGS = ()


cdef inline object _view(Trace t, int32_t row):
    # The node class's tp_new (NodeView's, inherited: set_host checks) called
    # directly: `NodeView.__new__(cls)` looks the method up and checks its argument
    # for every view, which tripled the cost of iterating views.
    cdef PyObject *cls = PyTuple_GET_ITEM(NODE_CLASSES, t.kind_[row])
    cdef NodeView v = <NodeView>(<PyTypeObject *>cls).tp_new(<type>cls, <PyObject *>_NO_ARGS, NULL)
    v._trace = t
    v._row = row
    return v


def node_view(Trace t, int32_t row):
    """The view of `row`, of the class of its kind."""
    t._check(row)
    _need_node_classes()
    return _view(t, row)


@cython.final
cdef class _ChildIterator:
    """Views of a row's children, one at a time, in order."""
    cdef Trace _trace
    cdef int32_t _next, _stop

    def __cinit__(self, Trace trace, int32_t row):
        self._trace = trace
        self._next = row + 1
        self._stop = trace._end(row)

    def __iter__(self):
        return self

    def __next__(self):
        cdef int32_t c = self._next
        if c >= self._stop:
            raise StopIteration
        self._next = self._trace._end(c)
        return _view(self._trace, c)


@cython.final
@cython.auto_pickle(False)
cdef class Children:
    """The children of a node, in order: a read-only sequence of node views made when
    read.  Indexing finds the child rows once (an int32 array) and then indexes them;
    iterating walks the rows and needs nothing else.  Equal to a list or tuple of the
    same views."""
    cdef readonly Trace trace
    cdef readonly int32_t row
    cdef object _rows                  # the child rows, once an index asked for them

    def __cinit__(self, Trace trace, int32_t row):
        _need_node_classes()
        trace._check(row)
        self.trace = trace
        self.row = row

    def __len__(self):
        return _count_children(self.trace, self.row)

    def __iter__(self):
        return _ChildIterator.__new__(_ChildIterator, self.trace, self.row)

    def __reversed__(self):
        rows = self.rows
        return (_view(self.trace, r) for r in rows[::-1].tolist())

    @property
    def rows(self):
        """The child rows, in order (an int32 array, read-only)."""
        if self._rows is None:
            rows = child_rows(self.trace, self.row)
            rows.flags.writeable = False
            self._rows = rows
        return self._rows

    def __getitem__(self, index):
        """A child by position (negative counts from the end) or a list of them by
        slice, as a list indexes: IndexError and TypeError say what a list says."""
        rows = self.rows
        if isinstance(index, slice):
            return [_view(self.trace, r) for r in rows[index].tolist()]
        n = len(rows)
        try:
            k = _operator_index(index)
        except TypeError:
            raise TypeError(f"node children indices must be integers or slices, "
                            f"not {type(index).__name__}") from None
        if not -n <= k < n:    # a Python int compare: any size is out of range, not an overflow
            raise IndexError(f"child index {k} out of range (the node has {n} children)")
        return _view(self.trace, rows[k])

    def __contains__(self, node):
        return isinstance(node, NodeView) and (<NodeView>node)._trace is self.trace \
            and self.trace.parent_[(<NodeView>node)._row] == self.row \
            and (<NodeView>node)._row != self.row

    def index(self, node, start=0, stop=None):
        """The position of `node` among the children, within [start, stop) as for a
        list (ValueError if it is not one there)."""
        if node in self:
            k = int(_np().searchsorted(self.rows, (<NodeView>node)._row))
            if k in range(len(self.rows))[start:stop]:
                return k
        raise ValueError(f"{node!r} is not a child of row {self.row}")

    def count(self, node):
        return 1 if node in self else 0

    def __eq__(self, other):
        if isinstance(other, Children):
            return (<Children>other).trace is self.trace and (<Children>other).row == self.row
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __reduce__(self):
        # Pickles as the list of views it stands for (each view pickles with its trace).
        return (list, (list(self),))

    def __repr__(self):
        # Like the list it stands for, unless printing it would be a flood.
        n = len(self)
        if n <= 12:
            return repr(list(self))
        return f"<{n} children of row {self.row}: {self[0]!r}, {self[1]!r}, ...>"


def node_views(Trace t, rows):
    """Views of the given rows (an iterable of ints or an int32 array), as a list."""
    _need_node_classes()
    np = _np()
    arr = np.ascontiguousarray(rows, dtype=np.int32)
    cdef const int32_t[::1] r = arr
    cdef Py_ssize_t i
    cdef list out = []
    for i in range(r.shape[0]):
        t._check(r[i])
        out.append(_view(t, r[i]))
    return out


import collections.abc
collections.abc.Sequence.register(Children)
