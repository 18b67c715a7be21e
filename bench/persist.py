"""Benchmark of saving and loading traces and of track_many.

Usage::

    python bench/persist.py [--nodes N] [--repeat R] [--runs K] [--skip-many]

1. Save/load of an `h`-loop trace of about N nodes (default 10^6), best of R:
   - the columns alone: the arena's node columns (kind, flags, parent, code,
     offset, aux, refs with ref_start as its offsets, the value-index column) to
     a Parquet file and back into a new arena (`_core.trace_from_columns`), in
     nodes per second;
   - the whole `tracer.save` / `tracer.load` (values encoded, code table, query
     columns), in nodes per second, with its phases;
   - file bytes per node.
2. `track_many` of K runs of `geom` (default 1,000) serially in this process, with
   worker processes (one per CPU) and on a local Dask cluster (one single-threaded
   worker per CPU), wall-clock time each.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

import tracer
from tracer import _core
from tracer.persist.encoded import NODE_COLUMNS, encode_trace, decode_trace
from tracer.persist.parquet import from_table, read_table, to_table, write_table

sys.path.insert(0, os.path.dirname(__file__))
from workloads import geom  # noqa: E402  (the benchmark's geom, importable by workers)


def h(x, n):
    r = 0.0
    i = 0
    while i < n:
        r += x ** i
        i += 1
    return r


def best(f, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def column_table(trace):
    cols = trace.columns()
    arrays = {name: pa.array(cols[name]) for name in NODE_COLUMNS}
    arrays["refs"] = pa.ListArray.from_arrays(pa.array(cols["ref_start"]), pa.array(cols["refs"]))
    arrays["value"] = pa.array(np.full(len(trace), -1, dtype=np.int32))
    return pa.table(arrays)


def columns_only(trace, path, fmt, repeat):
    def save():
        write_table(column_table(trace), path, fmt)

    def load():
        table = read_table(path).combine_chunks()
        c = {name: table[name].chunk(0).to_numpy() for name in (*NODE_COLUMNS, "value")}
        refs = table["refs"].chunk(0)
        return _core.trace_from_columns(
            c["kind"], c["flags"], c["parent"], c["code"], c["offset"], c["aux"],
            refs.offsets.to_numpy(), refs.values.to_numpy(), c["value"], [], [None] * len(trace.pool),
            list(trace.codes), {}, {}, False, False, None, 0, ())

    ts, _ = best(save, repeat)
    tl, back = best(load, repeat)
    for name, col in trace.columns().items():
        assert np.array_equal(col, back.columns()[name]), name
    return ts, tl, os.path.getsize(path)


def whole(root, path, fmt, repeat):
    n = len(root.trace)
    te, enc = best(lambda: encode_trace(root.trace), repeat)
    tt, table = best(lambda: to_table(enc), repeat)
    tw, _ = best(lambda: write_table(table, path, fmt), repeat)
    ts, _ = best(lambda: tracer.save(root, path, format=fmt), repeat)
    tr, table = best(lambda: read_table(path), repeat)
    tf, enc2 = best(lambda: from_table(table), repeat)
    td, _ = best(lambda: decode_trace(enc2), repeat)
    tl, back = best(lambda: tracer.load(path), repeat)
    assert len(back.trace) == n
    return {"encode": te, "to_table": tt, "write": tw, "save": ts,
            "read": tr, "from_table": tf, "decode": td, "load": tl,
            "bytes": os.path.getsize(path)}


def many(runs, tmp):
    out = {}
    for label, options in (("serial (this process)", {"processes": 0}),
                           (f"processes ({os.cpu_count()} workers)", {}),
                           (f"local Dask ({os.cpu_count()} workers)", {"client": "local"})):
        target = os.path.join(tmp, label.split()[0])
        shutil.rmtree(target, ignore_errors=True)
        t = time.perf_counter()
        result = tracer.track_many(geom, [0.1] * runs, target, seed=1, **options)
        out[label] = (time.perf_counter() - t, len(result))
    # The same work without files, for scale: tracing the runs serially.
    t = time.perf_counter()
    for k in range(runs):
        random.seed(f"tracer-run-1-{k}")
        tracer.track(geom, 0.1)
    out["trace only, serially (no saving)"] = (time.perf_counter() - t, runs)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--skip-many", action="store_true")
    args = ap.parse_args(argv)
    iters = max(args.nodes // 8, 1)
    root = tracer.track(h, 1.0001, iters)
    n = len(root.trace)
    print(f"Python {sys.version.split()[0]}, pyarrow {pa.__version__}; h trace: {n:,} nodes, "
          f"{root.trace.num_refs:,} refs")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("parquet", "arrow"):
            path = os.path.join(tmp, f"t.{fmt}")
            ts, tl, size = columns_only(root.trace, path, fmt, args.repeat)
            print(f"{fmt} columns only: save {n / ts / 1e6:.1f} M nodes/s ({ts * 1e3:.0f} ms), "
                  f"load {n / tl / 1e6:.1f} M nodes/s ({tl * 1e3:.0f} ms), "
                  f"{size / n:.2f} bytes/node")
        for fmt in ("parquet", "arrow"):
            path = os.path.join(tmp, f"t.{fmt}")
            w = whole(root, path, fmt, args.repeat)
            print(f"{fmt} whole trace: save {n / w['save'] / 1e6:.2f} M nodes/s "
                  f"({w['save'] * 1e3:.0f} ms: encode {w['encode'] * 1e3:.0f}, to_table "
                  f"{w['to_table'] * 1e3:.0f}, write {w['write'] * 1e3:.0f}), load "
                  f"{n / w['load'] / 1e6:.2f} M nodes/s ({w['load'] * 1e3:.0f} ms: read "
                  f"{w['read'] * 1e3:.0f}, from_table {w['from_table'] * 1e3:.0f}, decode "
                  f"{w['decode'] * 1e3:.0f}), {w['bytes'] / n:.2f} bytes/node")
        if not args.skip_many:
            for label, (t, k) in many(args.runs, tmp).items():
                print(f"track_many of {k} geom(0.1) runs, {label}: {t:.2f} s")


if __name__ == "__main__":
    main()
