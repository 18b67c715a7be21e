"""tracer: record what a call of an unmodified Python function did.

`track(f, *args)` runs `f` natively under sys.monitoring and returns a nested graph
of everything it did: operations with their values and data dependencies, the
branches taken, returns and exceptions, nested by call (an extended Wengert list,
as Julia's IRTracker records).
"""

import sys as _sys
import typing as _typing

if _sys.version_info < (3, 12):
    raise ImportError(
        "tracer needs Python 3.12 or newer (it is built on sys.monitoring, PEP 669); "
        f"this is Python {_sys.version.split()[0]}"
    )

from .api import TraceLimitError, TrackingError, ToolIdError, last_trace, track  # noqa: E402
from .context import Context  # noqa: E402
from .analysis.ir import ir  # noqa: E402
from .views.validate import GraphError, validate  # noqa: E402
from .views.show import format_node, printlevels  # noqa: E402
from .views.query import query  # noqa: E402
from .views.table import table  # noqa: E402
from .persist import PickleRefused, load, save, track_many  # noqa: E402
from .export.dot import GraphvizNotFound, render, to_dot  # noqa: E402
from .export.networkx import to_networkx  # noqa: E402
from .export.summary import summary  # noqa: E402
from .compare.diff import diff  # noqa: E402
from .tapes import GuardError, TapeError  # noqa: E402
from .tapes.trace import trace as tape  # noqa: E402
from .ad import NoRuleError, backprop, grad, rule, value_and_grad, vjp  # noqa: E402
from .suite import compare_counts, counts  # noqa: E402

try:
    from ._version import version as __version__
except ImportError:  # pragma: no cover - running from a source tree without a build
    __version__ = "0.0.0"

# The face: the verbs a user starts with, the context class, and the errors users
# catch.  Classes, tape ops, stand-ins and limits live in their subpackages' __all__
# (tracer.views, tracer.context, tracer.tapes, tracer.persist, tracer.export, ...).
__all__ = [
    "track", "last_trace", "query", "table", "printlevels", "format_node", "validate", "ir",
    "save", "load", "track_many", "tape", "grad", "value_and_grad", "vjp", "backprop", "rule",
    "diff", "summary", "render", "to_dot", "to_networkx", "Context",
    "TrackingError", "ToolIdError", "TraceLimitError", "GraphError", "TapeError", "GuardError", "NoRuleError",
    "PickleRefused", "GraphvizNotFound",
    "counts", "compare_counts",
]

# Names that left the top level, and their homes.  They still work for a transition
# (with a DeprecationWarning naming the home) while code written against the wide
# namespace moves over.
_MOVED = {
    **dict.fromkeys(["Trace", "UNKNOWN", "spare_columns_limit", "spare_columns_bytes",
                     "Node", "CallNode", "ArgumentNode", "ConstantNode", "PrimitiveCallNode",
                     "NestedCallNode", "SpecialCallNode", "JumpNode", "ReturnNode", "Const",
                     "Location", "referenced", "backward", "dependents", "forward",
                     "Query", "AXES"], "tracer.views"),
    **dict.fromkeys(["IR", "Statement"], "tracer.analysis.ir"),
    **dict.fromkeys(["DEFAULT", "KEEP", "DepthLimitContext"], "tracer.context"),
    **dict.fromkeys(["Runs", "LoadedCode", "Opaque", "OpaqueException"], "tracer.persist"),
    **dict.fromkeys(["Tape", "Input", "Constant", "Call", "Guard"], "tracer.tapes"),
    "Summary": "tracer.export.summary",
    "TraceDiff": "tracer.compare.diff",
}


# Hidden from type checkers: a module __getattr__ would make every attribute of
# `tracer` type-check (as Any), typos included; mypy should point at the new home.
if not _typing.TYPE_CHECKING:  # (mypy knows the attribute, not an alias of the name)
    def __getattr__(name: str):
        home = _MOVED.get(name)
        if home is None:
            raise AttributeError(f"module 'tracer' has no attribute {name!r}")
        import importlib
        import warnings

        warnings.warn(f"tracer.{name} has moved: use `from {home} import {name}` (the "
                      f"top-level name will be removed)", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
