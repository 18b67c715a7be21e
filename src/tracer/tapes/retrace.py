"""`compile(retrace=True)`: re-trace on a guard failure, one tape per path."""

from __future__ import annotations

from .effects import first_effect
from .guards import GuardError, not_retraced
from .play import bind_inputs

__all__ = ["Retracing"]


class Retracing:
    """A compiled tape that re-traces its function when new inputs take another path.

    Each path's tape is traced once, compiled and cached (`tapes`).  A call tries
    the cached paths, the last successful first; when every one fails a guard, the
    original function is traced on the new arguments, its result returned and its
    tape added.  A path is only abandoned for another when nothing that ran before
    its failing guard may have had an effect (tape.effects): otherwise the call
    raises GuardError saying which op prevented it, and the effect happened once.
    """

    def __init__(self, tape):
        if tape.func is None or not callable(tape.func):
            raise TypeError("retrace needs a tape traced from a function (tape.func)")
        self.func = tape.func
        self.ctx = tape.ctx
        self.tapes = [tape]
        self._fns = [tape.compile()]
        self._tape_of = {self._fns[0]: tape}
        self.retraces = 0
        self.__wrapped__ = self.func
        self.__name__ = getattr(self.func, "__name__", "tape")

    def __call__(self, *args, **kwargs):
        fns = self._fns
        for k, fn in enumerate(fns):
            try:
                result = fn(*args, **kwargs)
            except GuardError as err:
                self._check_no_effect(self._tape_of[fn], err, args, kwargs)
                continue
            if k:
                fns.insert(0, fns.pop(k))
            return result
        value, tape = type(self.tapes[0]).trace(self.func, *args, ctx=self.ctx, **kwargs)
        self.retraces += 1
        self.tapes.append(tape)
        fn = tape.compile()
        self._tape_of[fn] = tape
        fns.insert(0, fn)
        return value

    @staticmethod
    def _check_no_effect(tape, err: GuardError, args, kwargs) -> None:
        op = err.op
        if op is None or op not in tape:
            raise err
        effect = first_effect(tape, op.id, bind_inputs(tape, args, kwargs))
        if effect is not None:
            raise not_retraced(err, effect) from err
