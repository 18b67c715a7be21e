"""Tracking contexts: what is recorded inside which calls, and what happens per node.

A context customises tracking the way IRTracker's tracking contexts, Umlaut's
`isprimitive` / `record_primitive!` and Cassette's overdubbing do.  The recorder
consults a context only where its class overrides a hook: the default context
overrides nothing, so tracking with it never calls Python code, and a context that
overrides only `canrecur` costs one Python call per call event.
"""

from __future__ import annotations

import copy
import importlib
import types
from typing import Any, Callable, Iterable, Mapping

from ._core import HOOK_BITS as _CORE_BITS
from ._core import MAX_NODES_CAP, NODE_HOOKS, CallFilter, value_policy

__all__ = ["Context", "DEFAULT", "DepthLimitContext", "KEEP", "NODE_HOOKS", "VALUE_POLICIES",
           "with_values", "with_max_nodes"]

# What a trace keeps of the program's values (Context(values=...)).
VALUE_POLICIES = ("keep", "none", "summary", "weak")


class _Keep:
    """The value `Context.override` returns to leave a node's value alone."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "tracer.context.KEEP"

    def __reduce__(self):
        return "KEEP"


KEEP = _Keep()

# The per-node hooks by node kind number, and the bits of a context's hook mask, as
# the core defines them (a hook's bit is set when a context's class overrides it).
HOOK_BITS = {name: _CORE_BITS[name]
             for name in ("canrecur", "enter", "substitute", "override", "snapshot")}
# The hooks called with the traced call's arguments: their own parameters before
# *args are made positional-only (see Context.__init_subclass__).
CALL_HOOKS = ("canrecur", "enter", "substitute", "record_primitive")
HOOK_BITS.update({name: _CORE_BITS["node"] << kind for kind, name in enumerate(NODE_HOOKS)})
H_PRIMITIVES = _CORE_BITS["primitives"]   # the context has primitive callables or modules
# The snapshot policies a context can be given by name (Context(snapshot=...)).
SNAPSHOT_POLICIES = {"none": 0, "copy": _CORE_BITS["snapshot_copy"],
                     "deepcopy": _CORE_BITS["snapshot_deepcopy"]}


class Context:
    """Base class of tracking contexts (IRTracker's AbstractTrackingContext).

    Subclass it and override what you need; a hook the class does not override is
    never called.

    - `canrecur(f, *args, **kwargs)`: record inside this Python call, or make it
      primitive.  `primitives` and `modules` (constructor arguments) make callables
      and whole modules primitive without any Python call.
    - `enter(f, *args, **kwargs)`: the context of a nested call's body.
    - `trackedargument(node)`, `trackedconstant`, `trackedprimitive`, `trackednested`,
      `trackedspecial`, `trackedjump`, `trackedreturn`: called with each node of
      that kind just recorded (a nested call once it has finished); they may read
      it and write `node.metadata`.
    - `substitute(f, /, *args, **kwargs)` and `override(node)`: interventions that
      change what the program computes (see their docstrings).

    Hooks for chosen callables only, matched in C by what a call or operator
    calls, so that every other call costs what plain tracing costs (no Python
    code runs for it):

    - `on_call={callee: hook}`: `hook(node)` with each call node of `callee`
      once its value is known (a PrimitiveCallNode, or a NestedCallNode once its
      body has returned).
    - `substitute={callee: replacement}`: `replacement(*args, **kwargs)` runs
      natively instead of each call of `callee` (for an operator such as
      `operator.mul`: after it, its result replaced); the node's
      metadata["substituted"] is `callee`.
    - `override={callee: hook}`: `hook(node)` returns the value the program goes
      on with instead of the call's result, or tracer.context.KEEP.

    A key is a callable or its qualified name ("random.gauss",
    "numpy.random.Generator.normal"), imported once when the context is made.  A
    callable matches itself; a bound method also matches its function called
    through any instance (`rng.gauss(...)` for `random.Random.gauss`), and a
    builtin method every bound builtin made from it.  These filters apply to the
    calls the program makes (call instructions and operators), not to Python
    frames entered from C (a key function, a dunder method).  They combine with
    the methods: a subclass's own `substitute` is asked when no filter matched.

    What the trace keeps of values, `values=` (the root context's, for the whole
    trace):

    - "keep" (the default): the objects themselves, alive as long as the trace;
    - "none": structure and edges only — every value is `tracer._core.NOT_KEPT`
      but None, True and False (branch outcomes), the program's code
      (functions, classes, builtins, modules: callees stay recognisable) and a
      bound method's `ValueSummary` (its function, not its instance: the frame
      it starts stays the call's body, a filter naming its function matches);
    - "summary": immutable scalars (int, float, complex, bool, None, str and
      bytes up to 80 characters) and code kept, every other value a
      `ValueSummary` (type, shape, dtype, length, a bounded text), made in C
      without calling any of the program's code;
    - "weak": immutable values (those scalars, any str or bytes, tuples of
      immutables) and code kept, other values by weak reference (the node's
      value is the object while the program keeps it, then its summary), or a
      summary when they cannot be weakly referenced; a bound method is its
      summary, as under "summary" (`obj.method` makes a new one at each read,
      so a weak reference to it would be dead once its call returned);
    - a function of one value: what it returns is kept (as `snapshot=fn`).

    Under every policy but "keep" the trace holds no reference to the program's
    data, so objects die (and `__del__` and weakref callbacks run) when the
    program drops them, as untraced; an exception raised inside (caught or
    escaping) is a `ValueSummary` of its type and message under each of them,
    "none" included, never the object (its traceback holds frames and their
    locals); a bound method given to `track` is the root's callee while
    recording, then what the policy keeps of it.  The root's value (the call's
    result) is kept.

    Hooks are called with the traced call's arguments as `hook(f, *args,
    **kwargs)`; the parameters before `*args` of a hook a subclass defines are
    made positional-only when the class is created, so a traced keyword argument
    named `f` or `self` reaches `**kwargs` instead of colliding with them.
    Under a value policy the trace may not hold the arguments (a value "weak"
    keeps alive is the object), so `canrecur` and `enter` then get them from the
    Python body being entered: its parameters as bound (defaults included),
    positional ones in `args`, keyword-only ones in `kwargs`; a bound method
    the trace holds as its summary reaches them as a method of the same
    function bound to the same instance.

    `timing=True` (the root context's, for the whole trace) timestamps each
    followed call when its frame starts and when it returns, yields or unwinds,
    in the core (the monotonic clock of `time.monotonic_ns`): `tracer.summary`
    then gives each function's calls, total, self and per-call time, and
    `tracer.export.chrome` writes the calls as a timeline.  Off by default.

    `max_nodes=N` (the root context's, for the whole trace) caps the trace: its
    columns never grow past room for N nodes and 1,024 more (what one event asks
    for ahead of its nodes), so a trace of up to N nodes is recorded whole; at the
    event that would take it past that room recording stops (that event's nodes
    written), the instrumentation goes and the call runs on untraced to its end;
    `track` then raises TraceLimitError with the call's result or exception on it,
    and `tracer.last_trace()` holds the nodes recorded.  A trace takes 32 bytes of
    columns a node, plus the values it keeps: a cap bounds the memory a traced
    call can take (a test suite traced test by test, a loop that runs longer
    than expected).  None (the default): no cap.

    An exception raised by any hook stops tracking at once; `track` then raises
    TrackingError chained to it, after the traced call has run to its end.
    """

    # tracer's own code is primitive in every trace (a library using tracer inside a
    # traced function does not show up in its users' traces), except tracer.ad's code
    # in a trace whose context sets this: a gradient's own trace, where a gradient
    # taken inside the differentiated function runs generated code the outer
    # gradient must see.  Read by `track` for the root context.
    follows_ad_code: bool = False
    # Timestamp each followed call in the core (`timing=`); read by `track` for the
    # root context.
    timing: bool = False
    # The cap on the trace's nodes (`max_nodes=`; None: none); read by `track` for
    # the root context.
    max_nodes: int | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in CALL_HOOKS:
            fn = cls.__dict__.get(name)
            if isinstance(fn, types.FunctionType):
                setattr(cls, name, _positional_only(fn))

    def __init__(self, primitives: Iterable[Callable] = (), modules: Iterable[str] = (),
                 snapshot: str | Callable | None = None, *,
                 on_call: Mapping[Any, Callable] | None = None,
                 substitute: Mapping[Any, Callable] | None = None,
                 override: Mapping[Any, Callable] | None = None,
                 values: str | Callable = "keep", timing: bool = False,
                 max_nodes: int | None = None):
        if not isinstance(timing, bool):
            raise TypeError(f"timing must be True or False, got {timing!r}")
        self.timing = timing
        self.max_nodes = checked_max_nodes(max_nodes)
        prims = tuple(primitives)
        for p in prims:
            if not callable(p):
                raise TypeError(f"primitives must be callables, got {type(p).__name__}: {p!r}")
        mods = tuple(modules)
        for m in mods:
            if not isinstance(m, str) or not m:
                raise TypeError(f"modules must be module names (str), got {m!r}")
        # Python functions are compared by identity of their function object, so
        # bound methods and classmethods are stored as their underlying function.
        self.primitives = frozenset(_function_of(p) for p in prims) | frozenset(prims)
        self.modules = mods
        if callable(values) and not isinstance(values, str):
            if snapshot is not None:
                raise TypeError("give either values=fn or snapshot=..., not both")
            snapshot, values = values, "keep"
        self._values_policy = value_policy(values)
        self._snapshot_bits, self._snapshot_fn = _snapshot_policy(snapshot)
        self._call_filter = _call_filter(on_call, substitute, override)

    # -- the primitive boundary ------------------------------------------------------------
    def canrecur(self, f, /, *args, **kwargs) -> bool:
        """Whether to record inside the Python call `f(*args, **kwargs)`.

        Called for calls that run Python code and that `primitives` and `modules`
        do not already make primitive: Python functions, and C functions that call
        back into Python (`sorted` with a Python key); False makes the whole call
        primitive.  A C function's own work is never recorded inside.  The default
        records inside every Python function.
        """
        return True

    def enter(self, f, /, *args, **kwargs) -> "Context":
        """The context for the body of the nested call `f(*args, **kwargs)`."""
        return self

    def is_primitive_module(self, name: str | None) -> bool:
        """Whether a function defined in module `name` is primitive by `modules`."""
        if not name:
            return False
        return any(name == m or name.startswith(m + ".") for m in self.modules)

    # -- per-node hooks (IRTracker's names) ----------------------------------------------
    def trackedargument(self, node) -> None:
        """Called with each ArgumentNode just recorded."""

    def trackedconstant(self, node) -> None:
        """Called with each ConstantNode just recorded."""

    def trackedprimitive(self, node) -> None:
        """Called with each PrimitiveCallNode just recorded (its value is known)."""

    def trackednested(self, node) -> None:
        """Called with each NestedCallNode once its call has finished (in the
        caller's context)."""

    def trackedspecial(self, node) -> None:
        """Called with each SpecialCallNode just recorded."""

    def trackedjump(self, node) -> None:
        """Called with each JumpNode just recorded."""

    def trackedreturn(self, node) -> None:
        """Called with each ReturnNode just recorded (before its call is closed)."""

    # -- interventions -------------------------------------------------------------------
    def substitute(self, f, /, *args, **kwargs):
        """A callable to run instead of `f(*args, **kwargs)`, or None to keep `f`.

        Asked before every call and operator the recorder records.  For a call the
        replacement runs natively in its place (the original is not called).  For an
        operator, which is an instruction rather than a call, the operator still
        runs, and then the replacement's result takes the place of its result.  The
        node's function is the replacement; its metadata["substituted"] is `f`.
        """
        return None

    def override(self, node):
        """A value to replace `node.value` in the running program, or tracer.context.KEEP.

        Asked right after each call or operator produced its value.  The node then
        records the value the program goes on with; its metadata["original"] holds
        the value that was produced.
        """
        return KEEP

    # -- what is kept of values --------------------------------------------------------------
    def snapshot(self, value):
        """What the trace keeps of `value`, a value just recorded (the program goes on
        with `value` itself).

        Values are kept by reference by default, so a list mutated after it was
        recorded shows its final state.  `Context(snapshot="copy")` keeps copies of
        lists, dicts, sets and bytearrays (made in C), `snapshot="deepcopy"` a
        `copy.deepcopy` of every value (a value that cannot be copied is kept
        itself), and `snapshot=fn` or overriding this method keeps what it
        returns.  Snapshots apply to arguments, constants, call results and
        returns; exceptions and callees are kept themselves.  The context passed to
        `track` must have a policy for any context to take snapshots (values are
        then read right after each instruction, as for interventions).
        """
        fn = getattr(self, "_snapshot_fn", None)
        return value if fn is None else fn(value)

    # -- what the recorder asks ------------------------------------------------------------
    def _overrides(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(Context, name)

    def hook_mask(self) -> int:
        """The bits of the hooks this context's class overrides (cached per class)."""
        cls = type(self)
        mask = _CLASS_MASKS.get(cls)
        if mask is None:
            mask = 0
            for name, bit in HOOK_BITS.items():
                if self._overrides(name):
                    mask |= bit
            _CLASS_MASKS[cls] = mask
        if getattr(self, "primitives", None) or getattr(self, "modules", None):
            mask |= H_PRIMITIVES
        mask |= getattr(self, "_snapshot_bits", 0)
        flt = getattr(self, "_call_filter", None)
        if flt is not None:
            mask |= flt.bits
        return mask

    @property
    def values(self) -> str:
        """The value policy name ("keep", "none", "summary" or "weak")."""
        return VALUE_POLICIES[getattr(self, "_values_policy", 0)]

    @property
    def call_filter(self) -> CallFilter | None:
        """The callables this context asked about by `on_call`, `substitute` and
        `override`, as the core matches them (None without any)."""
        return getattr(self, "_call_filter", None)



_CLASS_MASKS: dict[type, int] = {}


def _snapshot_policy(snapshot) -> tuple[int, Callable | None]:
    """(hook bits, function) for Context(snapshot=...)."""
    if snapshot is None:
        return 0, None
    if isinstance(snapshot, str):
        if snapshot not in SNAPSHOT_POLICIES:
            raise ValueError(f"snapshot must be one of {sorted(SNAPSHOT_POLICIES)} or a "
                             f"function of one value, got {snapshot!r}")
        return SNAPSHOT_POLICIES[snapshot], None
    if not callable(snapshot):
        raise TypeError(f"snapshot must be a policy name or a function of one value, "
                        f"got {type(snapshot).__name__}")
    return HOOK_BITS["snapshot"], snapshot


def with_values(ctx: "Context | None", values: str) -> "Context":
    """A copy of `ctx` (or of the default context) that keeps values by policy
    `values` ("keep", "none", "summary", "weak"); for `tracer run --values`."""
    policy = value_policy(values)
    new = Context() if ctx is None else copy.copy(ctx)
    new._values_policy = policy
    return new


def checked_max_nodes(max_nodes):
    """`max_nodes` if it is None or a cap a trace can take, else TypeError or
    ValueError saying what it must be."""
    if max_nodes is None:
        return None
    if not isinstance(max_nodes, int) or isinstance(max_nodes, bool):
        raise TypeError(f"max_nodes must be a positive int or None, got {max_nodes!r}")
    if not 1 <= max_nodes <= MAX_NODES_CAP:
        raise ValueError(f"max_nodes must be from 1 to {MAX_NODES_CAP:,} (a trace counts its "
                         f"nodes in 32 bits), got {max_nodes:,}")
    return max_nodes


def with_max_nodes(ctx: "Context | None", max_nodes: int) -> "Context":
    """A copy of `ctx` (or of the default context) with `max_nodes` set; for
    `tracer run --max-nodes`."""
    checked = checked_max_nodes(max_nodes)
    new = Context() if ctx is None else copy.copy(ctx)
    new.max_nodes = checked
    return new


def with_timing(ctx: "Context | None") -> "Context":
    """A copy of `ctx` (or of the default context) with `timing=True`; for
    `tracer run --timing`."""
    new = Context(timing=True) if ctx is None else copy.copy(ctx)
    new.timing = True
    return new


def _positional_only(fn: types.FunctionType) -> types.FunctionType:
    """`fn` with its parameters before *args positional-only, when it takes
    **kwargs (so a traced keyword argument named like one of them reaches
    **kwargs instead of raising "got multiple values")."""
    code = fn.__code__
    if not code.co_flags & 0x08 or code.co_posonlyargcount == code.co_argcount:
        return fn   # no **kwargs to collide with, or already positional-only
    new = types.FunctionType(code.replace(co_posonlyargcount=code.co_argcount),
                             fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    for attr in ("__module__", "__qualname__", "__doc__", "__annotations__"):
        setattr(new, attr, getattr(fn, attr))
    if hasattr(fn, "__type_params__"):
        new.__type_params__ = fn.__type_params__
    return new


def resolve_callable(key) -> Any:
    """The object a filter key names: a callable itself, or a qualified name
    ("random.gauss", "numpy.random.Generator.normal") imported now."""
    if not isinstance(key, str):
        if not callable(key):
            raise TypeError(f"a hook filter's key must be a callable or its qualified name, "
                            f"got {type(key).__name__}: {key!r}")
        return key
    parts = key.split(".")
    if not key or not all(p.isidentifier() for p in parts):
        raise ValueError(f"{key!r} is not a qualified name (module.attribute...)")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            break
        return obj
    raise ValueError(f"cannot resolve {key!r}: import a module named by its leading part "
                     "and look the rest up as attributes (give the callable itself instead)")


def _call_filter(on_call, substitute, override) -> CallFilter | None:
    """The core's CallFilter for a context's on_call / substitute / override."""
    entries: dict[int, list] = {}
    for slot, (arg, what) in enumerate(((on_call, "on_call"), (substitute, "substitute"),
                                        (override, "override"))):
        if arg is None:
            continue
        if not isinstance(arg, Mapping):
            raise TypeError(f"{what} must map callables (or their qualified names) to "
                            f"functions, got {type(arg).__name__}")
        for key, fn in arg.items():
            if not callable(fn):
                raise TypeError(f"{what}[{key!r}] must be callable, got {type(fn).__name__}")
            obj = resolve_callable(key)
            entry = entries.setdefault(id(obj), [obj, None, None, None])
            entry[1 + slot] = fn
    if not entries:
        return None
    return CallFilter([(e[0], tuple(e[1:])) for e in entries.values()])


def _function_of(p):
    if isinstance(p, types.MethodType):
        return p.__func__
    if isinstance(p, (classmethod, staticmethod)):
        return p.__func__
    return p


DEFAULT = Context()
"""The default context: record inside every Python function, C callables primitive."""


class DepthLimitContext(Context):
    """Record nested calls down to `maxlevel` levels (IRTracker's DepthLimitContext).

    The traced call's own body is level 2, as in IRTracker: with `maxlevel=2`
    every call the traced function makes is primitive.
    """

    def __init__(self, maxlevel: int, level: int = 1, **kwargs):
        if not isinstance(maxlevel, int) or maxlevel < 1:
            raise ValueError(f"maxlevel must be a positive int, got {maxlevel!r}")
        super().__init__(**kwargs)
        self.maxlevel = maxlevel
        self.level = level

    def canrecur(self, f, /, *args, **kwargs) -> bool:
        return self.level < self.maxlevel

    def enter(self, f, /, *args, **kwargs) -> "DepthLimitContext":
        child = object.__new__(type(self))  # a subclass stays itself below
        child.__dict__.update(self.__dict__)
        child.level = self.level + 1
        return child

    def __repr__(self) -> str:
        return f"DepthLimitContext(maxlevel={self.maxlevel}, level={self.level})"


# -- called by the core ----------------------------------------------------------------------
# (canrecur, the node hooks and override are called from the core directly.)  Exceptions
# from the user's hook propagate: the core records them as the hook error, stops
# tracking, and track() raises TrackingError chained to them.

def call_from_parameters(code, values: list, /) -> tuple:
    """(args, kwargs) that bind to parameter `values` of `code`, in co_varnames order
    (positional, keyword-only, then *args and **kwargs when the code has them)."""
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    args = tuple(values[:npos])
    names = code.co_varnames
    kwargs = dict(zip(names[npos:npos + nkw], values[npos:npos + nkw]))
    k = npos + nkw
    if code.co_flags & 0x04:  # CO_VARARGS
        args += tuple(values[k] or ())
        k += 1
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        kwargs.update(values[k] or {})
    return args, kwargs


def ask_enter(ctx: Context, parts: tuple, /) -> Context:
    """`ctx.enter(f, *args, **kwargs)` for `parts` = (f, args, kwargs), checked."""
    f, args, kwargs = parts
    new = ctx.enter(f, *args, **kwargs)
    if not isinstance(new, Context):
        raise TypeError(f"{type(ctx).__name__}.enter must return a tracer.Context, "
                        f"got {type(new).__name__}")
    return new


def ask_substitute(ctx: Context, f, args: tuple, kwargs: dict, /):
    """`ctx.substitute(f, *args, **kwargs)`, checked to be callable or None."""
    new = ctx.substitute(f, *args, **kwargs)
    if new is not None and not callable(new):
        raise TypeError(f"{type(ctx).__name__}.substitute must return a callable or None, "
                        f"got {type(new).__name__}")
    return new
