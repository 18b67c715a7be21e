"""Type stubs for the compiled core (src/tracer/_core.pyx and src/tracer/_core/*.pxi).

Checked against the built module by `python -m mypy.stubtest tracer._core` (a test).
"""

from enum import IntEnum
from types import CodeType
from collections.abc import Iterator, Sequence
from typing import Any, Callable, ClassVar, Mapping, Protocol, final, overload

import numpy as np
from typing_extensions import disjoint_base

# -- layout (src/tracer/_core/layout.pxi): declared once, read by the Python layer ------

class NodeKind(IntEnum):
    K_ARGUMENT = 0
    K_CONSTANT = 1
    K_PRIMITIVE = 2
    K_NESTED = 3
    K_SPECIAL = 4
    K_JUMP = 5
    K_RETURN = 6

class NodeFlag(IntEnum):
    F_RAISED = 1
    F_YIELD = 2
    F_OPEN = 4
    F_STOPPED = 8
    F_CARRIED = 16
    F_EXCEPTION = 32
    F_FRAME = 64

class MicroOp(IntEnum):
    M_END = 0
    M_LOAD_LOCAL = 1
    M_LOAD_CONST = 2
    M_SET = 3
    M_STORE_LOCAL = 4
    M_DELETE_LOCAL = 5
    M_COPY = 6
    M_SWAP = 7
    M_CAPTURE = 8
    M_CAPTURE_METHOD = 9
    M_RECORD = 10
    M_BRANCH = 11
    M_FOR_ITER = 12
    M_JUMP = 13
    M_RETURN = 14
    M_RETURN_CONST = 15
    M_YIELD = 16
    M_RAISE = 17
    M_LOST = 18
    M_RECORD_BOOL = 19
    M_SILENT_JUMP = 20
    M_SEND = 21

class RecordSem(IntEnum):
    R_OP = 0
    R_CALL = 1
    R_CALL_EX = 2
    R_SPECIAL = 3

class LocalFlag(IntEnum):
    LF_SAFE = 1
    LF_CELL = 2
    LF_DYN = 4

class Intervention(IntEnum):
    IV_NONE = 0
    IV_ANY = 1
    IV_BOOL = 2

class PlanMode(IntEnum):
    PLAN_PLAIN = 0
    PLAN_EXACT = 1
    PLAN_INTERVENE = 2

class UnitFlag(IntEnum):
    JUMP_EVENT = 1
    SILENT_BRANCH = 2

KINDS: tuple[str, ...]
FLAGS: dict[str, int]
MICRO_OPS: tuple[str, ...]
WORDS: dict[str, int]
NODE_HOOKS: tuple[str, ...]
HOOK_BITS: dict[str, int]
UNKNOWN: object

# -- the value policy (src/tracer/_core/values.pxi) ---------------------------------------

VALUE_POLICIES: dict[str, int]
def value_policy(name: str) -> int: ...

@final
class NotKept:
    """What a trace recorded with values="none" holds for a value it did not keep."""

NOT_KEPT: NotKept

@final
class ValueSummary:
    """What a trace keeps of a value instead of the value (values="summary"/"weak"),
    and of an exception under every policy but "keep"."""

    @property
    def type(self) -> type: ...
    @property
    def shape(self) -> tuple[int, ...] | None: ...
    @property
    def dtype(self) -> Any: ...
    @property
    def length(self) -> int | None: ...
    @property
    def text(self) -> str: ...
    @property
    def function(self) -> Any: ...
    @property
    def message(self) -> str | None: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class WeakValue:
    """A value held by weak reference (values="weak"): the object while alive."""

    @property
    def ref(self) -> Any: ...
    @property
    def summary(self) -> ValueSummary: ...
    def get(self) -> Any: ...

# -- the arena ---------------------------------------------------------------------------

@final
class Trace:
    """The recorded rows of one track() call: parallel columns, one row per node."""

    pool: list[Any]
    codes: list[CodeType]
    metadata: dict[int, dict[Any, Any]]
    exception: BaseException | ValueSummary | None   # a summary under a value policy
    root_keywords: tuple[str, ...]
    _cache: dict[Any, Any] | None
    stopped: bool
    snapshots: bool
    events: int
    substituted_operators: dict[int, Any]
    source: Any  # what a loaded trace's columns view (Arrow arrays by column), else None
    @property
    def values_kept(self) -> str: ...
    def __len__(self) -> int: ...
    def kind(self, row: int) -> int: ...
    def flags(self, row: int) -> int: ...
    def parent(self, row: int) -> int: ...
    def offset(self, row: int) -> int: ...
    def aux(self, row: int) -> int: ...
    def code(self, row: int) -> CodeType | None: ...
    def value(self, row: int) -> Any: ...
    def end(self, row: int) -> int: ...
    def refs(self, row: int) -> list[int | tuple[str, Any]]: ...
    def children(self, row: int) -> list[int]: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def num_refs(self) -> int: ...
    def columns(self) -> dict[str, np.ndarray]: ...
    def values(self) -> list[Any]: ...
    def table(self, values: bool = False) -> Mapping[str, np.ndarray]: ...
    def frames(self) -> tuple[np.ndarray, np.ndarray]: ...
    def save(self, path: Any, **options: Any) -> None: ...
    def __reduce__(self) -> Any: ...

def spare_columns_limit(limit: int | None = None) -> int: ...
def spare_columns_bytes() -> int: ...

# -- per-call timing, Context(timing=True) (src/tracer/_core/timing.pxi) ------------------

TIMING_DTYPE: list[tuple[str, str]]

def start_timing(trace: Trace) -> None: ...
def timing_table(trace: Trace) -> np.ndarray | None: ...
def set_timing_table(trace: Trace, table: Any) -> None: ...
def timing_parents(rows: Any, aux: Any) -> np.ndarray: ...

# -- whole-trace graph walks (src/tracer/_core/graph.pxi) ---------------------------------

def reverse_edges(t: Trace) -> tuple[np.ndarray, np.ndarray]: ...
def reach(t: Trace, seeds: Any, forward: bool, across_calls: bool = False,
          arg_sources: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray: ...
def child_rows(t: Trace, row: int) -> np.ndarray: ...
def ancestor_rows(t: Trace, row: int) -> np.ndarray: ...
def depths(t: Trace, lo: int = 0, hi: int = -1) -> np.ndarray: ...
def value_addresses(t: Trace, rows: Any) -> np.ndarray: ...

# -- tracer.validate's structural pass (src/tracer/_core/lint.pxi) -------------------------

def lint_structure(t: Trace, root: int, stopped: bool) -> tuple[
    tuple[Any, ...] | None, np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...

# -- plain scalars as columns, for value encoding (src/tracer/_core/scalars.pxi) -----------

def scalar_columns(objects: list[Any]) -> tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...

# -- per-row lookups for trace.table() (src/tracer/_core/tables.pxi) -----------------------

def unit_lookup(t: Trace, code: Any, table: Any, start: Any, length: Any,
                fill: int = -1) -> np.ndarray: ...
def callee_ids(t: Trace, code: Any, table: Any, start: Any, length: Any,
               by_code: Any) -> np.ndarray: ...

# -- node views (src/tracer/_core/views.pxi) ------------------------------------------------

@disjoint_base
class NodeView:
    """A recorded node: a view of one row of a trace (see tracer.views.Node)."""

    @property
    def _trace(self) -> Trace: ...
    @property
    def _row(self) -> int: ...
    def __init__(self, trace: Trace, row: int) -> None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    @property
    def trace(self) -> Trace: ...
    @property
    def row(self) -> int: ...
    @property
    def value(self) -> Any: ...
    @property
    def children(self) -> Children: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...

@final
class Children(Sequence[Any]):
    """The children of a node, in order: a read-only sequence of node views made when
    read."""

    @property
    def trace(self) -> Trace: ...
    @property
    def row(self) -> int: ...
    @property
    def rows(self) -> np.ndarray: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __reversed__(self) -> Iterator[Any]: ...
    @overload
    def __getitem__(self, index: int, /) -> Any: ...
    @overload
    def __getitem__(self, index: slice, /) -> list[Any]: ...
    def __contains__(self, node: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    def index(self, node: Any, start: int = 0, stop: int | None = None) -> int: ...
    def count(self, node: Any) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

def node_view(t: Trace, row: int) -> Any: ...
def node_views(t: Trace, rows: Any) -> list[Any]: ...
# -- a trace rebuilt from saved columns (src/tracer/_core/load.pxi) -----------------------

def trace_from_columns(kind: Any, flags: Any, parent: Any, code: Any, offset: Any, aux: Any,
                       ref_start: Any, refs: Any, value_index: Any, objects: list[Any],
                       pool: list[Any], codes: list[Any], metadata: dict[Any, Any],
                       substituted_operators: dict[Any, Any], stopped: bool, snapshots: bool,
                       exception: Any, events: int, root_keywords: Any,
                       source: Any = None) -> Trace: ...

# -- call filters (src/tracer/_core/filters.pxi) --------------------------------------------

@final
class CopyAtCall:
    """An on_call hook run in C: copies of the mutable inputs and value of each
    call it matches, as they are right after the call."""

    def __init__(self, array_type: type | None = None) -> None: ...
    def __call__(self, node: Any) -> None: ...
    @property
    def inputs(self) -> dict[int, dict[int, Any]]: ...
    @property
    def values(self) -> dict[int, Any]: ...
    @property
    def array_type(self) -> type | None: ...

@final
class CallFilter:
    """The hooks a context asks for by callee (on_call / substitute / override),
    matched in C by the identity of what a call or operator calls."""

    @property
    def callables(self) -> tuple[Any, ...]: ...
    @property
    def on_call(self) -> tuple[Callable[[Any], object] | None, ...]: ...
    @property
    def substitute(self) -> tuple[Callable[..., Any] | None, ...]: ...
    @property
    def override(self) -> tuple[Callable[[Any], Any] | None, ...]: ...
    @property
    def bits(self) -> int: ...
    def __new__(cls, entries: Any) -> CallFilter: ...
    def find(self, f: object) -> int: ...
    def __len__(self) -> int: ...

# -- plans and the recorder ----------------------------------------------------------------

def plan_of(code: CodeType, mode: int = 0) -> Any: ...
def plan_problem(plan: Any, code: CodeType) -> str | None: ...

@final
class Recorder:
    """Drives one track() call: owns the trace and the sys.monitoring callbacks."""

    trace: Trace
    contexts: list[Any]
    instrumented: dict[int, CodeType]
    on_stop: Any
    on_code: Any
    hook_error: BaseException | None
    internal_error: BaseException | None
    broken: bool
    events: int
    plan_mode: int
    follow_own: bool
    def begin_root(self, f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], ctx: Any) -> int: ...
    def end_root(self, result: Any, exception: BaseException | None) -> None: ...
    def reclaim_plans(self) -> None: ...

def new_recorder() -> Recorder: ...

# -- what the Python layer hands the core, and the callbacks -------------------------------

class Host(Protocol):
    """What the core calls in the Python layer, in one place (tracer.api's HOST, given
    to set_host).  track_code and node_classes are read by set_host; the functions
    when the core calls them (tracer.persist sets save and reduce)."""

    track_code: CodeType                # `track`'s code: a track inside a trace is primitive
    keep: object                        # tracer.context.KEEP, what override returns to keep a value
    node_classes: tuple[type, ...]      # the node view class of each NodeKind
    save: Callable[..., None] | None    # tracer.persist: Trace.save(path, **options)
    reduce: Callable[[Trace], Any] | None   # tracer.persist: Trace.__reduce__
    def build_plan(self, code: CodeType, mode: int) -> Any: ...
    def node_at(self, trace: Trace, row: int) -> Any: ...
    def ask_enter(self, ctx: Any, parts: tuple[Any, tuple[Any, ...], dict[str, Any]], /) -> Any: ...
    def ask_substitute(self, ctx: Any, f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], /) -> Any: ...
    def call_from_parameters(self, code: CodeType, values: list[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]: ...
    def table(self, trace: Trace, **options: Any) -> Any: ...

HOST_FUNCTIONS: tuple[str, ...]
HOST_REQUIRED: tuple[str, ...]
def set_host(host: Host) -> None: ...
def host() -> Host | None: ...
# The recorder a tool id's callbacks feed in the calling thread (thread-local):
# activate returns the one it replaces, for deactivate to put back.
def activate(tool: int, rec: Recorder) -> Recorder | None: ...
def deactivate(tool: int, previous: Recorder | None = None) -> None: ...
def active(tool: int) -> Recorder | None: ...
def allow_disable(allowed: bool) -> None: ...
def set_own_files(prefix: str, followed: tuple[str, ...] = ()) -> None: ...

# sys.monitoring callbacks of one tool id, by event name ("py_start", "py_resume",
# "instruction", "branch", "jump", "py_return", "py_yield", "raise", "py_unwind",
# "py_throw"); they feed the recorder given to activate(tool, ...).
def callbacks(tool: int) -> dict[str, Callable[..., Any]]: ...
