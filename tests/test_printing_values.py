"""Printing never raises on a value and never shows a value the program did not have
(dicts in insertion order; an int too long for str(), a repr that raises or runs
long: a bounded placeholder with its type), in every printer; saving and pickling
keep any int exactly."""

import io
import pickle

import pytest

import tracer
from tracer.persist.encode import T_BIGINT, ValueTable, decode_values
from tracer.views.values import ValueRepr, short_value


class Refuses:
    def __repr__(self):
        raise RuntimeError("no")


class Chatty:
    def __repr__(self):
        return "x" * 10**6


class NotAString:
    def __repr__(self):
        return 5


class Deep:
    def __repr__(self):
        return repr(self)  # RecursionError


BIG = 10 ** 5000


def program():
    big = 10 ** 5000
    neg = -big
    order = {"b": 2, "a": 1, "c": 3}
    nested = [{"z": 1, "y": {"q": 0, "p": big}}]
    return big, neg, order, nested, Refuses(), Chatty(), NotAString(), Deep()


def dump(node, levels=3):
    out = io.StringIO()
    tracer.printlevels(node, levels, file=out)
    return out.getvalue()


def test_short_value_never_raises_and_keeps_insertion_order():
    assert short_value(BIG) == "<int with 5001 digits>"
    assert short_value(-BIG) == "<negative int with 5001 digits>"
    assert short_value(10 ** 4299).startswith("1000") and "..." in short_value(10 ** 4299)
    assert short_value(2 ** (1 << 21)) == "<int with 2097153 bits>"
    assert short_value({"b": 2, "a": 1, "c": 3}) == "{'b': 2, 'a': 1, 'c': 3}"
    assert short_value({3: "x", 1: "y"}) == "{3: 'x', 1: 'y'}"
    assert short_value([{"z": 1, "y": 2}, BIG]) == "[{'z': 1, 'y': 2}, <int with 5001 digits>]"
    assert short_value(Refuses()) == "<Refuses object: repr raised RuntimeError>"
    assert short_value([Refuses()]) == "[<Refuses object: repr raised RuntimeError>]"
    assert short_value(NotAString()) == "<NotAString object: repr raised TypeError>"
    assert short_value(Deep()) == "<Deep object: repr raised RecursionError>"
    assert len(short_value(Chatty())) <= 60
    assert short_value({i: i for i in range(10)}) == "{0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, ...}"


def test_a_value_repr_with_other_limits_is_as_safe():
    r = ValueRepr()
    r.maxdict = 2
    assert r.repr({"b": 1, "a": 2, "c": 3}) == "{'b': 1, 'a': 2, ...}"
    assert r.repr((BIG, Refuses())) == "(<int with 5001 digits>, <Refuses object: repr raised RuntimeError>)"


def test_every_printer_shows_what_the_program_had(traced):
    root = traced(program)
    text = dump(root)
    assert "<int with 5001 digits>::int" in text and "<negative int with 5001 digits>" in text
    assert "{'b': 2, 'a': 1, 'c': 3}::dict" in text
    assert "[{'z': 1, 'y': {'q': 0, 'p': <int with 5001 digits>}}]::list" in text
    assert "<Refuses object: repr raised RuntimeError>::Refuses" in text
    assert max(len(line) for line in text.splitlines()) < 1000  # Chatty's repr is cut
    for node in [root, *root.children]:
        assert tracer.format_node(node) == repr(node)
    dot = tracer.to_dot(root, 2)
    assert "int with 5001 digits" in dot and "{'b': 2, 'a': 1, 'c': 3}" in dot
    assert "program" in str(tracer.summary(root))
    pytest.importorskip("networkx")
    graph = tracer.to_networkx(root)
    assert any(d["value"] == "<int with 5001 digits>" for _, d in graph.nodes(data=True))


def test_pickling_and_saving_keep_any_int(traced, tmp_path):
    def ints():
        return 10 ** 5000, -(10 ** 5000) - 7, 2 ** 64, -(2 ** 63) - 1, {10 ** 30: "k"}, 7

    root = traced(ints)
    want = root.value
    back = pickle.loads(pickle.dumps(root))
    assert back.value == want and type(back.value[0]) is int
    tracer.validate(back)
    assert dump(back) == dump(root)
    pytest.importorskip("pyarrow")
    for name in ("t.parquet", "t.arrow"):
        tracer.save(root, tmp_path / name)
        loaded = tracer.load(tmp_path / name)
        assert loaded.value == want
        tracer.validate(loaded)
        assert dump(loaded) == dump(root)


def test_a_big_int_saved_as_decimal_text_still_loads():
    # Files written before ints were kept as bytes hold their decimal text.
    table = ValueTable(tag=[T_BIGINT], integer=[0], real=[0.0], text=[str(2 ** 70)],
                       blob=[None], type_name=[None], repr_text=[None], items=[None])
    assert decode_values(table) == [2 ** 70]


def test_a_loaded_trace_prints_its_dicts_in_insertion_order(traced, tmp_path):
    class Key:
        def __repr__(self):
            return "Key()"

    def keyed():
        return {"b": 1, Key(): 2, "a": 3}

    root = traced(keyed)
    assert "{'b': 1, Key(): 2, 'a': 3}" in dump(root)
    assert dump(pickle.loads(pickle.dumps(root))) == dump(root)
