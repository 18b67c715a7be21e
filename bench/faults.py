"""Page faults and time of repeated tracing, with and without spare columns.

Usage::

    python bench/faults.py [--only NAME,...] [--runs N]

For each workload of ``bench/workloads.py`` it traces the workload N times in a row
(each trace freed as soon as its run returns, as a program tracing in a loop
does), first with ``tracer.views.spare_columns_limit(0)`` (every trace in fresh memory)
and then with the default limit (a freed trace's columns reused), and prints the
median minor page faults and the best milliseconds per traced run of each (the first
run of each series, which starts cold, is left out; the best time, because the
machine's noise only ever adds).  Unix only (``resource``).
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import sys
import time

import tracer

from workloads import BY_NAME, WORKLOADS


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def series(workload, runs: int) -> tuple[float, float]:
    """Median faults and best ms per traced run over `runs` runs after a first one."""
    faults, times = [], []
    for i in range(runs + 1):
        args, kwargs = workload.make_args()
        gc.collect()
        f0, t0 = minor_faults(), time.perf_counter()
        tracer.track(workload.func, *args, **kwargs)
        t1, f1 = time.perf_counter(), minor_faults()
        if i:
            faults.append(f1 - f0)
            times.append(1e3 * (t1 - t0))
    tracer.api._state.last = None
    return statistics.median(faults), min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--runs", type=int, default=9)
    opts = parser.parse_args(argv)
    chosen = [BY_NAME[n] for n in opts.only.split(",") if n] or WORKLOADS
    default = tracer.views.spare_columns_limit()
    print(f"Python {sys.version.split()[0]} | tracer {tracer.__version__} | "
          f"{opts.runs} traced runs after a first one: median faults, best ms")
    print(f"{'workload':8}  {'faults (fresh)':>14}  {'ms (fresh)':>10}  "
          f"{'faults (spare)':>14}  {'ms (spare)':>10}")
    for w in chosen:
        tracer.views.spare_columns_limit(0)
        fresh = series(w, opts.runs)
        tracer.views.spare_columns_limit(default)
        spare = series(w, opts.runs)
        print(f"{w.name:8}  {fresh[0]:14,.0f}  {fresh[1]:10.2f}  {spare[0]:14,.0f}  {spare[1]:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
