"""Helpers the test modules share."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name):
    """The module examples/NAME.py: the tests exercise the very code it shows."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def walk(node):
    """`node` and all its descendants, in row order."""
    yield node
    for child in node.children:
        yield from walk(child)
