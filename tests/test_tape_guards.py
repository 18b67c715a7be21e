"""Guards (issue 11, item 3): compiled tapes and play check the path they took."""

import pytest

import tracer
from tracer.tapes import Guard


def tape_validated(f, *args, **kwargs):
    """tracer.tape, and validate the tape it made."""
    val, tape = tracer.tape(f, *args, **kwargs)
    tape.validate()
    return val, tape


def branchy(x, n):
    total = 0
    while n > 0:
        if x > 0:
            total += x
        else:
            total -= 1
        n -= 1
    return total


def looped(xs):
    out = 0
    for x in xs:
        out = out * 10 + x
    return out


def nones(d, key):
    v = d.get(key)
    if v is None:
        return "missing"
    return v * 2


@pytest.fixture
def branchy_tape():
    val, tape = tape_validated(branchy, 2, 3)
    tape.validate()
    assert val == 6
    return tape


def test_if_guard_fails_with_the_branch_and_line(branchy_tape):
    fn = branchy_tape.compile()
    assert fn(5, 3) == 15
    with pytest.raises(tracer.GuardError) as err:
        fn(-1, 3)
    guard = err.value.op
    assert isinstance(guard, Guard) and guard.test == "truth" and guard.expected is True
    assert err.value.source == "if x > 0:"
    assert err.value.line == branchy.__code__.co_firstlineno + 3
    assert "if x > 0:" in str(err.value) and f"test_tape_guards.py:{err.value.line}" in str(err.value)
    with pytest.raises(tracer.GuardError) as err2:
        branchy_tape.play(-1, 3)
    assert err2.value.op is guard


@pytest.mark.parametrize("n", [2, 4])
def test_while_guard_fails_when_the_loop_runs_another_number_of_times(branchy_tape, n):
    for run in (branchy_tape.compile(), branchy_tape.play):
        with pytest.raises(tracer.GuardError) as err:
            run(2, n)
        assert err.value.source == "while n > 0:"


def test_retrace_gives_the_right_value_and_caches_paths(branchy_tape):
    fn = branchy_tape.compile(retrace=True)
    cases = [(2, 3), (-1, 3), (2, 5), (-1, 3), (7, 3), (2, 5), (0, 0)]
    for args in cases:
        assert fn(*args) == branchy(*args)
    assert fn.retraces == 3  # (-1, 3), (2, 5), (0, 0): three new paths
    assert len(fn.tapes) == 4
    for tape in fn.tapes:
        tape.validate()


def test_for_loop_guards_check_the_iteration_count():
    val, tape = tape_validated(looped, [1, 2, 3])
    stops = [g for g in tape.guards if g.test == "stop"]
    assert [g.expected for g in stops] == [False, False, False, True]
    fn = tape.compile()
    assert fn([4, 5, 6]) == 456 and tape.play([4, 5, 6]) == 456
    for bad in ([1, 2], [1, 2, 3, 4]):
        with pytest.raises(tracer.GuardError, match="for x in xs"):
            fn(bad)
        with pytest.raises(tracer.GuardError, match="the loop"):
            tape.play(bad)
    assert tape.compile(retrace=True)([1, 2]) == 12


def test_none_guards():
    val, tape = tape_validated(nones, {"a": 2}, "a")
    typed, guard = tape.guards  # d's type (d.get is dict.get), then `if v is None`
    assert typed.test == "truth" and typed.expected is True
    assert guard.test == "none" and guard.expected is False
    fn = tape.compile()
    assert fn({"a": 5}, "a") == 10
    with pytest.raises(tracer.GuardError, match="is not None"):
        fn({}, "a")
    assert tape.compile(retrace=True)({}, "a") == "missing"


def test_expected_exception_that_does_not_happen_is_a_guard_failure():
    def parse(s):
        try:
            return int(s)
        except ValueError:
            return -1

    val, tape = tape_validated(parse, "x")
    assert val == -1
    assert tape.compile()("y") == -1 and tape.play("y") == -1
    with pytest.raises(tracer.GuardError, match="raised ValueError while tracing"):
        tape.compile()("7")
    with pytest.raises(tracer.GuardError):
        tape.play("7")
    assert tape.compile(retrace=True)("7") == 7


def test_tape_of_a_raising_call_raises_again():
    def bad(x):
        if x > 0:
            raise ValueError(f"bad {x}")
        return x

    with pytest.raises(ValueError):
        tracer.track(bad, 3)
    tape = tracer.tapes.Tape.from_trace(tracer.last_trace())
    tape.validate()
    assert tape.raises
    with pytest.raises(ValueError, match="bad 4"):
        tape.compile()(4)
    with pytest.raises(ValueError, match="bad 5"):
        tape.play(5)
    with pytest.raises(tracer.GuardError):
        tape.play(-1)


def test_an_exception_inside_a_handler_is_a_path_change():
    def safe_int(s, default):
        try:
            v = int(s)
        except ValueError:
            v = default
        return v * 2

    val, tape = tape_validated(safe_int, "21", 0)
    assert val == 42
    (call,) = [op for op in tape if isinstance(op, tracer.tapes.Call) and op.fn is int]
    assert call.handled and not call.raises
    fn = tape.compile()
    assert fn("5", 0) == 10
    for run in (fn, tape.play):
        with pytest.raises(tracer.GuardError, match="did not raise while tracing") as err:
            run("x", 7)
        assert isinstance(err.value.__cause__, ValueError)
    assert tape.compile(retrace=True)("x", 7) == 14


def test_an_exception_outside_any_handler_propagates_unchanged():
    def plain(s):
        return int(s) + 1

    val, tape = tape_validated(plain, "1")
    assert not any(getattr(op, "handled", False) for op in tape)
    with pytest.raises(ValueError, match="invalid literal"):
        tape.compile()("x")
    with pytest.raises(ValueError, match="invalid literal"):
        tape.play("x")


class Circle:
    def __init__(self, r):
        self.r = r

    def area(self):
        return 3.0 * self.r * self.r


class Square:
    def __init__(self, s):
        self.s = s

    def area(self):
        return self.s * self.s


def total_area(shapes):
    total = 0.0
    for shape in shapes:
        total += shape.area()
    return total


def double(x):
    return 2 * x


def negate(x):
    return -x


HANDLERS = {"double": double, "negate": negate}


def dispatch(kind, x):
    return HANDLERS[kind](x)


def test_method_calls_are_guarded_by_the_class_resolution():
    val, tape = tape_validated(total_area, [Circle(1.0), Square(2.0)])
    assert val == 7.0
    fn = tape.compile()
    assert fn([Circle(2.0), Square(1.0)]) == 13.0
    for run in (fn, tape.play):
        with pytest.raises(tracer.GuardError, match=r"shape\.area\(\)"):
            run([Square(1.0), Square(2.0)])
    assert tape.compile(retrace=True)([Square(1.0), Square(2.0)]) == 5.0


def test_computed_callees_are_guarded():
    val, tape = tape_validated(dispatch, "double", 5)
    assert val == 10
    fn = tape.compile()
    assert fn("double", 7) == 14
    with pytest.raises(tracer.GuardError, match=r"HANDLERS\[kind\]\(x\)"):
        fn("negate", 7)
    assert tape.compile(retrace=True)("negate", 7) == -7
