"""Traces leave the process: save one, load it elsewhere, record a thousand runs.

- `root.trace.save(path)` (or `tracer.save(root, path)`) writes one Parquet file;
  `tracer.load(path)` gives the root node back, as `tracer.track` does, with
  `printlevels`, the queries, `validate` and the IR, and nothing from the file run.
- `tracer.track_many(geom, [0.3] * 1000, directory)` traces 1,000 runs of `geom` in
  worker processes (`client="local"`: on a local Dask cluster) into one Parquet
  dataset partitioned by run, which pyarrow queries across all runs at once: how
  often the branch of `geom` went each way.

Run:  python examples/persist.py [--runs N] [--dask]
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import random
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc

import tracer


def f(x):
    return math.sin(x) + x


def geom(p):
    return 1 if random.random() < p else 1 + geom(p)


def branch_statistics(runs):
    """How often each branch went each way, over every run (one pyarrow query)."""
    jumps = runs.dataset().to_table(
        columns=["run", "function", "line", "value_kind"], filter=pc.field("kind") == 5)
    jumps = jumps.set_column(1, "function", pc.cast(jumps["function"], pa.string()))
    jumps = jumps.set_column(3, "value_kind", pc.cast(jumps["value_kind"], pa.string()))
    return jumps.group_by(["function", "line", "value_kind"]).aggregate(
        [("run", "count"), ("run", "count_distinct")]).sort_by("value_kind")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--dask", action="store_true", help="run on a local Dask cluster")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="tracer-persist-")

    root = tracer.track(f, 1.0)
    path = os.path.join(tmp, "f.parquet")
    root.trace.save(path)
    print(f"saved {len(root.trace)} nodes in {os.path.getsize(path):,} bytes")
    back = tracer.load(path)
    tracer.printlevels(back, 2)
    tracer.validate(back)
    code = back[3].code
    print(type(code).__name__, code.co_qualname, code.co_firstlineno, "|",
          back[3].ir[back[3].location])
    copy = pickle.loads(pickle.dumps(back))
    print("pickled and back:", copy.value == root.value, [n.index for n in copy[4].backward()])

    print()
    start = time.perf_counter()
    runs = tracer.track_many(geom, [0.3] * args.runs, os.path.join(tmp, "geom"), seed=0,
                             client="local" if args.dask else None)
    took = time.perf_counter() - start
    print(f"{len(runs)} runs of geom(0.3) traced in {took:.1f} s "
          f"({'local Dask cluster' if args.dask else 'worker processes'})")
    stats = branch_statistics(runs)
    for row in stats.to_pylist():
        print(f"  {row['function']} line {row['line']}: {row['value_kind']:5} "
              f"{row['run_count']:5} times in {row['run_count_distinct']} runs")
    # Each run's result is 1 + the times its branch went False: the mean from the query.
    mean = 1 + stats.filter(pc.equal(stats["value_kind"], "false"))["run_count"][0].as_py() / len(runs)
    print(f"  mean result {mean:.3f} (1/p = {1 / 0.3:.3f})")
    tracer.printlevels(runs.load(0), 2)


if __name__ == "__main__":
    main()
