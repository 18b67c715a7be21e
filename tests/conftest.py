"""Shared fixtures: every trace a test makes through `traced` is validated."""

import atexit
import os
import shutil
import tempfile

import pytest

# Plans cached on disk go to a directory of this test run (and its subprocesses),
# never the user's cache.
_PLAN_CACHE = tempfile.mkdtemp(prefix="tracer-test-plans-")
os.environ["TRACER_PLAN_CACHE_DIR"] = _PLAN_CACHE
os.environ.pop("TRACER_PLAN_CACHE", None)
atexit.register(shutil.rmtree, _PLAN_CACHE, ignore_errors=True)

import tracer  # noqa: E402


def track_and_validate(f, *args, ctx=None, **kwargs):
    """tracer.track, then tracer.validate on the result."""
    root = tracer.track(f, *args, ctx=ctx, **kwargs)
    tracer.validate(root)
    return root


@pytest.fixture
def traced():
    return track_and_validate


@pytest.fixture
def plan_dir(tmp_path):
    """The plan cache pointed at a fresh directory for one test (its state restored
    after)."""
    from tracer.analysis import cache
    saved = dict(cache._state)
    cache.set_plan_cache(tmp_path / "plans")
    yield tmp_path / "plans"
    cache._state.clear()
    cache._state.update(saved)
