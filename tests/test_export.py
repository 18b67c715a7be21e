"""Looking at a trace: DOT pictures, networkx graphs, the summary table."""

import os
import random
import re
import shutil
import subprocess

import numpy as np
import pytest

import tracer
from helpers import load_example, trace_corpus_case, walk

_examples = load_example("irtracker_examples")
f, geom, h = _examples.f, _examples.geom, _examples.h

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's dot program is not installed "
                                      "(apt-get install graphviz / brew install graphviz)")


# -- DOT ---------------------------------------------------------------------------------

def _nodes_and_edges(text):
    nodes = dict(re.findall(r'^\s*n(\d+) \[label="((?:[^"\\]|\\.)*)"', text, re.M))
    edges = re.findall(r"^\s*n(\d+) -> n(\d+)( \[.*\])?;", text, re.M)
    return {int(k): v for k, v in nodes.items()}, [(int(a), int(b), s) for a, b, s in edges]


def test_dot_draws_calls_as_clusters_with_data_and_control_edges(traced):
    root = traced(geom, 1, 0.5, random.Random(2))  # three levels: 3 draws
    text = tracer.to_dot(root, levels=3)
    assert text.startswith("digraph trace {") and text.rstrip().endswith("}")
    nodes, edges = _nodes_and_edges(text)
    call = root[8]
    # Three levels: the root's and the first recursive call's bodies are clusters; the
    # call in that body is one box.
    assert f"subgraph cluster_{root.row} {{" in text
    assert f"subgraph cluster_{call.row} {{" in text
    assert f"subgraph cluster_{call[8].row} " not in text
    assert call[8].row in nodes and "geom(@7, @2, @3)" in nodes[call[8].row]
    assert "nodes inside" in nodes[call[8].row]
    # The callee's own argument @0 is left out; the parameters are there, named.
    assert root[0].row not in nodes
    assert nodes[root[1].row] == "@1 n = 1"
    # Data edges: every reference between drawn nodes, from the input to the reader.
    data = {(a, b) for a, b, style in edges if not style}
    assert (root[4].row, root[5].row) in data and (root[2].row, root[5].row) in data
    # Control edges: dashed, from a jump to the node that ran next, labelled with the block.
    jump = root[6]
    control = [(a, b, s) for a, b, s in edges if "dashed" in s]
    assert (jump.row, root[7].row) in [(a, b) for a, b, _ in control]
    assert f'label="§{jump.target}"' in [s for a, b, s in control if a == jump.row][0]
    # A call drawn as a cluster hands its result on from its return.
    assert (call[9].row, root[9].row) in data


def test_dot_labels_are_quoted_and_escaped(traced):
    def quoted(s):
        return s + '"\\n\\l'

    root = traced(quoted, 'a"b\\c')
    text = tracer.to_dot(root)
    nodes, _ = _nodes_and_edges(text)
    label = nodes[root[1].row]
    # The value's quote and backslashes are escaped for DOT: no raw " ends the label early.
    assert label == r"@1 s = 'a\"b\\\\c'"


def test_dot_refuses_a_picture_too_large_to_read(traced):
    root = traced(h, 2.0, 50)
    with pytest.raises(ValueError, match="max_nodes"):
        tracer.to_dot(root, max_nodes=100)
    assert tracer.to_dot(root, max_nodes=1000)
    with pytest.raises(ValueError, match="levels"):
        tracer.to_dot(root, levels=0)
    with pytest.raises(TypeError, match="node"):
        tracer.to_dot("not a node")


def test_render_writes_dot_text_without_graphviz(traced, tmp_path):
    root = traced(f, 1.0)
    out = tracer.render(root, tmp_path / "f.dot")
    assert open(out, encoding="utf-8").read() == tracer.to_dot(root)


def test_render_without_graphviz_says_how_to_install_it(traced, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH where no `dot` is
    with pytest.raises(tracer.GraphvizNotFound, match="apt-get install graphviz"):
        tracer.render(traced(f, 1.0), tmp_path / "f.svg")


@needs_dot
def test_render_svg_and_png_through_graphviz(traced, tmp_path):
    root = traced(geom, 1, 0.5, random.Random(2))
    svg = tracer.render(root, tmp_path / "geom.svg", levels=4)
    text = open(svg, encoding="utf-8").read()
    assert "<svg" in text and "Random.random(@3)" in text
    png = tracer.render(traced(h, 2.0, 3), tmp_path / "h.png")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


@needs_dot
def test_dot_text_is_accepted_by_graphviz(traced):
    def odd(s):
        return {"k": s, 1: [s, s]}

    for root in (traced(geom, 1, 0.5, random.Random(8)), traced(odd, 'x"\\ny{}<>|')):
        done = subprocess.run(["dot", "-Tsvg"], input=tracer.to_dot(root, levels=4).encode(),
                              capture_output=True)
        assert done.returncode == 0, done.stderr.decode()


# -- networkx ------------------------------------------------------------------------------

def _networkx():
    return pytest.importorskip("networkx", reason="to_networkx needs networkx (tracer[graph])")


def test_networkx_graph_has_the_trace_data_edges(traced):
    nx = _networkx()
    root = traced(geom, 1, 0.5, random.Random(5))
    g = tracer.to_networkx(root)
    assert isinstance(g, nx.MultiDiGraph)
    nodes = list(walk(root))
    assert sorted(g.nodes) == [n.row for n in nodes]
    for n in nodes:
        data = sorted((a, p) for a, _, p in
                      ((a, b, d["position"]) for a, b, d in g.in_edges(n.row, data=True)
                       if d["kind"] == "data"))
        assert data == sorted((m.row, p) for p, m in n.referenced(numbered=True))
    # node attributes
    call = root[8]
    attrs = g.nodes[call.row]
    assert attrs["kind"] == "nested" and attrs["function"] == "geom"
    assert attrs["index"] == 8 and attrs["parent"] == root.row and attrs["depth"] == 1
    assert attrs["value"] == repr(call.value)
    assert attrs["location"] == f"irtracker_examples.py:{call.location.line}"
    assert g.nodes[root.row]["parent"] is None
    # control edges: a jump to the node that ran next
    jump = root[6]
    control = [(b, d) for _, b, d in g.out_edges(jump.row, data=True) if d["kind"] == "control"]
    assert control == [(root[7].row, {"kind": "control", "target": jump.target})]


def test_networkx_backward_matches_the_trace_query(traced):
    nx = _networkx()
    root = traced(h, 2.0, 3)
    g = tracer.to_networkx(root)
    data = nx.subgraph_view(g, filter_edge=lambda a, b, k: g.edges[a, b, k]["kind"] == "data")
    ret = root[24]
    assert sorted(nx.ancestors(data, ret.row)) == sorted(n.row for n in ret.backward())


def test_networkx_levels_limit_the_depth(traced):
    _networkx()
    root = traced(geom, 1, 0.5, random.Random(5))
    g = tracer.to_networkx(root, levels=2)
    assert sorted(g.nodes) == [root.row] + [c.row for c in root]
    assert list(tracer.to_networkx(root, levels=1).nodes) == [root.row]


# -- summary -------------------------------------------------------------------------------

def test_summary_counts_match_a_walk_of_the_nodes(traced):
    root = traced(geom, 1, 0.5, random.Random(5))
    s = tracer.summary(root)
    nodes = list(walk(root))
    assert s.nodes == len(nodes) == len(root.trace)
    kinds = {}
    for n in nodes:
        kinds[n.kind] = kinds.get(n.kind, 0) + 1
    assert {k: v for k, v in s.by_kind.items() if v} == kinds
    depth = root.value  # geom(1, ...) returns its recursion depth
    assert s.depth == depth
    [calls] = s.calls
    assert (calls.function, calls.calls) == ("geom", depth)
    assert calls.nodes == len(nodes) - 1 and calls.own_nodes == len(nodes) - 1
    assert dict(s.primitives) == {"Random.random": depth, "operator.lt": depth,
                                  "operator.add": depth - 1}
    assert s.refs == sum(len(n.referenced()) for n in nodes)
    assert s.nbytes == root.trace.nbytes
    assert not s.timed and "no timing" in s.notes[0]


def test_summary_of_a_subtree_and_of_nested_functions(traced):
    def inner(x):
        return x * 2

    def outer(xs):
        return sum(inner(x) for x in xs) + inner(1)

    root = traced(outer, [1, 2, 3])
    s = tracer.summary(root)
    by_name = {c.function.rsplit(".", 1)[-1]: c for c in s.calls}
    assert by_name["inner"].calls == 4
    assert by_name["inner"].nodes == by_name["inner"].own_nodes == 4 * 4  # @0, x, x * 2, return
    last = [n for n in root if n.kind == "nested"][-1]  # inner(1)
    sub = tracer.summary(last)
    assert sub.nodes == 5 and [c.calls for c in sub.calls] == [1]


def test_summary_table_text(traced):
    text = str(tracer.summary(traced(h, 2.0, 3)))
    lines = text.splitlines()
    assert lines[0] == ("trace of h(...): 26 nodes, 28 references, call depth 1, "
                        f"{tracer.track(h, 2.0, 3).trace.nbytes:,} bytes of columns")
    assert "operator.iadd        6" in text
    assert re.search(r"^h\s+irtracker_examples\.py:\d+\s+1\s+25\s+25$", text, re.M)


def test_summary_gives_time_shares_when_a_context_timed_the_calls():
    profiler = load_example("profiler")
    root = tracer.track(geom, 1, 0.5, random.Random(5), ctx=profiler.TimingContext())
    s = tracer.summary(root)
    assert s.timed and s.seconds > 0
    [calls] = s.calls
    # Recursive calls are nested in each other: the outermost one's time is the total.
    assert calls.share == pytest.approx(1.0)
    assert "share" in str(s) and "100.0%" in str(s)


def test_summary_works_on_the_columns_of_a_large_trace():
    root = tracer.track(h, 1.0, 20000)
    s = tracer.summary(root)
    assert s.by_kind["primitive"] == 4 * 20000 + 1  # pow, two +=, < per iteration; a last <
    assert s.nodes == len(root.trace)
    assert s.as_dict()["by_kind"]["jump"] == np.count_nonzero(root.trace.columns()["kind"] == 5)


def test_summary_of_a_loaded_trace_equals_the_live_one(traced, tmp_path):
    pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")
    root = traced(geom, 1, 0.5, random.Random(5))
    path = os.fspath(tmp_path / "geom.parquet")
    tracer.save(root, path)
    live, loaded = tracer.summary(root), tracer.summary(tracer.load(path))
    assert str(live).replace(f"{root.trace.nbytes:,} bytes", "") == \
        str(loaded).replace(f"{tracer.load(path).trace.nbytes:,} bytes", "")


def test_readme_shows_what_the_looking_example_prints():
    import subprocess
    import sys

    from helpers import EXAMPLES

    out = subprocess.run([sys.executable, str(EXAMPLES / "looking.py")], check=True,
                         capture_output=True, text=True, encoding="utf-8").stdout
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    shown = readme.split("`python examples/looking.py` prints (real output):\n\n```\n")[1]
    # The byte count of the columns includes the value pool, whose entries the core
    # dedupes through a small cache keyed by address: two objects whose addresses
    # share a slot each get an entry again, so that count follows memory layout
    # (an environment variable's length moves it); everything else is exact.
    layout = re.compile(r"[0-9,]+ bytes of columns")
    assert layout.sub("N bytes of columns", shown.split("```\n")[0]) == \
        layout.sub("N bytes of columns", out)


# -- every corpus trace ----------------------------------------------------------------------

def test_every_corpus_trace_can_be_drawn_summarised_and_compared_with_itself():
    from corpus import CASES

    nx = _networkx()
    texts = []
    for case in CASES:
        root = trace_corpus_case(case)
        text = tracer.to_dot(root, levels=3, max_nodes=10**6)
        assert text.startswith("digraph trace {\n") and text.endswith("}\n"), case.name
        if text.count(" [label=") <= 150:  # Graphviz lays out large graphs slowly
            texts.append(text)
        s = tracer.summary(root)
        assert s.nodes == len(root.trace) and sum(s.by_kind.values()) == s.nodes, case.name
        g = tracer.to_networkx(root)
        assert g.number_of_nodes() == len(root.trace), case.name
        assert sum(1 for *_, d in g.edges(data=True) if d["kind"] == "data") == s.refs, case.name
        assert isinstance(g, nx.MultiDiGraph)
        assert tracer.diff(root, root).same, case.name
        # A second run may differ for real (a cache filled by the first: re.compile's),
        # so only where the two recorded the same nodes must no divergence be found.
        again = trace_corpus_case(case)
        d = tracer.diff(root, again)
        assert str(d)
        ca, cb = root.trace.columns(), again.trace.columns()
        if all(np.array_equal(ca[k], cb[k]) for k in ("kind", "parent", "offset", "aux")):
            assert d.divergence is None and not d.added and not d.removed, (case.name, str(d))
    if shutil.which("dot") is not None:
        # One Graphviz run for the small ones: each picture as a graph of its own.
        done = subprocess.run(["dot", "-Tsvg", "-o", os.devnull], capture_output=True,
                              input="".join(texts).encode(), timeout=300)
        assert done.returncode == 0, done.stderr.decode()[:2000]
