"""Work counts (tracer.suite): counts by callee, function and line; compare_counts on a
known edit (nbody's `** -1.5` written `/ (d2 * sqrt(d2))`); `python -m tracer compare`;
and diff across the two versions pairing everything but the edited line."""

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tracer
from tracer.suite import Counts, compare_counts, counts
from tracer.views.table import table

NBODY = Path(__file__).parent.parent / "examples" / "suite" / "nbody.py"
OLD_LINE = "mag = dt * (d2 ** -1.5)"
NEW_LINE = "mag = dt / (d2 * sqrt(d2))"
STEPS = 30
PAIRS = 10          # 5 bodies


def nbody_versions(tmp_path):
    """The two versions of nbody as files of the same name in two folders (as two
    checkouts of a project are)."""
    source = NBODY.read_text()
    assert OLD_LINE in source
    paths = []
    for name, text in (("a", source), ("b", source.replace(OLD_LINE, NEW_LINE))):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "nbody.py").write_text(text)
        paths.append(folder / "nbody.py")
    return paths


def import_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def two_versions(tmp_path):
    a_path, b_path = nbody_versions(tmp_path)
    a = tracer.track(import_file(a_path, "nbody_a").run, STEPS)
    b = tracer.track(import_file(b_path, "nbody_b").run, STEPS)
    tracer.validate(a)
    tracer.validate(b)
    return a, b


def test_counts_by_callee_function_and_line(two_versions):
    a, _ = two_versions
    by_callee = counts(a, by="callee")
    assert by_callee["operator.pow"] == STEPS * PAIRS + PAIRS     # advance's, energy's ** 0.5
    assert "math.sqrt" not in by_callee
    assert by_callee["advance"] == by_callee["energy"] == by_callee["bodies"] == 1
    tab = table(a.trace)
    assert by_callee.total == np.count_nonzero(tab["callee"] != "")
    by_function = counts(a, by="function")
    assert by_function.total == len(a.trace) - 1                  # every node but the root
    assert max(by_function, key=by_function.get) == "advance"
    by_line = counts(a, by="line")
    assert by_line.total == np.count_nonzero(tab["line"] >= 0)
    assert all(name.startswith("nbody.py:") for name in by_line)
    # A call node counts its own subtree.
    advance = tracer.query(a, "descendants", callee="advance").first()
    assert counts(advance, by="function")["advance"] == by_function["advance"]
    assert counts(advance, by="callee")["operator.pow"] == STEPS * PAIRS
    with pytest.raises(ValueError, match="by must be one of"):
        counts(a, by="file")


def test_compare_counts_states_the_known_edit(two_versions):
    a, b = two_versions
    d = compare_counts(a, b, by="callee")
    changes = {c.name: c.change for c in d.changed}
    assert changes == {"math.sqrt": STEPS * PAIRS, "operator.pow": -STEPS * PAIRS,
                       "operator.truediv": STEPS * PAIRS}
    sqrt = next(c for c in d.changed if c.name == "math.sqrt")
    assert sqrt.a == 0 and sqrt.relative is None
    pow_change = next(c for c in d.changed if c.name == "operator.pow")
    assert pow_change.relative == pytest.approx(-300 / 310)
    text = str(d)
    assert "math.sqrt" in text and "new" in text and "-96.8%" in text
    by_function = compare_counts(a, b, by="function")
    assert [c.name for c in by_function.changed] == ["advance"]
    assert by_function.changed[0].change == STEPS * PAIRS         # 2 nodes for 1 per pair
    by_line = compare_counts(a, b, by="line")
    assert [c.name for c in by_line.changed] == ["nbody.py:38"]
    assert compare_counts(a, a).same
    # A threshold keeps small relative changes out of `changed`; new names stay in.
    loose = compare_counts(a, b, by="callee", threshold=0.99)
    assert [c.name for c in loose.changed] == ["math.sqrt", "operator.truediv"]
    assert [c.name for c in loose.below_threshold] == ["operator.pow"]
    json.dumps(d.as_dict())


def test_sets_of_runs_compare_per_run(two_versions):
    a, b = two_versions
    d = compare_counts([a, a], [b], by="callee")
    assert d.runs == (2, 1)
    assert {c.name: c.change for c in d.changed}["math.sqrt"] == STEPS * PAIRS
    twice = counts([a, a])
    assert twice.runs == 2 and twice["operator.pow"] == 2 * counts(a)["operator.pow"]
    back = Counts.from_dict(json.loads(json.dumps(twice.as_dict())))
    assert back == twice and back.runs == 2 and back.by == "callee"
    assert compare_counts(back, [a, a]).same


def test_counts_of_saved_traces_equal_live_counts(two_versions, tmp_path):
    a, b = two_versions
    tracer.save(a, tmp_path / "a.parquet")
    tracer.save(b, tmp_path / "b.arrow")
    for by in ("callee", "function", "line"):
        assert counts(tmp_path / "a.parquet", by) == counts(a, by)
        assert counts(tmp_path / "b.arrow", by) == counts(b, by)
    folder = tmp_path / "runs"
    folder.mkdir()
    tracer.save(a, folder / "1.parquet")
    tracer.save(a, folder / "2.parquet")
    assert counts(folder).runs == 2


def test_diff_of_the_nbody_edit_pairs_everything_but_the_changed_line(two_versions):
    a, b = two_versions
    d = tracer.diff(a, b)
    # a: pow and the mul by dt; b: sqrt, the mul by it and the division, per pair and step.
    assert d.only_a == 2 * STEPS * PAIRS
    assert d.only_b == 3 * STEPS * PAIRS
    assert d.paired == d.nodes_a - d.only_a == d.nodes_b - d.only_b
    assert d.divergence is not None and d.divergence.line == 38
    assert d.divergence.function == "advance"
    assert d.divergence.a != d.divergence.b
    assert "operator.pow" in d.divergence.a and "math.sqrt" in d.divergence.b
    assert not d.added and not d.removed
    # Unpaired nodes are the changed line's only.
    lines_a = table(a.trace)["line"]
    assert d.values_total == 0
    assert d.divergence.row_a is not None and lines_a[d.divergence.row_a] == 38


def test_diff_of_two_loaded_versions_is_the_live_diff(two_versions, tmp_path):
    a, b = two_versions
    tracer.save(a, tmp_path / "a.parquet")
    tracer.save(b, tmp_path / "b.parquet")
    live = tracer.diff(a, b)
    loaded = tracer.diff(tracer.load(tmp_path / "a.parquet"), tracer.load(tmp_path / "b.parquet"))
    assert (loaded.paired, loaded.only_a, loaded.only_b) == (live.paired, live.only_a,
                                                             live.only_b)


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "tracer", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def test_cli_compare(tmp_path):
    a_path, b_path = nbody_versions(tmp_path)
    for path, out in ((a_path, "a.parquet"), (b_path, "b.parquet")):
        done = run_cli("call", "nbody:run", "--args", f"[{STEPS}]", "--save", tmp_path / out,
                       "--levels", "1", "--no-summary", cwd=path.parent)
        assert done.returncode == 0, done.stderr
    out = run_cli("compare", tmp_path / "a.parquet", tmp_path / "b.parquet", "--by", "callee")
    assert out.returncode == 1, out.stderr                         # 1: something changed
    assert "math.sqrt" in out.stdout and "+300" in out.stdout and "new" in out.stdout
    js = run_cli("compare", tmp_path / "a.parquet", tmp_path / "b.parquet", "--by", "line",
                 "--json")
    data = json.loads(js.stdout)
    assert [c["name"] for c in data["changed"]] == ["nbody.py:38"]
    same = run_cli("compare", tmp_path / "a.parquet", tmp_path / "a.parquet")
    assert same.returncode == 0 and "no change" in same.stdout
    (tmp_path / "base.json").write_text(json.dumps(counts(tracer.load(tmp_path / "a.parquet"),
                                                          "function").as_dict()))
    base = run_cli("compare", tmp_path / "base.json", tmp_path / "b.parquet", "--by", "function")
    assert base.returncode == 1 and "advance" in base.stdout
    wrong = run_cli("compare", tmp_path / "base.json", tmp_path / "b.parquet")
    assert wrong.returncode == 2 and "--by function" in wrong.stderr


@pytest.mark.skipif(os.environ.get("TRACER_SLOW_TESTS") is None,
                    reason="10^6-node traces: set TRACER_SLOW_TESTS=1 (bench/suite.py measures it)")
def test_diff_of_two_million_node_traces_is_fast(tmp_path):
    a_path, b_path = nbody_versions(tmp_path)
    a = tracer.track(import_file(a_path, "nbody_a").run, 1600)
    b = tracer.track(import_file(b_path, "nbody_b").run, 1600)
    assert len(a.trace) > 1_000_000
    t = time.perf_counter()
    d = tracer.diff(a, b)
    assert time.perf_counter() - t < 2.0
    assert d.only_a == 2 * 1600 * PAIRS


_compiled = set()


def cached_work(text):
    """Work with a per-process cache (as re's compiled patterns): the first call of a
    process does more."""
    if text not in _compiled:
        _compiled.add(text)
        sorted(range(50), key=lambda k: -k)
    return len(text)


def test_track_many_warm_up_and_callee_column(tmp_path):
    pc = pytest.importorskip("pyarrow.compute")
    _compiled.clear()
    cold = tracer.track_many(cached_work, ["abc", "abc"], tmp_path / "cold", processes=0)
    _compiled.clear()
    warm = tracer.track_many(cached_work, ["abc", "abc"], tmp_path / "warm", processes=0,
                             warmup=1)
    cold_nodes = [len(cold.load(k).trace) for k in range(2)]
    warm_nodes = [len(warm.load(k).trace) for k in range(2)]
    assert cold_nodes[0] > cold_nodes[1] == warm_nodes[0] == warm_nodes[1]
    # The callee column: counts over every run in one query, as counts() gives them.
    table = cold.dataset().to_table(columns=["run", "callee"],
                                    filter=pc.is_valid(pc.field("callee")))
    table = table.set_column(1, "callee", pc.cast(table["callee"], "string"))
    by_callee = {r["callee"]: r["run_count"] for r in
                 table.group_by("callee").aggregate([("run", "count")]).to_pylist()}
    assert by_callee == dict(counts(cold, by="callee"))
    assert by_callee["sorted"] == 1
    with pytest.raises(ValueError, match="warmup must be"):
        tracer.track_many(cached_work, ["a"], tmp_path / "bad", processes=0, warmup=-1)


FLIPS = '''
def flips(n):
    perm = list(range(n, 0, -1))
    pop, ins = perm.pop, perm.insert
    total = 0
    for _ in range(n):
        k = perm[0]
        while k > 1:
            perm[:k] = perm[k - 1::-1]
            total += 1
            k = perm[0]
        ins(0, pop())
    return total
'''


def test_diff_pairs_a_substitution_in_a_short_loop_body(tmp_path):
    # `total += 1` written `total = total + 1`: one operator for another in each
    # iteration of a loop body shorter than the resync run.
    versions = []
    for name, text in (("a", FLIPS), ("b", FLIPS.replace("total += 1", "total = total + 1"))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "flips.py").write_text(text)
        versions.append(import_file(tmp_path / name / "flips.py", f"flips_{name}"))
    a, b = (tracer.track(m.flips, 7) for m in versions)
    changed = counts(a)["operator.iadd"]
    assert changed > 5 and counts(b)["operator.add"] >= changed
    d = tracer.diff(a, b)
    assert d.only_a == d.only_b == changed
    # The bound methods of the two runs' lists are the same methods of equal lists.
    assert d.values_total == 0, str(d)
