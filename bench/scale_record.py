"""Recording at scale: `h` (the op-dense loop, 6 nodes per iteration) at 10^5-10^7
iterations, traced against untraced, and where the traced run's time goes.

Usage::

    python bench/scale_record.py [--sizes 1e5,1e6,1e7] [--repeat 5] [--fresh]

For each size it runs `h(1.0000001, n)` untraced and traced, interleaved, `repeat`
times after one warm-up call of each, and prints per size:

- the best untraced and traced process time (user + system, `getrusage`) and
  their ratio; the traced run's user and system time split (system time is the
  kernel zeroing fresh pages);
- the first traced run (`first`): memory the process has never had, as a program
  tracing once pays it;
- minor page faults (4 KiB) and transparent-huge-page faults (2 MiB, the
  system-wide `thp_fault_alloc` of /proc/vmstat: other processes' count too, so
  read it on a quiet machine) of the best traced run;
- the collector's time and collections during that run (`gc.callbacks`);
- `end`: the time from the traced function's return to `track` returning (what
  tracing does after the call: closing the trace, making the root).

`--touch MIB` instead maps MIB MiB of anonymous memory and writes one byte per 4 KiB,
four times over (mapped afresh each pass), with 4 KiB pages and again with
`MADV_HUGEPAGE`: what fresh memory costs on this machine, first pass and later ones.

It sets tracer's arena cache to `--arena-cache` MiB (1024 by default, as tracer's
own default). `--fresh` sets `spare_columns_limit(0)`, `spare_columns_lazy_limit(0)` and
`arena_cache_limit(0)` (where the build has them): every traced run in fresh memory.
The machine is shared: compare the ratios of one run, not times across runs.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import tracer  # noqa: E402
import tracer.views  # noqa: E402
from workloads import h  # noqa: E402

X = 1.0000001


def cpu() -> tuple[float, float, int]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime, r.ru_minflt


def thp_faults() -> int:
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("thp_fault_alloc "):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Collector:
    """Time and collections of the garbage collector while `on`."""

    def __init__(self) -> None:
        self.on = False
        self.time = 0.0
        self.count = 0
        self._start = 0.0
        gc.callbacks.append(self)

    def __call__(self, phase: str, info: dict) -> None:
        if not self.on:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.time += time.perf_counter() - self._start
            self.count += 1


def timed_h(ends: list[float]):
    """h, stamping when it returns (the traced call's last instruction)."""
    def hh(x, n):
        r = h(x, n)
        ends.append(time.perf_counter())
        return r
    return hh


def measure(n: int, repeat: int, collector: Collector) -> dict:
    ends: list[float] = []
    traced_h = timed_h(ends)
    best_u = best_t = float("inf")
    first = None
    row: dict = {}
    h(X, 1000)
    tracer.track(h, X, 1000)
    for i in range(repeat + 1):
        gc.collect()
        u0, s0, _ = cpu()
        h(X, n)
        u1, s1, _ = cpu()
        if i:
            best_u = min(best_u, (u1 - u0) + (s1 - s0))
        gc.collect()
        collector.on, collector.time, collector.count = True, 0.0, 0
        th0 = thp_faults()
        u0, s0, f0 = cpu()
        root = tracer.track(h, X, n)
        u1, s1, f1 = cpu()
        done = time.perf_counter()
        th1 = thp_faults()
        collector.on = False
        rows = len(root.trace)
        nbytes = root.trace.nbytes
        del root
        tracer.api._state.last = None
        total = (u1 - u0) + (s1 - s0)
        if first is None:
            first = total
        if total < best_t:
            best_t = total
            row = {"user": u1 - u0, "sys": s1 - s0, "minflt": f1 - f0, "thp": th1 - th0,
                   "gc_ms": 1e3 * collector.time, "gcs": collector.count,
                   "rows": rows, "bytes_per_row": nbytes / rows}
    # The end of tracking: traced runs whose function stamps its return (the
    # second: the first of a new function also pays for its cold wrapper).
    row["end_ms"] = float("inf")
    for _ in range(2):
        gc.collect()
        ends.clear()
        root = tracer.track(traced_h, X, n)
        row["end_ms"] = min(row["end_ms"], 1e3 * (time.perf_counter() - ends[-1]))
        del root
        tracer.api._state.last = None
    row.update(n=n, untraced=best_u, traced=best_t, ratio=best_t / best_u,
               first=first, first_ratio=first / best_u)
    return row


def touch(mib: int) -> None:
    import mmap
    size = mib << 20
    for huge in (False, True):
        times = []
        for _ in range(4):
            m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            if huge and hasattr(mmap, "MADV_HUGEPAGE"):
                m.madvise(mmap.MADV_HUGEPAGE)
            u0, s0, _ = cpu()
            for off in range(0, size, 4096):
                m[off] = 1
            u1, s1, _ = cpu()
            times.append((u1 - u0) + (s1 - s0))
            m.close()
        print(f"{mib} MiB, {'MADV_HUGEPAGE' if huge else '4 KiB pages'}: passes "
              + ", ".join(f"{t:.3f} s" for t in times))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6,1e7")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fresh", action="store_true",
                    help="no spare columns: every traced run in fresh memory")
    ap.add_argument("--arena-cache", type=int, default=1024, metavar="MIB",
                    help="keep up to MIB MiB of freed object arenas between runs "
                         "(tracer.views.arena_cache_limit; 1 GiB by default in tracer too)")
    ap.add_argument("--touch", type=int, metavar="MIB",
                    help="time touching MIB MiB of fresh memory instead")
    args = ap.parse_args(argv)
    if args.touch:
        touch(args.touch)
        return 0
    if not args.fresh and args.arena_cache and hasattr(tracer.views, "arena_cache_limit"):
        tracer.views.arena_cache_limit(args.arena_cache << 20)
    if args.fresh:
        tracer.views.spare_columns_limit(0)
        for name in ("spare_columns_lazy_limit", "arena_cache_limit"):
            if hasattr(tracer.views, name):     # builds before session 11 have neither
                getattr(tracer.views, name)(0)
    collector = Collector()
    print(f"Python {sys.version.split()[0]}, best of {args.repeat} (interleaved), "
          f"{'fresh columns' if args.fresh else 'default spare columns'}, "
          f"arena cache {0 if args.fresh else args.arena_cache} MiB")
    print("| iterations | rows | untraced (s) | traced (s) | ratio | user / sys (s) | first run | "
          "minor faults | THP faults | collector (ms, runs) | end (ms) | B/row |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        r = measure(int(float(size)), args.repeat, collector)
        print(f"| {r['n']:.0e} | {r['rows']:,} | {r['untraced']:.3f} | {r['traced']:.3f} | "
              f"**{r['ratio']:.2f}×** | {r['user']:.3f} / {r['sys']:.3f} | "
              f"{r['first']:.3f} ({r['first_ratio']:.2f}×) | {r['minflt']:,} | {r['thp']:,} | "
              f"{r['gc_ms']:.1f} ({r['gcs']}) | {r['end_ms']:.1f} | {r['bytes_per_row']:.1f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
