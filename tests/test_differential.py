"""Traced and untraced runs of the corpus agree on results, mutations and exceptions."""

import pytest

import tracer
from corpus import CASES


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
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
