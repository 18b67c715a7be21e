"""Helpers the test modules share."""

import importlib.util
from pathlib import Path

import pytest

import tracer

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


def trace_corpus_case(case):
    """The root of `case`'s trace; for a case that raises, the partial trace the
    raising call left (after checking it raised what the case says)."""
    args, kwargs = case.arguments()
    if case.raises is not None:
        with pytest.raises(case.raises):
            tracer.track(case.func, *args, **kwargs)
        return tracer.last_trace()
    return tracer.track(case.func, *args, **kwargs)
