"""Shared fixtures: every trace a test makes through `traced` is validated."""

import pytest

import tracer


def track_and_validate(f, *args, ctx=None, **kwargs):
    """tracer.track, then tracer.validate on the result."""
    root = tracer.track(f, *args, ctx=ctx, **kwargs)
    tracer.validate(root)
    return root


@pytest.fixture
def traced():
    return track_and_validate
