"""What one traced Python call costs, in counts that do not move under load.

Usage::

    python bench/percall.py NAME [traced|untraced]      # one run, for callgrind
    python bench/percall.py --counts [NAME,...]         # events, nodes per call

``valgrind --tool=callgrind python bench/percall.py NAME traced`` and the same
with ``untraced`` count the instructions of one run of workload NAME (of
``bench/workloads.py``, after a warm-up traced call so plans are built); their
difference over the trace's Python calls is the overhead per call.  The process
ends with ``os._exit`` right after the run, so freeing the trace is not counted.
``--counts`` prints calls, nodes and sys.monitoring events per call.
"""

from __future__ import annotations

import os
import sys

import tracer

from workloads import BY_NAME

# Smaller than bench/compare.py's sizes: callgrind runs ~50x slower.
SIZES = {"fib": ((20,), {}), "h": ((1.0001, 20000), {})}


def args_of(name: str):
    w = BY_NAME[name]
    return SIZES[name] if name in SIZES else w.make_args()


def counts(names: list[str]) -> None:
    print("| workload | calls | nodes | events | events/call | nodes/call |")
    print("|---|---|---|---|---|---|")
    for name in names:
        w = BY_NAME[name]
        a, k = args_of(name)
        root = tracer.track(w.func, *a, **k)
        trace = root.trace
        calls = len(trace.frames()[0])
        print(f"| {name} | {calls:,} | {len(trace):,} | {trace.events:,} | "
              f"{trace.events / calls:.2f} | {len(trace) / calls:.2f} |")


def main() -> None:
    if sys.argv[1] == "--counts":
        counts(sys.argv[2].split(",") if len(sys.argv) > 2 else
               ["fib", "geom", "json", "sched", "nbody", "h"])
        return
    name, mode = sys.argv[1], sys.argv[2]
    w = BY_NAME[name]
    a, k = args_of(name)
    tracer.track(w.func, *a, **k)   # warm-up in both modes: plans built, modules loaded
    a, k = args_of(name)
    if mode == "traced":
        root = tracer.track(w.func, *a, **k)
    else:
        root = w.func(*a, **k)
    sys.stdout.flush()
    os._exit(0 if root is not None else 1)


if __name__ == "__main__":
    main()
