"""The IR users see: statements for arguments, method calls as written, and the same
text on 3.12 and 3.13."""

import pytest

import tracer
from helpers import walk


class P:
    def m(self, y):
        return y + 1


def method_call(p):
    return p.m(2)


def str_method(s):
    return s.split(",") + "a,b".split(",")


def class_in_function(x):
    class A:
        def g(self):
            return x

    return A().g()


def sort_by_key(xs):
    return sorted(xs, key=lambda v: -v)


def fields(x):
    return f"{x}|{x!r}|{x:>3}"


def resumed(n):
    x = n * 2
    yield 1
    yield x + 1


def statements(f):
    return [s.text for block in tracer.ir(f).blocks for s in block]


def test_every_argument_node_has_its_statement(traced):
    root = traced(method_call, P())
    args = [n for n in walk(root) if isinstance(n, tracer.views.ArgumentNode)]
    assert len(args) == 5  # meth, p; P.m, self, y
    texts = [n.ir[n.location].text for n in args]
    assert texts == ["%0", "%1 = p", "%0", "%1 = self", "%2 = y"]
    assert all(n.ir[n.location].id == n.location.stmt for n in args)


def test_a_carried_argument_names_its_local(traced):
    root = traced(list, resumed(3))
    later = root[1]  # the generator resumed for its second item
    (x,) = [n for n in later if isinstance(n, tracer.views.ArgumentNode)]
    assert x.value == 6 and x.location.stmt == "x"
    stmt = x.ir[x.location]
    assert stmt.id == "x" and stmt.offset == x.location.offset and stmt.line == x.location.line


def test_method_calls_read_as_written():
    assert statements(method_call) == ["%2 = p.m(2)", "return %2"]
    assert statements(str_method)[:2] == ["%2 = s.split(',')", "%3 = 'a,b'.split(',')"]


def test_class_and_lambda_are_named_by_their_qualname():
    assert statements(class_in_function)[:4] == [
        "%2 = build_tuple(x)",
        "%3 = __build_class__(class_in_function.<locals>.A, 'A')",
        "A = %3",
        "%5 = A()",
    ]
    assert statements(class_in_function)[4] == "%6 = %5.g()"
    assert statements(sort_by_key)[0] == "%2 = sorted(xs, key=sort_by_key.<locals>.<lambda>)"


def test_fstring_fields_read_alike():
    texts = statements(fields)
    assert texts[0] == "%2 = format(x)"
    assert texts[1] == "%3 = format_value(x, repr)"
    assert texts[2] == "%4 = format(x, '>3')"


def test_control_statements_name_their_operand():
    def f(x, it):
        for i in it:
            if i is None:
                raise ValueError(i)
        return x

    ir = tracer.ir(f)
    control = [s for block in ir.blocks for s in block if s.id.startswith("&")]
    by_text = {s.text: s.operand for s in control}
    assert by_text["return x"] == "x"
    (exhausted,) = [t for t in by_text if t.endswith("exhausted")]
    assert exhausted.endswith(f"if {by_text[exhausted]} exhausted")
    assert any(t.startswith("raise %") for t in by_text)


def test_unknown_offset_is_a_clear_key_error():
    ir = tracer.ir(method_call)
    with pytest.raises(KeyError, match="no statement at offset 1"):
        ir[1]
    with pytest.raises(KeyError, match="no location"):
        ir[None]
