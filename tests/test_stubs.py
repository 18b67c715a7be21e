"""The type stubs of the compiled core match the module built from it."""

import os
import subprocess
import sys

ALLOWLIST = os.path.join(os.path.dirname(__file__), "stubtest-allowlist.txt")


def test_core_stubs_match_the_compiled_module():
    done = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "tracer._core", "--allowlist", ALLOWLIST],
        capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
