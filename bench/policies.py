"""tracer's value policies side by side: each workload traced under `values="keep"`
(the default), `"none"`, `"summary"` and `"weak"`, as ratios to the untraced run.

Usage::

    python bench/policies.py [--only NAME,...] [--policies P,...] [--repeat N]

For every workload of ``bench/workloads.py`` (or those named) this times, in one
process and interleaved round by round (``gc.collect()`` before each timed run,
fresh arguments each time, best of N, the calling thread's CPU time), the plain
call and ``tracer.track`` under a ``Context(values=P)`` per policy.  The trace of
each run is dropped before the next one starts (outside the timed region).

What it shows: a policy that keeps less should cost no more than keeping every
value (`"none"` writes one shared sentinel per row); `"summary"` and `"weak"` pay
for the objects they make per mutable value.
"""

from __future__ import annotations

import argparse
import functools
import platform
import sys

import tracer
from tracer.context import Context

import compare
from workloads import BY_NAME, WORKLOADS

POLICIES = ("keep", "none", "summary", "weak")


def _traced_under(ctx: Context, func, /, *args, **kwargs):
    return tracer.track(func, *args, ctx=ctx, **kwargs)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="workloads, comma-separated (default: all)")
    ap.add_argument("--policies", default=",".join(POLICIES), help="policies, comma-separated")
    ap.add_argument("--repeat", type=int, default=7, help="rounds (best of N)")
    opts = ap.parse_args(argv)
    names = [n for n in opts.only.split(",") if n] or [w.name for w in WORKLOADS]
    policies = [p for p in opts.policies.split(",") if p]
    print(f"Python {platform.python_version()} | tracer {tracer.__version__} | "
          f"best of {opts.repeat}, interleaved, cpu clock")
    print(f"{'workload':<10} " + " ".join(f"{p:>8}" for p in policies))
    compare.clock = compare.CLOCKS["cpu"]   # (compare.timed's clock)
    runs = {"untraced": compare.untraced}
    for p in policies:
        runs[p] = functools.partial(_traced_under, Context(values=p))
    for name in names:
        w = BY_NAME[name]
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(opts.repeat):
            for p, call in runs.items():
                best[p] = min(best[p], compare.timed(w, call))
        print(f"{name:<10} " + " ".join(f"{best[p] / best['untraced']:>7.2f}x" for p in policies),
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
