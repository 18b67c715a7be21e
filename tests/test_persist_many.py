"""track_many: many runs traced in worker processes or on Dask, one Parquet dataset
partitioned by run, queried across all runs with pyarrow."""

import io
import random

import pytest

import tracer

pa = pytest.importorskip("pyarrow", reason="track_many needs pyarrow (tracer[arrow])")
import pyarrow.compute as pc  # noqa: E402

RUNS = 20


def geom(p):
    return 1 if random.random() < p else 1 + geom(p)


def inverse(x):
    return 1 / x


def dump(root) -> str:
    out = io.StringIO()
    tracer.printlevels(root, 1000, file=out)
    return out.getvalue()


def branch_counts(runs):
    """How often the branch of each line went which way, across all runs: the query."""
    table = runs.dataset().to_table(
        columns=["run", "function", "line", "value_kind"], filter=pc.field("kind") == 5)
    table = table.set_column(1, "function", pc.cast(table["function"], pa.string()))
    table = table.set_column(3, "value_kind", pc.cast(table["value_kind"], pa.string()))
    stats = table.group_by(["function", "line", "value_kind"]).aggregate([("run", "count")])
    return {(r["function"], r["line"], r["value_kind"]): r["run_count"]
            for r in stats.to_pylist()}


def per_run_false(runs):
    table = runs.dataset().to_table(
        columns=["run"], filter=(pc.field("kind") == 5) & (pc.field("number") == 0))
    counts = table.group_by("run").aggregate([("run", "count")]).to_pylist()
    return {r["run"]: r["run_count"] for r in counts}


def check_geom_runs(runs):
    assert len(runs) == RUNS and not runs.errors
    line = geom.__code__.co_firstlineno + 1
    counts = branch_counts(runs)
    # Every run ends in exactly one taken `random() < p`; each recursion is a False.
    assert counts[("geom", line, "true")] == RUNS
    values = {k: runs.load(k).value for k in range(RUNS)}
    assert counts.get(("geom", line, "false"), 0) == sum(values.values()) - RUNS
    false = per_run_false(runs)
    assert all(false.get(k, 0) == v - 1 for k, v in values.items())
    return counts


def test_track_many_in_processes_matches_runs_in_this_process(tmp_path):
    runs = tracer.track_many(geom, [0.4] * RUNS, tmp_path / "procs", processes=2, seed=7)
    here = tracer.track_many(geom, [0.4] * RUNS, tmp_path / "here", processes=0, seed=7)
    assert check_geom_runs(runs) == check_geom_runs(here)
    for k in (0, RUNS - 1):
        root = runs.load(k)
        tracer.validate(root)
        assert root.value == here.load(k).value
    assert [r.value for r in tracer.persist.Runs(tmp_path / "procs")] == [r.value for r in here]


def test_runs_that_raise_are_saved_and_reported(tmp_path):
    runs = tracer.track_many(inverse, [1, 0, 4], tmp_path / "runs", processes=0)
    assert runs.errors == {1: "ZeroDivisionError: division by zero"}
    assert runs.load(1).raised and runs.load(2).value == 0.25


def test_track_many_says_what_is_wrong(tmp_path):
    tracer.track_many(inverse, [1], tmp_path / "runs", processes=0)
    with pytest.raises(FileExistsError, match="already holds runs"):
        tracer.track_many(inverse, [1], tmp_path / "runs", processes=0)
    with pytest.raises(TypeError, match="dask.distributed.Client or 'local'"):
        tracer.track_many(inverse, [1], tmp_path / "other", client=42)
    with pytest.raises(TypeError, match="function defined at module level"):
        tracer.track_many(lambda x: x, [1], tmp_path / "lambda", processes=2)
    with pytest.raises(FileNotFoundError, match="no runs"):
        tracer.persist.Runs(tmp_path / "nothing")


def test_track_many_on_a_local_dask_cluster(tmp_path):
    pytest.importorskip("dask.distributed", reason="Dask runs need tracer[dask]")
    runs = tracer.track_many(geom, [0.4] * RUNS, tmp_path / "dask", client="local",
                             processes=2, seed=7)
    here = tracer.track_many(geom, [0.4] * RUNS, tmp_path / "here", processes=0, seed=7)
    assert check_geom_runs(runs) == check_geom_runs(here)


def test_the_readme_example_runs(tmp_path):
    import subprocess
    import sys

    from helpers import EXAMPLES

    done = subprocess.run([sys.executable, str(EXAMPLES / "persist.py"), "--runs", "20"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "⟨f⟩(⟨1.0⟩) → 1.8414709848078965::float" in out
    assert "pickled and back: True [3, 2, 1]" in out
    assert "20 runs of geom(0.3) traced" in out
    assert "true     20 times in 20 runs" in out
