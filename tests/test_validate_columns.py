"""tracer.validate checks its invariants on the columns (a pass of the core and numpy
over value addresses): each invariant broken on a trace still raises GraphError
naming the row, as the walk in Python did.  The traces are broken by editing the
columns of a trace's encoding (tracer.persist) and loading it again; the loader
refuses what would make a reader loop or read out of bounds, validate the rest."""

import numpy as np
import pytest

import tracer
from tracer.persist.encoded import decode_trace, encode_trace
from tracer.views.nodes import node_at
from tracer.views.validate import GraphError


def leaf(x):
    return x * 2.5


def helper(x):
    return leaf(x) + 1.0


def subject(x, y, nothing=None):
    z = helper(x) + y
    pair = (z, y)
    if x is None:
        return None
    return pair


@pytest.fixture
def root():
    return tracer.track(subject, 3.0, 4.0)


def rows(root, kind, parent=0):
    t = root.trace
    return [r for r in range(len(t)) if t.kind(r) == kind and t.parent(r) == parent]


def broken(root, **edits):
    """The root of `root`'s trace saved and loaded with `edits` (column -> function
    that edits a copy of it in place)."""
    enc = encode_trace(root.trace)
    for name, edit in edits.items():
        column = np.array(enc.columns[name])
        edit(column)
        enc.columns[name] = column
    return node_at(decode_trace(enc), 0)


def entry_of(root, value):
    """The value entry (of its encoding) of a row whose value is `value`."""
    t = root.trace
    (row,) = [r for r in range(len(t)) if t.value(r) is value][:1]
    return encode_trace(t).columns["value"][row]


def test_the_unbroken_trace_validates_after_a_round_trip(root):
    tracer.validate(broken(root))


def test_a_parameter_out_of_position(root):
    function, x, y, nothing = rows(root, 0)  # parameter 0 is the function called

    def edit(aux):
        aux[y] = 0
    with pytest.raises(GraphError, match=rf"^row {y}: parameter position 0, expected 2$"):
        tracer.validate(broken(root, aux=edit))


def test_a_reference_to_a_later_row(root):
    t = root.trace
    (call,) = rows(root, 3)
    add = [r for r in rows(root, 2) if r > call][0]
    first = t.columns()["ref_start"][add]

    def edit(refs):
        refs[first] = add + 1
    with pytest.raises(GraphError, match=rf"^row {add}: references row {add + 1}, which is not earlier$"):
        tracer.validate(broken(root, refs=edit))


def test_a_reference_into_another_call(root):
    t = root.trace
    (call,) = rows(root, 3)
    add = [r for r in rows(root, 2) if r > call][0]
    first = t.columns()["ref_start"][add]
    inside = call + 1

    def edit(refs):
        refs[first] = inside
    with pytest.raises(GraphError, match=rf"^row {add}: references row {inside} of another "
                                         rf"call \(parent {call}, not 0\)$"):
        tracer.validate(broken(root, refs=edit))


def test_a_node_left_open(root):
    add = rows(root, 2)[0]

    def edit(flags):
        flags[add] |= tracer._core.FLAGS["open"]
    with pytest.raises(GraphError, match=rf"^row {add}: primitive node still open in a finished trace$"):
        tracer.validate(broken(root, flags=edit))


def test_a_return_before_the_end_of_its_call(root):
    add = rows(root, 2)[0]

    def edit(kind):
        kind[add] = 6
    with pytest.raises(GraphError, match=rf"^row {add}: a return that is not the last node of its call$"):
        tracer.validate(broken(root, kind=edit))


def test_a_child_naming_another_parent(root):
    (call,) = rows(root, 3)
    (ret,) = rows(root, 6, parent=call)

    def edit(parent):
        parent[ret] = 0

    def recode(code):  # the loader checks a row's code is its parent call's
        code[ret] = code[call]
    with pytest.raises(GraphError, match=rf"^row {ret}: listed under {call} but its parent is 0$"):
        tracer.validate(broken(root, parent=edit, code=recode))


def test_a_subtree_beyond_its_parents_end(root):
    t = root.trace
    (call,) = rows(root, 3)
    (inner,) = rows(root, 3, parent=call)

    def edit(aux):
        aux[inner] = t.end(call) + 1
    with pytest.raises(GraphError, match=rf"^row {inner}: subtree end {t.end(call) + 1} beyond "
                                         rf"its parent's end {t.end(call)}$"):
        tracer.validate(broken(root, aux=edit))


def test_a_return_whose_value_is_not_its_operands(root):
    (call,) = rows(root, 3)
    ret = rows(root, 6, parent=call)[0]
    other = entry_of(root, root.value)

    def edit(value):
        value[ret] = other
    with pytest.raises(GraphError, match=rf"^row {ret}: returns .* but its operand \(row \d+\) is "):
        tracer.validate(broken(root, value=edit))


def test_a_call_whose_value_is_not_what_it_returned(root):
    (call,) = rows(root, 3)
    other = entry_of(root, root.value)

    def edit(value):
        value[call] = other
    with pytest.raises(GraphError, match=rf"^row {call}: the caller saw .* but the call returned "):
        tracer.validate(broken(root, value=edit))


def test_a_tuple_whose_item_is_not_its_input(root):
    (call,) = rows(root, 3)
    add = [r for r in rows(root, 2) if r > call][0]
    other = entry_of(root, root.value)

    def edit(value):
        value[add] = other
    with pytest.raises(GraphError, match=r"^row \d+: builds a tuple whose item 0 is "):
        tracer.validate(broken(root, value=edit))


def test_an_is_none_branch_that_disagrees_with_its_operand(root):
    x = rows(root, 0)[1]
    (jump,) = rows(root, 5)
    none = entry_of(root, None)

    def edit(value):
        value[x] = none
    with pytest.raises(GraphError, match=rf"^row {jump}: took the branch for `is None` == False, "
                                         rf"but its operand \(row {x}\) is None"):
        tracer.validate(broken(root, value=edit))


def test_validate_a_subtree(root):
    (call,) = rows(root, 3)
    tracer.validate(node_at(root.trace, call))
