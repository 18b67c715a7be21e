"""The IRTracker README's examples, in Python: f, geom and h."""

import math
import random

import pytest

import tracer
from helpers import EXAMPLES, load_example
from tracer.views import ArgumentNode, ConstantNode, JumpNode, NestedCallNode, PrimitiveCallNode, ReturnNode


_examples = load_example("irtracker_examples")
f, geom, h = _examples.f, _examples.geom, _examples.h


def rows(nodes):
    return [n.index for n in nodes]


def test_f_graph_and_queries(traced):
    root = traced(f, 1.0)
    assert root.value == f(1.0)
    assert [type(n) for n in root] == [ArgumentNode, ArgumentNode, PrimitiveCallNode,
                                       PrimitiveCallNode, ReturnNode]
    assert root[0].value is f and root[1].value == 1.0
    assert root[2].function.value is math.sin and root[2].value == math.sin(1.0)
    assert root[3].function.value is __import__("operator").add
    assert rows(root[4].referenced()) == [3]
    assert [(k, n.index) for k, n in root[3].referenced(numbered=True)] == [(1, 2), (2, 1)]
    assert rows(root[4].backward()) == [3, 2, 1]
    assert rows(root[1].dependents()) == [2, 3]
    assert rows(root[1].forward()) == [2, 3, 4]


def test_f_prints_like_irtracker(traced, capsys):
    root = traced(f, 1.0)
    tracer.printlevels(root, 2)
    out = capsys.readouterr().out.splitlines()
    line = f.__code__.co_firstlineno + 1
    assert out == [
        "⟨f⟩(⟨1.0⟩) → 1.8414709848078965::float",
        "  @0: [Arg:§1:%0] f::function",
        "  @1: [Arg:§1:%1] 1.0::float",
        f"  @2: [§1:%2 L{line}] ⟨math.sin⟩(@1) → 0.8414709848078965::float",
        f"  @3: [§1:%3 L{line}] ⟨operator.add⟩(@2, @1) → 1.8414709848078965::float",
        f"  @4: [§1:&1 L{line}] return @3 → 1.8414709848078965::float",
    ]


def test_location_indexes_ir(traced):
    root = traced(f, 1.0)
    stmt = root[3].ir[root[3].location]
    assert stmt.text == "%3 = operator.add(%2, x)"
    assert root[4].ir[root[4].location].text == "return %3"


def _depth(node):
    calls = [c for c in node if isinstance(c, NestedCallNode)]
    return 1 + max((_depth(c) for c in calls), default=0)


@pytest.mark.parametrize("seed", [2, 5, 8])
def test_geom_stochastic_recursion(traced, seed):
    expected = geom(1, 0.5, random.Random(seed))
    root = traced(geom, 1, 0.5, random.Random(seed))
    assert root.value == expected
    assert _depth(root) == expected  # one level per draw that failed, plus the last
    node = root
    for level in range(1, expected + 1):
        draw, lt, jump = node[4], node[5], node[6]
        assert draw.function.value.__name__ == "random"
        assert lt.referenced() == [draw, node[2]]
        assert jump.condition == lt and jump.value is (draw.value < 0.5)
        assert node[1].value == level
        if level < expected:
            add, call = node[7], node[8]
            assert add.referenced() == [node[1]] and add.value == level + 1
            assert isinstance(call, NestedCallNode) and call.value == expected
            assert call.referenced() == [add, node[2], node[3]]
            node = call
        else:
            assert isinstance(node[7], ReturnNode) and node[7].referenced() == [node[1]]


def test_geom_depth_limit_makes_level_two_primitive(traced):
    root = traced(geom, 1, 0.5, random.Random(5), ctx=tracer.context.DepthLimitContext(2))
    calls = [c for c in root if c.kind in ("nested", "primitive") and c.index > 3]
    assert [type(c) for c in calls][-1] is PrimitiveCallNode
    assert all(len(c) == 0 for c in calls)
    assert root.value == geom(1, 0.5, random.Random(5))
    deeper = traced(geom, 1, 0.5, random.Random(5), ctx=tracer.context.DepthLimitContext(3))
    assert isinstance(deeper[8], NestedCallNode) and isinstance(deeper[8][8], PrimitiveCallNode)


def test_h_loop_iterations(traced):
    x, n = 2.0, 3
    root = traced(h, x, n)
    assert root.value == h(x, n) == 7.0
    kids = list(root)
    r0, i0 = kids[3], kids[4]
    assert isinstance(r0, ConstantNode) and r0.value == 0.0
    assert isinstance(i0, ConstantNode) and i0.value == 0
    compares = [c for c in kids if c.kind == "primitive" and c.function.value.__name__ == "lt"]
    assert len(compares) == n + 1
    # The first `i < n` reads the constant; each later one reads the previous `i += 1`.
    assert compares[0].referenced() == [i0, root[2]]
    incs = [c for c in kids if c.kind == "primitive" and c.function.value.__name__ == "iadd"
            and c.referenced()[0].value == int(c.value) - 1 and isinstance(c.value, int)]
    assert [c.value for c in incs] == [1, 2, 3]
    for cmp, inc in zip(compares[1:], incs):
        assert cmp.referenced() == [inc, root[2]]
    # Every executed `i < n` is followed by a JumpNode that references it.
    for cmp in compares:
        jump = root[cmp.index + 1]
        assert isinstance(jump, JumpNode) and jump.condition == cmp
        assert jump.value is cmp.value
    # r accumulates through the powers: r_k = r_{k-1} + x ** i_{k-1}
    pows = [c for c in kids if c.kind == "primitive" and c.function.value.__name__ == "pow"]
    assert [p.value for p in pows] == [1.0, 2.0, 4.0]
    assert pows[0].referenced() == [root[1], i0]
    assert pows[1].referenced() == [root[1], incs[0]]
    ret = kids[-1]
    assert isinstance(ret, ReturnNode) and ret.value == 7.0
    assert ret.referenced()[0].value == 7.0


def test_examples_scripts_run(capsys):
    import runpy

    runpy.run_path(str(EXAMPLES / "readme_example.py"))
    runpy.run_path(str(EXAMPLES / "irtracker_examples.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "⟨math.sin⟩(@1)" in out and "⟨geom⟩" in out


def test_readme_shows_what_its_example_prints():
    import re
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(EXAMPLES / "readme_example.py")], check=True,
                         capture_output=True, text=True).stdout
    readme = (EXAMPLES.parent / "README.md").read_text()
    shown = readme.split("`python examples/readme_example.py` prints (real output):\n\n```\n")[1]
    shown = shown.split("```\n")[0]
    # The one path in it is the checkout's.
    assert re.sub(r"\(\S*/examples/", "(/examples/", out) == \
        re.sub(r"\(\S*/examples/", "(/examples/", shown)


def test_generators_example_records_the_delegation():
    ex = load_example("generators")
    root = tracer.track(ex.drive, 3)
    tracer.validate(root)
    assert root.value == (1, 45)
    resumed = root[4][0]  # g.send(5) resumed outer
    mul = [n for n in resumed.children if isinstance(n, PrimitiveCallNode)][-1]
    assert mul.value == 45
    send, x = mul.arguments
    assert send.value == 15 and x.value == 3  # r is what inner returned: 10 + 5
