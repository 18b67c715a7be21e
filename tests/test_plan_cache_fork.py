"""A process forked while another thread holds the plan cache's lock still builds
and caches plans (the lock is made anew in the child)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from tracer.analysis import cache
from tracer.analysis.plan import build_plan


def doubled(x):
    return [v * 2 for v in range(x)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")  # the point
def test_a_child_forked_while_the_lock_is_held_builds_plans(plan_dir):
    held, release = threading.Event(), threading.Event()

    def holder():
        with cache._lock:
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: the holding thread does not exist here
        code = 1
        try:
            build_plan(doubled.__code__)
            cache.flush()
            code = 0
        finally:
            os._exit(code)
    release.set()
    thread.join()
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung on the plan cache's lock")
    assert os.waitstatus_to_exitcode(done[1]) == 0
    assert list(plan_dir.rglob("*.pack"))  # the child wrote its plan


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
