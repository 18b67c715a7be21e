"""Benchmark of the suite tools on nbody (examples/suite/nbody.py) and its one-line
edit: recording, counts, compare_counts, diff of the two versions and of a run with
itself, save/load and validate, on traces of about N nodes.

Usage::

    python bench/suite.py [--steps S] [--repeat R] [--only save,load,validate]

S nbody steps (default 1600: about 10^6 nodes).  Each measure is the best of R runs
(default 3), wall-clock and CPU time of this process (on a busy machine the CPU time
is what the step costs; the wall-clock time includes waiting for a core).  `--only`
names the measures to run besides recording (counts, compare, diff, save, load,
validate).
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import tempfile
import time

import tracer
from tracer.persist.parquet import load, save
from tracer.suite import compare_counts, counts

NBODY = pathlib.Path(__file__).parent.parent / "examples" / "suite" / "nbody.py"
OLD, NEW = "mag = dt * (d2 ** -1.5)", "mag = dt / (d2 * sqrt(d2))"


def version(folder: pathlib.Path, name: str, source: str):
    folder.mkdir()
    path = folder / "nbody.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def best(repeat: int, fn) -> tuple[float, float, object]:
    """(wall s, CPU s, result) of the fastest of `repeat` calls."""
    wall = cpu = float("inf")
    out = None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall, cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1600)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="counts,compare,diff,save,load,validate",
                        help="comma-separated measures to run (default: all)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    source = NBODY.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        old = version(pathlib.Path(tmp, "a"), "nbody_a", source)
        new = version(pathlib.Path(tmp, "b"), "nbody_b", source.replace(OLD, NEW))
        rows = []

        def row(what, wall, cpu, nodes=None):
            rate = f"{nodes / wall / 1e6:.2f} M nodes/s" if nodes else ""
            rows.append((what, wall, cpu, rate))
            print(f"{what:<34} wall {wall:7.3f} s  cpu {cpu:7.3f} s  {rate}", flush=True)

        w, c, a = best(args.repeat, lambda: tracer.track(old.run, args.steps))
        n = len(a.trace)
        row(f"track nbody ({n:,} nodes)", w, c, n)
        if only & {"compare", "diff"}:
            b = tracer.track(new.run, args.steps)
        if "counts" in only:
            w, c, _ = best(args.repeat, lambda: counts(a, "callee"))
            row("counts by callee", w, c, n)
        if "compare" in only:
            w, c, d = best(args.repeat, lambda: compare_counts(a, b, "line"))
            row("compare_counts by line", w, c, n)
        if "diff" in only:
            a2 = tracer.track(old.run, args.steps)
            w, c, d = best(args.repeat, lambda: tracer.diff(a, b))
            row(f"diff of the edit ({d.paired:,} paired)", w, c, n)
            w, c, d = best(args.repeat, lambda: tracer.diff(a, a2))
            row(f"diff of two runs ({d.paired:,} paired)", w, c, n)
        path = pathlib.Path(tmp, "a.parquet")
        if only & {"save", "load"}:
            w, c, _ = best(args.repeat, lambda: save(a, path))
            row("save (Parquet, values encoded)", w, c, n)
        if "load" in only:
            w, c, back = best(args.repeat, lambda: load(path))
            row("load", w, c, n)
        if "validate" in only:
            w, c, _ = best(args.repeat, lambda: tracer.validate(a))
            row("validate", w, c, n)


if __name__ == "__main__":
    main()
