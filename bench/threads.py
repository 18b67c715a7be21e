"""track in one thread vs in 8 threads at once: the traced/untraced ratio per thread.

The untraced call is timed alone in the main thread; then each thread times the
traced call (best of N) on its own CPU clock (time.thread_time: time spent waiting
for the GIL is not counted), so the ratio says what tracing costs a thread whatever
runs beside it.  (An untraced call timed while other threads track pays their
events: the same code is instrumented for the whole process.)  The ratio of the
process's CPU time for all threads together (all traced / all untraced, the same
calls) is printed too; wall-clock time on a shared machine mostly measures the
neighbours.

    .venv-3.13/bin/python bench/threads.py [--threads 8] [--repeat 7] [--n 300]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

import tracer


def rsum(n):
    return 0 if n == 0 else n + rsum(n - 1)


def workload(k):
    total = 0
    for i in range(k):
        total += rsum(i % 15) * 2
        if i % 3 == 0:
            total -= 1
        total %= 9973
    return total


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best


def per_thread(n: int, repeat: int, out: list, barrier: threading.Barrier) -> None:
    barrier.wait()
    out.append(_best(lambda: tracer.track(workload, n), repeat))


def run(threads: int, n: int, repeat: int) -> tuple[float, float, float]:
    """(median per-thread ratio, worst per-thread ratio, process CPU ratio)."""
    untraced = _best(lambda: workload(n), 3 * repeat)   # alone, in this thread
    out: list = []
    barrier = threading.Barrier(threads)
    ts = [threading.Thread(target=per_thread, args=(n, repeat, out, barrier))
          for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ratios = sorted(tr / untraced for tr in out)
    cpu = {}
    for mode in ("untraced", "traced"):
        call = (lambda: workload(n)) if mode == "untraced" else (lambda: tracer.track(workload, n))
        best = float("inf")
        for _ in range(3):
            b = threading.Barrier(threads + 1)

            def loop():
                b.wait()
                for _ in range(5):
                    call()

            ws = [threading.Thread(target=loop) for _ in range(threads)]
            for w in ws:
                w.start()
            b.wait()
            t0 = time.process_time()
            for w in ws:
                w.join()
            best = min(best, time.process_time() - t0)
        cpu[mode] = best
    return ratios[len(ratios) // 2], ratios[-1], cpu["traced"] / cpu["untraced"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--n", type=int, default=300, help="loop iterations of the workload")
    args = ap.parse_args()
    nodes = len(tracer.track(workload, args.n).trace)
    print(f"Python {sys.version.split()[0]}, workload {args.n} iterations ({nodes:,} nodes)")
    print("| threads | per-thread ratio (median) | per-thread ratio (worst) | process CPU ratio |")
    print("|---|---|---|---|")
    for threads in (1, args.threads):
        med, worst, total = run(threads, args.n, args.repeat)
        print(f"| {threads} | {med:.2f}x | {worst:.2f}x | {total:.2f}x |")


if __name__ == "__main__":
    main()
