"""tracer: record what a call of an unmodified Python function did.

`track(f, *args)` runs `f` natively under sys.monitoring and returns a nested graph
of everything it did: operations with their values and data dependencies, the
branches taken, returns and exceptions, nested by call (an extended Wengert list,
as Julia's IRTracker records).
"""

import sys as _sys

if _sys.version_info < (3, 12):
    raise ImportError(
        "tracer needs Python 3.12 or newer (it is built on sys.monitoring, PEP 669); "
        f"this is Python {_sys.version.split()[0]}"
    )

from ._core import UNKNOWN, Trace, spare_columns_bytes, spare_columns_limit  # noqa: E402
from .api import TrackingError, ToolIdError, last_trace, track  # noqa: E402
from .context import DEFAULT, KEEP, Context, DepthLimitContext  # noqa: E402
from .views.validate import GraphError, validate  # noqa: E402
from .analysis.ir import IR, Statement, ir  # noqa: E402
from .views.nodes import (  # noqa: E402
    ArgumentNode, CallNode, Const, ConstantNode, JumpNode, Location, NestedCallNode, Node,
    PrimitiveCallNode, ReturnNode, SpecialCallNode, backward, dependents, forward, referenced,
)
from .views.show import format_node, printlevels  # noqa: E402
from .views.query import AXES, Query, query  # noqa: E402
from .views.table import table  # noqa: E402
from .persist import (  # noqa: E402
    LoadedCode, Opaque, OpaqueException, PickleRefused, Runs, load, save, track_many,
)
from .export.dot import GraphvizNotFound, render, to_dot  # noqa: E402
from .export.networkx import to_networkx  # noqa: E402
from .export.summary import Summary, summary  # noqa: E402
from .compare.diff import TraceDiff, diff  # noqa: E402
from . import tape  # noqa: E402  (callable: tracer.tape(f, *args) -> (value, Tape))
from .tape import Call, Constant, Guard, GuardError, Input, Tape, TapeError  # noqa: E402
from .ad import NoRuleError, backprop, grad, rule, value_and_grad, vjp  # noqa: E402
from .suite import compare_counts, counts  # noqa: E402

try:
    from ._version import version as __version__
except ImportError:  # pragma: no cover - running from a source tree without a build
    __version__ = "0.0.0"

__all__ = [
    "track", "last_trace", "printlevels", "format_node", "validate", "ir", "IR", "Statement",
    "Context", "DEFAULT", "DepthLimitContext", "KEEP", "Trace", "UNKNOWN",
    "Node", "CallNode", "ArgumentNode", "ConstantNode", "PrimitiveCallNode", "NestedCallNode",
    "SpecialCallNode", "JumpNode", "ReturnNode", "Const", "Location",
    "referenced", "backward", "dependents", "forward", "query", "Query", "AXES", "table",
    "TrackingError", "ToolIdError", "GraphError",
    "spare_columns_limit", "spare_columns_bytes",
    "save", "load", "track_many", "Runs", "LoadedCode", "Opaque", "OpaqueException", "PickleRefused",
    "tape", "Tape", "TapeError", "GuardError", "Input", "Constant", "Call", "Guard",
    "grad", "value_and_grad", "vjp", "backprop", "rule", "NoRuleError",
    "to_dot", "render", "GraphvizNotFound", "to_networkx", "summary", "Summary",
    "diff", "TraceDiff",
    "counts", "compare_counts",
]
