"""Reading a trace: node views (`nodes`), graph queries over the columns (`queries`,
`query`), the table of columns (`table`), printing (`show`, with the value formatting
in `values`) and `validate`.

This package's `__all__` is the home of the classes a trace is read through: the node
classes, `Query`, `Table`, the node kinds (`Kind`, `KIND_NAMES`), `Trace`, the
limits of the spare-column pool and of the array-buffer pool (numpy buffers of
traced calls kept for the next one).
"""

from .._core import (
    UNKNOWN, Trace, arena_cache_bytes, arena_cache_limit, column_huge_pages, column_memory,
    spare_columns_bytes, spare_columns_lazy_limit, spare_columns_limit,
)
from .._arraypool import (
    array_buffer_cache_bytes, array_buffer_cache_lazy_limit, array_buffer_cache_limit,
)
from .nodes import (
    ArgumentNode, CallNode, Const, ConstantNode, JumpNode, Location, NestedCallNode, Node,
    PrimitiveCallNode, ReturnNode, SpecialCallNode, backward, dependents, forward, referenced,
)
from .query import AXES, Query
from .table import KIND_NAMES, Kind, Table

__all__ = [
    "Node", "CallNode", "ArgumentNode", "ConstantNode", "PrimitiveCallNode", "NestedCallNode",
    "SpecialCallNode", "JumpNode", "ReturnNode", "Const", "Location",
    "referenced", "backward", "dependents", "forward", "Query", "AXES", "Table", "Kind",
    "KIND_NAMES", "Trace", "UNKNOWN", "spare_columns_limit", "spare_columns_bytes",
    "spare_columns_lazy_limit", "column_memory", "column_huge_pages", "arena_cache_limit",
    "arena_cache_bytes", "array_buffer_cache_limit", "array_buffer_cache_lazy_limit",
    "array_buffer_cache_bytes",
]
