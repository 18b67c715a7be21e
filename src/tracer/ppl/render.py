"""A picture of a model's choices: Graphviz DOT, drawn by export/dot.py's `dot` runner.

Each choice is a node labelled with its address's site, distribution and value,
grouped in a cluster per call that made it; edges are the relations between choices
(upstream -> downstream); observed choices are shaded, do-interventions dashed.
"""

from __future__ import annotations

from ..export.dot import write_picture
from .kinds import INTERVENED, OBSERVED

__all__ = ["to_dot", "render"]


def _q(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(choice_trace) -> str:
    """DOT text of the choices and their relations."""
    rel = choice_trace.relations()
    ids = {a: f"c{i}" for i, a in enumerate(choice_trace.choices)}
    groups: dict[str, list[str]] = {}
    for a in choice_trace.choices:
        groups.setdefault(a.rsplit("/", 1)[0] if "/" in a else "", []).append(a)
    lines = ["digraph model {", "  rankdir=TB;", '  node [shape=ellipse, fontname="Helvetica"];']
    for k, (call, members) in enumerate(groups.items()):
        lines.append(f"  subgraph cluster_{k} {{")
        lines.append(f"    label={_q(call)};")
        for a in members:
            c = choice_trace.choices[a]
            site = a.rsplit("/", 1)[-1]
            value = repr(c.value)
            value = value if len(value) <= 24 else value[:21] + "..."
            label = site + "\n" + f"{c.distribution} = {value}"
            attrs = [f"label={_q(label)}"]
            if c.kind == OBSERVED:
                attrs.append('style=filled, fillcolor="gray80"')
            elif c.kind == INTERVENED:
                attrs.append("style=dashed")
            lines.append(f"    {ids[a]} [{', '.join(attrs)}];")
        lines.append("  }")
    lines.append('  value [shape=box, label="return value"];')
    for a, ups in rel["choices"].items():
        for u in ups:
            lines.append(f"  {ids[u]} -> {ids[a]};")
    for u in rel["value"]:
        lines.append(f"  {ids[u]} -> value;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(choice_trace, path, *, format: str | None = None) -> str:
    """Draw the model to `path` (SVG, PNG, PDF by its suffix, or `format`; `.dot`
    writes the DOT text) with Graphviz's `dot`, as tracer.render does; returns the
    path.  Raises tracer's GraphvizNotFound when `dot` is missing."""
    return write_picture(to_dot(choice_trace), path, format=format)
