"""Editing tapes (issue 11, item 4): references stay valid, validate catches what is wrong."""

import math
import operator

import pytest

import tracer
from tracer.tapes import Call, Constant, Guard, Input, TapeError, mkcall


def tape_validated(f, *args, **kwargs):
    """tracer.tape, and validate the tape it made."""
    val, tape = tracer.tape(f, *args, **kwargs)
    tape.validate()
    return val, tape


def poly(x, y):
    a = x * y
    b = a * 3.0
    unused = math.cos(x) * 7.0  # noqa: F841 - dead code for eliminate_dead_code
    return a + b - y


@pytest.fixture
def tape():
    val, tape = tape_validated(poly, 2.0, 5.0)
    tape.validate()
    assert val == poly(2.0, 5.0)
    return tape


def muls(tape):
    return [op for op in tape if isinstance(op, Call) and op.fn is operator.mul]


def test_replacing_every_mul_by_add_changes_the_compiled_result(tape):
    assert len(muls(tape)) == 3
    for op in muls(tape):
        tape.replace(op, Call(operator.add, op.args))
    tape.validate()
    assert muls(tape) == []

    def poly_added(x, y):
        a = x + y
        b = a + 3.0
        return a + b - y

    fn = tape.compile()
    for x, y in [(2.0, 5.0), (1.5, -4.0), (0.0, 0.0)]:
        assert fn(x, y) == poly_added(x, y) == tape.play(x, y)
    assert "(x + y)" in tape.to_source()


def test_eliminate_dead_code_removes_what_nothing_uses(tape):
    cos = [op for op in tape if isinstance(op, Call) and op.fn is math.cos]
    assert len(cos) == 1
    n = len(tape)
    dead = tape.eliminate_dead_code()
    tape.validate()
    assert len(dead) == 2  # math.cos(x) and its product with 7.0
    assert len(tape) == n - 2
    assert cos[0] not in tape
    assert not any(isinstance(op, Call) and op.fn is math.cos for op in tape)
    assert tape.compile()(3.0, 1.0) == poly(3.0, 1.0)
    assert tape.eliminate_dead_code() == []


def test_eliminate_dead_code_keeps_effects_and_guards():
    def effects(xs, k):
        xs.append(k * 2)  # the result is unused, the effect is not
        if k > 0:
            pass
        return len(xs)

    val, tape = tape_validated(effects, [1], 3)
    n = len(tape)
    assert tape.eliminate_dead_code() == []
    # the `if` and the type of `xs` that `xs.append` dispatches on
    assert len(tape) == n and len(tape.guards) == 2
    xs = [0]
    assert tape.compile()(xs, 5) == 2 and xs == [0, 10]


def test_push_insert_rebind_delete(tape):
    x, y = tape.inputs[1], tape.inputs[2]
    result = tape.result
    # push an op computing result * 2 and make it the result
    double = tape.push(mkcall(operator.mul, result, 2))
    assert double.id == len(tape) and tape[double.id] is double
    tape.result = double
    assert tape.play(2.0, 5.0) == 2 * poly(2.0, 5.0)
    # insert before the first call: later ids move, references stay
    first = next(op for op in tape if isinstance(op, Call))
    old_id = first.id
    k = tape.insert(old_id, Constant(10.0))[0]
    assert k.id == old_id and first.id == old_id + 1
    tape.validate()
    # rebind every use of x to the constant
    tape.rebind({x: k})
    assert tape.users(x) == []
    tape.validate()
    assert tape.play(123.0, 5.0) == 2 * poly(10.0, 5.0)
    # x is no longer used, but inputs stay; the constant cannot go while used
    with pytest.raises(TapeError, match="still used"):
        tape.delete(k)
    tape.rebind({k: x})
    tape.delete(k)
    tape.validate()
    assert tape.play(2.0, 5.0) == 2 * poly(2.0, 5.0)
    assert y in tape


def test_replace_with_several_ops_and_rebind_to(tape):
    a = muls(tape)[0]  # x * y
    sq = Call(operator.mul, (a.args[0], a.args[0]))
    plus = Call(operator.add, (sq, a.args[1]))
    tape.replace(a, sq, plus, rebind_to=1)  # a := x*x + y
    tape.validate()
    x, y = 2.0, 5.0
    a_ = x * x + y
    assert tape.play(x, y) == a_ + a_ * 3.0 - y
    assert tape.compile()(x, y) == a_ + a_ * 3.0 - y


def test_edits_are_checked(tape):
    x = tape.inputs[1]
    foreign = Call(operator.neg, (1,))
    with pytest.raises(TapeError, match="would not be an earlier op"):
        tape.push(Call(operator.neg, (foreign,)))
    with pytest.raises(TapeError, match="not an op of this tape"):
        tape.delete(foreign)
    with pytest.raises(TapeError, match="already on this tape"):
        tape.push(x)
    with pytest.raises(TypeError, match="only ops"):
        tape.push(42)
    with pytest.raises(TypeError, match="callable"):
        Call(42, ())
    with pytest.raises(ValueError, match="Guard test"):
        Guard(x, True, "maybe")
    with pytest.raises(IndexError):
        tape[0]
    with pytest.raises(TapeError, match="not an op of this tape"):
        tape.result = foreign
    later = tape.result
    with pytest.raises(TapeError, match="later"):
        tape.rebind({muls(tape)[0]: later})


def test_validate_finds_broken_tapes(tape):
    tape.ops[4].id = 99
    with pytest.raises(TapeError, match="has id %99"):
        tape.validate()
    tape.ops[4].id = 5
    tape.validate()
    tape.ops.append(Input(1.0, 3, "z"))
    tape.ops[-1].id = len(tape.ops)
    with pytest.raises(TapeError, match="comes after other ops"):
        tape.validate()
    tape.ops.pop()
    stray = Call(operator.neg, (1,))
    tape.ops[-1].args = (stray,) + tape.ops[-1].args[1:]
    with pytest.raises(TapeError, match="not an earlier op"):
        tape.validate()


_SCALE_ARRAY = (1.5, 2.5)


def scaled(x, scale=3.0, /, shift=-0.5, *, off=1, name="a", pair=_SCALE_ARRAY, big=float("inf")):
    return x * scale + shift + off + len(name) + pair[0] + (big > 0)


def test_to_source_prints_the_real_defaults_and_compile_keeps_the_objects():
    val, tape = tape_validated(scaled, 2.0)
    src = tape.to_source()
    header = src.splitlines()[0]
    # Literals inline, other objects by the global name the generated code holds them in.
    assert header.startswith("def scaled(x, scale=3.0, /, shift=(-0.5), *, off=1, name='a', pair=k_")
    gen = tape.compile()
    pair_name = header.split("pair=")[1].split(",")[0]
    assert gen.__globals__[pair_name] is _SCALE_ARRAY
    assert gen.__defaults__ == (3.0, -0.5) and gen.__kwdefaults__["pair"] is _SCALE_ARRAY
    assert gen(2.0) == scaled(2.0) == val
    assert gen(1.0, 2.0, 0.25, off=3) == scaled(1.0, 2.0, 0.25, off=3)
