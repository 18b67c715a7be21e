"""What the flattener's modules share: node kinds and flags, the constant marker,
and which values have no identity worth following."""

from __future__ import annotations

import types

from .. import _core

__all__ = ["Lit", "ATOMIC", "ATOMIC_FAST", "BRANCH_TESTS", "GENERATOR_FLAGS",
           "NO_KWARGS", "FLAGS"]

FLAGS = _core.FLAGS
F_RAISED, F_CARRIED, F_EXCEPTION, F_FRAME = (FLAGS["raised"], FLAGS["carried"], FLAGS["exception"],
                                             FLAGS["frame"])
K_ARG, K_CONST, K_PRIM, K_NESTED, K_SPECIAL, K_JUMP, K_RETURN = range(7)
GENERATOR_FLAGS = 0x20 | 0x80 | 0x200  # generator, coroutine, async generator

# Values whose identity carries no meaning (equal values may be one shared object):
# a constant of these types is never taken for an op's result.
ATOMIC = (type(None), bool, int, float, complex, str, bytes, tuple, frozenset, range,
           type(Ellipsis), type(NotImplemented), type, types.ModuleType, types.FunctionType,
           types.CodeType, types.BuiltinFunctionType, types.MethodDescriptorType,
           types.WrapperDescriptorType, types.MethodWrapperType, types.ClassMethodDescriptorType)
ATOMIC_FAST = frozenset((type(None), bool, int, float, str, tuple))  # the frequent ones, fast
BRANCH_TESTS = {
    "POP_JUMP_IF_TRUE": "truth", "POP_JUMP_IF_FALSE": "truth",
    "POP_JUMP_IF_NONE": "none", "POP_JUMP_IF_NOT_NONE": "none",
}
NO_KWARGS: dict = {}  # shared by Call ops without keywords (never mutated)


class Lit:
    """A constant in the node -> tape map (so None and ops stay distinguishable)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value
