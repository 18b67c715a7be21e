"""Traced and untraced runs of the corpus agree on results, mutations and exceptions."""

import pytest

import tracer
from corpus import CASES
from tracer.bytecode import PY313


# Cases whose traces tracer.validate rejects until the core records the frames that C
# code or the interpreter enters with the instruction that entered them (issue 9):
# today a `yield from` delegate resumed, or `__bool__` called by 3.13's TO_BOOL, has
# offset -1.
OFFSET_BUG = ("core (issue 9, item 1): a frame entered from C while no op of its caller is "
              "open has offset -1, so its node has no location")
CORE_BUG_ON = {"tree_statistics": True, "generator_pipelines": True,
               "inventory_operations": PY313}


def _param(case):
    bug = CORE_BUG_ON.get(case.name, False)
    return pytest.param(case, id=case.name,
                        marks=pytest.mark.xfail(bug, strict=True, reason=OFFSET_BUG))


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_traced_equals_untraced(case):
    args, kwargs = case.arguments()
    if case.raises is not None:
        with pytest.raises(case.raises) as untraced:
            case.func(*args, **kwargs)
        args, kwargs = case.arguments()
        with pytest.raises(case.raises) as traced:
            tracer.track(case.func, *args, **kwargs)
        assert type(traced.value) is type(untraced.value)
        assert str(traced.value) == str(untraced.value)
        root = tracer.last_trace()
        assert root.raised and root.value is traced.value
        tracer.validate(root)
        return
    expected = case.func(*args, **kwargs)
    args, kwargs = case.arguments()
    root = tracer.track(case.func, *args, **kwargs)
    assert root.value == expected
    tracer.validate(root)
