"""Python the interpreter runs inside a traced call that the program does not call --
a gc callback (jax installs one), a `__del__`, a weakref callback -- is recorded as a
frame entered from C between two ops (here: a gc callback at nearly every allocation;
finalizers of the program's objects rarely run inside a trace, which keeps the values
it saw alive); the tape leaves it out (a replay runs it again
itself, if at all) instead of inlining it as a call, which failed with a TapeError
("parameter args of _xla_gc_callback is not the argument passed")."""

from __future__ import annotations

import gc

import pytest

import tracer
from corpus import CASES
from tracer.tapes import Tape

SEEN: list = []


def collector_callback(*args):
    # jax's _xla_gc_callback has this signature
    if args[0] == "start":
        SEEN.append(args[1]["generation"])


@pytest.fixture
def collecting():
    """A gc callback, and a collection at nearly every allocation."""
    old = gc.get_threshold()
    gc.callbacks.append(collector_callback)
    gc.set_threshold(1)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(collector_callback)


SAMPLE = [c for c in CASES if c.raises is None and c.make_args is None][::6]


@pytest.mark.parametrize("case", SAMPLE, ids=[c.name for c in SAMPLE])
def test_corpus_tapes_with_a_gc_callback(case, collecting):
    SEEN.clear()
    args, kwargs = case.arguments()
    expected = case.func(*args, **kwargs)
    value, tape = tracer.tape(case.func, *args, **kwargs)
    tape.validate()
    assert SEEN, "the callback ran during the trace"
    for runner in (tape.play, tape.compile()):
        args, kwargs = case.arguments()
        assert repr(runner(*args, **kwargs)) == repr(expected)
    assert "collector_callback" not in str(tape)
