"""One naming of callables (tracer.views.names), identical on live, loaded and
unpickled traces: the table's name columns, queries by callee, summary()."""

import json
import math
import pickle
import random

import numpy as np
import pytest

import tracer
from corpus import CASES
from helpers import trace_corpus_case
from tracer.views.names import callable_name, matches_name
from tracer.views.table import table

pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")

# The columns a loaded trace must answer exactly as the live one did.
COLUMNS = ("kind", "flags", "parent", "depth", "size", "code", "offset", "line", "target",
           "callee", "function", "file")


def loaded_copies(root, tmp_path):
    """The trace back from Parquet, from an Arrow file and from a pickle."""
    tracer.save(root, tmp_path / "t.parquet")
    tracer.save(root, tmp_path / "t.arrow")
    return {"parquet": tracer.load(tmp_path / "t.parquet"),
            "arrow": tracer.load(tmp_path / "t.arrow"),
            "pickle": pickle.loads(pickle.dumps(root))}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_table_columns_are_the_same_live_and_loaded(case, tmp_path):
    root = trace_corpus_case(case)
    live = table(root.trace)
    for how, back in loaded_copies(root, tmp_path).items():
        tracer.validate(back)
        got = table(back.trace)
        for name in COLUMNS:
            np.testing.assert_array_equal(got[name], live[name], err_msg=f"{how}: {name}")


class Scale:
    """A callable object (its calls are named by its type's __call__)."""

    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.k * x


def mixed(x):
    items = [0, 1, 2]
    items.insert(0, x)
    add = items.append            # a bound builtin: named without its receiver
    add(3)
    items.append(4)
    rng = random.Random(1)
    noise = rng.gauss(0, 1)
    text = json.dumps({"a": x})   # json calls its C encoder object
    return math.sqrt(x) + float(np.sqrt(x)) + len(items) + noise + len(text)


def test_callables_are_named_by_qualified_name():
    enc = json.encoder.c_make_encoder
    assert callable_name([].append) == "list.append"
    assert callable_name(list.append) == "list.append"
    assert callable_name(math.sqrt) == "math.sqrt"
    assert callable_name(np.sqrt) == "numpy.sqrt"
    assert callable_name(len) == "len"
    assert callable_name(random.Random(1).gauss) == "Random.gauss"
    assert callable_name(Scale(2)) == "Scale.__call__"
    if enc is not None:
        assert callable_name(enc).startswith("_json.")
    assert matches_name("re.Pattern.findall", "Pattern.findall")
    assert matches_name("math.sqrt", "sqrt") and not matches_name("math.sqrt", "qrt")


def test_names_on_live_and_loaded_traces(tmp_path):
    ctx = tracer.Context(primitives=[random.Random.gauss])
    root = tracer.track(mixed, 4.0, ctx=ctx)
    names = set(table(root.trace)["callee"].tolist())
    assert {"list.append", "list.insert", "math.sqrt", "numpy.sqrt", "len",
            "Random.gauss", "dumps"} <= names
    assert not [n for n in names if " at 0x" in n or " of " in n or n.endswith("?")]
    if json.encoder.c_make_encoder is not None:
        assert any(n.startswith("_json.") and n.endswith(".__call__") for n in names)
    # The summary past its first line (which counts the bytes of the columns).
    live_summary = str(tracer.summary(root)).split("\n", 1)[1]
    for how, back in loaded_copies(root, tmp_path).items():
        assert set(table(back.trace)["callee"].tolist()) == names, how
        assert str(tracer.summary(back)).split("\n", 1)[1] == live_summary, how


@pytest.mark.parametrize("how", ["live", "parquet", "arrow", "pickle"])
def test_callee_filters_take_names_functions_and_lists(how, tmp_path):
    ctx = tracer.Context(primitives=[random.Random.gauss])
    live = tracer.track(mixed, 4.0, ctx=ctx)
    root = live if how == "live" else loaded_copies(live, tmp_path)[how]

    def count(callee):
        return len(tracer.query(root, "descendants", callee=callee))

    assert count("list.append") == count("append") == 2 + count_appends_in_json(root)
    assert count(list.append) == count("list.append")
    assert count("math.sqrt") == count(math.sqrt) == 1
    assert count(random.Random.gauss) == count("Random.gauss") == count("gauss") == 1
    assert count(["gauss", "math.sqrt"]) == 2
    assert count([random.Random.gauss, math.sqrt, "numpy.sqrt"]) == 3
    assert count("Random") == 1          # the class call, not its methods
    assert count(json.dumps) == 1
    with pytest.raises(ValueError, match="empty"):
        count([])
    with pytest.raises(TypeError, match="callee must be"):
        count(3)


def count_appends_in_json(root):
    """list.append calls json's encoder made (none on CPython's C encoder)."""
    tab = table(root.trace)
    inside = tab["function"] != "mixed"
    return int(np.count_nonzero((tab["callee"] == "list.append") & inside))


def test_function_filter_matches_by_identity_live():
    def one(x):
        return x + 1

    def two(x):
        return x + 1

    def both(x):
        return one(x) + two(x) + one(x)

    root = tracer.track(both, 1)
    # Each function matches its own calls only.
    assert len(tracer.query(root, "descendants", callee=one)) == 2
    assert len(tracer.query(root, "descendants", callee=two)) == 1
