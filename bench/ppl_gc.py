"""The collector's work per run of bench/ppl_callgrind.py's cases: collections per
run by generation (counted with `gc.callbacks`), run after run in one process.

    OPENBLAS_NUM_THREADS=1 nice python bench/ppl_gc.py M K

(M: 0 regression, 1 CRP, 2 HMM; K: runs per case, each case's runs one after the
other after the warm-up run bench/ppl_callgrind.py makes).  Session 20: a replay
made one metadata dict per substituted draw, ~14 collections per run on 3.12.
"""

from __future__ import annotations

import gc
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ppl_callgrind import cases_of  # noqa: E402


def main(mi: int, k: int) -> None:
    names, cases = cases_of(mi, None)
    counts = [0, 0, 0]

    def count(phase, info):
        if phase == "start":
            counts[info["generation"]] += 1

    gc.collect()
    gc.callbacks.append(count)
    try:
        for name in names:
            counts[:] = [0, 0, 0]
            for _ in range(k):
                cases[name](0)
            print(f"  {name}: " + ", ".join(f"gen{g} {c / k:.1f}" for g, c in
                                            enumerate(counts)) + " collections per run")
    finally:
        gc.callbacks.remove(count)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
