"""`tracer.track` / untraced of bench/ppl.py's three models, and nothing else.

Usage::

    nice -n 10 python bench/percall_ppl.py [repeats]

Per model (hierarchical regression, CRP mixture, HMM: ~10^4 draws each, the
`random` module primitive as in bench/ppl.py), the untraced run and the traced
run interleaved round by round, best of `repeats` (default 7) by the calling
thread's CPU time (`time.thread_time`): bench/ppl.py's "track/untraced" column
without its other cases, quick enough to compare two builds (put the other
build first on PYTHONPATH).
"""

from __future__ import annotations

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tracer  # noqa: E402
from tracer.context import Context  # noqa: E402

from ppl import MODELS  # noqa: E402


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    ctx = Context(modules=["random"])
    clock = time.thread_time
    for name, model, args in MODELS:
        r = random.Random(0)
        tracer.track(model, r, *args, ctx=ctx)   # plans built
        cases = {"untraced": lambda: model(r, *args),
                 "track": lambda: tracer.track(model, r, *args, ctx=ctx)}
        best = dict.fromkeys(cases, float("inf"))
        for _ in range(repeats):
            for k, fn in cases.items():
                t0 = clock()
                fn()
                best[k] = min(best[k], clock() - t0)
        print(f"{name}: untraced {best['untraced'] * 1e3:.1f} ms, track "
              f"{best['track'] * 1e3:.1f} ms, track/untraced "
              f"{best['track'] / best['untraced']:.2f}x")


if __name__ == "__main__":
    main()
