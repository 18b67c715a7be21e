"""What each value policy costs the garbage collector on a real suite.

Usage::

    python bench/lifetimes.py --toolz DIR [--repeat N]
    python bench/lifetimes.py --mlp N

DIR is an unpacked toolz sdist (`pip download --no-binary :all: --no-deps toolz`):
its own test functions (those bench/cold.py runs: no arguments, passing untraced)
each traced on its own, as a suite run traced test by test.  One process fills a
fresh plan cache first; then, for each of untraced, values="keep", "none",
"summary" and "weak", a new process (a "second process": every plan on disk) runs
the suite N times over (default 3) and reports its best pass, as CPU time and as
a ratio to the best untraced pass, with what the collector did during that pass
(gc.callbacks): the time spent in it, its longest pause, how many collections ran
and how many objects they found unreachable (cyclic garbage), plus what one full
collection after the pass finds.  Each trace is dropped when the next test's is
made, as bench/cold.py does.

`--mlp N` times instead bench/workloads.py's numpy MLP untraced and under each
policy, interleaved, best of N rounds, as process CPU time (the previous trace
dropped and collected before each timer starts), with the best run's user and
system time and minor page faults; one more row keeps every value but numpy
arrays of 64 KiB and more (a value function: what a default that keeps small
values would cost).  `--hold-heap` first asks glibc's malloc to keep the memory
freed arrays had (mallopt) instead of returning it to the kernel.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

POLICIES = ["keep", "none", "summary", "weak"]


def worker(toolz_dir: Path, policy: str | None, repeat: int) -> dict:
    import tracer
    from tracer.context import Context

    from cold import _suite_tests

    passing = []
    for fn in _suite_tests(toolz_dir):
        try:
            fn()
            passing.append(fn)
        except Exception:  # noqa: BLE001 - a test failing untraced is left out
            pass
    ctx = Context(values=policy) if policy else None
    stats = {"time": 0.0, "pauses": [], "found": 0}
    started = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.process_time()
        else:
            stats["pauses"].append(time.process_time() - started[0])
            stats["found"] += info["collected"] + info["uncollectable"]

    passes = []
    gc.callbacks.append(on_gc)
    try:
        for _ in range(repeat):
            gc.collect()
            stats.update(time=0.0, pauses=[], found=0)
            t = time.process_time()
            root = None
            for fn in passing:
                if policy is None:
                    fn()
                else:
                    try:
                        root = tracer.track(fn, ctx=ctx)
                    except Exception:  # noqa: BLE001 - kept by last_trace, as in cold.py
                        pass
            elapsed = time.process_time() - t
            pauses = stats["pauses"]
            during = {"time": elapsed, "gc": sum(pauses), "max_pause": max(pauses, default=0.0),
                      "collections": len(pauses), "found": stats["found"]}
            del root
            tracer.api._state.last = None
            during["after"] = gc.collect()
            passes.append(during)
    finally:
        gc.callbacks.remove(on_gc)
    best = min(passes, key=lambda p: p["time"])
    best["tests"] = len(passing)
    return best


def run(toolz_dir: Path, repeat: int) -> dict:
    plan_dir = tempfile.mkdtemp(prefix="tracer-lifetimes-")
    env = dict(os.environ, TRACER_PLAN_CACHE_DIR=plan_dir)
    env.pop("TRACER_PLAN_CACHE", None)

    def process(policy: str | None, n: int) -> dict:
        cmd = [sys.executable, __file__, "--worker", str(toolz_dir), "--repeat", str(n)]
        if policy:
            cmd += ["--values", policy]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    try:
        process("keep", 1)        # fills the plan cache: the rows below are second processes
        rows = {"untraced": process(None, repeat)}
        for policy in POLICIES:
            rows[policy] = process(policy, repeat)
    finally:
        shutil.rmtree(plan_dir, ignore_errors=True)
    return rows


def show(rows: dict, repeat: int) -> None:
    base = rows["untraced"]["time"]
    print(f"Python {sys.version.split()[0]}: toolz's suite, {rows['untraced']['tests']} test "
          f"functions each traced on its own, second process (plans on disk), best pass of "
          f"{repeat}; CPU time")
    print("| run | pass (ms) | / untraced | in the collector (ms) | longest pause (ms) "
          "| collections | found unreachable | a full collection after |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        label = name if name == "untraced" else f'values="{name}"'
        print(f"| {label} | {r['time'] * 1e3:.1f} | {r['time'] / base:.2f}× | "
              f"{r['gc'] * 1e3:.1f} | {r['max_pause'] * 1e3:.2f} | {r['collections']} | "
              f"{r['found']:,} | {r['after']:,} |")


def _hold_freed_heap() -> str:
    """Ask glibc's malloc to keep freed memory instead of handing it back to the
    kernel (what MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ do), so the next run's
    arrays reuse pages already there.  Process-wide: a measurement, not a default."""
    import ctypes
    import ctypes.util
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    m_trim_threshold, m_mmap_threshold = -1, -3
    ok = libc.mallopt(m_mmap_threshold, 32 << 20) and libc.mallopt(m_trim_threshold, 1 << 30)
    return "malloc keeps freed memory (mallopt)" if ok else "mallopt refused"


def _big_arrays_summarised(limit: int = 64 << 10):
    """A value function: every value kept except numpy arrays of `limit` bytes and
    more, of which only (type, shape, dtype) is kept."""
    import numpy as np

    def keep_small(value):
        if isinstance(value, np.ndarray) and value.nbytes >= limit:
            return ("ndarray", value.shape, value.dtype)
        return value
    return keep_small


def mlp(rounds: int, hold_heap: bool = False, pool: bool = True,
        resident: int | None = None) -> None:
    import resource

    import tracer
    from tracer.context import Context
    from tracer.views import array_buffer_cache_limit

    from workloads import BY_NAME

    note = _hold_freed_heap() if hold_heap else "malloc as it is"
    if resident is not None:
        array_buffer_cache_limit(resident << 20)
    if not pool:
        array_buffer_cache_limit(0)
    note += (f"; array-buffer pool: {array_buffer_cache_limit() >> 20} MiB resident"
             if pool else "; array-buffer pool off")
    w = BY_NAME["mlp"]
    contexts = {p: Context(values=p) for p in POLICIES}
    contexts["keep ≤ 64 KiB arrays"] = Context(values=_big_arrays_summarised())
    variants = ["untraced", *contexts]
    best = dict.fromkeys(variants, float("inf"))
    split = dict.fromkeys(variants, (0.0, 0.0, 0))
    for rnd in range(rounds + 1):          # round 0 builds the plans
        k = rnd % len(variants)
        for variant in variants[k:] + variants[:k]:
            args, kwargs = w.make_args()
            tracer.api._state.last = None
            gc.collect()
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            t = time.process_time()
            if variant == "untraced":
                w.func(*args, **kwargs)
            else:
                root = tracer.track(w.func, *args, ctx=contexts[variant], **kwargs)
            dt = time.process_time() - t
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            root = None
            if rnd and dt < best[variant]:
                best[variant] = dt
                split[variant] = (r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime,
                                  r1.ru_minflt - r0.ru_minflt)
    base = best["untraced"]
    print(f"Python {sys.version.split()[0]}: numpy MLP, best of {rounds}, process time; "
          f"untraced {base * 1e3:.1f} ms; {note}")
    print("| values | ms | / untraced | user / sys (ms) | minor faults |")
    print("|---|---|---|---|---|")
    for v in variants:
        u, sy, f = split[v]
        print(f"| {v} | {best[v] * 1e3:.1f} | {best[v] / base:.2f}× | "
              f"{u * 1e3:.0f} / {sy * 1e3:.0f} | {f:,} |")


def mlp_drop(rounds: int) -> None:
    import tracer
    from tracer.views import array_buffer_cache_limit

    from workloads import BY_NAME

    w = BY_NAME["mlp"]
    args, kwargs = w.make_args()
    default = array_buffer_cache_limit()
    print(f"Python {sys.version.split()[0]}: dropping a traced numpy MLP run's trace "
          f"(values=\"keep\"), best of {rounds}, process time")
    print("| array-buffer pool | drop (ms) |")
    print("|---|---|")
    for name, limit in ((f"{default >> 20} MiB resident (default)", default),
                        ("256 MiB resident", 256 << 20), ("off", 0)):
        array_buffer_cache_limit(0)          # empty, then this row's limit
        array_buffer_cache_limit(limit)
        best = float("inf")
        for _ in range(rounds + 1):
            root = tracer.track(w.func, *args, **kwargs)
            tracer.api._state.last = None
            gc.collect()
            t = time.process_time()
            root = None
            best = min(best, time.process_time() - t)
        print(f"| {name} | {best * 1e3:.2f} |")
    array_buffer_cache_limit(default)


def pool_cost(rounds: int) -> None:
    import timeit

    import tracer
    from tracer import _arraypool
    from tracer.views import array_buffer_cache_limit

    from workloads import BY_NAME

    limit = array_buffer_cache_limit()
    print(f"Python {sys.version.split()[0]}: h and fib traced, array-buffer pool on and off, "
          f"interleaved, best of {rounds}, process time")
    print("| workload | untraced (ms) | pool on | pool off |")
    print("|---|---|---|---|")
    for name in ("h", "fib"):
        w = BY_NAME[name]
        args, kwargs = w.make_args()
        best = {"untraced": float("inf"), "on": float("inf"), "off": float("inf")}
        for rnd in range(rounds + 1):
            for v in (list(best) if rnd % 2 else list(best)[::-1]):
                array_buffer_cache_limit(0 if v == "off" else limit)
                tracer.api._state.last = None
                gc.collect()
                t = time.process_time()
                if v == "untraced":
                    w.func(*args, **kwargs)
                else:
                    root = tracer.track(w.func, *args, **kwargs)
                dt = time.process_time() - t
                root = None
                if rnd:
                    best[v] = min(best[v], dt)
        base = best["untraced"]
        on, off = best["on"] / base, best["off"] / base
        print(f"| {name} | {base * 1e3:.1f} | {on:.2f}× | {off:.2f}× |")
    array_buffer_cache_limit(limit)
    n = 100_000
    pair = min(timeit.repeat(lambda: _arraypool.leave(_arraypool.enter()), number=n, repeat=5))
    print(f"one enter + leave: {pair / n * 1e9:.0f} ns")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolz", type=Path, help="an unpacked toolz sdist (its tests)")
    parser.add_argument("--repeat", type=int, default=3, help="passes per process")
    parser.add_argument("--mlp", type=int, metavar="N",
                        help="time the numpy MLP under each policy instead, best of N")
    parser.add_argument("--hold-heap", action="store_true",
                        help="with --mlp: glibc keeps freed memory (mallopt) for the whole run")
    parser.add_argument("--no-pool", action="store_true",
                        help="with --mlp: tracer's array-buffer pool off (limit 0) all run")
    parser.add_argument("--resident", type=int, metavar="MiB",
                        help="with --mlp: the array-buffer pool's resident limit")
    parser.add_argument("--drop", action="store_true",
                        help="with --mlp: time dropping a trace under each pool setting instead")
    parser.add_argument("--pool-cost", type=int, metavar="N",
                        help="time h and fib with the array-buffer pool on and off, best of N")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--values", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.values, args.repeat)))
        return
    if args.pool_cost:
        pool_cost(args.pool_cost)
        return
    if args.mlp and args.drop:
        mlp_drop(args.mlp)
        return
    if args.mlp:
        mlp(args.mlp, args.hold_heap, pool=not args.no_pool, resident=args.resident)
        return
    if not args.toolz:
        parser.error("--toolz DIR is needed (an unpacked toolz sdist)")
    show(run(args.toolz, args.repeat), args.repeat)


if __name__ == "__main__":
    main()
