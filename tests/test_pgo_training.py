"""The profile-guided build's training program (scripts/pgo_training.py) runs on this build.

setup.py builds the compiled core instrumented, runs the training program, and builds
it again laid out by the profile.  If the program breaks, setup.py only warns and
builds without a profile: every user's build silently loses the layout.  So the
program is run here, on the installed build, with the checks it makes of itself
(a traced run's result equals the untraced one's, the hooks ran).
"""

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "pgo_training.py"


def test_training_program_runs_on_this_build(tmp_path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", TRACER_PGO_STAGE="", HOME=str(tmp_path))
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip() == f"pgo training: done ({sys.version.split()[0]})"
    # It writes nothing where it runs (its plan cache is a temporary directory).
    assert list(tmp_path.iterdir()) == []


def test_training_program_refuses_a_build_other_than_the_staged_one(tmp_path):
    # setup.py names the staged copy it trains; an import of any other build (a stale
    # one in the source tree) must fail the training, not profile the wrong code.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", TRACER_PGO_STAGE=str(tmp_path))
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode != 0
    assert "not the build in" in proc.stderr
