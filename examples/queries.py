"""Whole-trace questions on the columns: trace.table() and tracer.query.

A small stochastic model (a geometric recursion and a loop) is traced once; each
question below is one vectorized expression over the trace's table, or one query.

Run:  python examples/queries.py
"""

import random

import numpy as np

import tracer


def walk(steps, p):
    x = 0.0
    for _ in range(steps):
        u = random.random()
        if u < p:
            x += u
        else:
            x -= 0.5
    return x


def geom(p):
    if random.random() < p:
        return 1
    return 1 + geom(p)


def model(p):
    n = geom(p)
    return walk(10 * n, 0.6) / n


random.seed(7)
root = tracer.track(model, 0.3)
t = root.trace.table()
print(f"{len(root.trace)} nodes, result {root.value}")

# How many times did each line of `walk` run (counting the nodes recorded there)?
in_walk = t["function"] == "walk"
lines, counts = np.unique(t["line"][in_walk], return_counts=True)
print("nodes per line of walk (-1: its parameters):", dict(zip(lines.tolist(), counts.tolist())))

# Which branch was taken how often (jumps by line and target)?
jumps = (t["kind"] == 5) & in_walk
pairs, taken = np.unique(np.stack([t["line"][jumps], t["target"][jumps]]), axis=1,
                         return_counts=True)
print("branches of walk (line, target offset): times taken")
for (line, target), k in zip(pairs.T.tolist(), taken.tolist()):
    print(f"  L{line} -> {target}: {k}")

# Which calls took most nodes?
calls = np.flatnonzero(t["kind"] == 3)
top = calls[np.argsort(-t["size"][calls], kind="stable")][:3]
print("largest calls:", [(t["callee"][r], int(t["size"][r])) for r in top.tolist()])

# Queries: every draw, and the draws the result depends on (a slice across calls).
draws = tracer.query(root, "descendants", callee="random")
print(f"{len(draws)} draws, values from {min(draws.values):.3f} to {max(draws.values):.3f}")
result = root[-1]
slice_ = tracer.query(result, "backward", across_calls=True)
used = slice_.where(callee="random")
print(f"the result depends on {len(slice_)} nodes, {len(used)} of them draws")
first = tracer.query(used[0], "forward", across_calls=True)
print(f"what the first of them flows into: {len(first)} nodes, ending with")
for node in first[-3:]:
    print("  ", node)
