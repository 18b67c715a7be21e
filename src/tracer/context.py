"""Tracking contexts: what is recorded inside which calls, and what happens per node.

A context customises tracking the way IRTracker's tracking contexts, Umlaut's
`isprimitive` / `record_primitive!` and Cassette's overdubbing do.  The recorder
consults a context only where its class overrides a hook: the default context
overrides nothing, so tracking with it never calls Python code, and a context that
overrides only `canrecur` costs one Python call per call event.
"""

from __future__ import annotations

import types
from typing import Callable, Iterable

from ._core import HOOK_BITS as _CORE_BITS
from ._core import NODE_HOOKS

__all__ = ["Context", "DEFAULT", "DepthLimitContext", "KEEP", "NODE_HOOKS"]


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
    - `substitute(f, *args, **kwargs)` and `override(node)`: interventions that
      change what the program computes (see their docstrings).

    An exception raised by any hook stops tracking at once; `track` then raises
    TrackingError chained to it, after the traced call has run to its end.
    """

    def __init__(self, primitives: Iterable[Callable] = (), modules: Iterable[str] = (),
                 snapshot: str | Callable | None = None):
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
        self._snapshot_bits, self._snapshot_fn = _snapshot_policy(snapshot)

    # -- the primitive boundary ------------------------------------------------------------
    def canrecur(self, f, *args, **kwargs) -> bool:
        """Whether to record inside the Python call `f(*args, **kwargs)`.

        Called for calls that run Python code and that `primitives` and `modules`
        do not already make primitive: Python functions, and C functions that call
        back into Python (`sorted` with a Python key); False makes the whole call
        primitive.  A C function's own work is never recorded inside.  The default
        records inside every Python function.
        """
        return True

    def enter(self, f, *args, **kwargs) -> "Context":
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
    def substitute(self, f, *args, **kwargs):
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
        return mask



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

    def canrecur(self, f, *args, **kwargs) -> bool:
        return self.level < self.maxlevel

    def enter(self, f, *args, **kwargs) -> "DepthLimitContext":
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

def call_from_parameters(code, values: list) -> tuple:
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


def ask_enter(ctx: Context, parts: tuple) -> Context:
    """`ctx.enter(f, *args, **kwargs)` for `parts` = (f, args, kwargs), checked."""
    f, args, kwargs = parts
    new = ctx.enter(f, *args, **kwargs)
    if not isinstance(new, Context):
        raise TypeError(f"{type(ctx).__name__}.enter must return a tracer.Context, "
                        f"got {type(new).__name__}")
    return new


def ask_substitute(ctx: Context, f, args: tuple, kwargs: dict):
    """`ctx.substitute(f, *args, **kwargs)`, checked to be callable or None."""
    new = ctx.substitute(f, *args, **kwargs)
    if new is not None and not callable(new):
        raise TypeError(f"{type(ctx).__name__}.substitute must return a callable or None, "
                        f"got {type(new).__name__}")
    return new
