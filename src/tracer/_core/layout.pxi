# The core's layout: node kinds and flags, micro-ops, record words, shadow values,
# context hook bits, pending-segment states.

# ---------------------------------------------------------------------------------
# Declared once, here: `cpdef enum`s are C constants for the core and IntEnum classes
# for Python (tracer.plan, tracer.effects, tracer.nodes import them from _core).

cpdef enum NodeKind:
    K_ARGUMENT = 0
    K_CONSTANT = 1
    K_PRIMITIVE = 2
    K_NESTED = 3
    K_SPECIAL = 4
    K_JUMP = 5
    K_RETURN = 6

cpdef enum NodeFlag:
    F_RAISED = 1      # the value is the exception the operation raised
    F_YIELD = 2       # a ReturnNode that is a generator's yield
    F_OPEN = 4        # the call has not finished (partial trace)
    F_STOPPED = 8     # FOR_ITER found the iterator exhausted
    F_CARRIED = 16    # an ArgumentNode for a value that entered mid-activation
    F_EXCEPTION = 32  # a SpecialCallNode holding the exception a handler caught
    F_FRAME = 64      # a NestedCallNode for a Python frame entered inside another call

KINDS = tuple(k.name[2:].lower() for k in NodeKind)
FLAGS = {f.name[2:].lower(): int(f) for f in NodeFlag}

# Micro-ops: what tracer.plan emits for the recorder to replay.  Each is OP_WORDS
# int32 words: opcode, instruction offset, then a, b, c (their meaning per op is in
# tracer.plan).  Terminal ops (a segment's last) are numbered from M_BRANCH on,
# except M_SILENT_JUMP.
cpdef enum MicroOp:
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
    M_RECORD_BOOL = 19  # recorded at the BRANCH event that pops it (see tracer.plan)
    M_SILENT_JUMP = 20  # a jump with no event: its JumpNode is written on replay
    M_SEND = 21         # yield from / await: b = the YIELD_VALUE after it, c = its target

MICRO_OPS = tuple(m.name[2:] for m in MicroOp)

# Word positions (C array indices, so plain C enums; Python sees them in WORDS).
cdef enum:
    OP_CODE = 0
    OP_OFFSET = 1
    OP_A = 2
    OP_B = 3
    OP_C = 4
    OP_WORDS = 5

# A RECORD's c word (tracer.analysis.plan deferral): 0, the result read off the
# stack; local + 1, read from the local the next instruction stores it in; -1
# (READ_RETURNED, the analysis's), the value returned or yielded next; and
# READ_STORED, an UNPACK_SEQUENCE whose outputs the STORE_LOCAL ops right after
# it store in plain locals: each output read from its local (_stored_output).
cdef enum:
    READ_STORED = -2

# A record (plan.recs): REC_INPUTS words of header, then nin input slots (a static
# as -(index + 1)), then nout output slots.
cdef enum:
    REC_SEM = 0       # RecordSem
    REC_FN = 1        # the static index of its function (R_OP), or -1
    REC_NIN = 2
    REC_NOUT = 3
    REC_KW = 4        # the static index of its keyword names, or -1
    REC_INPUTS = 5

cpdef enum RecordSem:
    R_OP = 0          # a call of a static function (operator.add, ops.build_list, ...)
    R_CALL = 1        # a call: inputs are the callable pair then the arguments
    R_CALL_EX = 2     # f(*args, **kwargs): the callable pair, args, [kwargs]
    R_SPECIAL = 3     # an instruction with no faithful callable equivalent

cpdef enum LocalFlag:  # of LOAD_LOCAL / STORE_LOCAL (op word c)
    LF_SAFE = 1       # the local is not stored again later in the segment
    LF_CELL = 2       # the slot holds a cell; the value is its contents
    LF_DYN = 4        # STORE_LOCAL: the stored value is a constant to read back

cpdef enum Intervention:  # per record: what contexts may do to it
    IV_NONE = 0       # neither substitute nor override
    IV_ANY = 1
    IV_BOOL = 2       # ... keeping its result a bool

cpdef enum PlanMode:  # the plan variants, one per need (tracer.plan.build_plan)
    PLAN_PLAIN = 0       # fewest events: results read late from locals, branches silent
    PLAN_EXACT = 1       # every value read at an event right after its instruction (snapshots)
    PLAN_INTERVENE = 2   # PLAN_EXACT and an event before each call and operator (substitute)
    PLAN_INTERVENE_CALLS = 3  # PLAN_EXACT and an event before each call only: for contexts
                              # whose interventions name callables, no operator (filters.pxi)

cpdef enum UnitFlag:  # per code unit
    JUMP_EVENT = 1      # the jump here fires JUMP
    SILENT_BRANCH = 2   # the branch here goes without BRANCH

cdef enum:  # M_SET's b: which special shadow value
    SET_NULL = 0
    SET_UNKNOWN = 1
    SET_DYN = 2

# A silent conditional jump's successor word (plan.branch_sides: its `next` and
# `target` offsets) with this bit, the sign, set: the side written without the op
# loop (records.pxi _take_silent_branch, replay.pxi _straight_branch), the ops of
# the branch's segments and of the segment that side leads to all being of the
# kinds _straight_ops takes (tracer.analysis.silent.straight_sides).  Masked off
# (SIDE_OFFSET) wherever the word is read as an offset.
cdef enum:
    SIDE_STRAIGHT = -0x7fffffff - 1
    SIDE_OFFSET = 0x7fffffff

WORDS = {"OP_CODE": OP_CODE, "OP_OFFSET": OP_OFFSET, "OP_A": OP_A, "OP_B": OP_B,
         "OP_C": OP_C, "OP_WORDS": OP_WORDS, "REC_SEM": REC_SEM, "REC_FN": REC_FN,
         "REC_NIN": REC_NIN, "REC_NOUT": REC_NOUT, "REC_KW": REC_KW,
         "REC_INPUTS": REC_INPUTS, "SET_NULL": SET_NULL, "SET_UNKNOWN": SET_UNKNOWN,
         "SET_DYN": SET_DYN, "SIDE_STRAIGHT": SIDE_STRAIGHT, "SIDE_OFFSET": SIDE_OFFSET,
         "READ_STORED": READ_STORED}

cdef enum:
    FIRST_ROWS = 1024   # the columns' first capacity, grown as a trace grows (arena.pxi)
    FIRST_REFS = 2048
    POOL_CACHE_BITS = 9   # Recorder._pool_ref's cache: 2**9 entries
    POOL_CACHE = 1 << POOL_CACHE_BITS

# Shadow values: which node holds a local or stack slot, as a tagged int64.
#   row << 2          a node of the current call
#   k << 2 | 1        co_consts[k] of the frame's code
#   p << 2 | 2        the trace's constant pool entry p
#   3, 7, 11          NULL, unknown, an uncaptured constant
cdef enum:
    S_NULL = 3
    S_UNKNOWN = 7
    S_DYN = 11
cdef int64_t SPECIAL_SHADOW[3]   # by SpecialShadow
SPECIAL_SHADOW[SET_NULL] = S_NULL
SPECIAL_SHADOW[SET_UNKNOWN] = S_UNKNOWN
SPECIAL_SHADOW[SET_DYN] = S_DYN

# Context hook bits: a context's hook_mask (tracer.context reads HOOK_BITS).
cdef enum:
    H_CANRECUR = 1 << 0
    H_ENTER = 1 << 1
    H_NODE = 1 << 2          # << node kind: bits 2..8
    H_SUBSTITUTE = 1 << 9
    H_OVERRIDE = 1 << 10
    H_PRIMITIVES = 1 << 11
    H_SNAPSHOT = 1 << 12     # Context.snapshot overridden, or a function given: a Python call
    H_SNAP_COPY = 1 << 13    # snapshot="copy": mutable builtins copied in C
    H_SNAP_DEEP = 1 << 14    # snapshot="deepcopy"
    H_ON_CALL = 1 << 15      # Context(on_call=...): hooks of chosen callees (filters.pxi)
    H_SUBST_BY = 1 << 16     # Context(substitute=...): replacements of chosen callees
    H_OVERRIDE_BY = 1 << 17  # Context(override=...): value hooks of chosen callees
    H_FILTERED = H_ON_CALL | H_OVERRIDE_BY
    H_NODE_ALL = 127 << 2
    H_SNAP_ANY = H_SNAPSHOT | H_SNAP_COPY | H_SNAP_DEEP

# The per-node hook for each node kind, by NodeKind (tracer.context uses these names).
NODE_HOOKS = ("trackedargument", "trackedconstant", "trackedprimitive", "trackednested",
              "trackedspecial", "trackedjump", "trackedreturn")

HOOK_BITS = {"canrecur": H_CANRECUR, "enter": H_ENTER, "node": H_NODE,
             "substitute": H_SUBSTITUTE, "override": H_OVERRIDE, "primitives": H_PRIMITIVES,
             "snapshot": H_SNAPSHOT, "snapshot_copy": H_SNAP_COPY,
             "snapshot_deepcopy": H_SNAP_DEEP, "on_call": H_ON_CALL,
             "substitute_by": H_SUBST_BY, "override_by": H_OVERRIDE_BY}

# What an event handler tells its callback.
cdef enum:
    EV_CONTINUE = 0
    EV_DISABLE = 1

# How a frame is entered (Recorder._enter).
cdef enum:
    STARTED = 0     # a call starts it (PY_START)
    RESUMED = 1     # a generator or coroutine goes on after a yield (PY_RESUME)
    THROWN = 2      # ... with an exception thrown in at the yield (PY_THROW)

# Pending-segment states besides an op index (FrameRec.pending).
cdef enum:
    P_NONE = -1
    P_EXC = -2      # an exception is unwinding through the frame
    P_LOST = -3     # the frame ran something the plan cannot follow; resync at next event

# Bytes of one row across the columns: kind, flags; parent, code, offset, aux,
# ref_start; value.
cdef Py_ssize_t ROW_BYTES = 2 * sizeof(uint8_t) + 4 * sizeof(int32_t) + sizeof(PyObject *)

cdef object DISABLE = sys.monitoring.DISABLE
cdef object PY_TRUE = True
cdef object PY_FALSE = False


class _Unknown:
    """Stands for an input whose producer the recorder could not follow."""

    __slots__ = ()

    def __repr__(self):
        return "?"

    def __reduce__(self):
        return "UNKNOWN"


UNKNOWN = _Unknown()
