"""Round trip over the differential corpus (issue 11, item 2): for every case the
tape's play and compile() give the untraced result (or raise the same exception) on
the traced inputs, mutate mutable arguments the same way, and validate passes."""

import numpy as np
import pytest

import tracer
from corpus import CASES
from tracer.tapes import Tape

# Cases that cannot be linearized exactly, with the reason (none at present: every
# case of the corpus round-trips on 3.12 and 3.13; the test below keeps it so).
SKIPS: dict[str, str] = {}


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        return type(a) is type(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def state(x):
    """A comparable picture of a (possibly mutated) argument."""
    if isinstance(x, (list, tuple)):
        return [state(v) for v in x]
    if isinstance(x, dict):
        return {k: state(v) for k, v in x.items()}
    if hasattr(x, "__dict__"):
        return (type(x).__name__, state(vars(x)))
    return x


def run_untraced(case):
    args, kwargs = case.arguments()
    try:
        return ("ok", case.func(*args, **kwargs)), (args, kwargs)
    except Exception as exc:  # noqa: BLE001 - compared below
        return ("raised", exc), (args, kwargs)


def run(runner, case):
    args, kwargs = case.arguments()
    try:
        return ("ok", runner(*args, **kwargs)), (args, kwargs)
    except tracer.GuardError:
        raise
    except Exception as exc:  # noqa: BLE001 - compared below
        return ("raised", exc), (args, kwargs)


def tape_of(case) -> Tape:
    args, kwargs = case.arguments()
    if case.raises is None:
        value, tape = tracer.tape(case.func, *args, **kwargs)
        return tape
    with pytest.raises(case.raises):
        tracer.track(case.func, *args, **kwargs)
    return Tape.from_trace(tracer.last_trace())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_play_and_compile_reproduce_the_untraced_call(case):
    if case.name in SKIPS:
        pytest.skip(SKIPS[case.name])
    expected, expected_args = run_untraced(case)
    tape = tape_of(case)
    tape.validate()
    assert tape.raises == (case.raises is not None)
    for runner in (tape.play, tape.compile()):
        got, got_args = run(runner, case)
        assert got[0] == expected[0], (got, expected)
        if got[0] == "ok":
            assert same(got[1], expected[1])
        else:
            assert type(got[1]) is type(expected[1]) and str(got[1]) == str(expected[1])
        if case.make_args is not None:  # the arguments were mutated the same way
            assert state(got_args) == state(expected_args)


def test_no_case_is_skipped():
    assert SKIPS == {}
    assert len(CASES) >= 190


def test_corpus_tapes_have_guards_and_few_frozen_values():
    frozen = total = guards = 0
    for case in CASES:
        if case.name in SKIPS:
            continue
        tape = tape_of(case)
        total += len(tape)
        guards += len(tape.guards)
        frozen += sum(1 for op in tape if isinstance(op, tracer.tapes.Constant) and op.frozen)
    assert guards > 1000
    # (What cannot be re-run from its inputs is kept: see the README's "What a tape
    # assumes".)
    assert frozen < total / 100


def _families():
    by_function = {}
    for case in CASES:
        by_function.setdefault(case.func, []).append(case)
    return [cases for cases in by_function.values() if len(cases) > 1]


@pytest.mark.parametrize("family", _families(), ids=lambda cs: cs[0].func.__name__)
def test_guards_catch_every_other_path(family):
    """A tape run on the inputs of another case of the same function either fails a
    guard or gives the untraced outcome; with retrace=True it gives it too, unless
    an op that may have had an effect ran before the failing guard (re-tracing would
    repeat it): then its GuardError names that op."""
    for base in family:
        tape = tape_of(base)
        fn, jit = tape.compile(), tape.compile(retrace=True)
        for other in family:
            expected, _ = run_untraced(other)
            for runner in (fn, tape.play, jit):
                try:
                    got, _ = run(runner, other)
                except tracer.GuardError as err:
                    assert runner is not jit or err.effect is not None
                    continue
                assert got[0] == expected[0]
                if got[0] == "ok":
                    assert same(got[1], expected[1])
                else:
                    assert type(got[1]) is type(expected[1])
                    assert str(got[1]) == str(expected[1])
