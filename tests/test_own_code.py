"""tracer inside a trace: a library that uses tracer (nested track, printing,
table, queries, taping, gradients) inside a traced function shows up in its users'
traces as primitive calls only, and never breaks their gradients."""

import contextlib
import io
import math
from pathlib import Path

import tracer
from tracer.views.nodes import CallNode, NestedCallNode, PrimitiveCallNode
from helpers import walk

TRACER_DIR = str(Path(tracer.__file__).resolve().parent)


def inner(x):
    return x * 3 + 1


def quietly(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)


def explain(x):
    """What an "explain this call" library does inside its users' code."""
    root = tracer.track(inner, x)
    quietly(tracer.printlevels, root)
    text = tracer.format_node(root.children[-1])
    rows = len(tracer.table(root.trace))
    found = len(list(tracer.query(root[-1], "backward")))
    _ = repr(root), len(root.children), [c for c in root.children]
    return root.value, len(text) > 0, rows, found


def user(x):
    value, ok, rows, found = explain(x)
    return value + (rows > 0) + ok


def tracer_nodes(root):
    """Nodes recorded inside tracer's own code."""
    return [n for n in walk(root)
            if n.code is not None and n.code.co_filename.startswith(TRACER_DIR)]


def test_a_library_using_tracer_is_primitive_in_the_users_trace():
    root = tracer.track(user, 2)
    tracer.validate(root)
    assert root.value == 9
    assert tracer_nodes(root) == []
    (lib,) = [c for c in root.children if isinstance(c, NestedCallNode)
              and c.function.value is explain]
    tracer_calls = [c for c in lib.children if isinstance(c, CallNode)
                    and getattr(getattr(c.function, "value", None), "__module__", "")
                    .startswith("tracer")]
    assert len(tracer_calls) >= 4   # track, printlevels, format_node, table, ...
    assert all(isinstance(c, PrimitiveCallNode) for c in tracer_calls)
    assert len(root.trace) < 200    # was thousands of nodes of tracer's own code


def test_gradient_through_a_function_that_uses_tracer():
    def f(x):
        quietly(tracer.printlevels, tracer.track(inner, 1.0))
        value, tape = tracer.tape(inner, 2.0)
        g = tracer.grad(inner)(2.0)
        tracer.format_node(tracer.track(inner, 3.0))
        return x * x + math.sin(x) + g + value

    assert f(3.0) == 9.0 + math.sin(3.0) + 3.0 + 7.0
    assert math.isclose(tracer.grad(f)(3.0), 6.0 + math.cos(3.0))


def test_tracing_tracer_itself_records_the_root_body():
    # The caller asked for it: a function of tracer's own as the root is traced.
    from tracer.views.values import short_value
    root = tracer.track(short_value, 12345)
    tracer.validate(root)
    assert root.value == short_value(12345)
    assert any(isinstance(c, CallNode) for c in root.children)


def test_nested_track_inside_a_traced_function_still_records_the_inner_call():
    root = tracer.track(user, 4)
    (lib,) = [c for c in root.children if isinstance(c, NestedCallNode)]
    (track_call,) = [c for c in lib.children if isinstance(c, CallNode)
                     and getattr(c.function, "value", None) is tracer.track]
    inner_root = track_call.value
    tracer.validate(inner_root)
    assert inner_root.value == 13
    assert [type(c).__name__ for c in inner_root.children][-1] == "ReturnNode"


def test_readme_shows_what_the_embedding_example_prints():
    import subprocess
    import sys
    example = Path(__file__).resolve().parent.parent / "examples" / "embedding.py"
    out = subprocess.run([sys.executable, str(example)], check=True, capture_output=True,
                         text=True).stdout
    readme = (example.parent.parent / "README.md").read_text()
    shown = readme.split("`python examples/embedding.py` prints")[1]
    shown = shown.split("```\n", 1)[1].split("```\n")[0]
    assert out == shown
