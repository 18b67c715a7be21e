"""What hooks for chosen callees cost (Context(on_call=, substitute=, override=)).

Usage::

    python bench/hooks.py [--calls N] [--every K] [--repeat R]
    python bench/hooks.py --values [--repeat R]

A call-dense program makes N calls (default 10^6), one in K (default 100) of them
to `draw` (a builtin method, `random.Random.random`), the others to `step` (the
builtin `abs`).  Each variant below is timed as a ratio to plain tracing (the
default context) and to the untraced call, all variants interleaved in one
process, the order rotating from round to round, best of R (default 9):

- on_call / substitute / override: the filters, matched in C (recorded with
  PLAN_INTERVENE_CALLS plans for substitute and override: events before calls only);
- the same substitute and override with one more filter entry, on `operator.matmul`
  (never called here), which names an operator's function and so puts the run in
  PLAN_INTERVENE (an event before every call and operator): the cost before the
  calls-only plans;
- with --old, unfiltered hooks doing the same job the old way, for comparison: a
  `trackedprimitive` that tests `node.callee`, a `substitute` method that tests
  `f` (tens of times slower: use a smaller --calls).

Every variant's trace is checked to have the same number of matched calls.

Instruction counts of the same variants: bench/hooks_callgrind.py.

With --values it times instead each value policy (Context(values=...)) on the
numpy MLP and on fib (call-dense) of bench/workloads.py, as ratios to the
untraced call, interleaved in the same way (the previous trace is dropped before
the timer starts).
"""

from __future__ import annotations

import argparse
import gc
import operator
import random
import sys
import time

import os

import tracer
from tracer.context import KEEP, Context

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

RNG = random.Random(0)
draw = RNG.random


def program(n: int, every: int) -> float:
    s = 0.0
    for i in range(n):
        if i % every == 0:
            s += draw()
        else:
            s += abs(-i)
    return s


class OldOnCall(Context):
    def __init__(self, hook):
        super().__init__()
        self.hook = hook

    def trackedprimitive(self, node):
        if node.callee is draw:
            self.hook(node)


class OldSubstitute(Context):
    def substitute(self, f, /, *args, **kwargs):
        return replacement if f is draw else None


def replacement() -> float:
    return 0.5


def variants(seen: list, old: bool):
    new = {
        "plain tracing": None,
        "on_call={draw: hook}": Context(on_call={draw: seen.append}),
        "substitute={draw: fn}": Context(substitute={draw: replacement}),
        "override={draw: hook}": Context(override={draw: lambda node: KEEP}),
        "substitute, PLAN_INTERVENE": Context(substitute={draw: replacement,
                                                          operator.matmul: operator.matmul}),
        "override, PLAN_INTERVENE": Context(override={draw: lambda node: KEEP,
                                                      operator.matmul: lambda node: KEEP}),
    }
    if old:
        new["old: trackedprimitive tests node.callee"] = OldOnCall(seen.append)
        new["old: substitute method tests f"] = OldSubstitute()
    return new


def bench_values(repeat: int) -> None:
    from workloads import BY_NAME

    policies = ["keep", "none", "summary", "weak"]
    print(f"Python {sys.version.split()[0]}: value policies, best of {repeat}")
    print("| workload | untraced (s) | " + " | ".join(f'values="{p}"' for p in policies) + " |")
    print("|---|---|" + "---|" * len(policies))
    for name in ("mlp", "fib"):
        w = BY_NAME[name]
        best = {k: float("inf") for k in ["untraced", *policies]}
        for rnd in range(repeat + 1):
            order = policies[rnd % 4:] + policies[:rnd % 4]
            for variant in ["untraced", *order]:
                args, kwargs = w.make_args()
                tracer.api._state.last = None
                gc.collect()
                t0 = time.perf_counter()
                if variant == "untraced":
                    w.func(*args, **kwargs)
                else:
                    root = tracer.track(w.func, *args, ctx=Context(values=variant), **kwargs)
                dt = time.perf_counter() - t0
                if variant != "untraced":
                    del root
                if rnd:
                    best[variant] = min(best[variant], dt)
        base = best["untraced"]
        print(f"| {name} | {base:.3f} | " +
              " | ".join(f"{best[p] / base:.2f}×" for p in policies) + " |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10**6)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--values", action="store_true", help="time the value policies instead")
    ap.add_argument("--old", action="store_true",
                    help="also the unfiltered hooks (slow: use --calls 100000)")
    args = ap.parse_args(argv)
    if args.values:
        bench_values(args.repeat)
        return 0
    n, every = args.calls, args.every
    seen: list = []
    ctxs = variants(seen, args.old)
    best = {name: float("inf") for name in ["untraced", *ctxs]}
    names = list(ctxs)
    for rnd in range(args.repeat + 1):   # round 0 warms up
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for name in ["untraced", *order]:
            seen.clear()
            gc.collect()
            t0 = time.perf_counter()
            if name == "untraced":
                program(n, every)
            else:
                root = tracer.track(program, n, every, ctx=ctxs[name])
            dt = time.perf_counter() - t0
            if name != "untraced":
                if "on_call" in name or "trackedprimitive" in name:
                    assert len(seen) == n // every, (name, len(seen))
                if "substitute" in name:
                    subst = sum(1 for md in root.trace.metadata.values() if "substituted" in md)
                    assert subst == (n + every - 1) // every, (name, subst)
                del root
            if rnd:
                best[name] = min(best[name], dt)
    plain = best["plain tracing"]
    print(f"Python {sys.version.split()[0]}: {n:,} calls, {n // every:,} to the hooked "
          f"callable; best of {args.repeat}")
    print(f"| variant | time (s) | / plain tracing | / untraced |")
    print(f"|---|---|---|---|")
    for name, t in best.items():
        print(f"| {name} | {t:.3f} | {t / plain:.2f}× | {t / best['untraced']:.1f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
