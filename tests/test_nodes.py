"""Node views, the arena's columns, the IR and the core/plan contract."""

import math

import numpy as np
import pytest

import tracer
from tracer import _core
from tracer.analysis import microops


def f(x, y=2):
    z = x * y
    return math.sqrt(z) + z


def test_micro_op_numbering_matches_core():
    assert _core.MICRO_OPS == microops.MICRO_OPS


def test_views_compare_equal_and_hash_alike(traced):
    root = traced(f, 8.0)
    a, b = root[3], root.children[3]
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != root[4]
    assert {a, b, root[4]} == {root[3], root[4]}
    assert root[3].parent == root and root.parent is None
    assert [n.index for n in root] == list(range(len(root)))


def test_values_locations_and_ir(traced):
    root = traced(f, 8.0, y=3)
    assert root.value == f(8.0, y=3)
    assert root.keywords == {"y": root.inputs()[-1]} and root.keywords["y"].value == 3
    mul = root[3]
    assert mul.value == 24.0 and mul.referenced() == [root[1], root[2]]
    loc = mul.location
    assert loc.code is f.__code__ and loc.line == f.__code__.co_firstlineno + 1
    assert loc.block == 1 and mul.ir[loc].text == "%3 = operator.mul(x, y)"
    store = root[4]
    assert isinstance(store, tracer.views.ConstantNode) is False  # z = x * y stores a node
    sqrt = next(n for n in root if getattr(n, "function", None) and n.function.value is math.sqrt)
    assert sqrt.referenced() == [mul]
    assert "%" in str(tracer.ir(f)) and "§1" in str(tracer.ir(f))


def test_repr_is_one_bounded_line(traced):
    def big():
        return list(range(10_000))

    root = traced(big)
    text = repr(root)
    assert "\n" not in text and len(text) < 300


def test_metadata_is_sparse_and_kept(traced):
    root = traced(f, 2.0)
    assert root.trace.metadata == {}
    root[3].metadata["note"] = 1
    assert root[3].metadata == {"note": 1}
    assert list(root.trace.metadata) == [root[3].row]


def test_columns_are_zero_copy_numpy(traced):
    root = traced(f, 2.0)
    cols = root.trace.columns()
    n = len(root.trace)
    assert cols["kind"].shape == (n,) and cols["parent"].dtype == np.int32
    assert cols["parent"][0] == -1 and (cols["parent"][1:] >= 0).all()
    assert cols["ref_start"].shape == (n + 1,) and cols["refs"].shape == (root.trace.num_refs,)
    assert not cols["kind"].flags.writeable
    kinds = [tracer.views.ArgumentNode, tracer.views.ConstantNode, tracer.views.PrimitiveCallNode,
             tracer.views.NestedCallNode, tracer.views.SpecialCallNode, tracer.views.JumpNode, tracer.views.ReturnNode]
    for node in root:
        assert isinstance(node, kinds[cols["kind"][node.row]])
    assert root.trace.nbytes > 0


def test_same_structure_on_every_version(traced):
    # Superinstructions, TO_BOOL and CALL_KW (3.13) must not show: this signature is
    # the same on 3.12 and 3.13.
    def g(a, b):
        c = a if a < b else b
        d = dict(key=c, other=a)
        return [v for v in (a, b) if v] + [d["key"]]

    root = traced(g, 1, 2)
    sig = [(n.kind, getattr(getattr(n, "function", None), "value", None).__name__
            if n.kind in ("primitive", "nested") else None) for n in root]
    names = [s for s in sig if s[1]]
    assert [name for _, name in names] == [
        "lt", "dict", "build_tuple", "iter", "build_list", "next", "list_append", "next",
        "list_append", "getitem", "build_list", "add",
    ]
    # The exhausted third `next` records no node: its JumpNode says the loop ended.
    exits = [n for n in root if n.kind == "jump" and n.value is False]
    assert len(exits) == 1 and exits[0].condition.function.value is iter
    assert root.value == g(1, 2)
    call = next(n for n in root if n.kind == "primitive" and n.function.value is dict)
    assert set(call.keywords) == {"key", "other"}


def test_children_is_a_lazy_sequence_of_views():
    import collections.abc

    def f(x):
        a = x + 1
        b = a * 2
        return b - x

    root = tracer.track(f, 3)
    kids = root.children
    as_list = list(kids)
    assert isinstance(kids, collections.abc.Sequence)
    assert len(kids) == len(as_list) == len(root) == 6
    assert kids == as_list and kids == tuple(as_list) and kids == root.children
    assert kids[0] == as_list[0] and kids[-1] == as_list[-1]
    assert kids[1:3] == as_list[1:3] and list(reversed(kids)) == as_list[::-1]
    assert kids.rows.tolist() == [n.row for n in as_list]
    assert [kids.index(n) for n in as_list] == list(range(6))
    assert as_list[2] in kids and root not in kids and kids.count(as_list[2]) == 1
    with pytest.raises(ValueError, match="not a child"):
        kids.index(root)
    with pytest.raises(ValueError):
        kids.index(as_list[0], 1)
    with pytest.raises(IndexError):
        kids[6]
    assert [type(n) for n in root] == [type(n) for n in as_list]
    assert repr(kids) == repr(as_list)
    import pickle
    back = pickle.loads(pickle.dumps(kids))
    assert type(back) is list and len(back) == len(as_list)
    assert [n.value for n in back[1:]] == [n.value for n in as_list[1:]]  # [0]: a local function
