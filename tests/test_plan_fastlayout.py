"""The compiled layout pass (tracer.analysis._fastplan) against its Python statement
(bytecode._layout_py): the same instructions, blocks, depths and handlers, in the
same order, for every code object of a corpus of real modules and of odd bytecode."""

import importlib

import pytest

from stdlib_walk import code_objects
from tracer.analysis import bytecode
from tracer.analysis.bytecode import AnalysisError, _layout_py, layout

MODULES = ["json.encoder", "json.decoder", "difflib", "textwrap", "ast", "inspect",
           "argparse", "typing", "asyncio.tasks", "contextlib", "dataclasses", "enum"]


def _key(lay):
    instrs = [(i.offset, i.next, i.opname, i.opcode, i.arg, type(i.argval), repr(i.argval),
               i.argrepr, i.line, i.target) for i in lay.instrs]
    return (instrs, list(lay.by_offset),
            [(b.id, b.start, b.end, [i.offset for i in b.instrs]) for b in lay.blocks],
            list(lay.block_of.items()), list(lay.depth.items()),
            [(h.start, h.end, h.target, h.depth, h.lasti) for h in lay.handlers],
            [(k, v.start, v.target) for k, v in lay.handler_targets.items()])


def test_the_compiled_pass_is_built():
    # setup.py builds it with the core; without it plans are built in Python (slower).
    assert bytecode._fastplan is not None


@pytest.mark.parametrize("name", MODULES)
def test_compiled_layout_matches_python(name):
    codes = code_objects(importlib.import_module(name))
    assert len(codes) > 5
    for code in codes:
        assert _key(layout(code, fast=True)) == _key(_layout_py(code, True)), code.co_qualname


def _gen(xs):
    for x in xs:
        try:
            yield x
        except ValueError:
            continue
        finally:
            pass


async def _coro(a):
    async with a as b:
        async for c in b:
            await c
    return [c async for c in a]


def test_odd_bytecode():
    src = "def f(x):\n" + "".join(f"    v{i} = x + {i}\n" for i in range(300)) + \
        "    while x:\n        x -= 1\n" + "    return v299\n"
    ns: dict = {}
    exec(compile(src, "<many>", "exec"), ns)
    for fn in (ns["f"], _gen, _coro, lambda: None, (lambda: (yield))):
        code = fn.__code__
        assert _key(layout(code, fast=True)) == _key(_layout_py(code, True))


def test_inconsistent_depth_is_an_analysis_error():
    # A code object whose exception table claims a depth past co_stacksize.
    def f(x):
        try:
            return x()
        except Exception:
            return 0
    code = f.__code__.replace(co_stacksize=0)
    with pytest.raises(AnalysisError) as fast:
        layout(code, fast=True)
    with pytest.raises(AnalysisError) as slow:
        _layout_py(code, True)
    assert str(fast.value) == str(slow.value)
