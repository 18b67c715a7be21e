"""`python -m tracer`, run as a user runs it: a subprocess of this interpreter."""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import tracer

GEOM = """\
import random, sys

def geom(n, beta, rng):
    return n if rng.random() < beta else geom(n + 1, beta, rng)

print("geom:", geom(1, 0.5, random.Random(int(sys.argv[1]))))
"""


def tracer_cli(*args, cwd, timeout=120):
    """Run `python -m tracer ARGS` in `cwd`; (exit status, stdout, stderr)."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    done = subprocess.run([sys.executable, "-m", "tracer", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, encoding="utf-8", env=env,
                          timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


needs_pyarrow = pytest.mark.skipif(
    not hasattr(tracer, "load"),
    reason="tracer.load is missing: saving and reading traces is not in this build")


def _pyarrow():
    pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")


# -- run and call ----------------------------------------------------------------------

def test_run_a_script_prints_its_summary_and_top_levels(tmp_path):
    write(tmp_path, "prog.py", """\
        import sys
        def double(x):
            return 2 * x
        y = double(21)
        print("name", __name__, "argv", sys.argv[1:], "y", y)
        """)
    status, out, err = tracer_cli("run", "prog.py", "a", "--levels", cwd=tmp_path)
    assert status == 0, err
    lines = out.splitlines()
    # The script ran as a script: __main__, its own arguments (options after it are its).
    assert lines[0] == "name __main__ argv ['a', '--levels'] y 42"
    assert lines[1].startswith("trace of <module>(...): ")
    assert re.search(r"^double +prog.py:2 +1 +4 +4$", out, re.M)  # calls by function
    assert "⟨<module>⟩() → None::NoneType" in lines
    assert "  @2: [§1:%2 L4] ⟨double⟩(⟨21⟩) → 42::int" in lines
    assert "    @0" not in out  # two levels: the body of double is not printed
    assert err == ""


def test_run_levels_and_lines(tmp_path):
    write(tmp_path, "loop.py", """\
        def f(n):
            return sum(i * i for i in range(n))
        f(50)
        """)
    status, out, _ = tracer_cli("run", "--levels", "3", "--lines", "5", "--no-summary", "loop.py",
                                cwd=tmp_path)
    assert status == 0
    lines = out.splitlines()
    assert len(lines) == 6 and lines[0].startswith("⟨<module>⟩()")
    assert lines[-1].startswith("... ") and "more lines (--lines 0 prints all" in lines[-1]


def test_run_a_module_and_a_package(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/__main__.py", """\
        import sys
        from pkg.tool import shout
        print(shout(sys.argv[1]), __name__)
        """)
    write(tmp_path, "pkg/tool.py", """\
        import sys
        def shout(s):
            return s.upper() + "!"
        if __name__ == "__main__":
            print(shout(sys.argv[1]))
        """)
    status, out, err = tracer_cli("run", "--no-summary", "-m", "pkg.tool", "hey", "--levels", "9",
                                  cwd=tmp_path)
    assert status == 0, err
    assert out.splitlines()[0] == "HEY!"
    assert "⟨shout⟩(@" in out or "⟨shout⟩(⟨" in out
    status, out, err = tracer_cli("run", "-m", "pkg", "ho", cwd=tmp_path)
    assert status == 0, err
    assert out.splitlines()[0] == "HO! __main__"
    assert "shout" in out and "recorded calls" in out


def test_call_a_function_with_json_arguments(tmp_path):
    write(tmp_path, "lib.py", """\
        def add(a, b=1):
            return a + b
        class Box:
            @staticmethod
            def size(items):
                return len(items)
        """)
    status, out, err = tracer_cli("call", "lib:add", "--args", "[2]", "--kwargs", '{"b": 5}',
                                  "--no-summary", cwd=tmp_path)
    assert status == 0, err
    assert out.splitlines() == [
        "⟨add⟩(⟨2⟩, b=⟨5⟩) → 7::int",
        "  @0: [Arg:§1:%0] add::function",
        "  @1: [Arg:§1:%1] 2::int",
        "  @2: [Arg:§1:%2] 5::int",
        "  @3: [§1:%3 L2] ⟨operator.add⟩(@1, @2) → 7::int",
        "  @4: [§1:&1 L2] return @3 → 7::int",
    ]
    status, out, _ = tracer_cli("call", "lib:Box.size", "--args", '[["a", "b"]]', cwd=tmp_path)
    assert status == 0 and "→ 2::int" in out


def test_context_class_from_the_command_line(tmp_path):
    write(tmp_path, "deep.py", """\
        import tracer
        def down(n):
            return 0 if n == 0 else 1 + down(n - 1)
        class Shallow(tracer.context.DepthLimitContext):
            def __init__(self):
                super().__init__(2)
        """)
    status, out, err = tracer_cli("call", "deep:down", "--args", "[6]", cwd=tmp_path)
    assert status == 0, err
    assert "call depth 7" in out
    status, out, err = tracer_cli("call", "deep:down", "--args", "[6]", "--context", "deep:Shallow",
                                  cwd=tmp_path)
    assert status == 0, err
    assert "call depth 1" in out and "  @5: [§3:%4 L3] ⟨down⟩(@4) → 5::int" in out
    status, _, err = tracer_cli("call", "deep:down", "--args", "[6]", "--context", "deep:down",
                                cwd=tmp_path)
    assert status == 2 and "not a tracer.Context subclass or instance" in err


# -- the traced program's own failures ---------------------------------------------------

BOOM = """\
def inner(x):
    return 1 / x
print("before")
inner(0)
"""


def test_a_raising_script_exits_1_with_its_traceback_and_a_partial_trace(tmp_path):
    write(tmp_path, "boom.py", BOOM)
    status, out, err = tracer_cli("run", "--no-summary", "boom.py", cwd=tmp_path)
    assert status == 1
    assert err.startswith("Traceback (most recent call last):\n")
    assert 'boom.py", line 4, in <module>' in err and 'boom.py", line 2, in inner' in err
    assert err.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "tracer" + os.sep not in err  # only the program's frames
    assert out.splitlines()[:2] == [
        "before", "(the trace below is partial: script boom.py did not finish)"]
    assert "⟨<module>⟩() ↯ ZeroDivisionError('division by zero')::ZeroDivisionError" in out


@needs_pyarrow
def test_a_raising_script_still_saves_its_partial_trace(tmp_path):
    _pyarrow()
    write(tmp_path, "boom.py", BOOM)
    status, out, _ = tracer_cli("run", "--save", "boom.parquet", "boom.py", cwd=tmp_path)
    assert status == 1 and "saved 7 nodes to boom.parquet" in out
    status, out, err = tracer_cli("show", "boom.parquet", "--levels", "3", "--no-summary",
                                  cwd=tmp_path)
    assert status == 0, err
    assert "    @2: [§1:%2 L2] ⟨operator.truediv⟩(⟨1⟩, @1) ↯ ZeroDivisionError('division by zero')" \
        "::ZeroDivisionError" in out


def test_sys_exit_of_the_script_is_its_exit_status(tmp_path):
    write(tmp_path, "bye.py", "import sys\nprint('bye')\nsys.exit(3)\n")
    status, out, _ = tracer_cli("run", "--no-summary", "bye.py", cwd=tmp_path)
    assert status == 3 and out.startswith("bye\n")
    write(tmp_path, "fine.py", "import sys\nsys.exit(0)\n")
    assert tracer_cli("run", "fine.py", cwd=tmp_path)[0] == 0


# -- errors of the command line itself: exit status 2 --------------------------------------

@pytest.mark.parametrize("args, message", [
    (["run", "missing.py"], "can't open file 'missing.py': no such file"),
    (["run", "-m", "no_such_module_here"], "no module named 'no_such_module_here'"),
    (["run", "-m"], "-m needs a module name"),
    (["run"], "run needs a script"),
    (["run", "bad.py"], "SyntaxError in "),
    (["call", "lib"], "expected package.module:function, got 'lib'"),
    (["call", "no_such_module_here:f"], "cannot import module 'no_such_module_here': ModuleNotFoundError"),
    (["call", "broken:f"], "importing module 'broken' raised RuntimeError: broken on import"),
    (["call", "lib:nothing"], "module 'lib' has no function 'nothing'"),
    (["call", "lib:NUMBER"], "lib:NUMBER is a int, not something to call"),
    (["call", "lib:f", "--args", "[1,"], "--args is not valid JSON"),
    (["call", "lib:f", "--args", '{"a": 1}'], "--args must be a JSON list"),
    (["call", "lib:f", "--kwargs", "[1]"], "--kwargs must be a JSON object"),
    (["call", "lib:f", "--context", "lib:missing"], "module 'lib' has no context class 'missing'"),
    (["show", "missing.parquet"], "no such file: 'missing.parquet'"),
    (["run", "--save", "no/such/folder/x.parquet", "lib.py"], "folder"),
])
def test_command_line_errors_exit_2_with_a_clear_message(tmp_path, args, message):
    write(tmp_path, "lib.py", "NUMBER = 3\ndef f(a=0):\n    return a\n")
    write(tmp_path, "bad.py", "def f(:\n")
    write(tmp_path, "broken.py", "raise RuntimeError('broken on import')\n")
    status, out, err = tracer_cli(*args, cwd=tmp_path)
    assert status == 2, (out, err)
    assert message in err
    assert "Traceback" not in err


def test_no_command_prints_the_usage(tmp_path):
    status, _, err = tracer_cli(cwd=tmp_path)
    assert status == 2 and "usage: python -m tracer" in err and "run" in err


# -- progress ------------------------------------------------------------------------------

# Runs for 1.2 s whatever the machine's speed, recording nodes all along (few enough
# to keep the trace small: it sleeps a little between rounds).
LONG = """\
import time

def work(n):
    total = 0
    for i in range(n):
        total += i
    return total

end = time.monotonic() + 1.2
rounds = 0
while time.monotonic() < end:
    work(200)
    time.sleep(0.002)
    rounds += 1
print(rounds > 0)
"""


def test_progress_is_read_by_a_timer_and_off_when_stderr_is_no_terminal(tmp_path):
    write(tmp_path, "long.py", LONG)
    status, out, err = tracer_cli("run", "--no-summary", "--levels", "1", "long.py", cwd=tmp_path)
    assert status == 0 and out.startswith("True\n") and err == ""  # auto: stderr is a pipe
    status, out, err = tracer_cli("run", "--progress", "always", "--no-summary", "--levels", "1",
                                  "long.py", cwd=tmp_path)
    assert status == 0
    reports = [line for line in err.splitlines() if line.startswith("[tracer] ")]
    assert reports, err
    counts = [int(r.split()[1].replace(",", "")) for r in reports]
    assert counts == sorted(counts) and counts[-1] > 0
    assert all(" nodes recorded, " in r and " nodes/s, " in r for r in reports)


# -- pictures, saving, show and diff --------------------------------------------------------

def test_dot_text_needs_no_graphviz(tmp_path):
    write(tmp_path, "geom.py", GEOM)
    status, out, err = tracer_cli("run", "--dot", "geom.dot", "geom.py", "2", cwd=tmp_path)
    assert status == 0, err
    assert "drew geom.dot" in out
    assert (tmp_path / "geom.dot").read_text(encoding="utf-8").startswith("digraph trace {")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_dot_svg_through_graphviz(tmp_path):
    write(tmp_path, "geom.py", GEOM)
    status, _, err = tracer_cli("run", "--dot", "geom.svg", "--levels", "4", "geom.py", "2",
                                cwd=tmp_path)
    assert status == 0, err
    assert "<svg" in (tmp_path / "geom.svg").read_text(encoding="utf-8")


@needs_pyarrow
def test_save_show_and_diff_two_runs(tmp_path):
    _pyarrow()
    write(tmp_path, "geom.py", GEOM)
    for seed, name in ((2, "a.parquet"), (5, "b.parquet"), (2, "c.parquet")):
        status, out, err = tracer_cli("run", "--save", name, "geom.py", seed, cwd=tmp_path)
        assert status == 0, err
        assert f" nodes to {name}" in out
    status, out, err = tracer_cli("show", "a.parquet", "--levels", "1", cwd=tmp_path)
    assert status == 0, err
    assert out.startswith("trace of <module>(...): ") and "geom" in out
    status, out, err = tracer_cli("show", "a.parquet", "--node", "@6/@8", "--levels", "1",
                                  "--no-summary", cwd=tmp_path)
    assert status == 0, err
    assert out.splitlines() == ["@8: [§3:%7 L4] ⟨geom⟩(@7, @2, @3) → 3::int"]
    status, _, err = tracer_cli("show", "a.parquet", "--node", "@6/@99", cwd=tmp_path)
    assert status == 2 and "bad node path '@6/@99'" in err

    status, out, err = tracer_cli("diff", "a.parquet", "b.parquet", cwd=tmp_path)
    assert status == 1, err
    lines = out.splitlines()
    assert "first divergence: a branch went another way, in geom, line 4" in lines
    assert "  call path: <module> › @6 geom › @8 geom › @8 geom" in lines
    assert "  a: @6: [§1:&1 L4] goto §2 since @5 == True" in lines
    assert "  b: @6: [§1:&1 L4] goto §3 since @5 == False" in lines
    status, out, _ = tracer_cli("diff", "a.parquet", "c.parquet", cwd=tmp_path)
    assert status == 0 and out.startswith("no difference: ")
    write(tmp_path, "not-a-trace.parquet", "hello")
    status, _, err = tracer_cli("diff", "a.parquet", "not-a-trace.parquet", cwd=tmp_path)
    assert status == 2 and "cannot read 'not-a-trace.parquet'" in err
