"""validate on a big trace against the time it took to record it (issue 22).

Usage::

    nice -n 10 python bench/validate_big.py [--n N] [--repeat R]

Traces bench/workloads.py's `h` (an op-dense loop) at N iterations (default 10^7:
tens of millions of nodes; mind the RAM, about 30 B a node) and prints the CPU
seconds of `tracer.track` and of `tracer.validate` on it, best of R (default 1).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import tracer  # noqa: E402
from workloads import h  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10 ** 7)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    tracer.track(h, 1.0001, 1000)   # plans built, code instrumented once
    best_track = best_validate = float("inf")
    nodes = 0
    for _ in range(args.repeat):
        gc.collect()
        c, w = time.process_time(), time.perf_counter()
        root = tracer.track(h, 1.000001, args.n)   # x ** n stays finite at n = 10^7
        track = time.process_time() - c, time.perf_counter() - w
        nodes = len(root.trace)
        c, w = time.process_time(), time.perf_counter()
        tracer.validate(root)
        validate = time.process_time() - c, time.perf_counter() - w
        best_track, best_validate = min(best_track, track[0]), min(best_validate, validate[0])
        print(f"h({args.n:,}): {nodes:,} nodes, {root.trace.nbytes / nodes:.1f} B/node; "
              f"track {track[0]:.2f} s CPU ({track[1]:.2f} wall), validate {validate[0]:.2f} s "
              f"CPU ({validate[1]:.2f} wall)", flush=True)
        del root
    print(f"best: track {best_track:.2f} s, validate {best_validate:.2f} s CPU: validate / "
          f"track = {best_validate / best_track:.2f}")


if __name__ == "__main__":
    main()
