"""Two callables whose addresses share the captured-callable cache's entry, called
alternately by global name under `track`: the pool's size and the trace's nodes.

Usage: python bench/pool_collisions.py collide|apart N

`collide`: two copies of one function made until their addresses agree in bits
4..11 (the cache's index before session 21, and bits 4..12's lower part: they share
a home now).  `apart`: one of them and a copy made after.  Run it under
`valgrind --tool=callgrind` with N and with 0 for instructions per iteration
(bench/RESULTS.md, session 21).  Before session 21 the pool grew by two entries
per iteration when colliding.
"""

from __future__ import annotations

import sys
import types

import tracer


def _one():
    return 1


def _sharing_a_slot() -> tuple:
    # Copies of _one until two share bits 4..11 of their address; all copies kept
    # (an address freed meanwhile could be reused).
    seen: dict[int, types.FunctionType] = {}
    keep = []
    while True:
        f = types.FunctionType(_one.__code__, globals())
        keep.append(f)
        slot = (id(f) >> 4) & 255
        if slot in seen:
            return seen[slot], f, keep
        seen[slot] = f


F = G = _one


def loop(n: int) -> int:
    t = 0
    for _ in range(n):
        t += F() + G()
    return t


def main() -> None:
    global F, G
    mode, n = sys.argv[1], int(sys.argv[2])
    fa, fb, _keep = _sharing_a_slot()
    F, G = (fa, fb) if mode == "collide" else (fa, types.FunctionType(_one.__code__, globals()))
    root = tracer.track(loop, n)
    assert root.value == loop(n) == 2 * n
    print(f"{mode}: pool entries {len(root.trace.pool)}, nodes {len(root.trace)}")


if __name__ == "__main__":
    main()
