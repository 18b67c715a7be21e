"""What per-call timing (`Context(timing=True)`) costs on top of tracing.

Usage::

    python bench/timing.py [--repeat N] [--only fib,json,sched]

For each workload (bench/workloads.py), traced without and with timing, interleaved
in the same process, best of N each (CPU time of the process: on a shared machine
it varies less than wall time): the ratio timed / untimed is the cost of the two
stamps per followed call (and the timing table).  Timed calls per second
and ns per timed call are printed too.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import tracer  # noqa: E402
from tracer import _core  # noqa: E402
from tracer.context import Context  # noqa: E402
from workloads import WORKLOADS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--only", default="fib,json,sched")
    args = parser.parse_args()
    only = args.only.split(",")
    plain, timed = Context(), Context(timing=True)
    print(f"Python {sys.version.split()[0]}, best of {args.repeat}, interleaved")
    print(f"{'workload':<10}{'nodes':>11}{'calls':>9}{'traced s':>10}{'timed s':>10}"
          f"{'timed/traced':>14}{'ns/call':>9}")
    for w in [w for w in WORKLOADS if w.name in only]:
        best = {"plain": float("inf"), "timed": float("inf")}
        nodes = calls = 0
        for _ in range(args.repeat):
            for name, ctx in (("plain", plain), ("timed", timed)):
                fargs, kwargs = w.make_args()
                gc.collect()
                t = time.process_time()
                root = tracer.track(w.func, *fargs, ctx=ctx, **kwargs)
                best[name] = min(best[name], time.process_time() - t)
                nodes = len(root.trace)
                if name == "timed":
                    calls = len(_core.timing_table(root.trace))
                del root
        extra = (best["timed"] - best["plain"]) / calls * 1e9 if calls else 0.0
        print(f"{w.name:<10}{nodes:>11,}{calls:>9,}{best['plain']:>10.4f}{best['timed']:>10.4f}"
              f"{best['timed'] / best['plain']:>14.3f}{extra:>9.1f}", flush=True)


if __name__ == "__main__":
    main()
