"""tracer.query and trace.table(): every axis and filter, checked against plain-Python
references (node views, one at a time) on the corpus traces."""

import inspect
import math
import random

import numpy as np
import pytest

import tracer
from corpus import CASES
from helpers import assert_same_structure, trace_corpus_case
from tracer.views.queries import reach
from tracer.views.table import KIND_NAMES


def _all_nodes(root):
    out, todo = [], [root]
    while todo:
        n = todo.pop()
        out.append(n)
        todo.extend(reversed(n.children))
    return sorted(out, key=lambda n: n.row)


# -- plain references, written from the node views --------------------------------------

def _ref_descendants(node):
    out = []
    for c in node.children:
        out.append(c.row)
        out.extend(_ref_descendants(c))
    return sorted(out)


def _ref_ancestors(node):
    out, p = [], node.parent
    while p is not None:
        out.append(p.row)
        p = p.parent
    return sorted(out)


def _ref_closure(node, step):
    seen, todo = set(), list(step(node))
    while todo:
        n = todo.pop()
        if n.row in seen:
            continue
        seen.add(n.row)
        todo.extend(step(n))
    return sorted(seen)


def _readers(nodes):
    readers = {n.row: [] for n in nodes}
    for n in nodes:
        for r in {m.row for m in n.referenced()}:
            readers[r].append(n)
    return readers


def _entered(call):
    kids = call.children if isinstance(call, tracer.views.NestedCallNode) else []
    return (call.parent is not None and not call.from_c and kids
            and isinstance(kids[0], tracer.views.ArgumentNode) and kids[0].position == 0)


def _returned(call):
    if not isinstance(call, tracer.views.NestedCallNode) or call.raised:
        return None
    kids = call.children
    last = kids[-1] if kids else None
    if isinstance(last, tracer.views.ReturnNode) and not last.is_yield:
        return last
    return None


def _bound_from(arg):
    """The caller's input node a parameter was bound from, by inspect.signature:
    a Node, None (a default or a constant), or "all" (star calls, *args)."""
    call = arg.parent
    if arg.position == 0:
        fn = call.function
        return fn if isinstance(fn, tracer.views.Node) else None
    if call.is_star_call:
        return "all"
    fn = call.function.value
    args, kwargs = call.arguments, call.keywords
    self_first = inspect.ismethod(fn)        # a bound method called through a variable
    func = fn.__func__ if self_first else fn
    sig = inspect.signature(func, follow_wrapped=False)
    bound = sig.bind(*(["self"] if self_first else []), *range(len(args)),
                     **{k: ("kw", k) for k in kwargs})
    name = func.__code__.co_varnames[arg.position - 1]
    if name not in bound.arguments:
        return None
    how = bound.arguments[name]
    if how == "self":
        fn_node = call.function
        return fn_node if isinstance(fn_node, tracer.views.Node) else None
    param = sig.parameters[name]
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
        return "all"
    src = kwargs[how[1]] if isinstance(how, tuple) else args[how]
    return src if isinstance(src, tracer.views.Node) else None


def _ref_backward_across(node):
    seen, todo = set(), [node]
    while todo:
        n = todo.pop()
        if n is not node and n.row in seen:
            continue
        if n is not node:
            seen.add(n.row)
        ret = _returned(n)
        if ret is not None and _entered(n):
            todo.append(ret)
            continue
        if isinstance(n, tracer.views.ArgumentNode) and n.parent is not None and _entered(n.parent) \
                and not n.location.stmt.startswith("stack"):
            src = _bound_from(n)
            if src == "all":
                call = n.parent
                todo.extend(x for x in [*call.arguments, *call.keywords.values()]
                            if isinstance(x, tracer.views.Node))
            elif src is not None:
                todo.append(src)
            continue
        todo.extend(n.referenced())
    return sorted(seen)


@pytest.fixture(scope="module")
def traces():
    return [(c.name, trace_corpus_case(c)) for c in CASES]


def test_axes_agree_with_plain_references_on_the_corpus(traces):
    checked = 0
    for name, root in traces:
        nodes = _all_nodes(root)
        readers = _readers(nodes)
        rng = random.Random(name)
        for node in rng.sample(nodes, min(len(nodes), 12)):
            q = lambda axis: tracer.query(node, axis).rows.tolist()  # noqa: E731
            assert q("children") == [c.row for c in node.children], name
            assert q("descendants") == _ref_descendants(node), name
            assert q("ancestors") == _ref_ancestors(node), name
            parent = node.parent
            sibs = [] if parent is None else [c.row for c in parent.children if c != node]
            assert q("siblings") == sibs, name
            assert q("preceding_siblings") == [r for r in sibs if r < node.row]
            assert q("following_siblings") == [r for r in sibs if r > node.row]
            assert q("parent") == ([] if parent is None else [parent.row])
            anc = set(_ref_ancestors(node))
            assert q("preceding") == [r for r in range(node.row) if r not in anc]
            desc = set(_ref_descendants(node))
            assert q("following") == [r for r in range(node.row + 1, len(nodes))
                                      if r not in desc]
            assert q("referenced") == sorted({m.row for m in node.referenced()}), name
            assert q("dependents") == sorted({m.row for m in readers[node.row]}), name
            assert q("backward") == _ref_closure(node, lambda n: n.referenced()), name
            assert q("forward") == _ref_closure(node, lambda n: readers[n.row]), name
            assert [n.row for n in node.dependents()] == q("dependents")
            assert [n.row for n in node.forward()] == q("forward")
            assert sorted(n.row for n in node.backward()) == q("backward")
            checked += 1
    assert checked > 1000


def test_backward_across_calls_agrees_with_a_signature_binding_reference(traces):
    checked = 0
    for name, root in traces:
        nodes = _all_nodes(root)
        rng = random.Random(name)
        for node in rng.sample(nodes, min(len(nodes), 8)):
            got = tracer.query(node, "backward", across_calls=True).rows.tolist()
            assert got == _ref_backward_across(node), (name, node)
            checked += 1
    assert checked > 500


@pytest.mark.parametrize("policy", ["none", "summary"])
def test_across_calls_under_a_value_policy_agrees_with_keep(traces, policy):
    # Under a policy the values are not the objects, so no binding is checked
    # against them: the table is made for the callee each call holds.  Each
    # corpus case traced again under the policy slices as with every value kept
    # (cases whose structure differs are left out: a generator the program drops
    # is closed inside the call under a policy, past it under keep).
    compared = 0
    for case, (name, keep) in zip(CASES, traces):
        root = _trace_case_under(case, policy)
        try:
            assert_same_structure(keep, root)
        except AssertionError:
            continue
        rng = random.Random(name)
        rows = rng.sample(range(len(keep.trace)), min(len(keep.trace), 8))
        for forward in (False, True):
            want = [reach(keep.trace, [r], forward, True).tolist() for r in rows]
            assert [reach(root.trace, [r], forward, True).tolist() for r in rows] == want, name
        compared += 1
    assert compared > 150


def _trace_case_under(case, policy):
    args, kwargs = case.arguments()
    ctx = tracer.Context(values=policy)
    if case.raises is not None:
        with pytest.raises(case.raises):
            tracer.track(case.func, *args, ctx=ctx, **kwargs)
        return tracer.last_trace()
    return tracer.track(case.func, *args, ctx=ctx, **kwargs)


def g(a, b):
    return h(a, 3) * f(b)


def f(x):
    return math.sin(x) + x


def h(x, n):
    r = 0.0
    i = 0
    while i < n:
        r += x ** i
        i += 1
    return r


def keywords(a, b, *rest, scale=1.0, **extra):
    return (a - b) * scale + sum(rest)


def uses_keywords(x, y):
    return keywords(b=y, a=x, scale=2.0) + keywords(x, y, x, y)


def test_across_calls_follows_arguments_into_and_returns_out_of_calls():
    root = tracer.track(g, 1.5, 2.0)
    a, b = root[1], root[2]
    out = root[-1]
    backward = tracer.query(out, "backward", across_calls=True)
    # Both arguments reach the result through h's loop and f's sin.
    assert a.row in backward.rows and b.row in backward.rows
    called = set(backward.where(kind="primitive").where(callee="sin").rows.tolist())
    assert len(called) == 1
    # Within the caller only, the result depends on the two calls, not on their bodies.
    inside = tracer.query(out, "backward")
    assert all(root.trace.parent(r) == 0 for r in inside.rows.tolist())
    # Forward from b: into f, not into h; out through f's return to the product.
    forward = tracer.query(b, "forward", across_calls=True)
    h_call, f_call = root[3], root[4]
    assert not set(forward.rows.tolist()) & set(range(h_call.row, h_call.trace.end(h_call.row)))
    assert f_call[1].row in forward.rows          # f's parameter x
    assert f_call.row in forward.rows and root[5].row in forward.rows


def test_keyword_and_star_parameters_bind_to_the_right_inputs():
    root = tracer.track(uses_keywords, 5.0, 3.0)
    x, y = root[1], root[2]
    first = next(c for c in root.children if isinstance(c, tracer.views.NestedCallNode))
    params = {c.location.stmt: c for c in first.children if isinstance(c, tracer.views.ArgumentNode)}
    a_param = first[1]
    assert a_param.value == 5.0
    assert tracer.query(a_param, "backward", across_calls=True).rows.tolist() == [x.row]
    b_param = first[2]
    assert tracer.query(b_param, "backward", across_calls=True).rows.tolist() == [y.row]
    assert params  # the parameters were recorded


def test_table_columns_agree_with_the_node_views(traces):
    for name, root in traces:
        t = root.trace.table()
        n = len(root.trace)
        assert all(len(col) == n for col in t.values()), name
        for node in _all_nodes(root):
            r = node.row
            assert KIND_NAMES[t["kind"][r]] == type(node).kind
            loc = node.location
            if loc is not None and loc.offset >= 0:
                assert t["line"][r] == (loc.line if loc.line is not None else -1), (name, node)
            if node.parent is not None:
                assert t["function"][r] == node.code.co_qualname
                assert t["depth"][r] == t["depth"][node.parent.row] + 1
            if isinstance(node, tracer.views.NestedCallNode) and _entered(node):
                assert t["callee"][r] == node.children[0].code.co_qualname
            assert t["size"][r] == 1 + len(_ref_descendants(node))


def test_table_answers_whole_trace_questions():
    random.seed(1)
    root = tracer.track(h, 1.0001, 200)
    t = root.trace.table()
    # How many times did each line run (one comparison per loop test)?
    comparisons = t["callee"] == "operator.lt"
    lines, counts = np.unique(t["line"][comparisons], return_counts=True)
    assert counts.tolist() == [201]
    # Which branch was taken how often?
    jumps = t["kind"] == 5
    targets, taken = np.unique(t["target"][jumps & (t["aux"] >= 0)], return_counts=True)
    assert taken.sum() == jumps.sum() and len(targets) >= 2
    pows = t["callee"] == "operator.pow"
    assert pows.sum() == 200


def test_query_filters():
    root = tracer.track(g, 1.5, 2.0)
    q = tracer.query(root, "descendants")
    assert len(q) == len(root.trace) - 1
    prim = q.where(kind="primitive")
    assert all(isinstance(n, tracer.views.PrimitiveCallNode) for n in prim)
    assert len(q.where(kind=("primitive", "nested"))) == len(prim) + 2
    assert [n.function.value for n in q.where(callee="sin")] == [math.sin]
    assert [n.function.value for n in q.where(callee=math.sin)] == [math.sin]
    assert len(q.where(callee=h)) == 1 and q.where(callee=h)[0].row == root[3].row
    assert set(q.where(function="h").rows.tolist()) == set(range(root[3].row + 1, root[4].row))
    assert len(q.where(code=f)) == len(root[4].children)
    pow_line = root[3][7].location.line
    assert all(n.location.line == pow_line for n in q.where(line=pow_line))
    big = q.where(kind="primitive", value=lambda v: isinstance(v, float) and v > 4)
    assert sorted(big.values) == sorted(v for v in prim.values if isinstance(v, float) and v > 4)
    assert q.filter(lambda n: isinstance(n, tracer.views.JumpNode)).rows.tolist() == \
        q.where(kind="jump").rows.tolist()
    assert len(q.where(raised=True)) == 0
    assert q.first() == root[0] and q[:2].rows.tolist() == [1, 2]
    with pytest.raises(ValueError, match="unknown node kind"):
        q.where(kind="primitve")
    with pytest.raises(ValueError, match="unknown axis"):
        tracer.query(root, "descendant")
    with pytest.raises(ValueError, match="across_calls"):
        tracer.query(root, "children", across_calls=True)


def test_queries_chain_from_sets():
    root = tracer.track(g, 1.5, 2.0)
    calls = tracer.query(root, "children", kind="nested")
    assert len(calls) == 2
    inside = calls.query("children", kind="argument")
    assert len(inside) == 3 + 2
    assert inside.rows.flags.writeable is False


def test_queries_example_runs_and_prints_what_the_readme_shows():
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, str(repo / "examples" / "queries.py")], check=True,
                         capture_output=True, text=True).stdout
    assert "largest calls: [('model', 171), ('walk', 149), ('geom', 16)]" in out
    assert "22 draws" in out and "15 of them draws" in out
    if sys.version_info[:2] == (3, 13):
        readme = (repo / "README.md").read_text()
        shown = readme.split("`python examples/queries.py` prints (real output, 3.13")[1]
        assert out in shown


def test_node_views_are_made_in_the_core_and_compare_by_row():
    root = tracer.track(g, 1.5, 2.0)
    a, b = root.children[1], root[1]
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != root[2] and (a == object()) is False
    assert isinstance(a, tracer._core.NodeView) and type(a) is tracer.views.ArgumentNode
    assert len(root) == len(root.children) == len(list(root))
    assert [n.row for n in root] == tracer.query(root, "children").rows.tolist()
    assert [n.row for n in tracer._core.node_views(root.trace, [3, 1])] == [3, 1]
    with pytest.raises(IndexError):
        tracer._core.node_view(root.trace, len(root.trace))
    with pytest.raises(AttributeError):
        a.extra = 1            # views have no __dict__: a row and its trace, nothing else


def test_table_converts_to_arrow_and_pandas_when_installed():
    pa = pytest.importorskip("pyarrow", reason="pyarrow is the optional 'arrow' extra")
    from tracer.views.table import to_arrow
    root = tracer.track(g, 1.5, 2.0)
    tab = to_arrow(root.trace)
    assert isinstance(tab, pa.Table) and tab.num_rows == len(root.trace)
    assert tab.column("kind")[0].as_py() == "nested"
    assert tab.column("callee").to_pylist()[root[3].row] == "h"


def test_table_builds_each_column_when_first_read_and_names_c_callables_by_themselves():
    def key(v):
        return -v

    def f(xs):
        return sorted(xs, key=key)[0] + len(xs)

    root = tracer.track(f, [3, 1, 2])
    t = root.trace.table()
    assert list(t) == ["row", "kind", "flags", "parent", "depth", "size", "aux", "code",
                       "offset", "line", "callee_id", "target", "function", "file", "callee"]
    assert not t._columns, "nothing is built before it is read"
    callee = t["callee"]
    assert set(t._columns) == {"callee_id", "callee"}
    # sorted ran Python code (the key) but is named by itself, like a primitive;
    # each key call is named by the key's code.
    named = dict(zip(t["row"].tolist(), callee.tolist()))
    (sorted_row,) = [r for r, name in named.items() if name == "sorted"]
    key_calls = root.trace.children(sorted_row)
    assert [named[r] for r in key_calls] == [key.__qualname__] * 3
    assert t.callee_names[t["callee_id"][sorted_row]] == "sorted"
    assert "value" not in t and len(root.trace.table(values=True)["value"]) == len(root.trace)


def test_table_counts_agree_with_numpy(traces):
    for name, root in traces:
        t = root.trace.table()
        for column in ("line", "kind", "code", "depth", "callee_id"):
            values, counts = t.counts(column)
            expect_values, expect_counts = np.unique(t[column], return_counts=True)
            assert values.tolist() == expect_values.tolist(), (name, column)
            assert counts.tolist() == expect_counts.tolist(), (name, column)
        for column in ("callee", "function", "file"):
            values, counts = t.counts(column)
            expect_values, expect_counts = np.unique(t[column].astype(str), return_counts=True)
            assert values.tolist() == expect_values.tolist(), (name, column)
            assert counts.tolist() == expect_counts.tolist(), (name, column)
        jumps = t["kind"] == 5
        values, counts = t.counts("line", where=jumps)
        assert counts.sum() == jumps.sum()
        assert values.tolist() == np.unique(t["line"][jumps]).tolist()
    with pytest.raises(TypeError, match="objects"):
        root.trace.table(values=True).counts("value")
    with pytest.raises(ValueError, match="entries"):
        t.counts("line", where=jumps[:-1])
