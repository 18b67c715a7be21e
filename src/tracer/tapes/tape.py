"""`Tape`: a linear list of ops (Umlaut's Tape) with editing that keeps references valid."""

from __future__ import annotations

from typing import Iterable, Iterator

from ..api import track
from ..context import Context
from ..views.checks import node_arg
from .codegen import compile_tape, generate
from .errors import TapeError
from .flatten import flatten
from .retrace import Retracing
from .ops import Call, Guard, Input, Op
from .play import play
from .purity import is_pure
from .record import recording_context, wants_record
from .update import update

__all__ = ["Tape", "TapeError"]


class Tape:
    """A linearized call: Input ops, then Constant, Call and Guard ops, and a result.

    `tape[k]` is op `%k` (1-based, as printed); iteration goes in order.  `result` is
    the op the call returns (settable); `raises` is true when the traced call raised
    the result's value.  `func` is the traced function, `ctx` the context it was
    traced with.
    """

    def __init__(self, func=None, ctx=None):
        self.ops: list[Op] = []
        self._result: Op | None = None
        self.raises = False
        self.func = func
        self.ctx = ctx
        self.signature_of = None  # the function whose parameters the inputs are
        self.last_update: tuple[Op, ...] = ()
        self._users: dict[Op, list[Op]] | None = None
        self._compiled = None
        self._play_plan = None
        self._hazards = None  # effects.hazards_of, until the tape changes
        # Ops that made a generator, map or filter whose iteration the tape inlines
        # (tracer.tapes.callbacks): their objects carry no data the tape reads.
        self.inlined_iterables: list[Op] = []

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_trace(cls, root, ctx=None, callbacks: bool = False) -> "Tape":
        """Flatten the nested trace under `root` (from `tracer.track`) into a tape.

        With `callbacks=True`, generators, `map`/`filter` callbacks and
        `functools.reduce` functions that builtins ran from C are inlined as the
        iteration they did (tracer.tapes.callbacks; gradients use this)."""
        node_arg(root, "Tape.from_trace")
        return flatten(root, ctx, cls, callbacks)

    @classmethod
    def trace(cls, f, /, *args, ctx: Context | None = None, **kwargs):
        """Run `f(*args, **kwargs)` traced; `(result, tape)` (see tracer.tapes.trace)."""
        run_ctx = recording_context(ctx, cls) if wants_record(ctx) else ctx
        root = track(f, *args, ctx=run_ctx, **kwargs)
        return root.value, cls.from_trace(root, ctx)

    # -- reading ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def __getitem__(self, k: int) -> Op:
        if not isinstance(k, int):
            raise TypeError(f"a tape is indexed by op id (int), got {type(k).__name__}")
        if not 1 <= k <= len(self.ops):
            raise IndexError(f"op %{k} does not exist: the tape has %1..%{len(self.ops)}")
        return self.ops[k - 1]

    @property
    def inputs(self) -> list[Input]:
        """The Input ops: the callee `%1`, then the parameters."""
        return [op for op in self.ops if isinstance(op, Input)]

    @property
    def guards(self) -> list[Guard]:
        return [op for op in self.ops if isinstance(op, Guard)]

    @property
    def result(self) -> Op | None:
        return self._result

    @result.setter
    def result(self, op: Op) -> None:
        self._check_member(op, "result")
        self._result = op
        self._compiled = None

    def __contains__(self, op) -> bool:
        return isinstance(op, Op) and 0 < op.id <= len(self.ops) and self.ops[op.id - 1] is op

    def __str__(self) -> str:
        ctx = type(self.ctx).__name__ if self.ctx is not None else "Context"
        lines = [f"Tape{{{ctx}}}"]
        lines += ["  " + op.format() for op in self.ops]
        if self._result is not None:
            word = "raise" if self.raises else "return"
            lines.append(f"  {word} %{self._result.id}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        name = getattr(self.func, "__qualname__", "?")
        return f"<Tape of {name}: {len(self.ops)} ops>"

    # -- editing ---------------------------------------------------------------------------
    def push(self, op: Op) -> Op:
        """Append `op`; return it.  Its references must be ops of this tape."""
        self._check_new(op, len(self.ops) + 1)
        self.ops.append(op)
        op.id = len(self.ops)
        self._changed()
        return op

    def insert(self, position: int, *ops: Op) -> list[Op]:
        """Insert `ops` so that the first becomes `%position`; later ops move down."""
        if not 1 <= position <= len(self.ops) + 1:
            raise IndexError(f"insert position {position} outside 1..{len(self.ops) + 1}")
        placed: set[int] = set()
        for k, op in enumerate(ops):
            self._check_new(op, position, extra=placed)
            placed.add(id(op))
        self.ops[position - 1:position - 1] = ops
        self._renumber(position)
        self._changed()
        return list(ops)

    def replace(self, op: Op, *new_ops: Op, rebind_to: Op | int | None = None) -> list[Op]:
        """Put `new_ops` where `op` is and delete it; its users then read `rebind_to`
        (an op, an index into `new_ops`, default the last new op)."""
        self._check_member(op, "op to replace")
        if not new_ops and rebind_to is None:
            raise TapeError("replace needs new ops or rebind_to (an existing op)")
        if isinstance(rebind_to, int):
            target = new_ops[rebind_to]
        elif rebind_to is None:
            target = new_ops[-1]
        else:
            target = rebind_to
        position = op.id
        self.insert(position, *new_ops)
        if target is not op:
            self.rebind({op: target})
        self.delete(op)
        return list(new_ops)

    def delete(self, op: Op) -> None:
        """Remove `op`; refused while another op or the result still uses it."""
        self._check_member(op, "op to delete")
        users = self.users(op)
        if users or self._result is op:
            who = ", ".join(f"%{u.id}" for u in users) + (" the result" if self._result is op else "")
            raise TapeError(f"%{op.id} is still used by {who.strip(', ')}: rebind them first")
        position = op.id
        del self.ops[position - 1]
        op.id = 0
        self._renumber(position)
        self._changed()

    def rebind(self, mapping: dict) -> None:
        """Make every reference to an op `old` (and the result) refer to `mapping[old]`."""
        for old, new in mapping.items():
            self._check_member(old, "op to rebind")
            if isinstance(new, Op):
                self._check_member(new, "op to rebind to")
                if new.id > old.id:
                    later = [u for u in self.users(old) if u.id <= new.id]
                    if later:
                        raise TapeError(f"cannot rebind %{old.id} to the later %{new.id}: "
                                        f"%{later[0].id} reads it before %{new.id} exists")

        def sub(r):
            return mapping.get(r, r)

        for op in self.ops:
            op.map_refs(sub)
        if self._result in mapping:
            self._result = mapping[self._result]
        self._changed()

    def eliminate_dead_code(self, pure=None) -> list[Op]:
        """Delete the ops nothing needs; return them.

        An op is needed when the result or a guard depends on it, or when it may
        have an effect: calls are kept unless their function is known to be free of
        effects (`purity.is_pure`, or `pure(op)` returning True).  Inputs stay.
        """
        needed: set[int] = set()
        stack: list[Op] = []
        for op in self.ops:
            keep = isinstance(op, Guard) or (
                isinstance(op, Call) and not (is_pure(op) or (pure is not None and pure(op))))
            if isinstance(op, Input) or keep:
                stack.append(op)
        if self._result is not None:
            stack.append(self._result)
        while stack:
            op = stack.pop()
            if id(op) in needed:
                continue
            needed.add(id(op))
            stack.extend(op.refs())
        dead = [op for op in self.ops if id(op) not in needed]
        if dead:
            self.ops = [op for op in self.ops if id(op) in needed]
            for op in dead:
                op.id = 0
            self._renumber(1)
            self._changed()
        return dead

    # -- checks ----------------------------------------------------------------------------
    def users(self, op: Op) -> list[Op]:
        """The ops that read `op` directly, in order."""
        if self._users is None:
            users: dict[Op, list[Op]] = {}
            for o in self.ops:
                for r in o.refs():
                    lst = users.setdefault(r, [])
                    if not lst or lst[-1] is not o:
                        lst.append(o)
            self._users = users
        return list(self._users.get(op, ()))

    def validate(self) -> None:
        """Check the tape's invariants; raise TapeError on the first violation.

        Ids are positions; every reference is to an op earlier on this tape; inputs
        come first; the result is on the tape; calls have a callable or an op as
        function and str keyword names.
        """
        seen: set[int] = set()
        inputs_done = False
        for k, op in enumerate(self.ops, 1):
            if not isinstance(op, Op):
                raise TapeError(f"position {k} holds {op!r}, not an op")
            if op.id != k:
                raise TapeError(f"op at position {k} has id %{op.id}")
            if isinstance(op, Input):
                if inputs_done:
                    raise TapeError(f"input %{k} comes after other ops")
            else:
                inputs_done = True
            for r in op.refs():
                if id(r) not in seen:
                    where = f"%{r.id}" if r.id else repr(r)
                    raise TapeError(f"%{k} reads {where}, which is not an earlier op of this tape")
            if isinstance(op, Call):
                if not isinstance(op.fn, Op) and not callable(op.fn):
                    raise TapeError(f"%{k} calls {op.fn!r}, which is not callable")
                if any(not isinstance(n, str) for n in op.kwargs):
                    raise TapeError(f"%{k} has a keyword name that is not a str")
            if isinstance(op, Guard) and op.test not in Guard.TESTS:
                raise TapeError(f"guard %{k} has an unknown test {op.test!r}")
            seen.add(id(op))
        if self._result is not None and id(self._result) not in seen:
            raise TapeError("the result is not an op of this tape")

    def _check_member(self, op, what: str) -> None:
        if op not in self:
            raise TapeError(f"the {what} ({op!r}) is not an op of this tape")

    def _check_new(self, op, position: int, extra: Iterable[int] = ()) -> None:
        if not isinstance(op, Op):
            raise TypeError(f"only ops go on a tape, got {type(op).__name__}")
        if op.id and op in self:
            raise TapeError(f"%{op.id} is already on this tape")
        extra = set(extra)
        for r in op.refs():
            if id(r) in extra:
                continue
            if r not in self or r.id >= position:
                raise TapeError(f"{type(op).__name__} reads {r!r}, which would not be an "
                                f"earlier op of this tape")

    def _renumber(self, start: int) -> None:
        for k in range(start - 1, len(self.ops)):
            self.ops[k].id = k + 1

    def _changed(self) -> None:
        self._users = None
        self._compiled = None
        self._play_plan = None
        self._hazards = None

    # -- running ---------------------------------------------------------------------------
    def play(self, *args, **kwargs):
        """Re-execute the ops on new arguments (bound as the traced function binds
        them); check every guard; return the result (or raise it)."""
        return play(self, *args, **kwargs)

    def to_source(self) -> str:
        """The source of the function `compile()` makes."""
        return generate(self).source

    def compile(self, retrace: bool = False):
        """A Python function that runs the tape natively (see tracer.tapes.codegen).

        With `retrace=True`, a guard failure re-traces the traced function on the
        new arguments, caches the new path's tape, and returns its result.
        """
        if retrace:
            return Retracing(self)
        if self._compiled is None:
            self._compiled = compile_tape(self)
        return self._compiled

    def update(self, changes: dict, retrace: bool = False):
        """Set new values for some inputs or ops, re-execute only what depends on
        them, and return the new result (see tracer.tapes.update)."""
        return update(self, changes, retrace=retrace)
