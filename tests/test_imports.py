"""tracer's modules import each other without cycles (at module level or inside
functions), and the layers go one way: analysis, then the core's Python side, views,
tape."""

import ast
import graphlib
import os

import tracer

ROOT = os.path.dirname(tracer.__file__)


def _modules() -> dict[str, str]:
    """Dotted module name -> its file, for every Python module of the package."""
    found = {}
    for folder, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, name), os.path.dirname(ROOT))
                dotted = rel[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = os.path.join(folder, name)
    return found


def _imports(module: str, path: str, modules: dict[str, str]) -> set[str]:
    """The tracer modules `module` imports, anywhere in its code."""
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    out = set()
    tree = ast.parse(open(path).read())
    typing_only = set()  # imports under `if TYPE_CHECKING:` (annotations; none at run time)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            typing_only.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("tracer"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("tracer"):
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                out.add(sub if sub in modules or sub == "tracer._core" else source)
    out.discard(module)
    return {m for m in out if m in modules or m == "tracer._core"}


def test_no_import_cycles():
    modules = _modules()
    graph = {m: _imports(m, p, modules) - {"tracer"} for m, p in modules.items() if m != "tracer"}
    list(graphlib.TopologicalSorter(graph).static_order())  # raises CycleError on a cycle


def test_layers_import_downwards_only():
    modules = _modules()
    for m, p in modules.items():
        deps = _imports(m, p, modules)
        if m.startswith("tracer.analysis"):
            assert not {d for d in deps if d.startswith(("tracer.views", "tracer.tapes",
                                                         "tracer.api"))}, m
        if m.startswith("tracer.views"):
            assert not {d for d in deps if d.startswith(("tracer.tapes", "tracer.api", "tracer.export",
                                                         "tracer.compare", "tracer.cli"))}, m
        if m.startswith(("tracer.export", "tracer.compare")):
            assert not {d for d in deps if d.startswith(("tracer.cli", "tracer.tapes"))}, m
        if not m.startswith("tracer.ad") and m != "tracer":
            assert not {d for d in deps if d.startswith("tracer.ad")}, m  # ad is the top layer
        if not m.startswith(("tracer.suite", "tracer.cli")) and m != "tracer":
            assert not {d for d in deps if d.startswith("tracer.suite")}, m  # a user layer
