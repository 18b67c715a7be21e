"""Tracking contexts: what is recorded inside which calls.

A context is consulted by the recorder only when its class overrides a hook; the
default context overrides nothing, so tracking with it never calls Python code.
"""

from __future__ import annotations

__all__ = ["Context", "DEFAULT", "DepthLimitContext"]


class Context:
    """Base class of tracking contexts (IRTracker's AbstractTrackingContext).

    Override `canrecur` to decide which calls are recorded inside (nested) and
    which are primitive, and `enter` to give a nested call its own context.
    """

    def canrecur(self, f, *args, **kwargs) -> bool:
        """Whether to record inside the call `f(*args, **kwargs)`.

        Called only for calls that run Python code; C callables are always
        primitive.  The default records inside every Python function.
        """
        return True

    def enter(self, f, *args, **kwargs) -> "Context":
        """The context for the body of the nested call `f(*args, **kwargs)`."""
        return self

    def _overrides(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(Context, name)

    def is_passive(self) -> bool:
        """True if this context overrides no hook (it runs at the default's speed)."""
        return not (self._overrides("canrecur") or self._overrides("enter"))


DEFAULT = Context()
"""The default context: record inside every Python function, C callables primitive."""


class DepthLimitContext(Context):
    """Record nested calls down to `maxlevel` levels (IRTracker's DepthLimitContext).

    The traced call's own body is level 2, as in IRTracker: with `maxlevel=2`
    every call the traced function makes is primitive.
    """

    def __init__(self, maxlevel: int, level: int = 1):
        if not isinstance(maxlevel, int) or maxlevel < 1:
            raise ValueError(f"maxlevel must be a positive int, got {maxlevel!r}")
        self.maxlevel = maxlevel
        self.level = level

    def canrecur(self, f, *args, **kwargs) -> bool:
        return self.level < self.maxlevel

    def enter(self, f, *args, **kwargs) -> "DepthLimitContext":
        return DepthLimitContext(self.maxlevel, self.level + 1)

    def __repr__(self) -> str:
        return f"DepthLimitContext(maxlevel={self.maxlevel}, level={self.level})"


def _call_of(recorder, row: int):
    from .nodes import node_at

    node = node_at(recorder.trace, row)
    return node.call_values()


def call_hook(recorder, ctx: Context, name: str, row: int):
    """Run hook `name` of `ctx` for the call recorded at `row` (from the core)."""
    if not ctx._overrides(name):
        return True
    f, args, kwargs = _call_of(recorder, row)
    try:
        return bool(getattr(ctx, name)(f, *args, **kwargs))
    except BaseException as exc:  # reported by track() once the call is over
        if recorder.hook_error is None:
            recorder.hook_error = exc
        return True


def enter_context(recorder, ctx: Context, row: int) -> Context:
    """The context for the body recorded under `row` (from the core)."""
    if not ctx._overrides("enter"):
        return ctx
    f, args, kwargs = _call_of(recorder, row)
    try:
        new = ctx.enter(f, *args, **kwargs)
    except BaseException as exc:
        if recorder.hook_error is None:
            recorder.hook_error = exc
        return ctx
    if not isinstance(new, Context):
        if recorder.hook_error is None:
            recorder.hook_error = TypeError(
                f"{type(ctx).__name__}.enter must return a Context, got {type(new).__name__}"
            )
        return ctx
    return new
