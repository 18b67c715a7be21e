"""Tape benchmark: construction cost, compiled tapes against the original, update.

    python bench/tape.py [--repeat N]

Prints three tables (best of N, interleaved runs):

1. construction: tracing (`track`) and flattening (`Tape.from_trace`) time per op.
2. compiled: `tape.compile()`d function against the original function on the
   inputs it was traced with (`h`, the numpy model `mlp`, a straight-line scalar
   function), plus the one-time `compile()` cost.  The target is ratio <= 1.
3. update: `tape.update` of one input of a model with 1,000 independent branches
   against a full re-run (the original function and the compiled tape).
"""

from __future__ import annotations

import argparse
import math
import operator
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tracer  # noqa: E402
import workloads as W  # noqa: E402
from tracer.tapes import Call, Tape  # noqa: E402

H_N = 5000  # h's while loop unrolled: ~6 ops per iteration


def kinematics(x0, v0, a, t, drag):
    """A straight-line scalar function built from small helpers (inlined on the tape)."""
    def position(x, v, acc, dt):
        return x + v * dt + 0.5 * acc * dt * dt

    def damp(v, k, dt):
        return v * math.exp(-k * dt)

    x1 = position(x0, v0, a, t)
    v1 = damp(v0 + a * t, drag, t)
    x2 = position(x1, v1, -a, t)
    v2 = damp(v1 - a * t, drag, t)
    energy = 0.5 * v2 * v2 + a * x2
    return math.sqrt(abs(energy)) + math.atan2(x2, v2) + math.hypot(x1, x2)


def branch(x):
    y = math.sin(x) * 2.0 + x * x
    if y > 10.0:
        y = y - 10.0
    return y


def tree(xs, lo, hi):
    if hi - lo == 1:
        return branch(xs[lo])
    mid = (lo + hi) // 2
    return tree(xs, lo, mid) + tree(xs, mid, hi)


def branches(xs):
    """1,000 independent branches of work, summed pairwise."""
    return tree(xs, 0, len(xs))


def best(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def cases():
    mlp_args = W.make_mlp_args()[0]
    return [
        ("h (while loop, n=5000)", W.h, (1.0001, H_N)),
        ("mlp (numpy, 256x256 x50)", W.mlp, mlp_args),
        ("kinematics (straight line)", kinematics, (1.0, 2.0, 0.5, 0.1, 0.3)),
        ("branches (1,000 branches)", branches, ([0.003 * i for i in range(1000)],)),
    ]


def construction(repeat: int) -> list[str]:
    rows = ["| function | trace nodes | tape ops | track ms | flatten ms | flatten ns/op |",
            "|---|---|---|---|---|---|"]
    for name, f, args in cases():
        root = tracer.track(f, *args)
        tape = Tape.from_trace(root)
        t_track = best(lambda: tracer.track(f, *args), repeat)
        t_flat = best(lambda: Tape.from_trace(root), repeat)
        rows.append(f"| {name} | {len(root.trace):,} | {len(tape):,} | {t_track * 1e3:.2f} | "
                    f"{t_flat * 1e3:.2f} | {t_flat / len(tape) * 1e9:,.0f} |")
    return rows


def compiled(repeat: int) -> list[str]:
    rows = ["| function | original ms | compiled ms | ratio | play ms | compile() ms |",
            "|---|---|---|---|---|---|"]
    for name, f, args in cases():
        val, tape = tracer.tape(f, *args)
        t0 = time.perf_counter()
        fn = tape.compile()
        t_compile = time.perf_counter() - t0
        got = fn(*args)
        ok = W.arrays_match(got, val) if hasattr(val, "shape") else got == val
        if not ok:
            raise SystemExit(f"{name}: the compiled tape gave {got!r}, expected {val!r}")
        t_orig = t_comp = math.inf
        for _ in range(repeat):  # interleaved: both see the same machine phases
            t_orig = min(t_orig, best(lambda: f(*args), 1))
            t_comp = min(t_comp, best(lambda: fn(*args), 1))
        t_play = best(lambda: tape.play(*args), max(1, repeat // 3))
        rows.append(f"| {name} | {t_orig * 1e3:.3f} | {t_comp * 1e3:.3f} | "
                    f"{t_comp / t_orig:.2f}x | {t_play * 1e3:.3f} | {t_compile * 1e3:.1f} |")
    return rows


def update(repeat: int) -> list[str]:
    xs = [0.003 * i for i in range(1000)]
    val, tape = tracer.tape(branches, xs)
    leaves = [op for op in tape if isinstance(op, Call) and op.fn is operator.getitem
              and op.args[0] is tape.inputs[1]]
    fn = tape.compile()
    k = [0]

    def one_update():
        k[0] = (k[0] + 1) % 1000
        tape.update({leaves[k[0]]: 0.001 * k[0]})

    xs2 = list(xs)
    t_up = best(one_update, repeat * 5)
    rerun = len(tape.last_update)
    t_orig = best(lambda: branches(xs2), repeat)
    t_comp = best(lambda: fn(xs2), repeat)
    return ["| model | tape ops | ops re-run | update µs | original µs | compiled µs | "
            "update / original |",
            "|---|---|---|---|---|---|---|",
            f"| branches (1,000) | {len(tape):,} | {rerun} | {t_up * 1e6:.0f} | "
            f"{t_orig * 1e6:.0f} | {t_comp * 1e6:.0f} | {t_up / t_orig:.3f}x |"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, metavar="N")
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}, best of {args.repeat}")
    for title, table in (("construction", construction), ("compiled", compiled),
                         ("update", update)):
        print(f"\n{title}:\n")
        print("\n".join(table(args.repeat)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
