"""Reading big traces: how queries, views and tables scale with the trace's size.

Usage::

    python bench/scale.py [--sizes 1e5,1e6,1e7] [--json PATH]

For each size it records `h(1.0000001, n)` (the op-dense loop of bench/workloads.py,
6 nodes per iteration) and measures, each as wall time and as extra peak memory
(the process's peak resident set, reset before each step through
/proc/self/clear_refs):

- record: `tracer.track` itself; memory per node of the columns and of the whole
  process (values included);
- iterate: making a view of every child of the root and reading its `row`;
- dependents / forward: of the first argument `x` (`tracer.query`, rows only; the
  reverse edges are built by the first of them and reused);
- slice: the backward slice of the returned value across calls;
- table: two whole-trace questions on `trace.table()`: calls by callee and nodes by
  line (`t.counts("callee")`, `t.counts("line")`);
- names: `trace.table()["callee"]`, the callee's name decoded for every row (an object
  array: 8 bytes per node);
- and, for comparison in the same run, a plain Python loop over as many ints.

The machine is shared: compare the ratios in one run, not absolute times across runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import tracer  # noqa: E402
from workloads import h  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def reset_peak() -> None:
    # Writing 5 resets the peak resident set (VmHWM) to the current one (Linux >= 4.0).
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def measure(fn):
    """(seconds, extra peak bytes, result) of one call."""
    gc.collect()
    reset_peak()
    before = rss()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    return seconds, max(peak() - before, 0), result


def run(size: int) -> dict:
    n = max(size // 6, 1)
    gc.collect()
    base = rss()
    rec_s, _, root = measure(lambda: tracer.track(h, 1.0000001, n))  # no overflow at 10^8
    trace = root.trace
    nodes = len(trace)
    row: dict = {"nodes": nodes, "record_s": rec_s,
                 "column_bytes_per_node": trace.nbytes / nodes,
                 "rss_bytes_per_node": (rss() - base) / nodes}

    def iterate():
        k = 0
        for node in root.children:
            k += node.row
        return k

    def plain():
        k = 0
        for r in range(nodes):
            k += r
        return k

    def questions():
        t = trace.table()
        names, calls = t.counts("callee")
        lines, runs = t.counts("line")
        return int(calls[1:].sum()), int(lines[runs.argmax()])

    x = root[1]
    ret = root[-1]
    steps = {
        "plain_loop": plain,
        "iterate": iterate,
        "dependents": lambda: len(tracer.query(x, "dependents").rows),
        "forward": lambda: len(tracer.query(x, "forward").rows),
        "slice": lambda: len(tracer.query(ret, "backward", across_calls=True).rows),
        "table": questions,
        "names": lambda: len(trace.table()["callee"]),
    }
    for name, fn in steps.items():
        seconds, extra, result = measure(fn)
        row[name + "_s"] = seconds
        row[name + "_extra_bytes"] = extra
        row[name + "_result"] = result
    del root, trace, x, ret
    gc.collect()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1e5,1e6,1e7",
                    help="comma-separated node counts (default 1e5,1e6,1e7)")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    rows = []
    mib = 1 << 20
    print(f"{'nodes':>11} {'record':>7} {'col B/n':>7} {'rss B/n':>7} {'plain':>6} "
          f"{'iterate':>7} {'deps':>6} {'forward':>7} {'slice':>6} {'table':>6} {'names':>6}   "
          "extra MiB: iterate deps forward slice table names")
    for size in (int(float(s)) for s in args.sizes.split(",")):
        r = run(size)
        rows.append(r)
        print(f"{r['nodes']:>11,} {r['record_s']:7.2f} {r['column_bytes_per_node']:7.1f} "
              f"{r['rss_bytes_per_node']:7.1f} {r['plain_loop_s']:6.2f} {r['iterate_s']:7.2f} "
              f"{r['dependents_s']:6.2f} {r['forward_s']:7.2f} {r['slice_s']:6.2f} "
              f"{r['table_s']:6.2f} {r['names_s']:6.2f}   "
              + " ".join(f"{r[k + '_extra_bytes'] / mib:.0f}"
                         for k in ("iterate", "dependents", "forward", "slice", "table",
                                   "names")),
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
