"""The top level is the verbs (real functions), everything else lives in a
subpackage's __all__ and warns when reached through the top level; arguments are
checked with errors that say what was wanted; nodes index and slice as sequences;
kinds filter by name or code; and the README's examples and examples/ pass mypy."""

import importlib
import inspect
import math
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import tracer
from tracer.tapes import Tape
from tracer.views import KIND_NAMES, Kind

REPO = Path(__file__).resolve().parent.parent

VERBS = {"track", "last_trace", "query", "table", "printlevels", "format_node", "validate",
         "ir", "save", "load", "track_many", "tape", "grad", "value_and_grad", "vjp",
         "backprop", "rule", "diff", "summary", "render", "to_dot", "to_networkx",
         "counts", "compare_counts"}
ERRORS = {"TrackingError", "ToolIdError", "TraceLimitError", "GraphError", "TapeError",
          "GuardError",
          "NoRuleError", "PickleRefused", "GraphvizNotFound"}


def f(x):
    return [math.sin(x), math.cos(x), x + 1]


def test_the_top_level_is_the_verbs_the_context_and_the_errors():
    assert set(tracer.__all__) == VERBS | ERRORS | {"Context"}
    for name in VERBS:
        assert inspect.isfunction(getattr(tracer, name)), name
    for name in ERRORS:
        assert issubclass(getattr(tracer, name), Exception), name
    assert tracer.tape is tracer.tapes.trace and tracer.tape(abs, -2)[0] == 2


@pytest.mark.parametrize("name", sorted(tracer._MOVED))
def test_a_name_that_left_warns_names_its_home_and_is_the_same_object(name):
    home = tracer._MOVED[name]
    module = importlib.import_module(home)
    assert name in module.__all__
    with pytest.warns(DeprecationWarning, match=re.escape(f"from {home} import {name}")):
        moved = getattr(tracer, name)
    assert moved is getattr(module, name)


def test_from_import_of_a_moved_name_warns_and_unknown_names_raise():
    with pytest.warns(DeprecationWarning, match="tracer.views"):
        from tracer import NestedCallNode
    assert NestedCallNode is tracer.views.NestedCallNode
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        tracer.nothing_here  # noqa: B018
    assert "track" in dir(tracer)


def test_tracer_itself_uses_no_moved_name():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        root = tracer.track(f, 1.0)
        tracer.validate(root)
        tracer.format_node(root)
        Tape.from_trace(root)


@pytest.mark.parametrize("call, error, message", [
    (lambda r: tracer.printlevels(5), TypeError, "printlevels takes a node.*got int 5"),
    (lambda r: tracer.printlevels(r, "2"), TypeError, "levels must be an int.*got str '2'"),
    (lambda r: tracer.printlevels(r, -1), ValueError, "levels must be at least 1.*got -1"),
    (lambda r: tracer.printlevels(r, 0), ValueError, "at least 1"),
    (lambda r: tracer.printlevels(r, True), TypeError, "levels must be an int"),
    (lambda r: tracer.format_node(None), TypeError, "format_node takes a node.*NoneType"),
    (lambda r: tracer.query(5, "children"), TypeError, "query takes a node.*or a Query"),
    (lambda r: tracer.query(r, 3), TypeError, "axis must be a str"),
    (lambda r: tracer.query(r, "sideways"), ValueError, "unknown axis 'sideways'"),
    (lambda r: tracer.validate(5), TypeError, "validate takes a node"),
    (lambda r: Tape.from_trace(5), TypeError, "Tape.from_trace takes a node"),
    (lambda r: tracer.table(5), TypeError, "table takes a node.*or its trace"),
    (lambda r: tracer.to_dot(r, "2"), TypeError, "to_dot: levels must be an int"),
    (lambda r: tracer.to_dot("root"), TypeError, "to_dot takes a node"),
    (lambda r: tracer.render(5, "x.dot"), TypeError, "render takes a node"),
    (lambda r: tracer.summary(5), TypeError, "summary needs a node"),
    (lambda r: tracer.diff(5, r), TypeError, "diff needs two nodes"),
    (lambda r: tracer.save(5, "x.parquet"), TypeError, "expected a node"),
    (lambda r: tracer.track(5), TypeError, "needs a callable"),
    (lambda r: tracer.tape(5), TypeError, "tape needs a callable"),
    (lambda r: tracer.grad(5), TypeError, "needs a callable"),
])
def test_public_functions_check_their_arguments(call, error, message):
    root = tracer.track(f, 1.0)
    with pytest.raises(error, match=message):
        call(root)


def test_table_takes_a_node_or_its_trace():
    root = tracer.track(f, 1.0)
    by_node, by_trace = tracer.table(root), tracer.table(root.trace)
    assert list(by_node) == list(by_trace)
    assert np.array_equal(by_node["kind"], root.trace.table()["kind"])


def test_nodes_index_and_slice_as_the_sequence_of_their_children():
    root = tracer.track(f, 1.0)
    kids = list(root.children)
    n = len(kids)
    assert len(root) == n and root[0] == kids[0] and root[-1] == kids[-1]
    assert root[-n] == kids[0] and root[np.int64(1)] == kids[1]
    assert root[1:3] == kids[1:3] == root.children[1:3] and root[::-2] == kids[::-2]
    assert root[5:2] == [] and root[:100] == kids
    for k in (n, -n - 1, 10**6, 10**30):
        with pytest.raises(IndexError, match=rf"child index {k} out of range \(the node has {n} children\)"):
            root[k]
        with pytest.raises(IndexError):
            root.children[k]
    for k in ("a", 1.0, None):
        with pytest.raises(TypeError, match="indices must be integers or slices"):
            root[k]
    leaf = tracer.track(math.sin, 1.0)
    assert len(leaf) == 0 and leaf[:] == []
    with pytest.raises(IndexError, match="has 0 children"):
        leaf[0]


def test_kinds_filter_by_name_code_or_kind_and_the_codes_are_public():
    assert [k.label for k in Kind] == list(KIND_NAMES)
    assert [int(k) for k in Kind] == list(range(len(KIND_NAMES)))
    root = tracer.track(f, 1.0)
    t = tracer.table(root)
    for node in root.children:
        assert Kind(int(t["kind"][node.row])).label == node.kind
    q = tracer.query(root)
    prim = q.where(kind="primitive").rows
    assert len(prim) == 4 and np.array_equal(prim, np.flatnonzero(t["kind"] == 2))
    for kind in (2, Kind.PRIMITIVE, np.uint8(2), ["primitive"], (2,), {Kind.PRIMITIVE}):
        assert np.array_equal(q.where(kind=kind).rows, prim), kind
    both = q.where(kind=[Kind.ARGUMENT, "primitive"]).rows
    assert np.array_equal(both, np.flatnonzero(np.isin(t["kind"], [0, 2])))
    with pytest.raises(ValueError, match="unknown node kind code 9"):
        q.where(kind=9)
    with pytest.raises(ValueError, match="unknown node kind 'call'"):
        q.where(kind="call")
    for bad in (1.5, True, [object()]):
        with pytest.raises(TypeError, match="a kind is a name"):
            q.where(kind=bad)


def _readme_python() -> str:
    """The README's Python examples, in order, as one module: later blocks go on from
    earlier ones, as a reader does.  Names the prose defines (a program `geom`, a
    `path`) are declared up front."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) >= 8
    prelude = ("from typing import Any\nimport math\nimport pickle\nimport random\n"
               "import numpy as np\nimport networkx as nx\nimport pyarrow.compute as pc\n"
               "import tracer\nfrom tracer import ppl\ngeom: Any\npath: Any\ndirectory: Any\nold: Any\nnew: Any\n\n")
    return prelude + "\n".join(blocks)


def test_readme_examples_and_examples_dir_pass_mypy(tmp_path):
    """One mypy run (cached in .mypy_cache between runs): the README's examples and
    examples/ pass; a file of wrong uses in the same run (a tape's result used as a
    node, a moved name) fails, so the run checks."""
    pytest.importorskip("mypy")
    readme = tmp_path / "readme_examples.py"
    readme.write_text(_readme_python(), encoding="utf-8")
    bad = tmp_path / "wrong_uses.py"
    bad.write_text("import tracer\nvalue, tp = tracer.tape(abs, 1.0)\n"
                   "reveal_type(tp)\ntracer.printlevels(tp, 'x')\nold = tracer.Tape\n",
                   encoding="utf-8")
    examples = sorted(str(p) for p in (REPO / "examples").glob("*.py"))
    cmd = [sys.executable, "-m", "mypy", "--check-untyped-defs", "--ignore-missing-imports",
           "--follow-imports=silent", "--allow-redefinition", "--disable-error-code=no-redef",
           "--cache-dir", str(REPO / ".mypy_cache"), str(readme), str(bad), *examples]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600)
    lines = [ln for ln in done.stdout.splitlines() if ": error:" in ln or ": note:" in ln]
    # By file name: a result mypy kept in its cache names the file where it first ran.
    others = [ln for ln in lines if Path(ln.split(":", 1)[0]).name != bad.name]
    assert not others, done.stdout + done.stderr
    assert any('Revealed type is "tracer.tapes.tape.Tape"' in ln for ln in lines), done.stdout
    assert any("printlevels" in ln and "error" in ln for ln in lines), done.stdout
    # A moved name is an error for mypy (the run-time __getattr__ is hidden from it).
    assert any('has no attribute "Tape"' in ln for ln in lines), done.stdout


def test_readme_shows_what_examples_face_prints():
    out = subprocess.run([sys.executable, str(REPO / "examples" / "face.py")], check=True,
                         capture_output=True, text=True, timeout=300).stdout
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    marker = "`python examples/face.py` prints (real output; the last lines are what four bad calls\nraise):\n\n```\n"
    shown = readme.split(marker)[1].split("```\n")[0]
    assert out == shown
