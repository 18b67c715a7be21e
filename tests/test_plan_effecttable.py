"""Effects shared across instructions and code objects (tracer.analysis.effecttable):
each shared Effect equals the one effect_of makes for that instruction afresh, and
the opcodes left out of sharing are exactly those whose effect reads more than the
opcode and its argument."""

import importlib

import pytest

from stdlib_walk import code_objects
from tracer.analysis import effecttable
from tracer.analysis.bytecode import layout
from tracer.analysis.effecttable import CONTEXTUAL, PER_CODE, effects_of
from tracer.analysis.instructions import effect_of

MODULES = ["json.encoder", "json.decoder", "difflib", "textwrap", "ast", "inspect",
           "argparse", "typing", "asyncio.tasks", "contextlib", "dataclasses", "enum"]


@pytest.mark.parametrize("name", MODULES)
def test_shared_effects_equal_fresh_ones(name):
    codes = code_objects(importlib.import_module(name))
    assert len(codes) > 5
    shared_seen = 0
    for code in codes:
        lay = layout(code, fast=True)
        effects = effects_of(lay.instrs, lay.depth, code)
        assert list(effects) == [i.offset for i in lay.instrs if i.offset in lay.depth]
        per_code: dict = {}
        prev = None
        for ins in lay.instrs:
            if ins.offset in lay.depth:
                if ins.opname in PER_CODE:  # one Effect per (opcode, arg) in a code object
                    assert per_code.setdefault((ins.opcode, ins.arg), effects[ins.offset]) \
                        is effects[ins.offset]
                fresh = effect_of(ins, code, prev)
                got = effects[ins.offset]
                assert (got.pops, got.pushes, got.steps, got.control, got.rec) == \
                    (fresh.pops, fresh.pushes, fresh.steps, fresh.control, fresh.rec), \
                    (code.co_qualname, ins.offset, ins.opname)
                if ins.opname not in CONTEXTUAL:
                    shared_seen += 1
                    assert got is effecttable._shared[(ins.opcode, ins.arg)]
                else:
                    assert got is not fresh and all(got is not e for e in effecttable._shared.values())
            prev = ins
    assert shared_seen > 0


def test_a_context_dependent_effect_is_not_shared():
    # The same LOAD_ATTR argument names different attributes in two code objects,
    # and TO_BOOL's effect depends on the instruction after it.
    def f(o):
        return o.alpha

    def g(o):
        return o.beta

    def h(x):
        y = not not x
        if x:
            return y
        return 0

    for fn in (f, g, h):
        lay = layout(fn.__code__, fast=True)
        effects = effects_of(lay.instrs, lay.depth, fn.__code__)
        prev = None
        for ins in lay.instrs:
            if ins.offset in lay.depth:
                fresh = effect_of(ins, fn.__code__, prev)
                assert effects[ins.offset].steps == fresh.steps
                assert effects[ins.offset].rec == fresh.rec
            prev = ins


@pytest.mark.parametrize("name", MODULES)
def test_the_typed_builders_effects_equal_fresh_ones(name):
    # The typed builder (analysis/_fastplan.pyx) shares the effects of contextual
    # opcodes too, by what effect_of reads of their context (the next opcode, the
    # one before, whether a local is a cell): each must equal a fresh one.
    from tracer.analysis import plan as plan_module

    if plan_module._fastplan is None:
        pytest.skip("tracer.analysis._fastplan is not built")
    for code in code_objects(importlib.import_module(name)):
        effects = plan_module._Builder(code).effects  # (before any walk)
        lay = layout(code, fast=True)
        assert list(effects) == [i.offset for i in lay.instrs if i.offset in lay.depth]
        prev = None
        for ins in lay.instrs:
            if ins.offset in lay.depth:
                fresh = effect_of(ins, code, prev)
                got = effects[ins.offset]
                assert (got.pops, got.pushes, got.steps, got.control, got.rec) == \
                    (fresh.pops, fresh.pushes, fresh.steps, fresh.control, fresh.rec), \
                    (code.co_qualname, ins.offset, ins.opname)
                if ins.opname == "LOAD_ATTR" and not ins.arg & 1:
                    assert got is not fresh  # (written to by the walk: one per instruction)
                    assert sum(e is got for e in effects.values()) == 1
            prev = ins
