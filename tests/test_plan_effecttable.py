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


def _closures():
    # Every form effect_of gives LOAD_DEREF and STORE_DEREF, in several code
    # objects: an own cell no nested function assigns (load_cell), one a nested
    # function assigns (`nonlocal`: a record), a free variable (a record), the
    # class cell of super() (a constant), stores into an own cell and a free one;
    # and STORE_ATTR of one name in two code objects.
    def outer(a, b):
        c = a + b

        def reads():
            return a + c

        def writes():
            nonlocal b
            b = b + 1
            return b

        class K:
            def m(self):
                self.x = c
                return super().__init__

        def stores(o):
            o.x = a
            o.y = c
            return o

        return reads, writes, K, stores, a + b + c

    codes = []

    def collect(code):
        codes.append(code)
        for k in code.co_consts:
            if isinstance(k, type(code)):
                collect(k)

    collect(outer.__code__)
    return codes


def test_the_typed_builder_shares_deref_and_attribute_effects_across_code_objects():
    # The typed builder keeps LOAD_DEREF's, STORE_DEREF's and STORE_ATTR's effects
    # by what effect_of reads of the code object (the cell's kind, the attribute's
    # name), not once per code object: each equals a fresh one, and code objects
    # compiled twice get the very same Effect objects.
    from tracer.analysis import plan as plan_module

    if plan_module._fastplan is None:
        pytest.skip("tracer.analysis._fastplan is not built")
    seen: dict = {}
    forms = set()
    for round_ in range(2):
        for code in _closures() if round_ == 0 else [c.replace() for c in _closures()]:
            effects = plan_module._Builder(code).effects
            lay = layout(code, fast=True)
            prev = None
            for ins in lay.instrs:
                if ins.offset in lay.depth and ins.opname in ("LOAD_DEREF", "STORE_DEREF",
                                                              "STORE_ATTR"):
                    fresh = effect_of(ins, code, prev)
                    got = effects[ins.offset]
                    assert (got.pops, got.pushes, got.steps, got.control, got.rec) == \
                        (fresh.pops, fresh.pushes, fresh.steps, fresh.control, fresh.rec), \
                        (code.co_qualname, ins.offset, ins.opname)
                    forms.add((ins.opname, tuple(s[0] for s in fresh.steps)))
                    key = (code.co_qualname, ins.offset)
                    if round_ == 0:
                        seen[key] = got
                    else:
                        assert got is seen[key], key
                prev = ins
    # (every form met: the test's functions cover what effect_of distinguishes)
    assert ("LOAD_DEREF", ("load_cell",)) in forms
    assert ("LOAD_DEREF", ("record",)) in forms
    assert ("LOAD_DEREF", ("set",)) in forms
    assert ("STORE_DEREF", ("record", "store_cell")) in forms
    assert ("STORE_DEREF", ("record",)) in forms
    assert ("STORE_ATTR", ("record",)) in forms
    # One STORE_ATTR Effect per name: `x` in K.m and in stores is the same object,
    # `y` another.
    attr = {(k[0], effect.rec.inputs[1][1]): effect for k, effect in seen.items()
            if effect.rec is not None and effect.rec.display == "setattr"}
    assert attr[("_closures.<locals>.outer.<locals>.K.m", "x")] \
        is attr[("_closures.<locals>.outer.<locals>.stores", "x")]
    assert attr[("_closures.<locals>.outer.<locals>.stores", "y")] \
        is not attr[("_closures.<locals>.outer.<locals>.stores", "x")]
