"""Where ppl.trace and a replay by position spend their instructions, phase by
phase (one callgrind part per run, bench/callgrind_parts.py): the recording run with
snapshots, the scan of the draws, their scoring, making the ChoiceTrace; the replay's
run, its scan, and same_shape + copy_scores.  Each phase runs K times on inputs made
beforehand (a fresh trace per run), beside plain tracer.track:

    nice valgrind --tool=callgrind --collect-atstart=no --toggle-collect=starmap_next \\
        --dump-after=starmap_next --callgrind-out-file=/tmp/cg.ph \\
        .venv-3.13/bin/python bench/ppl_phases.py M K
    python bench/ppl_phases.py --read /tmp/cg.ph K          # M: 0, 1, 2 as in ppl.py

With a third argument, `condition` or `do`: the phases of ppl.condition (or do) on
1 % of the data sites as bench/ppl.py picks them: the run under the fixing context,
its scan, the kinds, the scoring, making the ChoiceTrace; beside plain track, the
same fixing run with no snapshots, and ppl.trace's run:

    nice valgrind --tool=callgrind --collect-atstart=no --toggle-collect=starmap_next \\
        --dump-after=starmap_next --callgrind-out-file=/tmp/cg.co \\
        .venv-3.13/bin/python bench/ppl_phases.py M K condition
    python bench/ppl_phases.py --read /tmp/cg.co K condition

(the fixing phases' run i draws from random.Random(SEED + i), as in
bench/ppl_callgrind.py: the CRP's cost follows its random state.)
"""

from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_parts import part_counts, run_parts  # noqa: E402

NAMES = ["track", "run", "scan", "score", "ChoiceTrace", "seqrun", "scan(seq)", "shape+copy",
         "ppl.trace", "replay"]
SEED = 1000      # the fixing phases' run i: random.Random(SEED + i), as ppl_callgrind.py
FIX_NAMES = ["track", "run", "fixrun", "fixrun(nosnap)", "scan(fix)", "kinds", "score(fix)",
             "ChoiceTrace(fix)", "whole"]


def fixing(mi: int, k: int, what: str) -> None:
    """ppl.condition's (or do's) phases, each on inputs made beforehand."""
    import ppl as bench
    import scipy.stats  # noqa: F401  (imported before the counted runs)
    import tracer
    from tracer.api import track
    from tracer.context import Context
    from tracer.ppl._hooks import fixing_context, plain_context
    from tracer.ppl.snapshots import Snapshots
    from tracer.ppl.scan import scan
    from tracer.ppl.densities import score_draws
    from tracer.ppl.choices import ChoiceTrace
    from tracer.ppl.kinds import INTERVENED, OBSERVED
    from tracer.ppl.run import _fix
    import tracer.ppl as ppl
    name, model, args = bench.MODELS[mi]
    r = random.Random(0)
    ct = bench.full(model, (r,) + args)
    obs = bench.observed_sites(ct)
    fixed = _fix(obs, OBSERVED if what == "condition" else INTERVENED)
    ctx = Context(modules=["random"])
    m = k + 1
    R = random.Random          # run i of each phase: random.Random(SEED + i)
    runs = []
    for i in range(m):
        s = Snapshots()
        fx = fixing_context(fixed, s)
        runs.append((track(model, R(SEED + i), *args, ctx=fx), s, fx))
    scans = [scan(root, "error", snaps=s) for root, s, _ in runs]
    kinds = [fx.kinds(d) for (_, _, fx), d in zip(runs, scans)]
    for d in scans:
        score_draws(d)
    cases = [lambda i: tracer.track(model, R(SEED + i), *args, ctx=ctx),
             lambda i: track(model, R(SEED + i), *args, ctx=plain_context(Snapshots())),
             lambda i: track(model, R(SEED + i), *args, ctx=fixing_context(fixed, Snapshots())),
             lambda i: track(model, R(SEED + i), *args, ctx=fixing_context(fixed)),
             lambda i: scan(runs[i][0], "error", snaps=runs[i][1]),
             lambda i: runs[i][2].kinds(scans[i]),
             lambda i: score_draws(scans[i]),
             lambda i: ChoiceTrace(model, (r,) + args, {}, runs[i][0], scans[i], kinds[i]),
             (lambda i: ppl.condition(model, obs, R(SEED + i), *args)) if what == "condition"
             else (lambda i: ppl.do(model, obs, R(SEED + i), *args))]
    for c in cases:
        c(m - 1)
    run_parts(cases, k)


def main(mi: int, k: int) -> None:
    import ppl as bench
    import scipy.stats  # noqa: F401  (imported before the counted runs)
    import tracer
    import tracer.ppl
    from tracer.api import track
    from tracer.context import Context
    from tracer.ppl._hooks import plain_context, SequenceContext
    from tracer.ppl.snapshots import Snapshots
    from tracer.ppl.scan import copy_scores, same_shape, scan
    from tracer.ppl.densities import score_draws
    from tracer.ppl.choices import ChoiceTrace
    from tracer.ppl.run import _sequence
    name, model, args = bench.MODELS[mi]
    r = random.Random(0)
    ct = bench.full(model, (r,) + args)
    ctx = Context(modules=["random"])
    n = k + 1
    runs = []
    for _ in range(n):
        s = Snapshots()
        runs.append((track(model, r, *args, ctx=plain_context(s)), s))
    scans = [scan(root, "error", False, s) for root, s in runs]
    for d in scans:
        score_draws(d)
    _, values, _ = _sequence(ct)
    seqs = []
    for _ in range(n):
        s = Snapshots()
        c = SequenceContext(values, s)
        seqs.append((track(model, *ct.args, ctx=c), s))
    sscans = [scan(root, "error", True, s) for root, s in seqs]
    old = ct._draws_

    def g(i):
        assert same_shape(old, sscans[i]) and copy_scores(old, sscans[i])

    def seqrun(i):
        s = Snapshots()
        c = SequenceContext(values, s)
        track(model, *ct.args, ctx=c)

    cases = [lambda i: tracer.track(model, r, *args, ctx=ctx),
             lambda i: track(model, r, *args, ctx=plain_context(Snapshots())),
             lambda i: scan(runs[i][0], "error", False, runs[i][1]),
             lambda i: score_draws(scans[i]),
             lambda i: ChoiceTrace(model, (r,) + args, {}, runs[i][0], scans[i]),
             seqrun,
             lambda i: scan(seqs[i][0], "error", True, seqs[i][1]),
             g,
             lambda i: tracer.ppl.trace(model, r, *args),
             lambda i: tracer.ppl.replay(ct)]
    for c in cases:
        c(n - 1)
    run_parts(cases, k)


if __name__ == "__main__":
    if sys.argv[1] == "--read" and sys.argv[4:]:
        got = part_counts(sys.argv[2], FIX_NAMES, int(sys.argv[3]))
        t = got["track"]
        for nm in FIX_NAMES:
            print(f"  {nm:16s} {got[nm]/1e6:8.2f} M  {got[nm]/t:.3f}x track")
        parts = ["fixrun", "scan(fix)", "kinds", "score(fix)", "ChoiceTrace(fix)"]
        print(f"  {sys.argv[4]} parts = {sum(got[p] for p in parts)/t:.3f}x, "
              f"whole = {got['whole']/t:.3f}x")
    elif sys.argv[1] != "--read" and sys.argv[3:]:
        fixing(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "--read":
        got = part_counts(sys.argv[2], NAMES, int(sys.argv[3]))
        t = got["track"]
        for nm in NAMES:
            print(f"  {nm:12s} {got[nm]/1e6:8.2f} M  {got[nm]/t:.3f}x track")
        print(f"  trace parts = {(got['run']+got['scan']+got['score']+got['ChoiceTrace'])/t:.3f}x, replay parts = {(got['seqrun']+got['scan(seq)']+got['shape+copy'])/t:.3f}x")
    else:
        main(int(sys.argv[1]), int(sys.argv[2]))
