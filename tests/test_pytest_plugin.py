"""The pytest plugin (tracer.suite.pytest_plugin, entry point pytest11), run in a
subprocess on a small suite: a baseline, then a changed version compared with it."""

import json
import subprocess
import sys
import textwrap

import pytest

import tracer
from tracer.suite import counts

pytest.importorskip("pyarrow", reason="--tracer-save writes Parquet files (tracer[arrow])")

LIBRARY = '''
import math


def norm(xs):
    return sum(x * x for x in xs) ** 0.5


class Stack:
    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)
        return len(self.items)
'''

TESTS = '''
import pytest
from mylib import Stack, norm


@pytest.fixture
def stack():
    return Stack()


def test_norm():
    assert norm([3.0, 4.0]) == 5.0


def test_push(stack):
    assert [stack.push(k) for k in range(3)] == [1, 2, 3]


class TestMore:
    def test_norm_of_many(self):
        assert round(norm([1.0] * 16), 9) == 4.0
'''


def write_suite(folder, library=LIBRARY, tests=TESTS):
    folder.mkdir(exist_ok=True)
    (folder / "mylib.py").write_text(textwrap.dedent(library))
    (folder / "test_mylib.py").write_text(textwrap.dedent(tests))
    (folder / "pytest.ini").write_text("[pytest]\n")  # the suite's own root


def run_pytest(folder, *args):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *map(str, args)], cwd=folder, capture_output=True, text=True)


def test_plugin_records_a_baseline_and_compares_a_changed_version(tmp_path):
    suite = tmp_path / "suite"
    write_suite(suite)
    # Inside the suite's folder, as a project keeps them: pytest picks its root
    # folder from the paths on its command line, and test ids are relative to it.
    base = suite / ".tracer" / "base.json"
    traces = suite / ".tracer" / "traces"
    done = run_pytest(suite, "--tracer", "--tracer-counts", base, "--tracer-save", traces)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
    assert "traced 3 tests; work counts by callee" in done.stdout
    data = json.loads(base.read_text())
    assert data["by"] == "callee" and len(data["tests"]) == 3
    norm_id = "test_mylib.py::test_norm"
    assert data["tests"][norm_id]["operator.pow"] == 1
    assert data["tests"]["test_mylib.py::test_push"]["Stack.push"] == 3
    # Each saved trace loads, validates and counts as the plugin counted.
    files = sorted(traces.glob("*.parquet"))
    assert len(files) == 3
    by_file = {}
    for path in files:
        root = tracer.load(path)
        tracer.validate(root)
        by_file[path.name] = dict(counts(root))
    assert sorted(by_file.values(), key=str) == sorted(data["tests"].values(), key=str)

    # The changed version: a square root by math.sqrt instead of ** 0.5.
    write_suite(suite, LIBRARY.replace("sum(x * x for x in xs) ** 0.5",
                                       "math.sqrt(sum(x * x for x in xs))"))
    report = run_pytest(suite, "--tracer", "--tracer-compare", base)
    assert report.returncode == 0, report.stdout + report.stderr   # reported, not failed
    out = report.stdout
    assert "work changed in 2 tests:" in out, out
    assert norm_id in out and "test_mylib.py::TestMore::test_norm_of_many" in out
    assert "math.sqrt" in out and "operator.pow" in out and "new" in out and "gone" in out
    assert "test_push" not in out.split("work changed")[1]
    failed = run_pytest(suite, "--tracer", "--tracer-compare", base, "--tracer-fail")
    assert failed.returncode == 1 and "3 passed" in failed.stdout
    # pow gone and sqrt new are changes at any threshold; 100 % keeps nothing else out.
    loose = run_pytest(suite, "--tracer", "--tracer-compare", base, "--tracer-threshold", "1")
    assert "work changed beyond 100.0% in 2 tests" in loose.stdout
    same = run_pytest(suite, "--tracer", "--tracer-compare", base, "-k", "push",
                      "--tracer-fail")
    assert same.returncode == 0 and "work unchanged in the 1 tests" in same.stdout


def test_a_traced_suite_fails_as_the_untraced_one(tmp_path):
    suite = tmp_path / "suite"
    write_suite(suite, tests=TESTS + '''

def test_wrong():
    assert norm([1.0, 1.0]) == 1.0, "norm is not 1"


def test_raises():
    with pytest.raises(ZeroDivisionError):
        1 / (norm([]) * 0)
''')
    plain = run_pytest(suite)
    traced = run_pytest(suite, "--tracer", "--tracer-counts", suite / "c.json")
    for out in (plain, traced):
        assert out.returncode == 1
        assert "1 failed, 4 passed" in out.stdout
        assert "AssertionError: norm is not 1" in out.stdout
    assert "tracer" not in plain.stdout.split("short test summary")[0].split("===")[-1]
    # The failing test's partial trace is counted too.
    assert len(json.loads((suite / "c.json").read_text())["tests"]) == 5


def test_plugin_refuses_bad_options(tmp_path):
    suite = tmp_path / "suite"
    write_suite(suite)
    out = run_pytest(suite, "--tracer", "--tracer-fail")
    assert out.returncode != 0 and "--tracer-fail needs --tracer-compare" in out.stderr
    (tmp_path / "bad.json").write_text("{}")
    out = run_pytest(suite, "--tracer", "--tracer-compare", tmp_path / "bad.json")
    assert out.returncode != 0 and "cannot read" in out.stderr
