"""Helpers and traced functions shared by the recorder's tests (test_recorder.py,
test_track_lifecycle.py)."""

import sys

import pytest

import tracer
from helpers import walk

MON = sys.monitoring
EV = MON.events
ALL_IDS = range(6)


# -- helpers ------------------------------------------------------------------------------

def calls_to(node, fn):
    """The direct children of `node` that are calls of the callable `fn` (by identity)."""
    return [c for c in node.children
            if isinstance(c, tracer.views.CallNode) and isinstance(c.function, tracer.views.Const)
            and c.function.value is fn]


def all_calls_to(node, fn):
    return [n for n in walk(node)
            if isinstance(n, tracer.views.CallNode) and n is not node
            and isinstance(n.function, tracer.views.Const) and n.function.value is fn]


def shape(node):
    """A comparable summary of the subtree: kinds, values, callees, references."""
    fn = None
    if isinstance(node, tracer.views.CallNode):
        f = node.function
        fn = ("const", f.value) if isinstance(f, tracer.views.Const) else ("ref", f.index)
    loc = node.location
    return (type(node).__name__, node.raised, node.value, fn,
            tuple(r.index for r in node.referenced()),
            None if loc is None else (loc.code, loc.offset),
            tuple(shape(c) for c in node.children))


def tools():
    return [MON.get_tool(i) for i in ALL_IDS]


def free_ids():
    return [i for i in ALL_IDS if MON.get_tool(i) is None]


def codes_of(root):
    return {n.code for n in walk(root) if n.code is not None}


def assert_released(free_before, codes):
    """Every id free before is free again, and no id has local events left on `codes`."""
    for i in free_before:
        assert MON.get_tool(i) is None, f"tool id {i} still held by {MON.get_tool(i)!r}"
        assert MON.get_events(i) == 0
    for code in codes:
        for i in ALL_IDS:
            assert MON.get_local_events(i, code) == 0, (i, code)


class HeldIds:
    """Claim tool ids for the test with names; skip if one is held by someone else."""

    def __init__(self, ids, prefix="test-holder"):
        self.ids = list(ids)
        self.names = {i: f"{prefix}-{i}" for i in self.ids}
        self.held = []

    def __enter__(self):
        try:
            for i in self.ids:
                if MON.get_tool(i) is not None:
                    pytest.skip(f"tool id {i} is already held by {MON.get_tool(i)!r}")
                MON.use_tool_id(i, self.names[i])
                self.held.append(i)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for i in self.held:
            MON.set_events(i, 0)
            MON.free_tool_id(i)
        self.held = []
        return False


# -- functions traced by the tests ------------------------------------------------------------

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def rsum(n):
    return 0 if n == 0 else n + rsum(n - 1)


WORK_SOURCE = """
def work(n):
    t = 0
    for i in range(n):
        if i % 3:
            t += i
    return t
"""
exec(WORK_SOURCE)  # defines work(); fresh_work() compiles new copies of the same source


STORED = {}


def boom(x):
    exc = ValueError(f"bad {x}")
    STORED["exc"] = exc
    raise exc


def calls_boom(x):
    y = x + 1
    return boom(y)


def catches_boom(x):
    try:
        v = boom(x)
    except ValueError as e:
        v = str(e)
    w = v + "!"
    return w


def catches_keyerror(d):
    try:
        z = d["missing"]
    except KeyError:
        z = -1
    return z * 2


def subscript_missing(d):
    return d["missing"]


class C:
    def __init__(self, a):
        self.a = a

    def m(self, x):
        return self.a + x


def g(a, b=0):
    return a + b


def gen(n):
    for i in range(n):
        yield i * 2
