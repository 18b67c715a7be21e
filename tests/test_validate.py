"""tracer.validate: every node has a location its IR answers, every call with a
recorded body is closed by its return with the value its caller saw.

`validate` is checked against the same facts computed plainly from the node API, on
the corpus and on traces the recorder once got wrong (issue 9): frames entered from C
or while no instruction of the caller was being recorded had offset -1 (no
location), and a generator resumed by `yield from` or `await` lost the statements
that followed.
"""

import asyncio
import json
import re
import sys

import pytest

import tracer
from corpus import CASES
from helpers import walk
from tracer.analysis.bytecode import PY313

PY312 = not PY313


def problems(root):
    """What validate must report, found plainly from the public node API."""
    found = []
    for node in walk(root):
        if node.parent is None:
            continue
        if node.code is None:  # a frame that a traced C callable entered: no code holds it
            continue
        loc = node.location
        parameter = isinstance(node, tracer.views.ArgumentNode) and loc is not None and loc.offset < 0
        if loc is None or (loc.offset < 0 and not parameter):
            found.append((node.row, "no location"))
            continue
        try:
            node.ir[loc]
        except KeyError:
            found.append((node.row, "IR has no statement"))
    for call in walk(root):
        if not isinstance(call, tracer.views.NestedCallNode) or call.raised:
            continue
        kids = call.children
        body = call.from_c or (kids and isinstance(kids[0], tracer.views.ArgumentNode)
                               and kids[0].position == 0 and kids[0].location.offset < 0)
        if not body:
            continue
        last = kids[-1] if kids else None
        if not isinstance(last, tracer.views.ReturnNode):
            found.append((call.row, "no return"))
        elif last.value is not call.value and call.metadata.get("original") is not last.value:
            found.append((call.row, "value differs from its return's"))
        elif isinstance(last.referenced()[0], tracer.views.ConstantNode) and \
                last.ir[last.location].operand.startswith("%"):
            found.append((last.row, "computed value recorded as a constant"))
    return found


def validates(root):
    try:
        tracer.validate(root)
    except tracer.GraphError:
        return False
    return True


# -- traces the recorder gets right --------------------------------------------------
class Vec:
    def __init__(self, x):
        self.x = x

    def __add__(self, other):
        return Vec(self.x + other.x)


def numbers(n):
    x = n * 2
    yield 1
    yield x + 1


def plain(xs):
    total = Vec(0)
    for v in numbers(len(xs)):
        total = total + Vec(v)
    a, b = divmod(total.x, 3)
    try:
        {}[a]
    except KeyError:
        b += 1
    return sorted(xs, key=lambda v: -v), b, f"{a!r}"


def fails_inside(x):
    return inner_raises(x) + 1


def inner_raises(x):
    raise ValueError(x)


def test_right_traces_validate(traced):
    root = traced(plain, [3, 1, 2])
    assert root.value == ([3, 2, 1], 3, "2")
    assert problems(root) == []
    frames = [n for n in walk(root) if isinstance(n, tracer.views.NestedCallNode) and n.from_c]
    assert {n.function.value.__name__ for n in frames} >= {"__init__", "__add__", "numbers", "<lambda>"}
    assert [n.resumed for n in frames if n.function.value is numbers] == [False, True, True]


def test_a_call_that_raised_is_closed_by_its_exception():
    with pytest.raises(ValueError):
        tracer.track(fails_inside, 4)
    root = tracer.last_trace()
    tracer.validate(root)
    (call,) = [n for n in root if isinstance(n, tracer.views.NestedCallNode)]
    assert call.raised and isinstance(call.value, ValueError) and root.value is call.value
    assert tracer.format_node(call[-1]).endswith("raise @2 ↯ ValueError(4)::ValueError")


# -- traces the recorder gets wrong today ------------------------------------------
def inner():
    yield 1
    return 5


def outer(x):
    r = yield from inner()
    y = r * x
    yield y + 1


def delegates(x):
    g = outer(x)
    return [next(g), g.send(7)]


async def sleeps(x):
    await asyncio.sleep(0)
    return x + 1


def awaits(x):
    return asyncio.run(sleeps(x))


class Falsy:
    def __bool__(self):
        return False


class Empty:
    def __len__(self):
        return 0


def truth(o):
    return 1 if o else 0


def negation(o):
    return not o


def dumps(obj):
    return json.dumps(obj, indent=2)  # a generator with `yield from` on 3.12


# Traces the recorder once got wrong: name -> (function, argument).  Frames entered
# from C or by the interpreter itself (a delegated generator, __bool__/__len__ of a
# truth test, 3.13's TO_BOOL for `not`) and statements after a resume.
DEFECTS = {
    "yield_from": (delegates, 3),
    "await": (awaits, 1),
    "__bool__": (truth, Falsy()),
    "__len__": (truth, Empty()),
    "not": (negation, Falsy()),
    "json.dumps": (dumps, {"a": [1]}),  # a generator with `yield from` on 3.12
}


def track_defect(name):
    f, arg = DEFECTS[name]
    return tracer.track(f, arg)


@pytest.mark.parametrize("name", list(DEFECTS))
def test_validate_reports_what_the_node_api_shows(name):
    root = track_defect(name)
    assert root.value == DEFECTS[name][0](DEFECTS[name][1])
    found = problems(root)
    assert validates(root) == (found == []), found
    if found:
        with pytest.raises(tracer.GraphError) as err:
            tracer.validate(root)
        row = int(re.match(r"row (\d+)", str(err.value)).group(1))
        assert row in {r for r, _ in found}, (str(err.value), found)


@pytest.mark.parametrize("name", list(DEFECTS))
def test_every_node_has_a_location_its_ir_answers(name):
    root = track_defect(name)
    for node in walk(root):
        if node.parent is not None:
            assert node.ir[node.location] is not None, tracer.format_node(node)
    assert "[?]" not in "".join(tracer.format_node(n) for n in walk(root))


@pytest.mark.parametrize("name", list(DEFECTS))
def test_defect_traces_validate(name):
    root = track_defect(name)
    tracer.validate(root)
    assert problems(root) == []


def test_delegating_generator_values_after_resume():
    root = track_defect("yield_from")
    assert root.value == [1, 16]
    yields = [n for n in walk(root) if isinstance(n, tracer.views.ReturnNode) and n.is_yield
              and n.code is outer.__code__]
    back = yields[-1].backward()  # y + 1, y = r * x: today a constant with no edges
    assert [n.value for n in back if isinstance(n, tracer.views.PrimitiveCallNode)][:2] == [16, 15]
    assert any(isinstance(n, tracer.views.ArgumentNode) and n.value == 3 for n in back)


@pytest.mark.parametrize("case", [c for c in CASES if c.raises is None], ids=lambda c: c.name)
def test_validate_agrees_on_the_corpus(case):
    args, kwargs = case.arguments()
    root = tracer.track(case.func, *args, **kwargs)
    found = problems(root)
    assert validates(root) == (found == []), found


def test_settrace_does_not_break_validate_agreement():
    def traced_while_settrace(x):
        sys.settrace(lambda *a: None)
        try:
            return sorted([x, 1])
        finally:
            sys.settrace(None)

    root = tracer.track(traced_while_settrace, 2)
    assert root.value == [1, 2]
    found = problems(root)
    assert validates(root) == (found == []), found


def double_negation(x):
    return (not not x, 1)


def test_a_tuple_is_built_from_its_inputs_values(traced):
    root = traced(double_negation, 5)  # validate checks the tuple's items are its inputs'
    assert root.value == (True, 1)
    (tup,) = [n for n in root if isinstance(n, tracer.views.PrimitiveCallNode)
              and n.function.value.__name__ == "build_tuple"]
    item = tup.referenced()[0]
    assert item.value is True
    # 3.13 compiles `not not x` to one TO_BOOL, recorded as bool(x); 3.12 to two `not`s.
    expected = ["bool"] if PY313 else ["not_", "not_"]
    assert [n.function.value.__name__ for n in root
            if isinstance(n, tracer.views.PrimitiveCallNode) and n != tup] == expected


def test_a_truth_test_with_a_long_jump_records_no_bool(traced):
    # The branch after 3.13's TO_BOOL needs an EXTENDED_ARG here (a jump over 300 units).
    body = "\n".join(f"        y = y + {i}" for i in range(150))
    namespace = {}
    exec(f"def long_if(x):\n    y = 0\n    if x:\n{body}\n    return y\n", namespace)
    root = traced(namespace["long_if"], [1])
    assert root.value == sum(range(150))
    assert not [n for n in root if isinstance(n, tracer.views.PrimitiveCallNode)
                and n.function.value is bool]
    (jump,) = [n for n in root if isinstance(n, tracer.views.JumpNode)]
    assert tracer.format_node(jump).endswith("since bool(@1) == True")
