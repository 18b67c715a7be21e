"""Tapes: Umlaut's "Linearized traces" examples in Python, then what tracer adds.

`tracer.tape(f, *args)` returns the result and the call flattened into a linear
tape of primitive calls; a context moves the primitive boundary (`primitives=`,
`canrecur`) or decides what a primitive records (`record_primitive`, Umlaut's
`record_primitive!`).  A tape replays (`play`), compiles back into Python
(`compile`), checks the branches it took (guards) and updates incrementally.

Run:  python examples/tape.py          (python examples/tape.py readme: the README's part)
"""

import math
import operator

import tracer
from tracer.tape import Call, mkcall


# -- Umlaut's example: baz -> bar -> foo, flattened to *, + and - -------------------------

def foo(x):
    return 2 * x


def bar(x, y):
    return foo(x) + 3 * y


def baz(x, y):
    return bar(x, y) - 1


class FooPrimitive(tracer.Context):
    """foo is primitive (Umlaut's `isprimitive(::MyCtx, f, args...) = ... || f == foo`)."""

    def canrecur(self, f, /, *args, **kwargs):
        return f is not foo


# -- record_primitive: replace * by + while tracing, and count ---------------------------------

def loop1(a, n):
    a = 2 * a
    for i in range(n):
        a = a * n
    return a


class CountingReplacingCtx(tracer.Context):
    """Records `replace[1]` wherever the program calls `replace[0]`, counting them."""

    def __init__(self, replace):
        super().__init__()
        self.replace = replace
        self.count = 0

    def record_primitive(self, tape, fn, /, *args, **kwargs):
        if fn is self.replace[0]:
            self.count += 1
            return tape.push(mkcall(self.replace[1], *args, **kwargs))
        return tape.push(mkcall(fn, *args, **kwargs))


# -- beyond Umlaut: guards, compile, edits, update ----------------------------------------------

def clip_sum(x, n):
    total = 0.0
    i = 0
    while i < n:
        if x > 1.0:
            total += x * i
        else:
            total -= x
        i += 1
    return total


def clip(x, n):
    total = 0.0
    for i in range(n):
        total += x * i if x > 0 else -x
    return total


def readme():
    """The README's example (`python examples/tape.py readme`)."""
    val, tape = tracer.tape(baz, 1.0, 2.0)
    print(val)
    print(tape)

    val, tape = tracer.tape(clip, 2.0, 2)
    fn = tape.compile()
    print(tape.to_source())
    print(fn(3.0, 2))
    try:
        fn(-1.0, 2)
    except tracer.GuardError as err:
        print(err)
    print(tape.compile(retrace=True)(-1.0, 2))
    x = tape.inputs[1]
    print(tape.update({x: 5.0}), [f"%{op.id}" for op in tape.last_update])


def with_unused(x):
    unused = x * 3  # computed, never used
    return math.sqrt(x) + 1


def main():
    val, tape = tracer.tape(baz, 1.0, 2.0)
    print(f"val = {val}")
    print(tape)
    print()
    print(tracer.tape(baz, 1.0, 2.0, ctx=tracer.Context(primitives=[foo]))[1])
    print()
    print(tracer.tape(baz, 1.0, 2.0, ctx=FooPrimitive())[1])
    print()

    ctx = CountingReplacingCtx((operator.mul, operator.add))
    val, tape = tracer.tape(loop1, 2.0, 3, ctx=ctx)
    adds = sum(1 for op in tape if isinstance(op, Call) and op.fn is operator.add)
    print(f"loop1(2.0, 3) = {val} with * recorded as +: count = {ctx.count}, "
          f"operator.add calls on the tape: {adds}")
    print()

    val, tape = tracer.tape(clip_sum, 2.0, 2)
    print(tape)
    fn = tape.compile()
    print(tape.to_source())
    print(f"compiled clip_sum(3.0, 2) = {fn(3.0, 2)}  (clip_sum gives {clip_sum(3.0, 2)})")
    try:
        fn(0.5, 2)
    except tracer.GuardError as err:
        print(f"compiled clip_sum(0.5, 2): GuardError: {err}")
    jit = tape.compile(retrace=True)
    print(f"compile(retrace=True): clip_sum(0.5, 2) = {jit(0.5, 2)} "
          f"(clip_sum gives {clip_sum(0.5, 2)}), {jit.retraces} retrace, "
          f"{len(jit.tapes)} tapes cached")
    print()

    for op in list(tape):
        if isinstance(op, Call) and op.fn is operator.mul:
            tape.replace(op, Call(operator.add, op.args))
    tape.validate()
    print(f"every * replaced by +: compiled clip_sum(3.0, 2) = {tape.compile()(3.0, 2)}")
    val, tape = tracer.tape(with_unused, 4.0)
    print(tape)
    dead = tape.eliminate_dead_code()
    print(f"eliminate_dead_code() removed {len(dead)} op (the unused operator.mul):")
    print(tape)
    print()

    val, tape = tracer.tape(baz, 1.0, 2.0)
    x = tape.inputs[1]
    new = tape.update({x: 5.0})
    print(f"update x = 5.0: baz = {new} (baz(5.0, 2.0) = {baz(5.0, 2.0)}), "
          f"re-executed {[f'%{op.id}' for op in tape.last_update]}")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["readme"]:
        readme()
    else:
        main()
