"""Saved traces answer like live ones: the same tape, the same compiled function on
the recorded values, the same backprop adjoints (Parquet, Arrow and pickles); their
stand-ins say what they are; `save` writes the format its suffix names."""

import math
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tracer
from ad_cases import CASES as AD_CASES, PLAIN
from corpus import CASES
from tracer.ad.backprop import backprop
from tracer.ad.errors import NoRuleError
from tracer.tapes import Tape, TapeError
from tracer.views.values import SavedText

pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")


def copies(root, tmp_path):
    tracer.save(root, tmp_path / "t.parquet")
    tracer.save(root, tmp_path / "t.arrow")
    return {"parquet": tracer.load(tmp_path / "t.parquet"),
            "arrow": tracer.load(tmp_path / "t.arrow"),
            "pickle": pickle.loads(pickle.dumps(root))}


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def only_named_stand_ins(root) -> bool:
    """Whether every value a loaded trace kept as text is a function (named): then
    the tape has what the live one had (objects of the program's own classes come
    back as stand-ins, and the guards on their classes cannot be made)."""
    trace = root.trace
    return not any(isinstance(v, SavedText) and not getattr(v, "name", None)
                   for v in trace.values() + trace.pool)


@pytest.mark.parametrize("case", [c for c in CASES if c.raises is None],
                         ids=[c.name for c in CASES if c.raises is None])
def test_corpus_tapes_of_loaded_traces_are_the_live_tapes(case, tmp_path):
    args, kwargs = case.arguments()
    root = tracer.track(case.func, *args, **kwargs)
    try:
        live = Tape.from_trace(root)
    except TapeError:
        pytest.skip("the live trace has no tape")
    inputs = [op.value for op in live.inputs]
    for how, back in copies(root, tmp_path).items():
        if not only_named_stand_ins(back):
            # Objects of the program's classes are stand-ins: a tape may still be
            # made, or the error says what is missing.
            try:
                Tape.from_trace(back)
            except TapeError:
                pass
            except (AttributeError, TypeError) as exc:
                assert "loaded stand-in for" in str(exc), how
            continue
        tape = Tape.from_trace(back)
        assert str(tape) == str(live), how
        loaded_inputs = [op.value for op in tape.inputs]
        if kwargs or any(op.position == 0 for op in tape.inputs):
            continue               # keywords, a bound method's self: not positional
        assert same(tape.compile()(*loaded_inputs), case.run()), how
        assert same(live.compile()(*inputs), case.run())


@pytest.mark.parametrize("name,make,args,argnums", AD_CASES, ids=[c[0] for c in AD_CASES])
def test_backprop_of_loaded_traces_gives_the_live_adjoints(name, make, args, argnums, tmp_path):
    f = make(PLAIN)
    root = tracer.track(f, *args)
    try:
        live = backprop(root)
    except (TypeError, ValueError, NoRuleError):
        pytest.skip("backprop does not apply to this case's trace")
    for how, back in copies(root, tmp_path).items():
        got = backprop(back)
        assert len(got) == len(live), how
        for a, b in zip(got, live):
            assert_same_adjoint(a, b, how)


def assert_same_adjoint(a, b, how):
    if isinstance(b, dict):
        assert isinstance(a, dict) and a.keys() == b.keys(), how
        for k in b:
            assert_same_adjoint(a[k], b[k], how)
    elif isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), how
        for x, y in zip(a, b):
            assert_same_adjoint(x, y, how)
    elif b is None:
        assert a is None, how
    else:
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                   err_msg=how)


class Point:
    def __init__(self, x):
        self.x = x

    def norm(self):
        return abs(self.x)


def uses_a_point(p):
    return p.norm() + math.sqrt(4.0)


def test_stand_ins_say_what_they_are(tmp_path):
    root = tracer.track(uses_a_point, Point(3))
    first, second = (tracer.load(p) for p in _saved_twice(root, tmp_path))
    callee, point = (n.value for n in first.children[:2])  # argument 0 is the function
    assert isinstance(point, SavedText) and isinstance(callee, SavedText)
    with pytest.raises(AttributeError, match="loaded stand-in for .*Point: attributes were "
                                             "not saved"):
        point.x
    # Two loads of the same value compare equal (and hash alike); other values do not.
    again = second.children[1].value
    assert point == again and hash(point) == hash(again)
    assert point != callee
    # A Python function of the program is a stand-in that says it cannot be called.
    with pytest.raises(TypeError, match="loaded stand-in for uses_a_point: it cannot be called"):
        callee(Point(1))
    # A function of a module already imported comes back as itself.
    (sqrt_call,) = tracer.query(first, "descendants", callee="math.sqrt")
    assert sqrt_call.function.value is math.sqrt


def _saved_twice(root, tmp_path):
    paths = [tmp_path / "a.parquet", tmp_path / "b.arrow"]
    for p in paths:
        tracer.save(root, p)
    return paths


@pytest.mark.parametrize("name", ["t.csv", "t.json", "trace", "t.parquet.tmp"])
def test_save_refuses_a_suffix_that_names_no_trace_format(name, tmp_path):
    root = tracer.track(uses_a_point, Point(3))
    with pytest.raises(ValueError, match="cannot tell the file format"):
        tracer.save(root, tmp_path / name)
    assert not list(tmp_path.iterdir())


def test_save_writes_the_format_its_suffix_names(tmp_path):
    root = tracer.track(uses_a_point, Point(3))
    tracer.save(root, tmp_path / "t.feather")
    tracer.save(root, tmp_path / "t.parquet")
    assert (tmp_path / "t.feather").read_bytes()[:6] == b"ARROW1"
    assert (tmp_path / "t.parquet").read_bytes()[:4] == b"PAR1"
    tracer.save(root, tmp_path / "t.bin", format="arrow")     # a name the format overrides
    with pytest.raises(ValueError, match="names a arrow file but format='parquet'"):
        tracer.save(root, tmp_path / "t.arrow", format="parquet")


def test_cli_save_refuses_csv_before_running(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("print('ran')\n")
    out = subprocess.run([sys.executable, "-m", "tracer", "run", "--save",
                          str(tmp_path / "out.csv"), str(script)], capture_output=True, text=True)
    assert out.returncode != 0
    assert "cannot tell the file format" in out.stderr
    assert "ran" not in out.stdout
    assert not (tmp_path / "out.csv").exists()
