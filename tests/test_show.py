"""What printlevels shows: what the code did, in IRTracker's form, alike on 3.12 and
3.13; every @k printed on a line is one of that node's references (a sibling)."""

import io
import re

import pytest

import tracer
from corpus import CASES
from helpers import walk
from tracer.analysis.bytecode import PY313


def line(f, k):
    """`L<n>` of the k-th line of f's body."""
    return f"L{f.__code__.co_firstlineno + k}"


def lines(root, levels=2):
    out = io.StringIO()
    tracer.printlevels(root, levels, file=out)
    return [re.sub(r" at 0x[0-9a-f]+", "", line.strip()) for line in out.getvalue().splitlines()]


def body(node):
    """The expression part of a node's line: no location, no value."""
    text = tracer.format_node(node)
    text = re.sub(r"^@\d+: (\[[^\]]*\] )?", "", text)
    text = re.sub(r"⟨[^⟩]*⟩", "⟨⟩", text)
    return re.split(" → | ↯ ", text)[0]


def check_printed_references(root):
    """Every @k a line prints is a reference of its node, and every reference is printed."""
    for node in walk(root):
        if node.parent is None or isinstance(node, tracer.views.ArgumentNode):
            continue
        printed = {int(k) for k in re.findall(r"@(\d+)", body(node))}
        assert printed == {r.index for r in node.referenced()}, tracer.format_node(node)


def raises_after_work(o):
    if o is None:
        return 0
    for key in o:
        pass
    a, b, c = (1, 2, 3)
    raise ValueError("bad" + str(a))


def test_raise_and_branches_read_as_the_code(traced):
    with pytest.raises(ValueError):
        tracer.track(raises_after_work, {1: 2})
    root = tracer.last_trace()
    tracer.validate(root)
    f = raises_after_work
    assert lines(root)[3:] == [
        f"@2: [§1:&1 {line(f, 1)}] goto §3 since @1 is not None",
        f"@3: [§3:%2 {line(f, 3)}] ⟨iter⟩(@1) → <dict_keyiterator object>::dict_keyiterator",
        f"@4: [§4:%3 {line(f, 3)}] ⟨next⟩(@3) → 1::int",
        f"@5: [§4:&1 {line(f, 3)}] goto §5 since @3 not exhausted",
        f"@6: [§5:&1 {line(f, 4)}] goto §4",
        f"@7: [§4:&1 {line(f, 3)}] goto §7 since @3 exhausted",
        f"@8: [§7:%5 {line(f, 5)}] $unpack(⟨(1, 2, 3)⟩)#0 → 1::int",
        f"@9: [§7:%5#1 {line(f, 5)}] @8#1 → 2::int",
        f"@10: [§7:%5#2 {line(f, 5)}] @8#2 → 3::int",
        f"@11: [§7:%9 {line(f, 6)}] ⟨str⟩(@8) → '1'::str",
        f"@12: [§7:%10 {line(f, 6)}] ⟨operator.add⟩(⟨'bad'⟩, @11) → 'bad1'::str",
        f"@13: [§7:%11 {line(f, 6)}] ⟨ValueError⟩(@12) → ValueError('bad1')::ValueError",
        f"@14: [§7:&1 {line(f, 6)}] raise @13 ↯ ValueError('bad1')::ValueError",
    ]
    check_printed_references(root)


def truths(items, o):
    n = 0
    if items:
        n += 1
    if o is None:
        n += 2
    if n > 2:
        n += 4
    try:
        raise KeyError(n)
    except KeyError:
        n += 8
    return n


def test_truth_none_and_exception_forms(traced):
    root = traced(truths, [0], None)
    text = [body(n) for n in root]
    assert "goto §2 since bool(@1) == True" in text  # a list's truth, not `@1 == True`
    assert "goto §4 since @2 is None" in text
    (gt,) = [n for n in root if getattr(n, "function", None) == tracer.views.Const(__import__("operator").gt)]
    assert f"goto §6 since @{gt.index} == True" in text
    (exc,) = [n for n in root if isinstance(n, tracer.views.SpecialCallNode) and body(n).startswith("$exc")]
    (raised,) = [n for n in root if body(n).startswith("raise")]
    assert body(exc) == f"$exception(@{raised.index})" and exc.referenced() == [raised]
    check_printed_references(root)


class P:
    def m(self, y):
        return y + 1


def test_a_bound_method_keeps_its_receiver(traced):
    p = P()
    assert lines(traced("a,b".split, ","), 1) == ["⟨str.split⟩(⟨'a,b'⟩, ⟨','⟩) → ['a', 'b']::list"]
    root = traced(p.m, 3)
    assert lines(root)[:3] == [
        "⟨P.m⟩(⟨<test_show.P object>⟩, ⟨3⟩) → 4::int",  # as its ArgumentNodes @1, @2 are
        "@0: [Arg:§1:%0] P.m::function",
        "@1: [Arg:§1:%1] <test_show.P object>::P",
    ]
    # A bound builtin as a value names its receiver.
    assert tracer.views.values.short_value("a,b".split) == "str.split of 'a,b'"
    assert tracer.views.values.short_value(dict.fromkeys) == "dict.fromkeys"


def sort_by_key(xs):
    return sorted(xs, key=lambda v: -v)


class Vec:
    def __init__(self, x):
        self.x = x

    def __add__(self, other):
        return Vec(self.x + other.x)


def adds(a, b):
    return (Vec(a) + Vec(b)).x


def test_frames_entered_from_c_print_their_arguments_as_values(traced):
    root = traced(sort_by_key, [3, 1])
    at = f"[§1:%2 {line(sort_by_key, 1)}]"
    assert lines(root, 3)[3:6] == [
        f"@2: {at} ⟨sorted⟩(@1, key=⟨sort_by_key.<locals>.<lambda>⟩) → [3, 1]::list",
        f"@0: {at} ⟨sort_by_key.<locals>.<lambda>⟩(⟨3⟩) → -3::int",
        f"@1: {at} ⟨sort_by_key.<locals>.<lambda>⟩(⟨1⟩) → -1::int",
    ]
    root = traced(adds, 1, 2)
    inits = [n for n in walk(root) if isinstance(n, tracer.views.NestedCallNode) and n.from_c]
    heads = [tracer.format_node(n).split("(")[0].split("] ")[1] for n in inits]
    assert heads == ["⟨Vec.__init__⟩"] * 2 + ["⟨Vec.__add__⟩", "⟨Vec.__init__⟩"]
    assert all(body(n) == "⟨⟩(⟨⟩, ⟨⟩)" for n in inits)  # the values, no @k of their own
    assert f"@0: [§1:%3 {line(adds, 1)}] ⟨Vec.__init__⟩(⟨<test_show.Vec object>⟩, ⟨1⟩) → " \
        "None::NoneType" in lines(root, 3)
    check_printed_references(root)


def numbers(n):
    x = n * 2
    yield 1
    yield x + 1


def test_a_resumed_generator_says_so(traced):
    root = traced(list, numbers(3))
    assert lines(root, 2) == [
        "⟨list⟩(⟨<generator object numbers>⟩) → [1, 7]::list",
        "@0: ⟨numbers⟩(⟨3⟩) → 1::int",
        "@1: resume ⟨numbers⟩ → 7::int",
        "@2: resume ⟨numbers⟩ → None::NoneType",
    ]
    assert [n.resumed for n in root] == [False, True, True]
    check_printed_references(root)


def loop_over_generator(n):
    total = 0
    for v in numbers(n):
        total += v
    return total


def test_exhausted_next_is_not_a_none_value(traced):
    root = traced(loop_over_generator, 3)
    nexts = [n for n in root if body(n).startswith("⟨⟩(@")]
    assert tracer.format_node(nexts[-1]).endswith("→ exhausted")
    assert all(n.value is not None for n in nexts[:-1])


def fields(x):
    return f"{x}|{x!r}|{x:>3}|{x!r:>5}"


def test_fstring_fields_are_alike_on_both_versions(traced):
    root = traced(fields, 3)
    got = [body(n) for n in root][2:]
    assert got[:3] == ["⟨⟩(@1)", "⟨⟩(@1, ⟨⟩)", "⟨⟩(@1, ⟨⟩)"]
    assert lines(root)[3:6] == [
        f"@2: [§1:%2 {line(fields, 1)}] ⟨format⟩(@1) → '3'::str",
        f"@3: [§1:%3 {line(fields, 1)}] ⟨format_value⟩(@1, ⟨repr⟩) → '3'::str",
        f"@4: [§1:%4 {line(fields, 1)}] ⟨format⟩(@1, ⟨'>3'⟩) → '  3'::str",
    ]
    # `{x!r:>5}`: 3.13 converts before it evaluates the spec (README, "Supported Pythons").
    if PY313:
        assert lines(root)[6:8] == [
            f"@5: [§1:%5 {line(fields, 1)}] ⟨repr⟩(@1) → '3'::str",
            f"@6: [§1:%6 {line(fields, 1)}] ⟨format⟩(@5, ⟨'>5'⟩) → '    3'::str"]
    else:
        assert lines(root)[6] == (
            f"@5: [§1:%5 {line(fields, 1)}] ⟨format_value⟩(@1, ⟨repr⟩, ⟨'>5'⟩) → '    3'::str")


def class_in_function(x):
    class A:
        def g(self):
            return x

    return A().g()


def test_class_in_a_function_is_alike_on_both_versions(traced):
    root = traced(class_in_function, 5)
    f, g = class_in_function, f"[§1:&1 {line(class_in_function, 3)}]"
    assert lines(root, 3) == [
        "⟨class_in_function⟩(⟨5⟩) → 5::int",
        "@0: [Arg:§1:%0] class_in_function::function",
        "@1: [Arg:§1:%1] 5::int",
        f"@2: [§1:%2 {line(f, 1)}] ⟨build_tuple⟩(⟨<cell: int object>⟩) → "
        "(<cell: int object>,)::tuple",
        f"@3: [§1:%3 {line(f, 1)}] ⟨__build_class__⟩(⟨class_in_function.<locals>.A⟩, ⟨'A'⟩) → "
        "test_show.class_in_function.<locals>.A::type",
        f"@0: [§1:%3 {line(f, 1)}] ⟨class_in_function.<locals>.A⟩() → None::NoneType",
        f"@4: [§1:%5 {line(f, 5)}] @3() → <test_show.class_in_function...>.A object>::A",
        f"@5: [§1:%6 {line(f, 5)}] ⟨class_in_function.<locals>.A.g⟩(@4) → 5::int",
        "@0: [Arg:§1:%0] class_in_function.<locals>.A.g::function",
        "@1: [Arg:§1:%1] <test_show.class_in_function...>.A object>::A",
        f"@2: [§1:%2 {line(f, 3)}] $load_deref() → 5::int",  # x, read from its cell
        f"@3: {g} return @2 → 5::int",
        f"@6: [§1:&1 {line(f, 5)}] return @5 → 5::int",
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_corpus_trace_prints_its_references(case):
    args, kwargs = case.arguments()
    try:
        root = tracer.track(case.func, *args, **kwargs)
    except BaseException:  # noqa: BLE001 - the cases that raise: their partial trace
        root = tracer.last_trace()
    out = io.StringIO()
    tracer.printlevels(root, 1000, file=out)
    assert len(out.getvalue().splitlines()) == len(root.trace)
    check_printed_references(root)


class Base:
    def __init__(self, v):
        self.v = v


class Derived(Base):
    def __init__(self, v):
        super().__init__(v + 1)


def derive(n):
    return [Derived(i).v for i in range(n)]


def test_super_method_call_keeps_its_receiver(traced):
    root = traced(derive, 3)
    calls = [n for n in walk(root) if isinstance(n, tracer.views.CallNode) and n.parent is not None
             and "Base.__init__" in tracer.format_node(n).split("(")[0]]
    assert len(calls) == 3
    for call in calls:
        fn, self_node = call.function.value, call.parent[1]
        if fn is Base.__init__:  # CPython has specialized super().m: (function, self)
            assert call.referenced()[0] == self_node and body(call) == "⟨⟩(@1, @3)"
        else:  # not yet: CPython pushed the bound method, which names its receiver
            assert fn.__func__ is Base.__init__ and fn.__self__ is self_node.value
            head = re.sub(" at 0x[0-9a-f]+", "", tracer.format_node(call)).split("(")[0]
            assert head.endswith("⟨Base.__init__ of <test_show.Derived object>⟩")
    # Once specialized (by the third call on both versions) the receiver is an edge.
    assert calls[-1].function.value is Base.__init__
