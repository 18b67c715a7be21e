"""Umlaut's "Linearized traces" examples as tape tests (issue 11, item 1)."""

import operator
import re

import pytest

import tracer
from helpers import load_example
from tracer.tapes import Call, Input


def tape_validated(f, *args, **kwargs):
    """tracer.tape, and validate the tape it made."""
    val, tape = tracer.tape(f, *args, **kwargs)
    tape.validate()
    return val, tape


ex = load_example("tape")


def calls(tape):
    return [op for op in tape if isinstance(op, Call)]


def test_baz_gives_the_four_op_tape_of_the_document():
    val, tape = tape_validated(ex.baz, 1.0, 2.0)
    tape.validate()
    assert val == 7.0
    assert [type(op) for op in tape] == [Input] * 3 + [Call] * 4
    assert [(op.fn, op.args) for op in calls(tape)] == [
        (operator.mul, (2, tape[2])), (operator.mul, (3, tape[3])),
        (operator.add, (tape[4], tape[5])), (operator.sub, (tape[6], 1)),
    ]
    assert tape.result is tape[7]
    assert [op.value for op in tape][1:] == [1.0, 2.0, 2.0, 6.0, 8.0, 7.0]
    assert tape.inputs == [tape[1], tape[2], tape[3]]
    assert tape[1].value is ex.baz
    assert str(tape) == "\n".join([
        "Tape{Context}",
        "  inp %1::function",
        "  inp %2::float",
        "  inp %3::float",
        "  %4 = operator.mul(2, %2)::float",
        "  %5 = operator.mul(3, %3)::float",
        "  %6 = operator.add(%4, %5)::float",
        "  %7 = operator.sub(%6, 1)::float",
        "  return %7",
    ])


@pytest.mark.parametrize("ctx", [tracer.Context(primitives=[ex.foo]), ex.FooPrimitive()],
                         ids=["primitives", "canrecur"])
def test_foo_made_primitive(ctx):
    val, tape = tape_validated(ex.baz, 1.0, 2.0, ctx=ctx)
    tape.validate()
    assert val == 7.0
    first = calls(tape)[0]
    assert first.fn is ex.foo and first.args == (tape[2],) and first.value == 2.0
    assert [op.fn for op in calls(tape)] == [ex.foo, operator.mul, operator.add, operator.sub]
    assert "%4 = foo(%2)::float" in str(tape)
    assert tape.play(3.0, 1.0) == ex.baz(3.0, 1.0)


def test_loop1_records_plus_for_times_through_record_primitive():
    ctx = ex.CountingReplacingCtx((operator.mul, operator.add))
    val, tape = tape_validated(ex.loop1, 2.0, 3, ctx=ctx)
    tape.validate()
    assert ctx.count == 4
    assert sum(1 for op in calls(tape) if op.fn is operator.add) == 4
    assert not any(op.fn is operator.mul for op in calls(tape))
    # The program ran with + in place of *: 2+2.0, then +3 three times.
    assert val == 13.0
    assert tape.play(2.0, 3) == 13.0
    assert tape.compile()(1.0, 3) == 12.0  # 2 + 1.0 = 3.0, then + 3 three times
    assert ex.loop1(2.0, 3) == 108.0  # untouched outside the context


def test_record_primitive_keeping_the_call_substitutes_nothing():
    class Keep(tracer.Context):
        def record_primitive(self, tape, fn, *args, **kwargs):
            return tape.push(Call(fn, args, kwargs))

    val, tape = tape_validated(ex.baz, 1.0, 2.0, ctx=Keep())
    plain = tape_validated(ex.baz, 1.0, 2.0)[1]
    assert val == 7.0
    assert str(tape).splitlines()[1:] == str(plain).splitlines()[1:]


def test_record_primitive_may_push_several_ops():
    class Twice(tracer.Context):
        """Records x - 1 as (x - 1) * 1: two ops for one call."""

        def record_primitive(self, tape, fn, *args, **kwargs):
            op = tape.push(Call(fn, args, kwargs))
            if fn is operator.sub:
                op = tape.push(Call(operator.mul, (op, 1)))
            return op

    val, tape = tape_validated(ex.baz, 1.0, 2.0, ctx=Twice())
    tape.validate()
    assert val == 7.0
    assert [op.fn for op in calls(tape)][-2:] == [operator.sub, operator.mul]
    assert tape.result.fn is operator.mul and tape.result.value == 7.0
    assert tape.compile()(2.0, 2.0) == ex.baz(2.0, 2.0)


def test_example_runs(capsys):
    ex.main()
    out = capsys.readouterr().out
    assert "count = 4, operator.add calls on the tape: 4" in out
    assert "GuardError: guard %7 failed at clip_sum" in out
    assert "clip_sum(0.5, 2) = -1.0 (clip_sum gives -1.0), 1 retrace, 2 tapes cached" in out


def test_record_primitive_follows_the_primitive_boundary_down_the_nesting():
    class Replacing(tracer.context.DepthLimitContext):
        def __init__(self, maxlevel):
            super().__init__(maxlevel)
            self.count = 0

        def record_primitive(self, tape, fn, *args, **kwargs):
            if fn is operator.mul:
                self.count += 1
                return tape.push(Call(operator.add, args))
            return tape.push(Call(fn, args, kwargs))

    deep = Replacing(3)  # baz and bar recorded inside; foo primitive, so its * stays
    val, tape = tape_validated(ex.baz, 1.0, 2.0, ctx=deep)
    tape.validate()
    assert deep.count == 1 and val == 2.0 + (3 + 2.0) - 1
    assert [op.fn for op in calls(tape)] == [ex.foo, operator.add, operator.add, operator.sub]
    shallow = Replacing(2)  # bar primitive: no * is recorded
    val, tape = tape_validated(ex.baz, 1.0, 2.0, ctx=shallow)
    assert shallow.count == 0 and val == 7.0
    assert [op.fn for op in calls(tape)] == [ex.bar, operator.sub]


def test_readme_shows_the_real_output_of_its_example(capsys):
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    marker = "`python examples/tape.py readme` runs exactly this and prints (real output):"
    shown = readme.split(marker, 1)[1].split("```\n", 2)[1]
    ex.readme()
    out = capsys.readouterr().out
    # The guard's message names the example's file by its absolute path.
    def local(text):
        return re.sub(r"\S*/examples/tape\.py", "examples/tape.py", text)

    assert local(shown) == local(out)
