# What the core calls in the Python layer, read in one place: the host object that
# tracer.api hands over once (set_host), typed as the Host protocol in _core.pyi.
# The core imports no tracer module, so the plan builder, the node-view factory,
# the context helpers, the table and persistence come from there.
#
# track_code and node_classes are read when the host is set (they are consulted on
# the hot path); every function is read from the host when the core calls it, so
# a layer loaded later (tracer.persist: save, reduce) adds its own by assignment.

cdef object HOST = None
cdef tuple NODE_CLASSES = ()              # tracer.views.nodes: the view class of each NodeKind

# The host's functions the core calls (Host in _core.pyi), and the data it reads.
HOST_FUNCTIONS = ("build_plan", "node_at", "ask_enter", "ask_substitute",
                  "call_from_parameters", "table", "save", "reduce")
HOST_REQUIRED = ("build_plan", "node_at", "ask_enter", "ask_substitute",
                 "call_from_parameters", "keep", "track_code", "node_classes")


def set_host(host):
    """Hand the core the Python layer (tracer.api does, once): an object with the
    attributes of the `Host` protocol declared in tracer/_core.pyi."""
    global HOST, NODE_CLASSES, TRACK_CODE
    missing = [name for name in HOST_REQUIRED if not hasattr(host, name)]
    if missing:
        raise TypeError(f"the host lacks {', '.join(missing)} (see Host in tracer/_core.pyi)")
    classes = tuple(host.node_classes)
    if classes and len(classes) != len(KINDS):
        raise TypeError(f"node_classes must have one class per node kind ({len(KINDS)})")
    for c in classes:
        # The views are made by NodeView's tp_new, called directly (_view).
        if not (isinstance(c, type) and issubclass(c, NodeView)) or \
                (<PyTypeObject *>c).tp_new != (<PyTypeObject *>NodeView).tp_new:
            raise TypeError(f"node class {c!r} must subclass NodeView without a __new__")
    NODE_CLASSES = classes
    TRACK_CODE = host.track_code
    HOST = host


def host():
    """The host set_host was given, or None."""
    return HOST


cdef object _no_host(str name):
    # What the core says when the Python layer has not handed it `name` yet.
    raise RuntimeError(f"tracer._core has no {name}: import tracer (tracer.api "
                       "sets the core's host) before using tracer._core")


cdef object _host(str name):
    # The host's `name` (a function, or KEEP), or a RuntimeError saying what to do.
    cdef object fn = getattr(HOST, name, None) if HOST is not None else None
    if fn is None:
        _no_host(name)
    return fn


cdef inline int _need_node_classes() except -1:
    # Node views are made by the host's classes (set_host): none yet is an error.
    if not NODE_CLASSES:
        _no_host("node classes")
    return 0
