# What the Python layer hands the core (configure): the core imports no tracer
# module, so the plan builder, the node-view factory and the context helpers come
# from tracer.api, which calls configure() once when tracer is imported.

cdef object BUILD_PLAN = None             # tracer.plan.build_plan(code, mode)
cdef object NODE_AT = None                # tracer.nodes.node_at(trace, row)
cdef object ASK_ENTER = None              # tracer.context.ask_enter(ctx, (f, args, kwargs))
cdef object ASK_SUBSTITUTE = None         # tracer.context.ask_substitute(ctx, f, args, kwargs)
cdef object CALL_FROM_PARAMETERS = None   # tracer.context.call_from_parameters(code, values)
cdef object KEEP_VALUE = None             # tracer.KEEP, what override returns to keep a value
cdef object TABLE = None                  # tracer.views.table.table(trace, **options)
cdef tuple NODE_CLASSES = ()              # tracer.views.nodes: the view class of each NodeKind


def configure(*, build_plan, node_at, ask_enter, ask_substitute, call_from_parameters, keep,
              table=None, node_classes=()):
    """Hand the core what it calls in the Python layer (tracer.api does, once)."""
    global BUILD_PLAN, NODE_AT, ASK_ENTER, ASK_SUBSTITUTE, CALL_FROM_PARAMETERS, KEEP_VALUE
    global TABLE, NODE_CLASSES
    BUILD_PLAN = build_plan
    NODE_AT = node_at
    ASK_ENTER = ask_enter
    ASK_SUBSTITUTE = ask_substitute
    CALL_FROM_PARAMETERS = call_from_parameters
    KEEP_VALUE = keep
    TABLE = table
    classes = tuple(node_classes)
    if classes and len(classes) != len(KINDS):
        raise TypeError(f"node_classes must have one class per node kind ({len(KINDS)})")
    for c in classes:
        # The views are made by NodeView's tp_new, called directly (_view).
        if not (isinstance(c, type) and issubclass(c, NodeView)) or \
                (<PyTypeObject *>c).tp_new != (<PyTypeObject *>NodeView).tp_new:
            raise TypeError(f"node class {c!r} must subclass NodeView without a __new__")
    NODE_CLASSES = classes


cdef object _handed(object fn, str name):
    if fn is None:
        raise RuntimeError(f"tracer._core has no {name}: import tracer (tracer.api "
                           "configures the core) before using tracer._core")
    return fn
