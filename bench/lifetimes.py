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
dropped and collected before each timer starts).
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


def mlp(rounds: int) -> None:
    import tracer
    from tracer.context import Context

    from workloads import BY_NAME

    w = BY_NAME["mlp"]
    variants = ["untraced", *POLICIES]
    best = dict.fromkeys(variants, float("inf"))
    for rnd in range(rounds + 1):          # round 0 builds the plans
        for variant in variants[rnd % 5:] + variants[:rnd % 5]:
            args, kwargs = w.make_args()
            tracer.api._state.last = None
            gc.collect()
            t = time.process_time()
            if variant == "untraced":
                w.func(*args, **kwargs)
            else:
                root = tracer.track(w.func, *args, ctx=Context(values=variant), **kwargs)
            dt = time.process_time() - t
            root = None
            if rnd:
                best[variant] = min(best[variant], dt)
    base = best["untraced"]
    print(f"Python {sys.version.split()[0]}: numpy MLP, best of {rounds}, process time; "
          f"untraced {base * 1e3:.1f} ms")
    print("  ".join(f"{v} {best[v] / base:.2f}x" for v in variants))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolz", type=Path, help="an unpacked toolz sdist (its tests)")
    parser.add_argument("--repeat", type=int, default=3, help="passes per process")
    parser.add_argument("--mlp", type=int, metavar="N",
                        help="time the numpy MLP under each policy instead, best of N")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--values", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.values, args.repeat)))
        return
    if args.mlp:
        mlp(args.mlp)
        return
    if not args.toolz:
        parser.error("--toolz DIR is needed (an unpacked toolz sdist)")
    show(run(args.toolz, args.repeat), args.repeat)


if __name__ == "__main__":
    main()
