"""Where ppl.trace and a replay by position spend their instructions, phase by
phase (callgrind markers, bench/callgrind_marks.py): the recording run with
snapshots, the scan of the draws, their scoring, making the ChoiceTrace; the replay's
run, its scan, and same_shape + copy_scores.  Each phase runs K times on inputs made
beforehand (a fresh trace per run), beside plain tracer.track:

    nice valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.ph \\
        .venv-3.13/bin/python bench/ppl_phases.py M K
    python bench/ppl_phases.py --read /tmp/cg.ph K          # M: 0, 1, 2 as in ppl.py
"""

from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_marks import marker_counts, run_marked  # noqa: E402

NAMES = ["track", "run", "scan", "score", "ChoiceTrace", "seqrun", "scan(seq)", "shape+copy"]


def main(mi: int, k: int) -> None:
    import ppl as bench
    import scipy.stats  # noqa: F401  (imported before the counted runs)
    import tracer
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
             g]
    for c in cases:
        c(n - 1)
    run_marked(cases, k)


if __name__ == "__main__":
    if sys.argv[1] == "--read":
        got = marker_counts(sys.argv[2], NAMES, int(sys.argv[3]))
        t = got["track"]
        for nm in NAMES:
            print(f"  {nm:12s} {got[nm]/1e6:8.2f} M  {got[nm]/t:.3f}x track")
        print(f"  trace = {(got['run']+got['scan']+got['score']+got['ChoiceTrace'])/t:.3f}x, replay parts = {(got['seqrun']+got['scan(seq)']+got['shape+copy'])/t:.3f}x")
    else:
        main(int(sys.argv[1]), int(sys.argv[2]))
