"""Per-call timing recorded in the core (Context(timing=True)): the timing table, the
per-function time table of summary() and the CLI, saved and pickled traces, and the
Chrome trace-event export checked by a reader of that format."""

import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tracer
from tracer import _core
from tracer.context import Context
from tracer.export import chrome
from tracer.export.timing import call_times, function_times

TIMED = Context(timing=True)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def leaf(seconds):
    time.sleep(seconds)
    return seconds


def mid(seconds):
    return leaf(seconds) + leaf(seconds)


def countdown(n):
    while n:
        yield n
        n -= 1


def fails():
    raise ValueError("no")


def mixed():
    try:
        fails()
    except ValueError:
        pass
    total = sum(countdown(3))
    return total + fib(6) + sum(sorted([3, 1, 2], key=lambda x: -x))


def test_timing_is_off_by_default_and_costs_no_column(traced):
    root = traced(mixed)
    assert _core.timing_table(root.trace) is None
    assert call_times(root.trace) is None and function_times(root.trace) is None
    s = tracer.summary(root)
    assert not s.timed and s.times is None and "Context(timing=True)" in s.notes[0]
    timed = traced(mixed, ctx=TIMED)
    # The timing table is not a node column: the columns' bytes are the same.
    assert timed.trace.nbytes == root.trace.nbytes


def test_every_activation_is_stamped_within_the_call_and_nested(traced):
    before = time.monotonic_ns()
    root = traced(mixed, ctx=TIMED)
    after = time.monotonic_ns()
    table = _core.timing_table(root.trace)
    frames, _ = root.trace.frames()
    # One entry per followed frame's activation (the root's body included): the
    # raising call, each resumption of the generator, the key function's calls.
    assert sorted(table["row"].tolist()) == sorted(frames.tolist())
    assert table["row"][0] == 0
    kinds = root.trace.columns()["kind"][table["row"]]
    assert (kinds == int(_core.NodeKind.K_NESTED)).all()
    slack = 1_000_000  # ticks scaled to the monotonic clock: far below a millisecond off
    assert (table["start"] >= before - slack).all() and (table["end"] <= after + slack).all()
    assert (table["end"] >= table["start"]).all()
    inner = table["parent"] >= 0
    parent = table[table["parent"][inner]]
    assert (table["start"][inner] >= parent["start"]).all()
    assert (table["end"][inner] <= parent["end"]).all()
    # The parent entry is the innermost timed ancestor by rows too.
    assert np.array_equal(table["parent"], _core.timing_parents(table["row"], root.trace.columns()["aux"]))
    names = {f.function: f.calls for f in function_times(root.trace)}
    assert names["countdown"] == 4          # started, resumed twice, resumed to return
    assert names["fails"] == 1 and names["fib"] == 25
    assert names["mixed.<locals>.<lambda>"] == 3


def test_inclusive_and_self_time(traced):
    root = traced(mid, 0.03, ctx=TIMED)
    times = call_times(root.trace)
    # Inclusive time is self time plus the timed activations directly inside.
    children = np.bincount(times.parent[times.parent >= 0],
                           weights=times.inclusive[times.parent >= 0], minlength=len(times))
    assert np.array_equal(times.own + children.astype(np.int64), times.inclusive)
    by_name = {f.function: f for f in tracer.summary(root).times}
    leaf_t, mid_t = by_name["leaf"], by_name["mid"]
    assert leaf_t.calls == 2 and leaf_t.total >= 0.06 and leaf_t.self == leaf_t.total
    assert leaf_t.per_call == pytest.approx(leaf_t.total / 2)
    assert mid_t.total >= leaf_t.total and mid_t.self < 0.03
    assert mid_t.share == pytest.approx(1.0)
    assert 0.5 < leaf_t.share <= 1.0


def test_a_recursive_functions_total_counts_its_outermost_calls(traced):
    root = traced(fib, 12, ctx=TIMED)
    [f] = tracer.summary(root).times
    times = call_times(root.trace)
    assert f.calls == len(times) == 465
    assert f.total == pytest.approx(times.inclusive[0] / 1e9)   # the root call's time
    assert f.self == pytest.approx(f.total)                      # all of it in fib's bodies


def test_summary_prints_the_time_table_and_of_a_subtree(traced):
    root = traced(mixed, ctx=TIMED)
    text = str(tracer.summary(root))
    assert "time by function" in text and "per call us" in text and "self s" in text
    fib_node = next(n for n in root if n.kind == "nested" and n.function.value is fib)
    sub = tracer.summary(fib_node)
    assert [f.function for f in sub.times] == ["fib"] and sub.times[0].calls == 25
    assert sub.seconds == pytest.approx(sub.times[0].total)
    assert sub.times[0].share == pytest.approx(1.0)


def test_timing_must_be_a_bool():
    with pytest.raises(TypeError, match="timing must be True or False"):
        Context(timing="yes")


def test_a_timed_call_that_raises_keeps_its_times():
    with pytest.raises(ValueError):
        tracer.track(fails, ctx=TIMED)
    root = tracer.last_trace()
    tracer.validate(root)
    table = _core.timing_table(root.trace)
    assert len(table) == 1 and table["end"][0] >= table["start"][0]


@pytest.mark.parametrize("how", ["parquet", "arrow", "pickle"])
def test_saved_and_pickled_traces_carry_the_timing(traced, tmp_path, how):
    root = traced(mixed, ctx=TIMED)
    if how == "pickle":
        loaded = pickle.loads(pickle.dumps(root))
    else:
        pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")
        path = tmp_path / f"t.{how}"
        tracer.save(root, path)
        loaded = tracer.load(path)
    tracer.validate(loaded)
    assert np.array_equal(_core.timing_table(loaded.trace), _core.timing_table(root.trace))
    assert tracer.summary(loaded).times == tracer.summary(root).times
    # (The first line holds the columns' bytes, which a loaded trace counts otherwise.)
    assert (str(tracer.summary(loaded)).splitlines()[1:]
            == str(tracer.summary(root)).splitlines()[1:])


def test_the_file_has_timing_columns_only_when_timed(traced, tmp_path):
    pa = pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")
    import pyarrow.parquet as pq

    timed, plain = traced(mixed, ctx=TIMED), traced(mixed)
    tracer.save(timed, tmp_path / "timed.parquet")
    tracer.save(plain, tmp_path / "plain.parquet")
    assert "start_ns" not in pq.read_table(tmp_path / "plain.parquet").column_names
    table = pq.read_table(tmp_path / "timed.parquet")
    rows = np.flatnonzero(table["start_ns"].is_valid().to_numpy(zero_copy_only=False))
    assert np.array_equal(rows, np.sort(_core.timing_table(timed.trace)["row"]))
    # Time by callee in one Arrow query: the root's duration is the longest.
    dur = pa.compute.subtract(table["end_ns"], table["start_ns"])
    assert pa.compute.max(dur).as_py() == call_times(timed.trace).inclusive[0]
    assert _core.timing_table(tracer.load(tmp_path / "plain.parquet").trace) is None


def test_a_damaged_timing_table_is_refused(traced):
    root = traced(mixed, ctx=TIMED)
    table = _core.timing_table(root.trace)
    other = traced(mixed)
    bad = table.copy()
    bad["row"][1] = 1   # an argument row
    with pytest.raises(ValueError, match="no call"):
        _core.set_timing_table(other.trace, bad)
    bad = table.copy()
    bad["end"][1] = bad["start"][1] - 1
    with pytest.raises(ValueError, match="ends before it starts"):
        _core.set_timing_table(other.trace, bad)
    bad = table.copy()
    bad["parent"][0] = 3
    with pytest.raises(ValueError, match="parent"):
        _core.set_timing_table(other.trace, bad)


# -- Chrome trace-event JSON ---------------------------------------------------------------

def _complete_events(data):
    return [e for e in data["traceEvents"] if e["ph"] == "X"]


def _check_nesting(events):
    """Complete events on one thread nest like calls: each starts and ends inside the
    innermost one still open when it starts."""
    stack = []
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]:
            stack.pop()
        if stack:
            top = stack[-1]
            assert e["ts"] + e["dur"] <= top["ts"] + top["dur"] + 1e-3, (e, top)
        stack.append(e)


def test_chrome_events_of_a_timed_trace(traced, tmp_path):
    root = traced(mixed, ctx=TIMED)
    path = tmp_path / "mixed.json"
    chrome.write(root, path)
    data = json.loads(path.read_text())
    events = _complete_events(data)
    times = call_times(root.trace)
    assert len(events) == len(times) == data["otherData"]["calls"]
    assert data["otherData"]["clock"].startswith("monotonic")
    first = events[0]
    assert first["name"] == "mixed" and first["ts"] == 0 and first["args"]["row"] == 0
    assert first["args"]["file"] == __file__ and first["args"]["line"] == mixed.__code__.co_firstlineno
    assert first["dur"] == pytest.approx(times.inclusive[0] / 1000, abs=1e-3)
    names = {e["name"] for e in events}
    assert {"fails", "countdown", "fib", "mixed.<locals>.<lambda>"} <= names
    _check_nesting(events)


def test_chrome_events_without_timing_count_nodes(traced):
    root = traced(mixed)
    data = chrome.trace_events(root)
    assert data["otherData"]["clock"].startswith("synthetic")
    events = _complete_events(data)
    kind = root.trace.columns()["kind"]
    assert len(events) == int((kind == int(_core.NodeKind.K_NESTED)).sum())
    assert events[0]["dur"] == len(root.trace) and events[0]["ts"] == 0
    _check_nesting(events)


def test_chrome_export_of_a_loaded_trace_equals_the_live_one(traced, tmp_path):
    pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")
    root = traced(mixed, ctx=TIMED)
    tracer.save(root, tmp_path / "t.arrow")
    assert chrome.trace_events(tracer.load(tmp_path / "t.arrow")) == chrome.trace_events(root)


def test_viztracer_reads_the_chrome_file(traced, tmp_path):
    """viztracer's own compressor parses each complete event (pid, tid, name, ts, dur,
    args) into its format and back: what comes back is what was written."""
    vcompressor = pytest.importorskip(
        "viztracer.vcompressor", reason="the reader of Chrome trace-event JSON used here is "
        "viztracer's (pip install viztracer; it is in tracer[test])")
    for ctx in (TIMED, None):
        root = traced(mixed, ctx=ctx)
        path = tmp_path / "mixed.json"
        chrome.write(root, path)
        written = json.loads(path.read_text())
        v = vcompressor.VCompressor()
        v.compress(written, str(tmp_path / "mixed.cvf"))
        back = v.decompress(str(tmp_path / "mixed.cvf"))
        got = sorted((e["name"], e["ts"], e["dur"], e["args"]["row"], e["pid"], e["tid"])
                     for e in _complete_events(back))
        want = sorted((e["name"], e["ts"], e["dur"], e["args"]["row"], e["pid"], e["tid"])
                      for e in _complete_events(written))
        assert len(got) == len(want) > 10
        for g, w in zip(got, want):
            assert g[0] == w[0] and g[3:] == w[3:]
            # (its format keeps times to 10 ns)
            assert g[1] == pytest.approx(w[1], abs=0.011) and g[2] == pytest.approx(w[2], abs=0.011)


def _trace_processor_shell():
    path = os.environ.get("TRACE_PROCESSOR_SHELL") or shutil.which("trace_processor_shell")
    return path if path and os.access(path, os.X_OK) else None


def test_perfettos_trace_processor_reads_the_chrome_file(traced, tmp_path):
    tp = pytest.importorskip("perfetto.trace_processor",
                             reason="Perfetto's Python API is not installed (pip install perfetto)")
    shell = _trace_processor_shell()
    if shell is None:
        pytest.skip("Perfetto's trace_processor_shell binary is not here (the perfetto package "
                    "downloads it on first use; set TRACE_PROCESSOR_SHELL to one)")
    root = traced(mixed, ctx=TIMED)
    path = tmp_path / "mixed.json"
    chrome.write(root, path)
    with tp.TraceProcessor(trace=str(path), config=tp.TraceProcessorConfig(bin_path=shell)) as p:
        rows = list(p.query("select name, dur from slice order by ts"))
    times = call_times(root.trace)
    assert len(rows) == len(times) and rows[0].name == "mixed"
    assert rows[0].dur == pytest.approx(times.inclusive[0], abs=1000)


# -- the command line ------------------------------------------------------------------------

PROGRAM = """\
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

print(sum(fib(k) for k in range(10)))
"""


def _cli(*args, cwd):
    done = subprocess.run([sys.executable, "-m", "tracer", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONIOENCODING="utf-8"))
    return done.returncode, done.stdout, done.stderr


def test_cli_run_timing_prints_the_table_and_writes_chrome(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    status, out, err = _cli("run", "--timing", "--chrome", "prog.json", "--levels", "1",
                            "prog.py", cwd=tmp_path)
    assert status == 0, err
    assert "time by function" in out and "per call us" in out
    assert "wrote the calls as Chrome trace-event JSON to prog.json" in out
    data = json.loads((tmp_path / "prog.json").read_text())
    assert data["otherData"]["clock"].startswith("monotonic")
    assert sum(e["name"] == "fib" for e in _complete_events(data)) == 276
    status, out, err = _cli("run", "--chrome", "plain.json", "--levels", "1", "prog.py",
                            cwd=tmp_path)
    assert status == 0 and "per call us" not in out
    assert json.loads((tmp_path / "plain.json").read_text())["otherData"]["clock"].startswith(
        "synthetic")


def test_cli_summary_of_a_saved_timed_trace(tmp_path):
    pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    status, out, err = _cli("run", "--timing", "--save", "prog.parquet", "--levels", "1",
                            "prog.py", cwd=tmp_path)
    assert status == 0, err
    status, summary_out, err = _cli("summary", "prog.parquet", cwd=tmp_path)
    assert status == 0, err
    assert "time by function" in summary_out
    table = summary_out[summary_out.index("time by function"):]
    assert table.split("\n\n")[0] in out   # the table the run printed, from the file
    status, show_out, err = _cli("show", "prog.parquet", "--chrome", "again.json",
                                 cwd=tmp_path)
    assert status == 0, err
    assert json.loads((tmp_path / "again.json").read_text())["otherData"]["clock"].startswith(
        "monotonic")


def test_the_timing_example_runs(tmp_path, capsys):
    import runpy

    from helpers import EXAMPLES

    out = tmp_path / "scheduler.trace.json"
    sys.argv, saved = ["timing.py", str(out)], sys.argv
    try:
        runpy.run_path(str(EXAMPLES / "timing.py"), run_name="__main__")
    finally:
        sys.argv = saved
    printed = capsys.readouterr().out
    assert printed.startswith("time by function") and "checksum" in printed
    assert json.loads(out.read_text())["otherData"]["clock"].startswith("monotonic")
