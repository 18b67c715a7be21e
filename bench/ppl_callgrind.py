"""bench/ppl.py's cases as instruction counts (callgrind): stable on a busy machine,
where wall times of one model vary 2x between runs.

Every case of one model runs K times, after one warm-up run of each, each run one
callgrind part (bench/callgrind_parts.py; before session 16 each case was the
inclusive count of a C function of the interpreter, bench/callgrind_marks.py, which
took in that function's other calls in the whole program: `min` and `filter` run in
tracer's and scipy's own code too):

    git archive <commit> src/tracer/ppl | tar -x -C /tmp/before
    nice valgrind --tool=callgrind --collect-atstart=no --toggle-collect=starmap_next \\
        --dump-after=starmap_next --callgrind-out-file=/tmp/cg.M \\
        .venv-3.13/bin/python bench/ppl_callgrind.py M K [/tmp/before/src/tracer/ppl]
    python bench/ppl_callgrind.py --read /tmp/cg.M K [--before]

(M: 0 regression, 1 CRP, 2 HMM, 3 draws made in a helper function of the model:
each draw a Python call of the model's own, a frame the ppl runs enter; K: runs per case; the optional third argument:
another version of tracer.ppl, timed as "before.*" in place of `do`, and read with
--before).  Run i of every case draws from `random.Random(SEED + i)` (session 17;
before, every case went on with one generator, so the CRP's cost, which follows its
random state, moved between cases, processes and builds): a case's runs are the same
programs in every process and build, and the cases' first runs the same seeds.  Each model takes minutes.  `--time M N [DIR]`: the same cases (and
`do`, with DIR too) by process time instead, interleaved, best of N:

    nice python bench/ppl_callgrind.py --time M N [/tmp/before/src/tracer/ppl]
"""

from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from callgrind_parts import part_counts, run_parts  # noqa: E402

SEED = 1000      # run i of each case: random.Random(SEED + i)
CASES = ["untraced", "track", "ppl.trace", "replay", "condition", "do"]
# With another tracer.ppl to compare.
BEFORE_CASES = CASES[:5] + ["before.trace", "before.replay", "before.condition"]


def _draw(r, mu):
    return r.gauss(mu, 1.0)


def helper_draws(r, n):
    """10^4 draws, each in a call of a helper (bench/ppl.py's models draw inline)."""
    mu = r.gauss(0.0, 5.0)
    total = 0.0
    for i in range(n):
        total += _draw(r, mu + i * 0.001)
    return total


def cases_of(mi: int, before: str | None) -> tuple[list, dict]:
    """(case names, name -> case) for model `mi`, each case run once already."""
    import ppl as bench
    import scipy.stats  # noqa: F401  (imported before the counted runs)
    import tracer
    import tracer.ppl as ppl
    from tracer.context import Context
    old = bench._load_before(before) if before else None
    name, model, args = (bench.MODELS + [("helper draws", helper_draws, (10000,))])[mi]
    r = random.Random(0)
    ct = bench.full(model, (r,) + args)
    obs = bench.observed_sites(ct)
    if old is not None:
        octt = old.trace(model, r, *args)
        octt.choices
        octt.log_joint
    ctx = Context(modules=["random"])
    R = random.Random
    cases = {"untraced": lambda i: model(R(SEED + i), *args),
             "track": lambda i: tracer.track(model, R(SEED + i), *args, ctx=ctx),
             "ppl.trace": lambda i: ppl.trace(model, R(SEED + i), *args),
             "replay": lambda _: ppl.replay(ct),
             "condition": lambda i: ppl.condition(model, obs, R(SEED + i), *args),
             "do": lambda i: ppl.do(model, obs, R(SEED + i), *args)}
    if old is not None:
        cases.update({"before.trace": lambda i: old.trace(model, R(SEED + i), *args),
                      "before.replay": lambda _: old.replay(octt),
                      "before.condition": lambda i: old.condition(model, obs, R(SEED + i),
                                                                  *args)})
    names = BEFORE_CASES if old is not None else CASES
    if old is not None:
        cases["do"] = lambda i: ppl.do(model, obs, R(SEED + i), *args)
        names = names + ["do"]
    for name in names:
        cases[name](0)
    return names, cases


def run(mi: int, k: int, before: str | None) -> None:
    names, cases = cases_of(mi, before)
    names = [n for n in names if n != "do"] if before else names
    run_parts([cases[name] for name in names], k)


def timed(mi: int, n: int, before: str | None) -> None:
    """The same cases by process time (`time.process_time`: the process's own CPU
    time, less moved by a loaded machine than wall time), interleaved, best of n."""
    import time
    names, cases = cases_of(mi, before)
    best = dict.fromkeys(names, float("inf"))
    for _ in range(n):
        for name in names:
            t0 = time.process_time()
            cases[name](0)
            best[name] = min(best[name], time.process_time() - t0)
    t = best["track"]
    for name in names:
        print(f"  {name}: {best[name] * 1e3:.1f} ms" +
              (f" ({best[name] / t:.2f}x track)" if name not in ("untraced", "track") else ""))
    print(f"  track/untraced {t / best['untraced']:.2f}x")


def read(path: str, k: int, before: bool = False) -> None:
    names = BEFORE_CASES if before else CASES
    got = part_counts(path, names, k)
    for case in names:
        if case in got:
            print(f"  {case}: {got[case] / 1e6:.1f} M instructions per run")
    t = got.get("track")
    if t:
        print("  " + ", ".join(f"{c}/track {got[c] / t:.2f}x" for c in
                               ("ppl.trace", "replay", "condition", "do", "before.trace",
                                "before.replay", "before.condition") if c in got)
              + (f", track/untraced {t / got['untraced']:.2f}x" if "untraced" in got else ""))


if __name__ == "__main__":
    if sys.argv[1] == "--read":
        read(sys.argv[2], int(sys.argv[3]), "--before" in sys.argv[4:])
    elif sys.argv[1] == "--time":
        timed(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        run(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
