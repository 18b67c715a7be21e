"""Graphviz pictures of a trace: `to_dot(node, levels)` writes DOT text, `render(node,
path)` runs Graphviz's `dot` program on it.

A recorded call whose body is drawn is a cluster: on top a header box for the call
(its inputs point to it; dotted lines bind it to its parameters), below it the body,
whose return hands the result on to the nodes that read the call, so data flows down.
Data references are solid edges; control edges (a jump to the node that ran next) are
dashed and labelled with the block jumped to.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from ..views.nodes import Const, Node, node_at
from ..views.checks import levels_arg, node_arg
from ..views.values import ValueRepr, refused
from .rows import ARGUMENT, JUMP, NESTED, call_name, callable_name

__all__ = ["to_dot", "render", "GraphvizNotFound"]

# Values in a picture are shorter than in a dump: a node is a box, not a line.
_repr = ValueRepr()  # never raises; dicts in insertion order
_repr.maxstring = 18
_repr.maxother = 24
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 3
_repr.maxlevel = 2

# Fill colour by node kind (argument, constant, primitive, nested, special, jump, return).
_FILL = ("#fff4c2", "#eeeeee", "#ffffff", "#d7e8fb", "#f3e1f7", "#ffe0c2", "#d9f2d9")
_CONTROL = 'style=dashed, color="#c05800", fontcolor="#c05800"'
_BINDS = 'style=dotted, color="#5b7fb0", arrowhead=none'
RETURN = 6


class GraphvizNotFound(RuntimeError):
    """Graphviz's `dot` program is not installed (or not on PATH)."""


def to_dot(node: Node, levels: int = 2, *, max_nodes: int = 1000) -> str:
    """Graphviz DOT text of `node` and its descendants down to `levels` levels, as
    `printlevels` counts them (1: `node` alone; 2: `node` and its children; ...).

    A call whose children are drawn is a cluster; a deeper one is a single box.  The callee's
    own ArgumentNode (`@0`) is left out unless something reads it.  Raises ValueError
    when more than `max_nodes` boxes would be drawn (pass fewer `levels`, or a node
    deeper in the trace).
    """
    node_arg(node, "to_dot")
    levels = levels_arg(levels, "to_dot")
    drawn = _drawn_rows(node, levels)
    if len(drawn) > max_nodes:
        raise ValueError(
            f"the picture would have {len(drawn):,} boxes (more than max_nodes={max_nodes:,}); "
            "draw fewer levels, a node deeper in the trace, or raise max_nodes")
    writer = _DotWriter(node.trace, drawn)
    writer.call(node, levels, depth=0)
    writer.edges()
    return writer.text()


def render(node: Node, path: str | os.PathLike, levels: int = 2, *, format: str | None = None,
           max_nodes: int = 1000) -> str:
    """Draw `node` to `path` (SVG, PNG, PDF, ... by its suffix, or `format`); a path
    ending in `.dot` or `.gv` gets the DOT text itself.  Returns the path.

    Needs Graphviz's `dot` program for anything but DOT text; raises
    GraphvizNotFound saying how to install it when it is missing.
    """
    node_arg(node, "render")
    return write_picture(to_dot(node, levels, max_nodes=max_nodes), path, format=format)


def write_picture(text: str, path: str | os.PathLike, *, format: str | None = None) -> str:
    """Write DOT `text` to `path` as a picture (by its suffix, or `format`) through
    Graphviz's `dot`, or as DOT text for `.dot`/`.gv`.  Returns the path."""
    path = os.fspath(path)
    fmt = (format or os.path.splitext(path)[1].lstrip(".")).lower()
    if not fmt:
        raise ValueError(f"cannot tell the picture format of {path!r}: give it a suffix "
                         "(.svg, .png, .pdf, .dot) or pass format=")
    if fmt in ("dot", "gv"):
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        return path
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizNotFound(
            "rendering a picture needs Graphviz's `dot` program, which is not on PATH; "
            "install Graphviz (Debian/Ubuntu: `apt-get install graphviz`, macOS: "
            "`brew install graphviz`, conda: `conda install graphviz`), or write the DOT "
            "text with tracer.to_dot(node) or a path ending in .dot")
    done = subprocess.run([dot, f"-T{fmt}", "-o", path], input=text.encode("utf-8"),
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"Graphviz dot failed on format {fmt!r} (exit {done.returncode}): "
                           f"{done.stderr.decode(errors='replace').strip()}")
    return path


# -- which rows are drawn ---------------------------------------------------------------

def _drawn_rows(node: Node, levels: int) -> set[int]:
    """Rows that get a box: `node`, and the children of calls expanded within `levels`."""
    trace = node.trace
    rows = {node.row}
    frontier = [node.row]
    for _ in range(levels - 1):
        nxt = []
        for r in frontier:
            if trace.kind(r) == NESTED:
                kids = trace.children(r)
                rows.update(kids)
                nxt.extend(kids)
        frontier = nxt
    read = {ref for r in rows for ref in trace.refs(r) if isinstance(ref, int)}
    # The callee's own argument (@0) is noise in a picture unless something reads it.
    return {r for r in rows if r in read or not (trace.kind(r) == ARGUMENT and trace.aux(r) == 0
                                                 and trace.parent(r) >= 0)}


# -- writing ----------------------------------------------------------------------------

class _DotWriter:
    def __init__(self, trace, drawn: set[int]):
        self.trace = trace
        self.drawn = drawn
        self.lines = [
            "digraph trace {",
            '  graph [rankdir=TB, compound=true, newrank=true, nodesep=0.25, ranksep=0.35, '
            'fontname="Helvetica", fontsize=11];',
            '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, '
            'margin="0.08,0.04", height=0.3];',
            '  edge [fontname="Helvetica", fontsize=9, arrowsize=0.6];',
        ]
        self.expanded: set[int] = set()

    def call(self, node: Node, levels: int, depth: int) -> None:
        """A call as a cluster (its header and body), or a single box."""
        trace = self.trace
        pad = "  " * (depth + 1)
        if trace.kind(node.row) != NESTED or levels < 2:
            self.box(node, pad)
            return
        self.expanded.add(node.row)
        self.lines.append(f"{pad}subgraph cluster_{node.row} {{")
        self.lines.append(f'{pad}  label={_quote(_cluster_title(node))}; labeljust=l; '
                          'style="rounded"; color="#7a9cc6"; fontcolor="#1f4e8c";')
        self.box(node, pad + "  ", header=True)
        for child in node.children:
            if child.row in self.drawn:
                self.call(child, levels - 1, depth + 1)
        self.lines.append(f"{pad}}}")

    def box(self, node: Node, pad: str, header: bool = False) -> None:
        kind = self.trace.kind(node.row)
        label = _header_label(node) if header else _label(node)
        extra = ", penwidth=1.6" if header else ""
        self.lines.append(f'{pad}n{node.row} [label={_quote(label)}, '
                          f'fillcolor="{_FILL[kind]}"{extra}];')

    def edges(self) -> None:
        trace = self.trace
        for row in sorted(self.drawn):
            for ref in trace.refs(row):
                if isinstance(ref, int) and ref in self.drawn:
                    self.lines.append(f"  n{self.source(ref)} -> n{row};")
            kind = trace.kind(row)
            parent = trace.parent(row)
            if kind == JUMP:
                nxt = trace.end(row)
                if parent >= 0 and nxt < trace.end(parent) and nxt in self.drawn:
                    target = _target_block(trace, row)
                    self.lines.append(f"  n{row} -> n{nxt} [label={_quote(target)}, {_CONTROL}];")
            elif kind == ARGUMENT and parent in self.expanded:
                self.lines.append(f"  n{parent} -> n{row} [{_BINDS}];")

    def source(self, row: int) -> int:
        """Where a reference to `row` starts: a call drawn as a cluster hands its
        result out of its return (so data flows down through the cluster)."""
        if row in self.expanded:
            kids = self.trace.children(row)
            if kids and self.trace.kind(kids[-1]) == RETURN and kids[-1] in self.drawn:
                return self.source(kids[-1]) if kids[-1] in self.expanded else kids[-1]
        return row

    def text(self) -> str:
        return "\n".join(self.lines + ["}"]) + "\n"


# -- labels ---------------------------------------------------------------------------

def _short(value) -> str:
    try:
        return _short_text(value)
    except Exception as exc:  # a user's object that fails to name or print itself
        return refused(value, exc)


def _short_text(value) -> str:
    if isinstance(value, float):
        text = repr(value)  # 2.0 stays 2.0; long fractions are cut to 6 digits
        return text if len(text) <= 10 else f"{value:.6g}"
    if callable(value) and not isinstance(value, type):
        return callable_name(value)
    if type(value).__repr__ is object.__repr__:
        return f"<{type(value).__name__}>"  # the default repr's address says nothing here
    text = _repr.repr(value)
    return " ".join(text.split())


def _ref(inp) -> str:
    # A constant input as its plain value: in a box, `@k` already marks the references
    # (and not every font has the dump's ⟨ ⟩).
    return _short(inp.value) if isinstance(inp, Const) else f"@{inp.index}"


def _call(node) -> str:
    fn = node.function
    name = callable_name(fn.value) if isinstance(fn, Const) else _ref(fn)
    if isinstance(fn, Const) and isinstance(fn.value, str) and fn.value.startswith("$"):
        name = fn.value
    if node.from_c:
        return f"{name}(...)"
    if node.parent is None:  # the root's arguments are values, not nodes of a caller
        args = [_short(a.value) for a in node.arguments]
        args += [f"{k}={_short(v.value)}" for k, v in node.keywords.items()]
        return f"{name}({', '.join(args)})"
    args = [_ref(a) for a in node.arguments] + [f"{k}={_ref(v)}" for k, v in node.keywords.items()]
    return f"{name}({', '.join(args)})"


def _label(node: Node) -> str:
    k = f"@{node.index}"
    kind = node.kind
    if kind == "argument":
        return f"{k} {_arg_name(node)}= {_short(node.value)}"
    if kind == "constant":
        return f"{k} constant {_short(node.value)}"
    if kind == "jump":
        return f"{k} {_jump_text(node)}"
    if kind == "return":
        word = "yield" if node.is_yield else "return"
        refs = node.referenced()
        what = f" @{refs[0].index}" if refs else ""
        return f"{k} {word}{what}\n→ {_short(node.value)}"
    arrow = "↯" if node.raised else "→"
    inside = ""
    if kind == "nested":
        inside = f"\n({node.trace.end(node.row) - node.row - 1} nodes inside)"
    return f"{k} {_call(node)}\n{arrow} {_short(node.value)}{inside}"


def _header_label(node: Node) -> str:
    arrow = "↯" if node.raised else "→"
    k = "" if node.parent is None else f"@{node.index} "
    return f"{k}{_call(node)}\n{arrow} {_short(node.value)}"


def _cluster_title(node: Node) -> str:
    return call_name(node.trace, node.row)


def _arg_name(node) -> str:
    position = node.position
    if position <= 0:
        return "" if position == 0 else f"{node.location.stmt} "
    try:
        return f"{node.ir.local_name(position - 1)} "
    except (IndexError, AttributeError):
        return ""


def _jump_text(node) -> str:
    target = f"goto §{node.target}"
    if node.value is None:
        return target
    cond = node.condition
    what = f"@{cond.index}" if cond is not None else "⟨?⟩"
    return f"{target}\nsince {what} == {node.value}"


def _target_block(trace, row: int) -> str:
    return f"§{node_at(trace, row).target}"


def _quote(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines as DOT's
    centred line break (an escaped backslash keeps DOT from reading `\\l`, `\\N`, ...
    inside values as its own escapes)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'
