"""The tape's runtime helpers behave exactly as the instructions they stand for, and
tapes of less common shapes (keywords, *args, methods, closures, exceptions) replay."""

import dataclasses
import operator
import sys

import pytest

import tracer
from tracer.tapes import Call, Constant, STOP, TapeError, helpers


def tape_validated(f, *args, **kwargs):
    """tracer.tape, and validate the tape it made."""
    val, tape = tracer.tape(f, *args, **kwargs)
    tape.validate()
    return val, tape


@pytest.mark.parametrize("seq,count", [((1, 2), 2), ([1], 2), ("abc", 2), (iter([1, 2, 3]), 3),
                                       ((), 0), ([1, 2, 3], 2)])
def test_unpack_sequence_matches_python(seq, count):
    def native(s):
        if count == 0:
            () = s
            return ()
        if count == 2:
            a, b = s
            return a, b
        a, b, c = s
        return a, b, c

    import copy

    s2 = copy.copy(seq) if not hasattr(seq, "__next__") else iter(list(copy.copy(seq)))
    try:
        expected = native(seq)
    except ValueError as exc:
        with pytest.raises(ValueError) as err:
            helpers.unpack_sequence(s2, count)
        assert str(err.value).split(",")[0] == str(exc).split(",")[0]
    else:
        assert helpers.unpack_sequence(s2, count) == expected


def test_unpack_ex_matches_python():
    a, *b, c = range(5)
    assert helpers.unpack_ex(range(5), 1, 1) == (a, b, c)
    *d, = "xy"
    assert helpers.unpack_ex("xy", 0, 0) == (d,)
    with pytest.raises(ValueError, match="not enough values to unpack"):
        helpers.unpack_ex([1], 1, 1)


@dataclasses.dataclass
class P:
    x: int
    y: int


def test_match_class_matches_python():
    assert helpers.match_class(P(1, 2), P, ("y",), 1) == (1, 2)
    assert helpers.match_class(P(1, 2), P, (), 0) == ()
    assert helpers.match_class(3, P, (), 0) is None
    assert helpers.match_class(5, int, (), 1) == (5,)
    with pytest.raises(TypeError, match="accepts 2 positional sub-patterns"):
        helpers.match_class(P(1, 2), P, (), 3)


def test_binder_binds_as_python_does():
    def f(a, b=2, /, c=3, *rest, d, e=5, **kw):
        return a, b, c, rest, d, e, kw

    bind = helpers.make_binder(f)
    for args, kwargs in [((1,), {"d": 4}), ((1, 9, 8, 7, 6), {"d": 0, "z": 1})]:
        a, b, c, d, e, rest, kw = bind(*args, **kwargs)
        assert f(*args, **kwargs) == (a, b, c, rest, d, e, kw)
    with pytest.raises(TypeError):
        bind(1)


def kw_function(a, *rest, scale=2, **extra):
    return (a + sum(rest)) * scale + len(extra)


def caller(x):
    return kw_function(x, 1, 2, scale=3, flag=True) + kw_function(*[x], **{"scale": 1})


class Account:
    def __init__(self, balance):
        self.balance = balance

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("amount must be positive")
        self.balance += amount
        return self.balance


def bank(amounts):
    acct = Account(10)
    bounced = 0
    for a in amounts:
        try:
            acct.deposit(a)
        except ValueError as err:
            bounced += len(str(err)) > 0
    step = acct.deposit
    return step(1), bounced


def closures(n):
    base = n * 2
    adders = [lambda v, k=k: v + k + base for k in range(3)]
    return sorted(adders[i](n) for i in range(3))


@pytest.mark.parametrize("f,args,new", [
    (caller, (1,), (5,)),
    (bank, ([5, -1, 3],), ([7, -2, 4],)),
    (closures, (3,), (10,)),
], ids=["keywords_and_star", "methods_and_exceptions", "closures"])
def test_shapes_replay_on_new_inputs(f, args, new):
    val, tape = tape_validated(f, *args)
    tape.validate()
    assert val == f(*args)
    # A closure's variables are this run's cells ($store_deref and $load_deref say
    # what is stored and read): nothing is kept from the trace.
    assert [op for op in tape if isinstance(op, Constant) and op.frozen] == []
    for a in (args, new):
        assert tape.play(*a) == f(*a)
        assert tape.compile()(*a) == f(*a)


def test_printing_and_indexing():
    val, tape = tape_validated(caller, 1)
    text = str(tape)
    assert text.startswith("Tape{Context}\n  inp %1::function\n  inp %2::int")
    assert text.endswith(f"return %{tape.result.id}")
    assert [op.id for op in tape] == list(range(1, len(tape) + 1))
    with pytest.raises(TypeError):
        tape["x"]
    assert "STOP" == repr(STOP)


def test_match_tests_are_rerun_from_their_subject():
    def m(x):
        match x:
            case [a, b]:
                return a + b
        return 0

    val, tape = tape_validated(m, [1, 2])
    assert not [op for op in tape if isinstance(op, Constant) and op.frozen]
    assert any(isinstance(op, Call) and op.fn is helpers.match_sequence for op in tape)
    assert tape.compile()([3, 4]) == 7
    with pytest.raises(tracer.GuardError, match=r"case \[a, b\]"):
        tape.compile()(5)


def test_opaque_root_and_errors():
    val, tape = tape_validated(max, 3, 9)
    assert val == 9 and tape.play(1, 2) == 2 and tape.compile()(5, 4) == 5
    with pytest.raises(TapeError, match="root node"):
        tracer.tapes.Tape.from_trace(tracer.track(caller, 1)[3])
    t = tracer.tapes.Tape()
    with pytest.raises(TapeError, match="no result"):
        t.play()
    x = t.push(tracer.tapes.Input(1, 1, "x"))
    t.push(Call(operator.neg, (x,)))
    t.result = t[2]
    t.validate()
    assert t.play.__self__ is t


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x, y=2):
        return self.k * x + y


def test_bound_method_and_keyword_roots():
    s = Scaler(3)
    val, tape = tape_validated(s.apply, 5)
    tape.validate()
    assert val == 17 and tape.play(4) == 14 and tape.compile()(4, y=0) == 12
    assert tape.inputs[1].value is s  # self is an input, supplied by the method

    def kw(a, *, b=1, **rest):
        return a + b + len(rest)

    val, tape = tape_validated(kw, 1, b=5, z=0)
    assert val == 7
    assert tape.play(1, b=2) == 3
    assert tape.compile()(1, b=2, q=1, r=2) == kw(1, b=2, q=1, r=2) == 5
    assert tape.compile()(4) == kw(4)
    assert [i.name for i in tape.inputs] == ["kw", "a", "b", "rest"]


def test_tape_is_a_function_and_the_package_is_tracer_tapes():
    import tracer.tapes as tp
    from tracer.tapes import trace

    assert tracer.tape is trace and callable(tracer.tape)
    assert tracer.tape(operator.neg, 3)[0] == -3 and tp.trace(operator.neg, 3)[0] == -3
    assert tracer.tapes.Tape is tp.Tape and tracer.GuardError is tp.GuardError


def test_deep_recursion_flattens_and_compiles():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 3000))
    try:
        val, tape = tape_validated(fact, 600)
    finally:
        sys.setrecursionlimit(limit)
    # 600 nested calls inlined, the products nested in one expression chain
    assert tape.compile()(600) == val == tape.play(600)


def test_unpacking_a_non_iterable_fails_as_python_does():
    with pytest.raises(TypeError, match="cannot unpack non-iterable int object"):
        helpers.unpack_sequence(5, 2)
    with pytest.raises(TypeError, match="cannot unpack non-iterable NoneType object"):
        helpers.unpack_ex(None, 1, 0)
