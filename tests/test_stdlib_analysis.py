"""The analysis handles every code object reachable from the importable stdlib."""

import json
import os
import subprocess
import sys
from pathlib import Path


def test_every_stdlib_code_object_analyses():
    script = Path(__file__).with_name("stdlib_walk.py")
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=600, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["failures"] == 0, result["errors"]
    assert result["modules"] > 200
    assert result["codes"] > 5000
