"""What a tape no longer assumes (issue 11, "What a tape assumes"): `match` tests and
closure variables are re-computed from this run's inputs, builtin methods are
guarded by their object's type, and re-tracing never repeats an effect."""

import pytest

import tracer
from tracer.tapes import Constant


def tape_validated(f, *args, **kwargs):
    val, tape = tracer.tape(f, *args, **kwargs)
    tape.validate()
    assert not [op for op in tape if isinstance(op, Constant) and op.frozen]
    return val, tape


# -- match: sequence, mapping and class patterns ---------------------------------------------
class Point:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


def describe(subject):
    match subject:
        case [a, b]:
            return ("pair", a + b)
        case {"k": v, **rest}:
            return ("mapping", v, len(rest))
        case Point(x, y):
            return ("point", x * y)
        case str() | bytes():
            return ("text", len(subject))
        case _:
            return ("other",)


SUBJECTS = [[1, 2], (3, 4), {"k": 5, "j": 6}, Point(2, 3), "abc", b"xy", 7, [1, 2, 3], {"j": 1},
            range(2)]


@pytest.mark.parametrize("traced", SUBJECTS, ids=repr)
def test_match_guards_see_each_case(traced):
    val, tape = tape_validated(describe, traced)
    assert val == describe(traced)
    fn, jit = tape.compile(), tape.compile(retrace=True)
    for other in SUBJECTS:
        for runner in (fn, tape.play):
            try:
                got = runner(other)
            except tracer.GuardError:
                continue
            assert got == describe(other), (traced, other)
        assert jit(other) == describe(other)


def test_match_sequence_follows_the_type_flags_not_isinstance():
    # A str is iterable and indexable but no sequence for `match`; a class
    # registered as a Sequence is one (CPython's Py_TPFLAGS_SEQUENCE).
    import collections.abc

    class Pair:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return (10, 20)[i]

    collections.abc.Sequence.register(Pair)
    val, tape = tape_validated(describe, [1, 2])
    assert tape.compile()(Pair()) == ("pair", 30) == describe(Pair())
    with pytest.raises(tracer.GuardError, match=r"case \[a, b\]"):
        tape.compile()("ab")
    assert describe("ab") == ("text", 2)


def test_match_keys_reads_the_mapping_as_python_does():
    class Lookup(dict):
        def get(self, key, default=None):  # match calls get(key, dummy)
            return 99 if key == "k" else default

    def key_k(subject):
        match subject:
            case {"k": v}:
                return v
        return None

    val, tape = tape_validated(describe, {"k": 1})
    assert tape.compile()({"k": 4, "a": 0}) == ("mapping", 4, 1)
    with pytest.raises(tracer.GuardError, match=r'case \{"k": v, \*\*rest\}'):
        tape.compile()({"j": 1})
    val, tape = tape_validated(key_k, {"k": 1})
    assert tape.compile()(Lookup(a=1)) == key_k(Lookup(a=1)) == 99


# -- closure variables -----------------------------------------------------------------------
def adder(x):
    y = x * 2

    def inner(z):
        return y + z

    return inner(1)


def late_binding(x):
    y = x

    def get():
        return y

    y = x + 1  # the closure sees the variable's latest value
    return get()


def counter(n):
    count = 0

    def bump():
        nonlocal count
        count += n

    bump()
    bump()
    return count


def threshold(x):
    limit = x * 3

    def above(v):
        return v > limit

    if above(10):
        return "low"
    return "high"


def recursive(n):
    def fact(k):
        return 1 if k <= 1 else k * fact(k - 1)

    return fact(n)


@pytest.mark.parametrize("f,traced,new", [
    (adder, 3, 5), (late_binding, 3, 8), (counter, 3, 7), (recursive, 3, 3), (threshold, 2, 3),
], ids=lambda v: getattr(v, "__name__", repr(v)))
def test_closure_variables_are_this_runs(f, traced, new):
    val, tape = tape_validated(f, traced)
    assert val == f(traced)
    for runner in (tape.compile(), tape.play):
        assert runner(new) == f(new)


def test_a_closure_variable_in_a_guard_sees_a_new_input():
    val, tape = tape_validated(threshold, 2)  # limit 6: 10 > 6
    assert val == "low"
    with pytest.raises(tracer.GuardError, match=r"if above\(10\):"):
        tape.compile()(4)  # limit 12
    assert tape.compile(retrace=True)(4) == "high" == threshold(4)


def test_a_closure_called_natively_shares_the_tapes_cells():
    def scaled_sort(xs, k):
        factor = k

        def key(v):
            return -v * factor

        return sorted(xs, key=key)

    val, tape = tape_validated(scaled_sort, [3, 1, 2], 1)
    assert tape.compile()([3, 1, 2], -1) == [1, 2, 3] == scaled_sort([3, 1, 2], -1)


# -- builtin methods dispatch on their object's type ------------------------------------------
class Defaulting(dict):
    def get(self, key, default=None):
        return "override"


class Shouting(str):
    def upper(self):
        return "CUSTOM"


def lookup(d, key):
    return d.get(key)


def shout(s):
    return s.upper() + "!"


class Vec:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return Vec(self.v + (other.v if isinstance(other, Vec) else other))

    def __mul__(self, other):
        return Vec(self.v * (other.v if isinstance(other, Vec) else other))

    def __eq__(self, other):
        return isinstance(other, Vec) and self.v == other.v


def poly(x, y):
    return x * y + x


def test_a_builtin_method_on_a_subclass_that_overrides_it_fails_a_guard():
    for f, traced, other in ((lookup, ({"a": 1}, "a"), (Defaulting(a=1), "a")),
                             (shout, ("hi",), (Shouting("hi"),))):
        val, tape = tape_validated(f, *traced)
        for runner in (tape.compile(), tape.play):
            assert runner(*traced) == f(*traced)
            with pytest.raises(tracer.GuardError):
                runner(*other)
        assert tape.compile(retrace=True)(*other) == f(*other)


def test_operators_dispatch_natively_on_any_type():
    # Operators are one op each (operator.mul, operator.add): a tape traced on floats
    # runs a class's Python __mul__/__add__, and the other way round.
    for traced, other in (((2.0, 3.0), (Vec(2.0), Vec(3.0))), ((Vec(2.0), Vec(3.0)), (2.0, 3.0))):
        val, tape = tape_validated(poly, *traced)
        for runner in (tape.compile(), tape.play):
            assert runner(*other) == poly(*other)


def test_a_method_inlined_for_one_class_fails_a_guard_on_another():
    class Scaled(Vec):
        def __mul__(self, other):
            return Vec(-1.0)

    def twice(v):
        return v.__mul__(2)

    val, tape = tape_validated(twice, Vec(3.0))
    assert tape.compile()(Vec(4.0)) == Vec(8.0)
    with pytest.raises(tracer.GuardError):
        tape.compile()(Scaled(4.0))
    assert tape.compile(retrace=True)(Scaled(4.0)) == Vec(-1.0)


# -- re-tracing never repeats an effect ------------------------------------------------------
def record_then_branch(log, x):
    log.append(x)
    if x > 0:
        return "positive"
    return "not positive"


def branch_only(x):
    y = x * 2
    if y > 0:
        return y
    return -y


def test_retrace_after_a_pure_prefix():
    val, tape = tape_validated(branch_only, 1)
    jit = tape.compile(retrace=True)
    assert jit(-3) == 6 and jit.retraces == 1
    assert tape.update({tape.inputs[1]: -4}, retrace=True) == 8


def test_retrace_refuses_after_an_effect_and_the_effect_happens_once():
    val, tape = tape_validated(record_then_branch, [], 1)
    jit = tape.compile(retrace=True)
    log = []
    with pytest.raises(tracer.GuardError, match=r"not re-traced: `.*list\.append") as err:
        jit(log, -1)
    assert log == [-1]  # appended once: the function was not run again
    assert err.value.effect.fn is list.append and jit.retraces == 0
    assert jit(log, 5) == "positive" and log == [-1, 5]


def test_update_retrace_refuses_after_an_effect():
    val, tape = tape_validated(record_then_branch, [], 1)
    with pytest.raises(tracer.GuardError, match="not re-traced") as err:
        tape.update({tape.inputs[2]: -1}, retrace=True)
    assert err.value.effect.fn is list.append


def test_retrace_over_an_argument_iterates_it_only_if_that_changes_nothing():
    def digits(xs):
        out = 0
        for x in xs:
            out = out * 10 + x
        return out

    val, tape = tape_validated(digits, [1, 2, 3])
    jit = tape.compile(retrace=True)
    assert jit([4, 5]) == 45 and jit((1, 2, 3, 4)) == 1234  # lists and tuples: re-traced
    gen = iter([7, 8])  # next() on the caller's iterator consumes it: not re-traced
    with pytest.raises(tracer.GuardError, match="not re-traced"):
        jit(gen)
    assert list(gen) == []  # consumed once, as the program itself would have
