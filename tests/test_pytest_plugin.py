"""The pytest plugin (tracer.suite.pytest_plugin, entry point pytest11), run in a
subprocess on a small suite: a baseline, then a changed version compared with it."""

import json
import os
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
    # A wide terminal, whatever runs these tests: pytest cuts its summary lines to
    # the terminal's width, which would hide a difference past the cut.
    env = {**os.environ, "COLUMNS": "1000"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *map(str, args)], cwd=folder, capture_output=True, text=True,
                          env=env)


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


UNITTEST_TESTS = '''
import unittest
import warnings

from mylib import Stack, norm


class NormTests(unittest.TestCase):
    def setUp(self):
        self.stack = Stack()

    def test_norm(self):
        self.assertEqual(norm([3.0, 4.0]), 5.0)

    def test_push_in_subtests(self):
        for k in range(3):
            with self.subTest(k=k):
                self.assertEqual(self.stack.push(k), k + 1)

    @unittest.skip("skipped as untraced")
    def test_skipped(self):
        raise AssertionError("a skipped test ran")

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(norm([1.0]), 2.0)

    def test_fails(self):
        self.assertEqual(norm([1.0, 1.0]), 1.0, "norm is not 1")

    def test_returns_a_value(self):
        return norm([3.0, 4.0])
'''


def test_unittest_test_methods_are_traced_and_behave_as_untraced(tmp_path):
    # unittest.TestCase tests run through unittest's machinery, not pytest's call
    # of a test function: their test method is what gets traced (setUp, like a
    # fixture, runs untraced), with skips, expected failures, subtests, a failure
    # and a returned value (a DeprecationWarning) as untraced.
    suite = tmp_path / "suite"
    write_suite(suite, tests=UNITTEST_TESTS)
    plain = run_pytest(suite, "-rA", "-W", "error::DeprecationWarning")
    traced = run_pytest(suite, "-rA", "-W", "error::DeprecationWarning", "--tracer",
                        "--tracer-counts", suite / "c.json")
    summary = [line for line in plain.stdout.splitlines() if line.startswith(
        ("PASSED", "FAILED", "SKIPPED", "XFAIL", "SUBPASS"))]
    assert summary and summary == [line for line in traced.stdout.splitlines()
                                   if line.startswith(("PASSED", "FAILED", "SKIPPED", "XFAIL",
                                                       "SUBPASS"))]
    assert plain.returncode == traced.returncode == 1
    assert "AssertionError: 1.4142135623730951 != 1.0 : norm is not 1" in traced.stdout
    assert "It is deprecated to return a value that is not None" in traced.stdout
    # Every test method that ran was traced and counted (the skipped one never ran).
    counted = json.loads((suite / "c.json").read_text())["tests"]
    assert sorted(counted) == sorted(f"test_mylib.py::NormTests::{name}" for name in (
        "test_norm", "test_push_in_subtests", "test_expected_failure", "test_fails",
        "test_returns_a_value"))
    assert counted["test_mylib.py::NormTests::test_push_in_subtests"]["Stack.push"] == 3
    assert "traced 5 tests" in traced.stdout


def test_a_test_method_takes_any_fixture_name_traced(tmp_path):
    # The wrapper of a test class's method forwards pytest's fixtures as keywords:
    # none of them may collide with a parameter of its own.
    suite = tmp_path / "suite"
    write_suite(suite, tests=TESTS + '''

@pytest.fixture
def _self():
    return 41


class TestNames:
    def test_fixture_named_like_the_instance(self, _self, stack):
        assert stack.push(_self) == 1 and _self + 1 == 42
''')
    out = run_pytest(suite, "--tracer", "--tracer-counts", suite / "c.json")
    assert out.returncode == 0 and "4 passed" in out.stdout, out.stdout
    counted = json.loads((suite / "c.json").read_text())["tests"]
    name = "test_mylib.py::TestNames::test_fixture_named_like_the_instance"
    assert counted[name]["Stack.push"] == 1


def test_a_test_that_outgrows_the_cap_runs_on_untraced_and_is_not_counted(tmp_path):
    suite = tmp_path / "suite"
    write_suite(suite, tests=TESTS + '''

def test_long():
    assert sum(norm([float(k), 1.0]) > 0 for k in range(3000)) == 3000


def test_long_and_failing():
    total = sum(norm([float(k)]) for k in range(3000))
    assert total == 0, "untraced outcome"
''')
    out = run_pytest(suite, "--tracer", "--tracer-max-nodes", "5000",
                     "--tracer-counts", suite / "c.json")
    assert out.returncode == 1 and "1 failed, 4 passed" in out.stdout, out.stdout
    assert "AssertionError: untraced outcome" in out.stdout
    counted = json.loads((suite / "c.json").read_text())["tests"]
    assert sorted(counted) == ["test_mylib.py::TestMore::test_norm_of_many",
                               "test_mylib.py::test_norm", "test_mylib.py::test_push"]
    for name in ("test_long", "test_long_and_failing"):
        assert (f"test_mylib.py::{name}: not counted: its trace outgrew --tracer-max-nodes "
                "5,000 (recording stopped at") in out.stdout
    # The default cap is far above these tests: all five counted.
    whole = run_pytest(suite, "--tracer", "--tracer-counts", suite / "d.json")
    assert len(json.loads((suite / "d.json").read_text())["tests"]) == 5
    assert run_pytest(suite, "--tracer", "--tracer-max-nodes", "-1").returncode != 0
