"""The plan's vocabulary: micro-ops, op and record words, flags and plan variants, as
plain ints (the arrays the core reads hold them).  Every number is declared once, in
the core (src/tracer/_core/layout.pxi); here it is named for the analysis."""

from .._core import WORDS, Intervention, LocalFlag, MicroOp, PlanMode, UnitFlag
from .instructions import CAPTURED, NULL, UNKNOWN

# The micro-ops and the other numbers the core reads are declared once, in the
# core (src/tracer/_core/layout.pxi); here as plain ints (arrays hold them).
MICRO_OPS = tuple(m.name[2:] for m in MicroOp)
(M_END, M_LOAD_LOCAL, M_LOAD_CONST, M_SET, M_STORE_LOCAL, M_DELETE_LOCAL, M_COPY,
 M_SWAP, M_CAPTURE, M_CAPTURE_METHOD, M_RECORD, M_BRANCH, M_FOR_ITER, M_JUMP,
 M_RETURN, M_RETURN_CONST, M_YIELD, M_RAISE, M_LOST, M_RECORD_BOOL,
 M_SILENT_JUMP, M_SEND) = (int(m) for m in MicroOp)
# RECORD_BOOL: a record whose result is certainly a bool and is popped at once by a
# POP_JUMP_IF_FALSE/TRUE.  It gets no event of its own: the recorder records it at
# the BRANCH event, its value being the truth the branch direction shows.
# SILENT_JUMP: an unconditional jump without an event (JUMP_FORWARD/BACKWARD whose
# JUMP event is not needed, JUMP_BACKWARD_NO_INTERRUPT which has none); the recorder
# writes its JumpNode when it replays the segment, which goes on at the target.
# SEND: the SEND of `yield from` / `await`, a call of ops.send that ends its segment
# with two ways on: b = the offset of the YIELD_VALUE after it (the receiver
# yielded; the frame's PY_YIELD event hands the value over), c = its target (the
# receiver returned; an INSTRUCTION event there reads the value off the stack).
# RECORD with c = local + 1: the result was stored in that local by the next
# instruction, and c = READ_RETURNED: the next instruction returns it; the recorder
# reads it from the local, or takes the PY_RETURN event's value (_Builder.deferral).
OP_WORDS = WORDS["OP_WORDS"]  # opcode, instruction offset, a, b, c
REC_NOUT = WORDS["REC_NOUT"]  # a record's word: its number of outputs
# A silent branch's successor word (plan.branch_sides) with the sign set: that side
# is written without the op loop (silent.straight_sides); SIDE_OFFSET masks it off.
SIDE_STRAIGHT, SIDE_OFFSET = WORDS["SIDE_STRAIGHT"], WORDS["SIDE_OFFSET"]
READ_RETURNED = -1  # RECORD's c: its result is the value the frame returns next
# RECORD's c of an UNPACK_SEQUENCE whose outputs the STORE_LOCAL ops right after it
# store in plain locals (STORE_FAST, STORE_FAST_STORE_FAST): each read from its local.
READ_STORED = WORDS["READ_STORED"]
JUMP_EVENT, SILENT_BRANCH = int(UnitFlag.JUMP_EVENT), int(UnitFlag.SILENT_BRANCH)
LF_SAFE, LF_CELL, LF_DYN = (int(f) for f in LocalFlag)  # of LOAD_LOCAL / STORE_LOCAL

BRANCH_KINDS = {"POP_JUMP_IF_FALSE": 0, "POP_JUMP_IF_TRUE": 1,
                "POP_JUMP_IF_NONE": 2, "POP_JUMP_IF_NOT_NONE": 3}
SPECIAL_SHADOW = {NULL: WORDS["SET_NULL"], UNKNOWN: WORDS["SET_UNKNOWN"], CAPTURED: WORDS["SET_DYN"]}

PLAN_PLAIN, PLAN_EXACT, PLAN_INTERVENE, PLAN_INTERVENE_CALLS = (int(m) for m in PlanMode)
IV_NONE, IV_ANY, IV_BOOL = (int(v) for v in Intervention)   # IV_BOOL: the result must stay a bool
AT, FROM = 0, 1  # a segment starts at an INSTRUCTION event (AT) or where control arrives (FROM)
