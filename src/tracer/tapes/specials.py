"""Special instructions on the tape: exceptions as data, unpacking, `with` exits,
class patterns; what cannot be re-run is kept as a frozen constant."""

from __future__ import annotations

import operator

from ..analysis.instructions import R_SPECIAL
from ..analysis.ir import ir as ir_of
from . import helpers
from .common import Lit, F_EXCEPTION, F_RAISED, K_NESTED
from .ops import Call, Constant
from .errors import TapeError

__all__ = ["SpecialInstructions"]

# `match` tests the trace refers to their subject (and keys) for: re-run from them.
# (name -> the helper that reproduces the instruction, the number of its inputs.)
_MATCH_TESTS = {
    "match_sequence": (helpers.match_sequence, 1),
    "match_mapping": (helpers.match_mapping, 1),
    "match_keys": (helpers.match_keys, 2),
}


class SpecialInstructions:
    """The flattener's handling of special nodes (a mixin of flatten._Flattener)."""

    def _special(self, row, flags):
        t = self.t
        refs = t.refs(row)
        value = t.value(row)
        if flags & F_EXCEPTION or (flags & F_RAISED and self._rec(row) is None):
            # A handler's caught exception, or a `raise`: the exception's own op.
            found = None
            for r in refs[:1]:
                x = self.resolve(r)
                xv = x.value
                if xv is value:
                    found = x
                elif isinstance(xv, type) and isinstance(value, xv) and flags & F_RAISED:
                    # `raise SomeError`: the class is called to make the exception.
                    found = self.push(Call(xv if isinstance(x, Lit) else x, (), value=value))
            if found is None:
                found = self._find(value)
            if flags & F_EXCEPTION or not isinstance(value, BaseException):
                return found
            # `raise`: the exception being handled becomes the new one's __context__,
            # and `from cause` its __cause__.
            exc = found.value if isinstance(found, Lit) else found
            # (The trace references the exception only: the cause is found by identity.)
            cause = ()
            if value.__cause__ is not None or value.__suppress_context__:
                cause = (self._plain(value.__cause__),)
            if value.__context__ is None and not cause:
                return found
            return self.push(Call(helpers.throw, (exc, self._plain(value.__context__), *cause),
                                  value=value))
        rec = self._rec(row)
        if rec is None or rec.sem != R_SPECIAL:
            raise TapeError(f"row {row}: a special node without a special instruction")
        name = rec.fn
        ins = ir_of(self.code_[row]).layout.by_offset[self.offset_[row]]
        if name == "store_deref":
            return self._store_deref(row, refs, ins)
        if name == "load_deref":
            return self._load_deref(row, ins, value)
        if name in ("unpack", "unpack_ex"):
            return self._unpack(row, name, refs, ins, value)
        if name == "set_function_attribute":
            # The function MAKE_FUNCTION made (a constant) with its attribute set.
            return self.resolve(refs[-1])
        if name == "yield_from_iter":
            return self.push(Call(helpers.yield_from_iter, (self.arg(refs[0]),), value=value))
        if name == "with_except_start" and self.frame.withs and self.frame.last_raised is not None:
            manager = self.frame.withs.pop()
            exc = self._plain(self.t.value(self.frame.last_raised))
            return self.push(Call(helpers.with_exit, (manager, exc), value=value))
        if name == "match_class":
            subject, cls, names = (self.arg(r) for r in refs)
            return self.push(Call(helpers.match_class, (subject, cls, names, ins.arg),
                                  value=value))
        rerun = _MATCH_TESTS.get(name)
        if rerun is not None and len(refs) == rerun[1]:
            return self.push(Call(rerun[0], tuple(self.arg(r) for r in refs), value=value))
        reason = f"${name} has no re-executable equivalent"
        return self.push(Constant(value, frozen=reason, where=self.where(row)))

    def _unpack(self, row, name, refs, ins, value):
        j = 0 if self.kind_[row] == K_NESTED else self.aux_[row]  # a nested node's aux is its end
        if j == 0:
            seq = self.arg(refs[0])
            if name == "unpack":
                op = Call(helpers.unpack_sequence, (seq, ins.arg), value=[])
            else:
                op = Call(helpers.unpack_ex, (seq, ins.arg & 0xFF, ins.arg >> 8), value=[])
            self.push(op)
            if name == "unpack" and ins.arg == 0:
                return op  # `() = x`: no item, the one node stands for the check
        else:
            op = self.unpack_of.get(refs[0] if refs and isinstance(refs[0], int) else -1)
            if op is None:
                raise TapeError(f"row {row}: unpacked item {j} without its unpack")
        self.unpack_of[row] = op
        items = op.value
        while len(items) < j:
            items.append(None)
        items.append(value)
        return self.push(Call(operator.getitem, (op, j), value=value))

    def _finish_unpacks(self) -> None:
        for op in set(self.unpack_of.values()):
            op.value = tuple(op.value)

    # -- branches ------------------------------------------------------------------------------
