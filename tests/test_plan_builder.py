"""The fast plan builder gives the reference builder's plans (the stdlib's code
objects are compared in test_stdlib_analysis.py), and the parts of a plan only the
IR reads are made when asked for."""

import dis
import importlib
import pkgutil

import pytest

import corpus
from plan_compare import compare_builders
from stdlib_walk import code_objects
from tracer.analysis.bytecode import _decode, _decode_fast, layout
from tracer.analysis import plan as plan_module
from tracer.analysis.plan import PLAN_EXACT, PLAN_INTERVENE, PLAN_PLAIN, _Builder

CORPUS = sorted(m.name for m in pkgutil.iter_modules(corpus.__path__) if m.name != "__main__")


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_plans_match_the_reference_builder(name):
    module = importlib.import_module(f"corpus.{name}")
    codes = code_objects(module)
    assert codes
    for code in codes:
        for mode in (PLAN_PLAIN, PLAN_EXACT, PLAN_INTERVENE):
            compare_builders(code, mode)


def _sample(x, *args, key=None, **kw):
    try:
        y = [a for a in args if a] or {k: v for k, v in kw.items()}
    except (KeyError, TypeError) as e:
        raise ValueError(str(e)) from e
    finally:
        x += 1
    return f"{x!r:>{key}}", y


def test_fast_decoder_agrees_with_dis_on_what_the_builder_reads():
    code = _sample.__code__
    fast, slow = _decode_fast(code), _decode(code)
    assert [(i.offset, i.next, i.opname, i.arg, i.target) for i in fast] == \
        [(i.offset, i.next, i.opname, i.arg, i.target) for i in slow]
    # argval where the builder reads it: constants, names, cells and jump targets.
    read = set(dis.hasconst) | set(dis.hasname) | set(dis.hasfree) | set(dis.hasjrel)
    checked = [(f.argval, s.argval, s.opname) for f, s in zip(fast, slow) if s.opcode in read]
    assert len(checked) > 10
    for fast_val, dis_val, opname in checked:
        assert fast_val == dis_val, opname


def test_extended_args_and_long_jumps_decode_alike():
    src = "def f(x):\n" + "".join(f"    v{i} = x + {i}\n" for i in range(300)) + \
        "    while x:\n        x -= 1\n" + "    return v299\n"
    ns: dict = {}
    exec(compile(src, "<many>", "exec"), ns)
    code = ns["f"].__code__
    assert any(i.opname == "EXTENDED_ARG" for i in _decode(code))
    for mode in (PLAN_PLAIN, PLAN_EXACT, PLAN_INTERVENE):
        compare_builders(code, mode)


def test_the_ir_layout_is_made_when_asked_for_with_lines():
    plan = _Builder(_sample.__code__).build()
    if plan_module._fastplan is not None:
        assert plan._layout is None  # the typed builder makes no Instr or Block objects
    else:
        assert all(i.line is None for i in plan._layout.instrs)  # the builder's own: no lines
    full = plan.layout
    assert [i.line for i in full.instrs] == [i.line for i in layout(_sample.__code__).instrs]
    assert any(i.argrepr for i in full.instrs)
    assert full.depth == {2 * u: d for u, d in enumerate(plan.depth) if d >= 0}


def test_rec_at_is_rebuilt_from_the_code_when_missing():
    plan = _Builder(_sample.__code__).build()
    expected = plan.rec_at
    plan._rec_at = None
    assert plan.rec_at == expected and expected
