"""Effects shared across instructions and code objects (a part of the plan builder).

Most instructions' effects (instructions.effect_of) are a function of the opcode and
its argument alone: a BINARY_OP 0 or a STORE_FAST 3 does the same to the stack in
every code object.  The builder asks for those once per process and shares the
Effect (and its Recs, and the typed walk's encoding of its steps); only the
instructions whose effect reads the code object or a neighbouring instruction --
local and cell names, attribute names, keyword names, what follows a TO_BOOL -- are
asked for each time (once per code object for those that read only the code
object: LOAD_FAST's local, STORE_ATTR's name).  The reference builder (plan._Builder(reference=True)) calls
effect_of for every instruction; tests/plan_compare.py holds the two plans equal,
and tests/test_plan_effecttable.py each shared effect equal to a fresh one.

The typed builder (analysis/_fastplan.pyx) reads this table through a C array and
shares the contextual opcodes' effects too, keyed by exactly what effect_of reads
of their context (`_context_key`: the instruction before a CALL or CALL_KW, the
one after a TO_BOOL or CONVERT_VALUE, whether LOAD_FAST's local is a cell; a
LOAD_ATTR's attribute form stays one Effect per instruction): a change to what
effect_of reads for one of those opcodes must change that key too (the test
compares every effect the typed builder hands out with a fresh one).
"""

from __future__ import annotations

from types import CodeType

from .bytecode import Instr
from .instructions import Effect, effect_of

__all__ = ["effects_of", "CONTEXTUAL", "PER_CODE"]

# Instructions whose effect depends on more than (opcode, arg): effect_of reads the
# code object (co_names, co_consts, cell and free variable names), the instruction
# before (KW_NAMES, CONVERT_VALUE, the keyword tuple's LOAD_CONST) or after
# (TO_BOOL, CONVERT_VALUE).  LOAD_ATTR's Effect is also written to by the walk
# (its getattr record), so it is never shared.  Any opcode effect_of learns to
# read context for must be named here (the test compares shared and fresh).
CONTEXTUAL = frozenset({
    "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW", "LOAD_FAST_LOAD_FAST",
    "LOAD_FAST_BORROW_LOAD_FAST_BORROW", "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF",
    "LOAD_ATTR", "STORE_ATTR", "DELETE_ATTR", "TO_BOOL", "CONVERT_VALUE", "FORMAT_SIMPLE",
    "CALL", "CALL_KW",
})

# Of those, the ones that read only the code object (local, cell and attribute
# names), not a neighbour: shared within one code object.
PER_CODE = frozenset({
    "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW", "LOAD_FAST_LOAD_FAST",
    "LOAD_FAST_BORROW_LOAD_FAST_BORROW", "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF",
    "STORE_ATTR", "DELETE_ATTR",
})

_MAX_SHARED = 1 << 16  # distinct (opcode, arg) pairs kept (jump arguments vary most)
_shared: dict[tuple[int, int | None], Effect] = {}


def effects_of(instrs: list[Instr], depth: dict[int, int], code: CodeType) -> dict[int, Effect]:
    """Offset -> Effect of every reachable instruction in `instrs` (those in `depth`),
    as {ins.offset: effect_of(ins, code, previous instruction)} gives them."""
    out: dict[int, Effect] = {}
    shared = _shared
    own: dict[tuple[int, int | None], Effect] = {}  # PER_CODE ones
    prev = None
    for ins in instrs:
        if ins.offset in depth:
            if ins.opname in CONTEXTUAL:
                if ins.opname in PER_CODE:
                    key = (ins.opcode, ins.arg)
                    eff = own.get(key)
                    if eff is None:
                        eff = own[key] = effect_of(ins, code, prev)
                    out[ins.offset] = eff
                else:
                    out[ins.offset] = effect_of(ins, code, prev)
            else:
                key = (ins.opcode, ins.arg)
                eff = shared.get(key)
                if eff is None:
                    eff = effect_of(ins, code, prev)
                    if len(shared) < _MAX_SHARED:
                        shared[key] = eff
                out[ins.offset] = eff
        prev = ins
    return out
