"""tracer.last_trace(): strong for a call that raised, weak for one that returned."""

import gc
import weakref

import pytest

import tracer


class Box:
    """A value the traced call makes; weakly referenceable, so we can see it die."""


def make_box():
    return [Box()]


def make_box_and_fail(holder):
    box = Box()
    holder.append(weakref.ref(box))
    raise ValueError("after making a box")


def test_returned_call_is_held_while_the_caller_holds_it():
    root = tracer.track(make_box)
    again = tracer.last_trace()
    assert again is not None
    assert again.trace is root.trace
    assert again.value is root.value
    tracer.validate(again)


def test_returned_call_is_freed_when_the_caller_drops_it():
    root = tracer.track(make_box)
    box = weakref.ref(root.value[0])
    del root
    gc.collect()
    assert box() is None, "last_trace() kept the values of a trace the caller dropped"
    assert tracer.last_trace() is None


def test_raised_call_is_kept():
    holder = []
    with pytest.raises(ValueError):
        tracer.track(make_box_and_fail, holder)
    gc.collect()
    root = tracer.last_trace()
    assert root is not None and root.raised
    assert isinstance(root.value, ValueError)
    assert holder[0]() is not None  # the trace keeps the call's values
    tracer.validate(root)


def test_a_returned_call_releases_the_raised_one_before_it():
    holder = []
    with pytest.raises(ValueError):
        tracer.track(make_box_and_fail, holder)
    root = tracer.track(make_box)
    gc.collect()
    assert holder[0]() is None, "the earlier raised call's trace is still kept"
    assert tracer.last_trace().trace is root.trace


def test_tracking_error_keeps_the_partial_trace():
    class Failing(tracer.Context):
        def trackedprimitive(self, node):
            raise RuntimeError("hook fails")

    with pytest.raises(tracer.TrackingError) as err:
        tracer.track(make_box, ctx=Failing())
    gc.collect()
    root = tracer.last_trace()
    assert root is not None
    assert err.value.result is not None
