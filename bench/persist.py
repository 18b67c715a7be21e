"""Benchmark of saving and loading traces and of track_many.

Usage::

    python bench/persist.py [--nodes N] [--repeat R] [--runs K] [--skip-many]

1. The node columns of an `h`-loop trace and of a `fib` trace of about N nodes each
   (default 10^6): kind, flags, parent, code, offset, aux, the value-index column,
   and ref_start and refs (in the `inputs` column's IPC blob), written as a Parquet
   or Arrow IPC file with each codec (`persist.parquet.node_table` and
   `write_table`, the code `tracer.save` runs for them) and loaded back into an
   arena (`read_table`, `node_columns`, `_core.trace_from_columns`: what
   `tracer.load` runs for them, checks included), in nodes per second, with file
   bytes per node.  All configurations run in turn R times (interleaved, so a
   change of the machine's load hits them alike); each reports its best.
2. The whole `tracer.save` / `tracer.load` (values encoded, code table, query
   columns) of the same traces with the default codecs, with its phases.
3. Saving one small trace (`geom(0.1)`, about 80 nodes), the case of
   `track_many`: the phases, each the best of R rounds of 200 saves to new files.
4. `track_many` of K runs of `geom` (default 1,000) serially in this process, with
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
from tracer.persist.encoded import arena_column, decode_trace, encode_trace, NODE_COLUMNS
from tracer.persist.parquet import (from_table, node_columns, node_table, read_table,
                                    to_table, write_table)

CODECS = {"parquet": ("lz4", "snappy", "zstd", "none"), "arrow": ("lz4", "zstd", "none")}


def geom(p):
    """IRTracker's geom: stochastic recursion on random()."""
    return 1 if random.random() < p else 1 + geom(p)


def h(x, n):
    r = 0.0
    i = 0
    while i < n:
        r += x ** i
        i += 1
    return r


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def traces(nodes):
    """An `h` and a `fib` trace of about `nodes` nodes each."""
    out = {"h": tracer.track(h, 1.0001, max(nodes // 6, 1))}  # six nodes per iteration
    k = 2
    while True:  # fib(k) records about 20 nodes per call
        root = tracer.track(fib, k)
        if len(root.trace) >= nodes or k > 40:
            break
        k += 1
    out[f"fib({k})"] = root
    return out


def save_columns(trace, path, fmt, codec):
    columns = dict(trace.columns())
    columns["value"] = np.full(len(trace), -1, dtype=np.int32)
    write_table(node_table(columns), path, fmt, codec)


def load_columns(path, trace):
    """What tracer.load does for the node columns: read, check, build the arena."""
    c = {name: arena_column(col, np.int32 if name not in NODE_COLUMNS else NODE_COLUMNS[name],
                            name)
         for name, col in node_columns(read_table(path))[0].items()}
    return _core.trace_from_columns(
        c["kind"], c["flags"], c["parent"], c["code"], c["offset"], c["aux"],
        c["ref_start"], c["refs"], c["value"], [], [None] * len(trace.pool),
        list(trace.codes), {}, {}, False, False, None, 0, ())


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def columns_only(roots, tmp, repeat):
    """{(trace, format, codec): (save s, load s, bytes)}, best of `repeat` rounds."""
    configs = [(name, fmt, codec) for name in roots for fmt in CODECS for codec in CODECS[fmt]]
    best = {c: [float("inf"), float("inf"), 0] for c in configs}
    for _ in range(repeat):
        for config in configs:
            name, fmt, codec = config
            trace = roots[name].trace
            path = os.path.join(tmp, f"columns.{fmt}")
            ts, _ = timed(lambda: save_columns(trace, path, fmt, codec))
            tl, back = timed(lambda: load_columns(path, trace))
            b = best[config]
            b[0], b[1], b[2] = min(b[0], ts), min(b[1], tl), os.path.getsize(path)
            del back
    # Once: the loaded columns are what was saved, and live in Arrow's buffers.
    for name, root in roots.items():
        path = os.path.join(tmp, "check.parquet")
        save_columns(root.trace, path, "parquet", None)
        back = load_columns(path, root.trace)
        for col, arr in root.trace.columns().items():
            assert np.array_equal(arr, back.columns()[col]), col
    return best


def whole(root, path, fmt, repeat):
    n = len(root.trace)
    phases = {}
    for _ in range(repeat):
        te, enc = timed(lambda: encode_trace(root.trace))
        tt, table = timed(lambda: to_table(enc))
        tw, _ = timed(lambda: write_table(table, path, fmt))
        ts, _ = timed(lambda: tracer.save(root, path, format=fmt))
        tr, table = timed(lambda: read_table(path))
        tf, enc2 = timed(lambda: from_table(table))
        td, _ = timed(lambda: decode_trace(enc2))
        tl, back = timed(lambda: tracer.load(path))
        assert len(back.trace) == n
        for k, v in {"encode": te, "to_table": tt, "write": tw, "save": ts, "read": tr,
                     "from_table": tf, "decode": td, "load": tl}.items():
            phases[k] = min(phases.get(k, v), v)
    phases["bytes"] = os.path.getsize(path)
    return phases


def small(tmp, repeat, count=200):
    """Phases of saving one small trace, milliseconds per save (best of `repeat`)."""
    random.seed(1)
    roots = [tracer.track(geom, 0.1) for _ in range(count)]
    nodes = sum(len(r.trace) for r in roots) / count
    best = {}
    for k in range(repeat):
        where = os.path.join(tmp, f"small{k}")
        os.makedirs(where)
        encs = []
        t = {}
        t["encode_trace"], _ = timed(lambda: [encs.append(encode_trace(r.trace)) for r in roots])
        t["to_table"], tables = timed(lambda: [to_table(e) for e in encs])
        t["write_table (new file)"], _ = timed(
            lambda: [write_table(tb, os.path.join(where, f"w{i}.parquet"))
                     for i, tb in enumerate(tables)])
        t["tracer.save (new file)"], _ = timed(
            lambda: [tracer.save(r, os.path.join(where, f"s{i}.parquet"))
                     for i, r in enumerate(roots)])
        t["tracer.save (over an existing file)"], _ = timed(
            lambda: [tracer.save(r, os.path.join(where, f"s{i}.parquet"))
                     for i, r in enumerate(roots)])
        t["tracer.load"], _ = timed(
            lambda: [tracer.load(os.path.join(where, f"s{i}.parquet")) for i in range(count)])
        for key, v in t.items():
            best[key] = min(best.get(key, v), v)
        shutil.rmtree(where)
    return nodes, {key: v / count * 1e3 for key, v in best.items()}


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
        assert not result.errors, list(result.errors.items())[:3]
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
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--skip-many", action="store_true")
    args = ap.parse_args(argv)
    roots = traces(args.nodes)
    print(f"Python {sys.version.split()[0]}, pyarrow {pa.__version__}, load average "
          f"{os.getloadavg()[0]:.1f} at start")
    for name, root in roots.items():
        print(f"  {name}: {len(root.trace):,} nodes, {root.trace.num_refs:,} refs")
    with tempfile.TemporaryDirectory() as tmp:
        print("Node columns only (best of interleaved rounds):")
        for (name, fmt, codec), (ts, tl, size) in columns_only(roots, tmp, args.repeat).items():
            n = len(roots[name].trace)
            print(f"  {name:8s} {fmt:7s} {codec:6s}: save {n / ts / 1e6:5.1f} M nodes/s "
                  f"({ts * 1e3:4.0f} ms), load {n / tl / 1e6:5.1f} M nodes/s "
                  f"({tl * 1e3:4.0f} ms), {size / n:5.2f} bytes/node")
        print("Whole trace, default codec:")
        for name, root in roots.items():
            n = len(root.trace)
            for fmt in ("parquet", "arrow"):
                w = whole(root, os.path.join(tmp, f"t.{fmt}"), fmt, max(args.repeat // 2, 1))
                print(f"  {name:8s} {fmt:7s}: save {n / w['save'] / 1e6:.2f} M nodes/s "
                      f"({w['save'] * 1e3:.0f} ms: encode {w['encode'] * 1e3:.0f}, to_table "
                      f"{w['to_table'] * 1e3:.0f}, write {w['write'] * 1e3:.0f}), load "
                      f"{n / w['load'] / 1e6:.2f} M nodes/s ({w['load'] * 1e3:.0f} ms: read "
                      f"{w['read'] * 1e3:.0f}, from_table {w['from_table'] * 1e3:.0f}, decode "
                      f"{w['decode'] * 1e3:.0f}), {w['bytes'] / n:.2f} bytes/node")
        nodes, phases = small(tmp, args.repeat)
        print(f"A small trace (geom(0.1), {nodes:.0f} nodes on average), ms per trace:")
        for key, ms in phases.items():
            print(f"  {key}: {ms:.2f}")
        if not args.skip_many:
            for label, (t, k) in many(args.runs, tmp).items():
                print(f"track_many of {k} geom(0.1) runs, {label}: {t:.2f} s")
        print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
